/**
 * The single server's runtime and session directory in-process over a real SQLite store,
 * with an injected clock and fast fake phones, and a `crash()` that does what kill -9 does to
 * the server: the process's memory, timers and phones are gone; only what was committed to
 * the store survives. A new runtime then recovers from the same data directory, as
 * `phonelease server` does on restart.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../server/clock.js';
import type { BootRequest, DeviceBackend, DevicePhone } from '../../server/devices/types.js';
import { createLogger } from '../../server/log.js';
import { createAccount, type CreatedAccount, type NewAccount } from '../../server/runtime/accounts.js';
import { LocalDirectory } from '../../server/runtime/local-directory.js';
import { ProfileSaves } from '../../server/runtime/profile-saves.js';
import { Runtime } from '../../server/runtime/runtime.js';
import { cryptoRandom } from '../../server/secrets.js';
import { SqliteLedger } from '../../server/stores/sqlite/ledger.js';
import { openDatabase, SqliteStore } from '../../server/stores/sqlite/store.js';

/** Phones that boot at once and hold nothing: the runtime's bookkeeping is what is under test. */
export class FakePhones implements DeviceBackend {
  readonly name = 'virtual' as const;
  readonly typicalBootMs: number;
  readonly startupSource = 'cold' as const;
  /** Phones booted and not shut down, by session id. */
  readonly running = new Map<string, DevicePhone>();
  private dead = false;

  /** `wait(ms, signal)`: a boot takes `bootMs` on the world's clock (default: at once). */
  constructor(
    private readonly bootMs = 0,
    private readonly wait: (ms: number, signal: AbortSignal) => Promise<void> = async () => undefined,
  ) {
    this.typicalBootMs = bootMs;
  }

  async boot(request: BootRequest): Promise<DevicePhone> {
    if (this.bootMs > 0) await this.wait(this.bootMs, request.signal);
    if (this.dead) return new Promise<DevicePhone>(() => undefined); // the process is gone
    const phones = this.running;
    const phone: DevicePhone = {
      label: 'Fake phone',
      screen: { w: 100, h: 200 },
      adbEndpoint: async () => ({ host: '127.0.0.1', port: 9 }),
      capture: async () => Buffer.from('png'),
      apps: async () => [],
      input: async () => undefined,
      onScreenChange: () => () => undefined,
      onLost: () => undefined,
      async shutdown({ saveTo }) {
        if (saveTo) writeFileSync(join(saveTo, 'state'), request.sessionId);
        phones.delete(request.sessionId);
      },
    };
    phones.set(request.sessionId, phone);
    return phone;
  }

  async close(): Promise<void> {
    this.running.clear();
  }

  /** kill -9: the phones die with the process, without telling anyone. */
  kill(): void {
    this.dead = true;
    this.running.clear();
  }
}

export interface WorldOptions {
  phones?: number;
  bootSlots?: number;
  /** Warm pool size (default 0). */
  pool?: number;
  /** How long a phone takes to boot on the world's clock (default 0: at once). */
  bootMs?: number;
  startMs?: number;
}

/** Lets every pending promise callback run (fake phones and the store are synchronous or instant). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export class RuntimeWorld {
  // On tmpfs where there is one: thousands of small stores are made, and fsyncs on a shared
  // disk would dominate a model-based run.
  readonly dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'phonelease-world-'));
  clock: ManualClock;
  store!: SqliteStore;
  runtime!: Runtime;
  directory!: LocalDirectory;
  backend!: FakePhones;
  /** How many times the process was killed. */
  crashes = 0;

  constructor(private readonly options: WorldOptions = {}) {
    this.clock = new ManualClock(options.startMs);
    this.boot();
  }

  /** Starts a "process" over the data directory and recovers what the last one left. */
  private boot(): void {
    this.store = new SqliteStore(openDatabase(this.dir));
    this.backend = new FakePhones(
      this.options.bootMs ?? 0,
      // Aborted boots end at once, as the real backends' do.
      (ms, signal) =>
        new Promise<void>((resolve, reject) => {
          const cancel = this.clock.setTimeout(resolve, ms);
          signal.addEventListener('abort', () => {
            cancel();
            reject(new Error('boot aborted'));
          });
        }),
    );
    const saves = new ProfileSaves(join(this.dir, 'profiles'));
    const clock = this.clock;
    const log = createLogger({ level: 'silent' });
    this.runtime = new Runtime({
      ledger: new SqliteLedger(this.store, () => clock.now()),
      backend: this.backend,
      saves,
      clock,
      random: cryptoRandom,
      log,
      phones: this.options.phones ?? 20,
      bootSlots: this.options.bootSlots ?? 4,
      pool: this.options.pool ?? 0,
    });
    this.directory = new LocalDirectory({
      store: this.store,
      runtime: this.runtime,
      saves,
      clock,
      random: cryptoRandom,
      log,
      phones: this.options.phones ?? 20,
    });
    this.directory.recover();
  }

  createAccount(opts: NewAccount = {}): CreatedAccount {
    return createAccount(this.store, this.clock, cryptoRandom, opts);
  }

  /** Moves time forward and lets the runtime react. */
  async advance(ms: number): Promise<void> {
    await settle();
    await this.clock.advance(ms);
    await settle();
  }

  /**
   * kill -9 and restart: timers of the dead process never fire (it gets a clock of its own
   * that is thrown away), its phones die, its store connection is dropped; the new process
   * starts `downMs` later.
   */
  async crash(downMs = 0): Promise<void> {
    await settle();
    const now = this.clock.now() + downMs;
    this.runtime.removeAllListeners();
    this.backend.kill();
    this.store.close();
    this.clock = new ManualClock(now);
    this.crashes++;
    this.boot();
    await settle();
  }

  async close(): Promise<void> {
    await settle();
    await this.directory.close();
    await settle();
    this.store.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
