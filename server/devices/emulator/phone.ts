/**
 * A booted emulator as the runtime's DevicePhone. Everything on the phone goes through the
 * adb server (`adb -s emulator-N`); the emulator itself is driven through its console.
 */
import type { AdbEndpoint, AdbKeyring, AppSummary, DevicePhone, PhoneInput, ScreenSize } from '../types.js';
import { consoleCommand } from './console.js';
import type { EmulatorProcess } from './process.js';
import { PROFILE_SNAPSHOT, storeProfileAvd } from './profiles.js';
import { runTool, type Sdk } from './sdk.js';

const KEYCODES: Record<Extract<PhoneInput, { type: 'key' }>['key'], number> = {
  home: 3,
  back: 4,
  enter: 66,
  del: 67,
};

/** How long `kill` on the console may take before the process gets SIGKILL. */
const KILL_GRACE_MS = 15_000;

export interface EmulatorPhoneOptions {
  sdk: Sdk;
  proc: EmulatorProcess;
  consolePort: number;
  tokenPath: string;
  label: string;
  screen: ScreenSize;
  startupSource: 'cold' | 'snapshot';
  /** The profile AVD this phone runs (saved on shutdown with saveTo), or null. */
  profileAvd: { name: string; dir: string } | null;
  /** The keys the gateway signs in to the emulator's adbd with (it trusts only its adb_keys). */
  adbKeys: AdbKeyring;
  /**
   * Why gateway clients cannot reach this phone (an emulator build that serves one ADB
   * connection, the adb server's), or null.
   */
  adbRefusal: string | null;
  /** Frees the port, the fleet AVD count or the profile's working AVD (once). */
  release: () => Promise<void>;
}

export class EmulatorPhone implements DevicePhone {
  readonly label: string;
  readonly screen: ScreenSize;
  /** The emulator's own adbd port (console port + 1), listening from boot. */
  private readonly adb: AdbEndpoint;
  readonly startupSource: 'cold' | 'snapshot';
  private readonly lost = new Set<(reason: string) => void>();
  private readonly changes = new Set<() => void>();
  private stopping = false;
  private snapshotSaved = false;
  private released: Promise<void> | null = null;
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly o: EmulatorPhoneOptions) {
    this.label = o.label;
    this.screen = o.screen;
    this.startupSource = o.startupSource;
    this.adb = { host: '127.0.0.1', port: o.consolePort + 1, signIn: o.adbKeys };
    void o.proc.exited.then((exit) => {
      if (this.stopping) return;
      // Died on its own (crash, OOM killer, someone's `emu kill`): the runtime ends the
      // session `lost`. Its resources go now; a later shutdown() finds nothing to stop.
      const how = exit.signal ? `signal ${exit.signal}` : `exit ${exit.code}`;
      const said = o.proc.tail(2).replace(/\s*\n\s*/g, ' ');
      for (const l of this.lost) l(`the emulator stopped (${how})${said ? `: ${said}` : ''}`);
      void this.release();
    });
  }

  get serial(): string {
    return `emulator-${this.o.consolePort}`;
  }

  private release(): Promise<void> {
    this.released ??= this.o.release();
    return this.released;
  }

  private async adbRun(args: string[]): Promise<string> {
    return (
      await runTool(this.o.sdk.adb, ['-s', this.serial, ...args], this.o.sdk.env, { timeoutMs: 60_000 })
    ).stdout;
  }

  async adbEndpoint(): Promise<AdbEndpoint> {
    if (this.o.adbRefusal) throw new Error(this.o.adbRefusal);
    return this.adb;
  }

  async capture(): Promise<Buffer> {
    const { execFile } = await import('node:child_process');
    return new Promise<Buffer>((resolve, reject) =>
      execFile(
        this.o.sdk.adb,
        ['-s', this.serial, 'exec-out', 'screencap', '-p'],
        { env: { ...this.o.sdk.env }, encoding: 'buffer', maxBuffer: 64 * 1024 * 1024, timeout: 60_000 },
        (error, stdout) => (error ? reject(error) : resolve(stdout)),
      ),
    );
  }

  async apps(): Promise<AppSummary[]> {
    const out = await this.adbRun([
      'shell',
      'cmd package query-activities -a android.intent.action.MAIN -c android.intent.category.LAUNCHER --brief',
    ]);
    const packages = [
      ...new Set(
        out
          .split('\n')
          .map((l) => l.trim().split('/')[0]!)
          .filter((p) => /^[\w.]+$/.test(p)),
      ),
    ];
    return packages.map((p) => ({ package: p, label: p.split('.').pop() ?? p }));
  }

  async input(event: PhoneInput): Promise<void> {
    const args =
      event.type === 'tap'
        ? ['tap', String(event.x), String(event.y)]
        : event.type === 'swipe'
          ? [
              'swipe',
              String(event.x1),
              String(event.y1),
              String(event.x2),
              String(event.y2),
              String(event.durationMs ?? 300),
            ]
          : event.type === 'text'
            ? ['text', event.text.replace(/ /g, '%s').replace(/(["'`\\$&|;<>()*?!])/g, '\\$1')]
            : ['keyevent', String(KEYCODES[event.key])];
    await this.adbRun(['shell', 'input', ...args]);
    for (const l of this.changes) l();
  }

  onScreenChange(listener: () => void): () => void {
    this.changes.add(listener);
    return () => this.changes.delete(listener);
  }

  onLost(listener: (reason: string) => void): void {
    this.lost.add(listener);
  }

  /**
   * With saveTo (profile phones): saves a snapshot through the console while the phone
   * runs, stops the emulator, and copies its AVD into saveTo. A failure leaves what can be
   * retried in place (a running phone, or a stopped one whose AVD is still there), so a
   * later call can save again; calls run one after another.
   */
  shutdown(options: { saveTo: string | null }): Promise<void> {
    const run = this.queue.then(() => this.stop(options.saveTo));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async stop(saveTo: string | null): Promise<void> {
    if (saveTo) {
      if (!this.o.profileAvd) throw new Error('a temporary emulator phone has nothing to save');
      if (!this.snapshotSaved) {
        if (this.o.proc.hasExited) throw new Error('the emulator has stopped; its last state is lost');
        // `KO: ...` (a full disk, a read-only instance) rejects here with the console's words.
        await consoleCommand(this.o.consolePort, this.o.tokenPath, `avd snapshot save ${PROFILE_SNAPSHOT}`);
        this.snapshotSaved = true;
      }
      await this.stopProcess();
      await storeProfileAvd(this.o.profileAvd.name, this.o.profileAvd.dir, saveTo);
    }
    await this.stopProcess();
    await this.release();
  }

  private async stopProcess(): Promise<void> {
    if (this.o.proc.hasExited) return;
    this.stopping = true;
    try {
      await consoleCommand(this.o.consolePort, this.o.tokenPath, 'kill');
    } catch {
      // The console is gone or refused: the signal below ends it.
      this.o.proc.kill('SIGTERM');
    }
    const timer = setTimeout(() => this.o.proc.kill('SIGKILL'), KILL_GRACE_MS);
    await this.o.proc.exited;
    clearTimeout(timer);
  }
}
