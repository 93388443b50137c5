/**
 * One phone's UI engine: picks the back end on first use (the UiAutomator2 server, else
 * `uiautomator dump`, said once), takes snapshots of the tree, and runs every action and
 * assertion through a step runner that the test framework can hook (Playwright's
 * test.step) so each one shows in the report.
 */
import { messageOf } from '../util/message.js';
import { DumpDriver } from './dump.js';
import type { PhoneChannel, UiDriver, UiEngineName } from './driver.js';
import { parseHierarchy, type UiSnapshot } from './tree.js';
import { findUia2Apks, startUia2 } from './uia2.js';

export type StepRunner = <T>(title: string, body: () => Promise<T>) => Promise<T>;

export interface UiOptions {
  /**
   * Default time an action waits for its element, in ms (0: no limit of its own). The
   * Playwright fixture sets it from `use.actionTimeout`, else the test's timeout.
   */
  actionTimeout: number;
  /** Which back end to use: 'auto' (UiAutomator2, else dump), or one of them. */
  engine: 'auto' | UiEngineName;
  /** Wraps each action and assertion (default: runs it as is). */
  stepRunner: StepRunner;
}

const DEFAULT_OPTIONS: UiOptions = {
  actionTimeout: 30_000,
  engine: 'auto',
  stepRunner: (_title, body) => body(),
};

function engineFromEnv(env: NodeJS.ProcessEnv): UiOptions['engine'] {
  const v = env.PHONELEASE_UI_ENGINE;
  return v === 'dump' || v === 'uiautomator2' ? v : 'auto';
}

export class UiEngine {
  readonly options: UiOptions;
  readonly #phone: PhoneChannel;
  #driver: Promise<UiDriver> | null = null;
  #last: UiSnapshot | null = null;
  #closed = false;

  constructor(phone: PhoneChannel, env: NodeJS.ProcessEnv = process.env) {
    this.#phone = phone;
    this.options = { ...DEFAULT_OPTIONS, engine: engineFromEnv(env) };
  }

  /** The phone this engine drives. */
  get phone(): PhoneChannel {
    return this.#phone;
  }

  /** Changes defaults (the fixture sets the step runner and timeouts). */
  configure(options: Partial<UiOptions>): void {
    Object.assign(this.options, options);
  }

  step<T>(title: string, body: () => Promise<T>): Promise<T> {
    return this.options.stepRunner(title, body);
  }

  /** The back end in use, starting it on first call. */
  driver(): Promise<UiDriver> {
    if (this.#closed) return Promise.reject(new Error(`The UI engine of phone ${this.#phone.id} is closed.`));
    if (!this.#driver) {
      const starting = this.#start();
      this.#driver = starting;
      starting.catch(() => {
        if (this.#driver === starting) this.#driver = null;
      });
    }
    return this.#driver;
  }

  async #start(): Promise<UiDriver> {
    const { engine } = this.options;
    if (engine === 'dump') return new DumpDriver(this.#phone);
    const apks = findUia2Apks();
    let why: string;
    if (!apks) {
      why =
        'the npm package appium-uiautomator2-server is not installed (npm i -D appium-uiautomator2-server)';
    } else {
      try {
        const started = await startUia2(this.#phone, apks);
        if (started.installed) {
          this.#phone.logger.info?.(
            `installed the UiAutomator2 server ${apks.version} on phone ${this.#phone.id}`,
          );
        }
        return started.driver;
      } catch (error) {
        why = messageOf(error);
      }
    }
    if (engine === 'uiautomator2') throw new Error(`The UiAutomator2 server could not start: ${why}.`);
    // Said once per phone: every later action uses the slower dump quietly.
    this.#phone.logger.warn(
      `UI automation on phone ${this.#phone.id} falls back to \`uiautomator dump\` (slower): ${why}.`,
    );
    return new DumpDriver(this.#phone);
  }

  /** A fresh snapshot of the tree. */
  async snapshot(): Promise<UiSnapshot> {
    const driver = await this.driver();
    const snap = parseHierarchy(await driver.source());
    this.#last = snap;
    return snap;
  }

  /**
   * The tree as XML now, for failure reports: from the running back end, or a plain
   * `uiautomator dump` when no locator started one (a report must not install a server).
   * Falls back to the last tree seen when the phone cannot answer.
   */
  async treeXml(): Promise<string> {
    try {
      if (this.#driver) return (await this.snapshot()).xml;
      return await new DumpDriver(this.#phone).source();
    } catch (error) {
      if (this.#last) return this.#last.xml;
      throw error;
    }
  }

  /**
   * Stops the back end (the UiAutomator2 instrumentation and its streams) while the ADB
   * connection is still up, waiting at most `timeoutMs`; call before ending the lease.
   */
  async stop(timeoutMs = 2000): Promise<void> {
    const driver = this.#driver;
    if (!driver) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      driver.then((d) => d.close()).catch(() => undefined),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
    if (this.#driver === driver) this.#driver = null;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const driver = this.#driver;
    this.#driver = null;
    if (driver) await driver.then((d) => d.close()).catch(() => undefined);
  }
}
