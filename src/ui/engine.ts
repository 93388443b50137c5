/**
 * One phone's UI engine: picks the back end on first use (the UiAutomator2 server, else
 * `uiautomator dump`, said once), takes snapshots of the tree, and runs every action and
 * assertion through a step runner that the test framework can hook (Playwright's
 * test.step) so each one shows in the report.
 */
import { messageOf } from '../util/message.js';
import { DumpDriver } from './dump.js';
import type { PhoneChannel, UiDriver, UiEngineName } from './driver.js';
import { parseHierarchy, type Bounds, type UiNode, type UiSnapshot } from './tree.js';
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
  /**
   * How long a read of the tree counts as recent, in ms: an action takes a recent read as
   * the first of the two its "stable" check compares, when nothing was sent to the phone
   * since. The default is about what two reads in a row are apart on a real phone.
   */
  recentReadMs: number;
}

const DEFAULT_OPTIONS: UiOptions = {
  actionTimeout: 30_000,
  engine: 'auto',
  stepRunner: (_title, body) => body(),
  recentReadMs: 100,
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
  /** When #last was read (performance.now() at its reply) and how many inputs came before it. */
  #lastRead = { at: -Infinity, inputs: -1 };
  /** Inputs sent so far: taps, keys, text, and any shell command (it may launch or type). */
  #inputs = 0;
  #settles = false;
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
    return new InputNotingDriver(await this.#startBackEnd(), () => this.noteInput());
  }

  async #startBackEnd(): Promise<UiDriver> {
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
    const inputs = this.#inputs;
    const snap = parseHierarchy(await driver.source());
    this.#settles = driver.settles;
    this.#last = snap;
    this.#lastRead = { at: performance.now(), inputs };
    return snap;
  }

  /**
   * The last read of the tree if it is recent (options.recentReadMs) and nothing was sent to
   * the phone since it started, else null. Actions use it only as the earlier of the two
   * reads that "stable" compares: what they act on always comes from a fresh read.
   */
  recentSnapshot(): UiSnapshot | null {
    const { at, inputs } = this.#lastRead;
    if (inputs !== this.#inputs || performance.now() - at > this.options.recentReadMs) return null;
    return this.#last;
  }

  /**
   * The phone's screen in the coordinates of `snap`'s bounds: the size the UiAutomator2
   * server writes on the source's root, else `wm size` (an override wins, as on the phone)
   * turned as the root's rotation says. `wm size` is read each time: it costs little beside
   * a dump, and a test may change it.
   */
  async screen(snap: UiSnapshot): Promise<Bounds> {
    const { width, height, rotation } = snap.root.attributes;
    if (Number(width) > 0 && Number(height) > 0)
      return { left: 0, top: 0, right: Number(width), bottom: Number(height) };
    const size = await this.#displaySize();
    const sideways = rotation === '1' || rotation === '3';
    return {
      left: 0,
      top: 0,
      right: sideways ? size.height : size.width,
      bottom: sideways ? size.width : size.height,
    };
  }

  async #displaySize(): Promise<{ width: number; height: number }> {
    const r = await this.#phone.shell('wm size');
    const m = /Override size: (\d+)x(\d+)/.exec(r.stdout) ?? /Physical size: (\d+)x(\d+)/.exec(r.stdout);
    if (r.exitCode !== 0 || !m) {
      throw new Error(
        `Could not read the screen size of phone ${this.#phone.id} (\`wm size\` said ${JSON.stringify((r.stdout + r.stderr).trim().slice(0, 200))}).`,
      );
    }
    return { width: Number(m[1]), height: Number(m[2]) };
  }

  /** Whether the back end of the last read reads only a settled screen (UiDriver.settles). */
  get settles(): boolean {
    return this.#settles;
  }

  /** Something was sent that may change the screen: the last read is no longer recent. */
  noteInput(): void {
    this.#inputs++;
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

/** A back end whose every input is noted first (see UiEngine.recentSnapshot). */
class InputNotingDriver implements UiDriver {
  readonly #inner: UiDriver;
  readonly #note: () => void;

  constructor(inner: UiDriver, note: () => void) {
    this.#inner = inner;
    this.#note = note;
  }

  get engine(): UiEngineName {
    return this.#inner.engine;
  }

  get settles(): boolean {
    return this.#inner.settles;
  }

  source(): Promise<string> {
    return this.#inner.source();
  }

  tap(x: number, y: number): Promise<void> {
    this.#note();
    return this.#inner.tap(x, y);
  }

  longPress(x: number, y: number, durationMs: number): Promise<void> {
    this.#note();
    return this.#inner.longPress(x, y, durationMs);
  }

  swipe(from: { x: number; y: number }, to: { x: number; y: number }, durationMs: number): Promise<void> {
    this.#note();
    return this.#inner.swipe(from, to, durationMs);
  }

  key(keycode: number): Promise<void> {
    this.#note();
    return this.#inner.key(keycode);
  }

  replaceText(node: UiNode, text: string): Promise<void> {
    this.#note();
    return this.#inner.replaceText(node, text);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}
