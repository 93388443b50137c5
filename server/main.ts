/**
 * The single server: a deployment of one. startServer() wires its SQLite store, its runtime
 * and device backend, its session directory (LocalDirectory), its ADB gateway and the HTTP
 * API (buildApp, the same as an API node's) and listens. The CLI's `phonelease server` and
 * the test fixtures' embedded server both start the server through here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from './api/app.js';
import { systemClock, type Clock } from './clock.js';
import { AdbGateway } from './adb-gateway.js';
import { hostnameOf, isWildcard, listenUrl, once, publicUrlOf } from './listen.js';
import type { DeviceBackend } from './devices/types.js';
import { FleetFigures, observers } from './fleet.js';
import { createLogger, levelFromEnv, type Logger, type LogLevel } from './log.js';
import { createAccount, type CreatedAccount, type NewAccount } from './runtime/accounts.js';
import { createSignInLink, DashboardSessions } from './runtime/dashboard-sessions.js';
import { Grants } from './runtime/grants.js';
import { LocalDirectory } from './runtime/local-directory.js';
import { ProfileSaves } from './runtime/profile-saves.js';
import { genericDevice, Runtime, type RuntimeObserver } from './runtime/runtime.js';
import { cryptoRandom, type RandomSource } from './secrets.js';
import { startCheckpointer } from './stores/sqlite/checkpointer.js';
import { SqliteDashboardStore } from './stores/sqlite/dashboard.js';
import { SqliteLedger } from './stores/sqlite/ledger.js';
import { openDatabase, SqliteStore } from './stores/sqlite/store.js';
import { RuntimeStreams, viewerTokenStreams } from './viewer/stream.js';

export interface ServerOptions {
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
  /** HTTP port; 0 (the default here) picks a free one. */
  port?: number;
  /** Data directory (SQLite store, profile saves). Default: a temporary directory removed on close. */
  dataDir?: string;
  /** Shared phone capacity: creates beyond it get 503 phones_busy (default 20; for emulators, what the host fits). */
  phones?: number;
  /** Phones booting at once; the rest wait as `queued` (default 4). */
  bootSlots?: number;
  /**
   * Temporary phones kept booted ahead of demand, within `phones` (default 0). A new
   * temporary session takes one and is ready at once (`startup.source` `pool`).
   */
  pool?: number;
  /** Serve GET /metrics in the Prometheus text format, without an API key (default false). */
  metrics?: boolean;
  /** Boot time of the virtual phone in ms (default 1000). */
  bootMs?: number;
  /** Which phones to serve (default virtual). */
  device?: 'virtual' | 'emulator';
  /** Emulators: the Android SDK (default ANDROID_HOME) and the AVD to run (default PHONELEASE_AVD). */
  sdk?: string;
  avd?: string;
  /** APK files installed on every phone before it is handed out (read once, at start). */
  preinstall?: readonly string[];
  /** Origin allowed to embed the viewer pages (CSP frame-ancestors). */
  dashboardOrigin?: string | null;
  /** Log level, or a logger (default from PHONELEASE_LOG_LEVEL / DEBUG, else info). */
  log?: LogLevel | Logger;
  /** Injected time and randomness (tests). */
  clock?: Clock;
  random?: RandomSource;
  /** A device backend instead of `device` (tests, embedding). */
  backend?: DeviceBackend;
}

export interface RunningServer {
  /** Base URL of the API, e.g. http://127.0.0.1:41234 */
  readonly url: string;
  readonly dataDir: string;
  /** Creates an account (with its first key and profile) on this server's store. */
  createAccount(options?: NewAccount): CreatedAccount;
  /** A one-time dashboard sign-in link for the account, as `phonelease dashboard` prints it. */
  signInLink(uid: string): Promise<string>;
  /** Stops the runtime (profile phones are saved, live sessions end), the phones and the listeners. */
  close(): Promise<void>;
  /** Operational controls; tests use them to make the runtime unavailable on demand. */
  readonly runtime: { pause(): void; resume(): void };
}

export const SERVER_DEFAULTS = { host: '127.0.0.1', phones: 20, bootSlots: 4, bootMs: 1000 } as const;

/** What the backend is made of beyond its kind: where the emulators are, the prepared apps. */
export type BackendChoice = Pick<ServerOptions, 'sdk' | 'avd' | 'preinstall'>;

export async function loadBackend(
  device: 'virtual' | 'emulator',
  bootMs: number,
  log: Logger,
  choice: BackendChoice = {},
): Promise<DeviceBackend> {
  const preinstall = choice.preinstall ?? [];
  if (device === 'emulator') {
    const { createEmulatorBackend } = await import('./devices/emulator/index.js');
    return createEmulatorBackend({
      log: log.child({ backend: 'emulator' }),
      // --sdk is what ANDROID_HOME says, for the backend and the tools it runs.
      ...(choice.sdk !== undefined ? { env: { ...process.env, ANDROID_HOME: choice.sdk } } : {}),
      ...(choice.avd !== undefined ? { avd: choice.avd } : {}),
      preinstall,
    });
  }
  const { createVirtualBackend } = await import('./devices/virtual/index.js');
  // Phones listen on loopback whatever --host says: the gateway, which asks for the unlock
  // code, is the only way to a phone's ADB from elsewhere.
  return createVirtualBackend({ bootMs, host: '127.0.0.1', preinstall });
}

/**
 * Capacity when --phones is not given: what the host fits for emulators (about 2 cores and
 * 3 GB each), the fixed default for virtual phones.
 */
export async function defaultPhones(backend: DeviceBackend, log: Logger): Promise<number> {
  if (backend.name !== 'emulator') return SERVER_DEFAULTS.phones;
  const { emulatorCapacity } = await import('./devices/emulator/capacity.js');
  const capacity = emulatorCapacity();
  log.info(`phones from this host: ${capacity.summary}; --phones overrides`, { phones: capacity.phones });
  return capacity.phones;
}

/** A listen failure that says what to do about it; the original error is its cause. */
function listenError(err: unknown, host: string, port: number): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'EADDRINUSE') {
    return new Error(
      `Port ${port} on ${host} is already in use (another phonelease server?). Stop that process, or pick another port with --port (0 picks a free one).`,
      { cause: err },
    );
  }
  if (code === 'EADDRNOTAVAIL' || code === 'EACCES') {
    return new Error(
      `Cannot listen on ${host}:${port} (${code}): use an address of this machine (e.g. 127.0.0.1) and a port you may open (>= 1024 without privileges).`,
      { cause: err },
    );
  }
  return err;
}

/** What the single server is built from: the server and in-process route tests share this wiring. */
export interface SingleServerParts {
  store: SqliteStore;
  backend: DeviceBackend;
  clock: Clock;
  random: RandomSource;
  log: Logger;
  /** Profile saves live under `<dataDir>/profiles`. */
  dataDir: string;
  /** Signs view grants; kept in the store so grants survive a restart. */
  secret: Buffer;
  phones: number;
  bootSlots: number;
  pool?: number;
  observer?: RuntimeObserver;
}

/** The runtime over the store and device backend, its session directory, and the view grants. */
export function wireSingleServer(parts: SingleServerParts): {
  runtime: Runtime;
  directory: LocalDirectory;
  grants: Grants;
} {
  const { store, clock, random, log } = parts;
  const saves = new ProfileSaves(join(parts.dataDir, 'profiles'));
  const runtime = new Runtime({
    ledger: new SqliteLedger(store, () => clock.now()),
    backend: parts.backend,
    saves,
    clock,
    random,
    log,
    phones: parts.phones,
    bootSlots: parts.bootSlots,
    pool: parts.pool ?? 0,
    ...(parts.observer ? { observer: parts.observer } : {}),
  });
  const directory = new LocalDirectory({ store, runtime, saves, clock, random, log, phones: parts.phones });
  return { runtime, directory, grants: new Grants(parts.secret, clock, random) };
}

export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const host = options.host ?? SERVER_DEFAULTS.host;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? cryptoRandom;
  const log =
    typeof options.log === 'object'
      ? options.log
      : createLogger({ level: options.log ?? levelFromEnv(), now: () => clock.now() });
  // First: a backend that cannot start (a bad --preinstall file) leaves nothing else open.
  const backend =
    options.backend ??
    (await loadBackend(options.device ?? 'virtual', options.bootMs ?? SERVER_DEFAULTS.bootMs, log, options));
  const ephemeral = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'phonelease-'));

  const store = new SqliteStore(openDatabase(dataDir));
  let checkpointer: { stop(): Promise<void> } | null = null;
  /** What is left once the listeners closed: the phones, the store and a temporary data directory. */
  const release = async (quiet: boolean) => {
    await (quiet ? backend.close().catch(() => undefined) : backend.close());
    await checkpointer?.stop();
    store.close();
    if (ephemeral) rmSync(dataDir, { recursive: true, force: true });
  };
  let stored = store.getMeta('secret');
  if (!stored) {
    stored = random(32).toString('hex');
    store.setMeta('secret', stored);
  }
  const secret = Buffer.from(stored, 'hex');
  const phones = options.phones ?? (await defaultPhones(backend, log));
  const pool = options.pool ?? 0;
  if (pool > phones) {
    if (options.phones !== undefined) {
      await release(true);
      throw new RangeError(
        `pool ${pool} is more than phones ${phones}: the pool holds phones within the server's capacity; lower the pool or raise phones.`,
      );
    }
    log.warn(`--pool ${pool} is more than this host's ${phones} phones; the pool keeps ${phones}`);
  }
  const metrics = options.metrics ? new (await import('./metrics.js')).ServerMetrics() : undefined;
  const fleet = new FleetFigures();
  const { grants, runtime, directory } = wireSingleServer({
    store,
    backend,
    clock,
    random,
    log,
    dataDir,
    secret,
    phones,
    bootSlots: options.bootSlots ?? SERVER_DEFAULTS.bootSlots,
    pool: Math.min(pool, phones),
    observer: metrics ? observers(metrics, fleet) : fleet,
  });
  metrics?.watch(() => runtime.stats());
  const dashboardStore = new SqliteDashboardStore(store);
  const signIns = new DashboardSessions({ store: dashboardStore, secret, clock, random });

  const gateway = new AdbGateway(runtime, log, clock);
  // WAL checkpoints leave the thread that answers requests.
  checkpointer = startCheckpointer(store.db, (error) =>
    log.warn('the checkpoint worker failed; the store checkpoints on the main thread again', {
      error: String(error),
    }),
  );
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  let url = '';
  try {
    const adbPort = await gateway.listen(host, 0);
    const wildcard = isWildcard(host);
    app = await buildApp({
      directory,
      grants,
      clock,
      log,
      // On a wildcard address the URLs handed out name the address the client used.
      publicUrl: publicUrlOf(host, () => url),
      adbEndpoint: (requestHost) => ({
        host: wildcard ? (hostnameOf(requestHost ?? '') ?? '127.0.0.1') : host,
        port: adbPort,
      }),
      dashboardOrigin: options.dashboardOrigin ?? null,
      genericDevice: genericDevice(backend.name),
      signIns,
      fleet: () => Promise.resolve(fleet.view(runtime.stats())),
      streams: new RuntimeStreams({ runtime, clock, log, authorize: viewerTokenStreams(grants) }),
      ...(metrics ? { metrics } : {}),
    });
    url = await listenUrl(app, host, options.port ?? 0);
    directory.recover();
    log.info('phonelease server listening', {
      url,
      adb_gateway_port: adbPort,
      device: backend.name,
      data: dataDir,
      phones,
      pool: Math.min(pool, phones),
      ...(metrics ? { metrics: `${url}/metrics` } : {}),
    });
  } catch (err) {
    // Nothing half-started may keep the process alive or hold a port: a caller that gets
    // this error can start again.
    await app?.close().catch(() => undefined);
    await gateway.close().catch(() => undefined);
    await release(true);
    throw listenError(err, host, options.port ?? 0);
  }
  const listening = app;

  return {
    url,
    dataDir,
    createAccount: (opts = {}) => createAccount(store, clock, random, opts),
    signInLink: (uid) => createSignInLink(dashboardStore, clock, random, { uid }, url),
    runtime: { pause: () => runtime.pause(), resume: () => runtime.resume() },
    close: once(async () => {
      await directory.close();
      await listening.close();
      await gateway.close();
      await release(false);
    }),
  };
}
