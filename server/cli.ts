/**
 * `phonelease server` and `phonelease accounts create`: the exact command lines other
 * programs and tests depend on (see docs/server.md).
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from './clock.js';
import { ACCOUNT_DEFAULTS, createAccount, newAccountRows, type NewAccount } from './runtime/accounts.js';
import { createSignInLink, type AccountRef } from './runtime/dashboard-sessions.js';
import { createLogger, levelFromEnv } from './log.js';
import { SERVER_DEFAULTS, defaultPhones, loadBackend, startServer, type BackendChoice } from './main.js';
import { cryptoRandom } from './secrets.js';
import { SqliteDashboardStore } from './stores/sqlite/dashboard.js';
import { openDatabase, SqliteStore } from './stores/sqlite/store.js';
import type { Db } from './stores/postgres/pool.js';
import { parseCommandLine, UsageError, usageHint, type OptionsConfig } from '../src/util/args.js';

// The command line's own usage error (exit code 2), so that both halves of `phonelease`
// report option mistakes the same way.
export { UsageError };

const defaultDataDir = () =>
  join(process.env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'phonelease');

/** The options every server command takes (last, so "did you mean" prefers the command's own). */
const COMMON = {
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/**
 * Parses a server command's options and COMMON (see args.ts): null once --help printed the
 * usage. No server command takes positional arguments.
 */
function parseCommand<O extends OptionsConfig>(command: string, usage: string, argv: string[], options: O) {
  const { values, positionals } = parseCommandLine(argv, { ...options, ...COMMON }, { command, usage });
  // parseArgs' result type does not resolve inside this generic; callers get it typed.
  if ((values as { help: boolean }).help) {
    console.log(usage);
    return null;
  }
  if (positionals.length > 0)
    throw new UsageError(
      `${command} takes no arguments (got "${positionals[0]}")\n\n${usageHint(command, usage)}`,
    );
  return values;
}

function int(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min)
    throw new UsageError(`--${name} must be an integer >= ${min} (got "${value}")`);
  return Number(value);
}

export const SERVER_USAGE = `Usage: phonelease server [--host 127.0.0.1] [--port 8080] [--data DIR] [--phones N]
  [--boot-slots N] [--boot-ms MS] [--pool N] [--metrics] [--device virtual|emulator]
  [--sdk DIR] [--avd NAME] [--preinstall PATH]... [--dashboard-origin URL]
  [--store postgres://USER@HOST:PORT/DB] [--json]

Serves the phone-session API over local phones. --port 0 picks a free port. --pool N keeps
N temporary phones booted ahead of demand (within --phones); --metrics serves GET /metrics
(Prometheus text, no API key). With --json, prints one line {"url": "..."} to stdout once
it listens; logs go to stderr.

--device emulator runs Android SDK emulators (phonelease doctor checks this machine): --sdk
and --avd choose the SDK and the AVD, as ANDROID_HOME and PHONELEASE_AVD do. --preinstall
PATH (repeatable) installs that APK on every phone before it is handed out, pooled phones
included, so tests whose apps are preinstalled install nothing.

With --store, it is an API node of a deployment whose state is in PostgreSQL: any number
of nodes serve the API from one database behind a load balancer, and phones run on device
hosts (phonelease host). --phones N (default 0 there) also runs N phones in this process;
--metrics serves the deployment's state from the database and this node's own requests.`;

export async function runServerCommand(argv: string[]): Promise<void> {
  const values = parseCommand('server', SERVER_USAGE, argv, {
    host: { type: 'string' },
    port: { type: 'string' },
    data: { type: 'string' },
    phones: { type: 'string' },
    'boot-slots': { type: 'string' },
    'boot-ms': { type: 'string' },
    pool: { type: 'string' },
    metrics: { type: 'boolean', default: false },
    device: { type: 'string' },
    sdk: { type: 'string' },
    avd: { type: 'string' },
    preinstall: { type: 'string', multiple: true },
    'dashboard-origin': { type: 'string' },
    store: { type: 'string' },
  });
  if (!values) return;
  const device = values.device ?? 'virtual';
  if (device !== 'virtual' && device !== 'emulator')
    throw new UsageError(`--device must be virtual or emulator (got "${device}")`);
  const choice = backendChoice(device, values);
  if (values['dashboard-origin'] !== undefined && !/^https?:\/\/[^/\s]+$/.test(values['dashboard-origin'])) {
    throw new UsageError(
      '--dashboard-origin must be an origin such as https://dashboard.example.com (no path)',
    );
  }
  // An API node may run no phones itself (--phones 0); a server alone needs at least one.
  const phones =
    values.phones === undefined
      ? undefined
      : int('phones', values.phones, SERVER_DEFAULTS.phones, values.store !== undefined ? 0 : 1);
  const pool = int('pool', values.pool, 0, 0);
  if (phones !== undefined && pool > phones) {
    throw new UsageError(
      `--pool ${pool} is more than --phones ${phones}: pooled phones count toward --phones; lower --pool or raise --phones`,
    );
  }
  // Read where it is used, so that an API node without phones of its own never reads it.
  const bootMs = () => int('boot-ms', values['boot-ms'], SERVER_DEFAULTS.bootMs, 0);
  if (values.store !== undefined) {
    if (values.data !== undefined)
      throw new UsageError(
        '--store and --data name two different stores; an API node keeps its state in --store',
      );
    const log = createLogger({ level: levelFromEnv() });
    const ownPhones = phones ?? 0;
    if (pool > ownPhones)
      throw new UsageError(
        `--pool ${pool} needs phones of this node's own: an API node runs none without --phones N; give the pool to a device host (phonelease host --pool ${pool}) or add --phones`,
      );
    const { startApiNode } = await import('./distributed/api-node.js');
    const node = await startApiNode({
      store: storeUrl(values.store),
      host: values.host ?? SERVER_DEFAULTS.host,
      port: int('port', values.port, 8080, 0),
      phones: ownPhones,
      bootSlots: int('boot-slots', values['boot-slots'], SERVER_DEFAULTS.bootSlots, 1),
      pool,
      backend: ownPhones > 0 ? await loadBackend(device, bootMs(), log, choice) : undefined,
      dashboardOrigin: values['dashboard-origin'] ?? null,
      metrics: values.metrics,
      log,
    });
    announce(values.json, { url: node.url }, `phonelease API node listening on ${node.url}`);
    await untilSignalled('phonelease API node', () => node.close());
    return;
  }
  const dataDir = values.data ?? defaultDataDir();
  mkdirSync(dataDir, { recursive: true });

  const store = new SqliteStore(openDatabase(dataDir));
  const firstStart = store.accountCount() === 0;
  store.close();

  const server = await startServer({
    host: values.host ?? SERVER_DEFAULTS.host,
    port: int('port', values.port, 8080, 0),
    dataDir,
    // Not given: the server sizes it (emulators: from the host).
    phones,
    bootSlots: int('boot-slots', values['boot-slots'], SERVER_DEFAULTS.bootSlots, 1),
    bootMs: bootMs(),
    pool,
    metrics: values.metrics,
    device,
    ...choice,
    dashboardOrigin: values['dashboard-origin'] ?? null,
  });

  // First start on an empty store: create the local account once the server listens (a
  // server that fails to start must not leave an account whose key nobody ever saw).
  const first = firstStart ? server.createAccount({ name: 'Local account', billingMode: 'disabled' }) : null;
  if (first) {
    // The key is shown once, on a terminal only: a captured stderr (CI logs) must never
    // hold it. Otherwise it is written to a file only its owner can read.
    if (process.stderr.isTTY) {
      // Beside it, a one-time sign-in link to the dashboard (10 minutes; the key signs in too).
      const link = await server.signInLink(first.uid);
      process.stderr.write(
        `\nCreated the local account. Its API key, shown only now:\n\n  ${first.key}\n\nSign in to the dashboard (link works once, for 10 minutes):\n\n  ${link}\n\n`,
      );
    } else {
      const file = join(dataDir, 'first-key.txt');
      writeFileSync(file, first.key + '\n', { mode: 0o600 });
      chmodSync(file, 0o600);
      process.stderr.write(`Created the local account; its API key is in ${file} (readable only by you).\n`);
    }
  }
  announce(values.json, { url: server.url }, `phonelease server listening on ${server.url}`);
  await untilSignalled('phonelease server', () => server.close());
}

/** --sdk, --avd (emulators only) and --preinstall, as the backend takes them. */
function backendChoice(
  device: 'virtual' | 'emulator',
  values: { sdk?: string; avd?: string; preinstall?: string[] },
): BackendChoice {
  if (device !== 'emulator' && (values.sdk !== undefined || values.avd !== undefined))
    throw new UsageError(
      `${values.sdk !== undefined ? '--sdk' : '--avd'} chooses what the emulators run: add --device emulator`,
    );
  return {
    ...(values.sdk !== undefined ? { sdk: values.sdk } : {}),
    ...(values.avd !== undefined ? { avd: values.avd } : {}),
    preinstall: values.preinstall ?? [],
  };
}

/** The one JSON line other programs wait for (--json), or a line for people on stderr. */
function announce(json: boolean, line: Record<string, string>, words: string): void {
  if (json) process.stdout.write(JSON.stringify(line) + '\n');
  else process.stderr.write(`${words}\n`);
}

/** Runs until SIGINT or SIGTERM, then stops (live sessions end) and returns. */
function untilSignalled(what: string, close: () => Promise<void>): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.stderr.write(`${what}: ${signal}, ending live sessions and stopping\n`);
      void close().then(resolve, resolve);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

export const HOST_USAGE = `Usage: phonelease host --store postgres://USER@HOST:PORT/DB [--phones N] [--boot-slots K]
  [--boot-ms MS] [--pool N] [--device virtual|emulator] [--preinstall PATH]... [--host ADDR]
  [--port 0] [--json]

Runs phones for the API nodes of a deployment that share the PostgreSQL store: registers
N phones of capacity, claims admitted sessions, boots and serves them (ADB through this
host's own gateway on ADDR), and heartbeats. A host silent for longer than
PHONELEASE_HOST_LOST_AFTER_MS (default 15000) is declared dead by the other nodes and its
sessions end as lost. --pool N keeps N temporary phones booted (within --phones) for the
sessions this host claims. --preinstall PATH (repeatable) installs that APK on every phone
of this host before it is handed out. With --json, prints one line
{"host":"<id>","url":"http://..."} once registered; logs go to stderr.`;

export async function runHostCommand(argv: string[]): Promise<void> {
  const values = parseCommand('host', HOST_USAGE, argv, {
    store: { type: 'string' },
    host: { type: 'string' },
    port: { type: 'string' },
    phones: { type: 'string' },
    'boot-slots': { type: 'string' },
    'boot-ms': { type: 'string' },
    pool: { type: 'string' },
    device: { type: 'string' },
    preinstall: { type: 'string', multiple: true },
  });
  if (!values) return;
  if (values.store === undefined)
    throw new UsageError(
      `host needs --store postgres://USER@HOST:PORT/DB, the deployment's database\n\n${usageHint('host', HOST_USAGE)}`,
    );
  const device = values.device ?? 'virtual';
  if (device !== 'virtual' && device !== 'emulator')
    throw new UsageError(`--device must be virtual or emulator (got "${device}")`);
  const pool = int('pool', values.pool, 0, 0);
  const lostAfter = process.env.PHONELEASE_HOST_LOST_AFTER_MS;
  if (lostAfter !== undefined && !/^\d+$/.test(lostAfter))
    throw new UsageError(
      `PHONELEASE_HOST_LOST_AFTER_MS must be a number of milliseconds (got "${lostAfter}")`,
    );
  const log = createLogger({ level: levelFromEnv() });
  const backend = await loadBackend(
    device,
    int('boot-ms', values['boot-ms'], SERVER_DEFAULTS.bootMs, 0),
    log,
    { preinstall: values.preinstall ?? [] },
  );
  const phones =
    values.phones === undefined
      ? await defaultPhones(backend, log)
      : int('phones', values.phones, SERVER_DEFAULTS.phones, 1);
  if (values.phones !== undefined && pool > phones)
    throw new UsageError(
      `--pool ${pool} is more than --phones ${phones}: pooled phones count toward --phones; lower --pool or raise --phones`,
    );
  if (pool > phones)
    log.warn(`--pool ${pool} is more than this host's ${phones} phones; the pool keeps ${phones}`);
  const { startDeviceHost } = await import('./distributed/device-host.js');
  const host = await startDeviceHost({
    store: storeUrl(values.store),
    host: values.host ?? SERVER_DEFAULTS.host,
    port: int('port', values.port, 0, 0),
    phones,
    bootSlots: int('boot-slots', values['boot-slots'], SERVER_DEFAULTS.bootSlots, 1),
    pool: Math.min(pool, phones),
    backend,
    ...(lostAfter !== undefined ? { lostAfterMs: Number(lostAfter) } : {}),
    log,
  });
  announce(
    values.json,
    { host: host.id, url: host.url },
    `phonelease device host ${host.id} serving on ${host.url}`,
  );
  await untilSignalled('phonelease host', () => host.close());
}

export const ACCOUNTS_USAGE = `Usage: phonelease accounts create [--data DIR | --store postgres://USER@HOST:PORT/DB]
  [--email E] [--name N] [--balance-cents N] [--price-cents-per-minute N] [--session-limit N]
  [--billing-mode metered|disabled] [--no-rent] [--operator] [--json]

Creates an account on the server's data directory (also while the server runs), or in the
shared PostgreSQL store of API nodes and device hosts (--store), and prints its uid, its
profile id and its first API key (shown only now). --operator lets the account see the
dashboard's Fleet page. With --json, prints exactly one line
{"uid":"...","key":"pck_...","profile_id":"..."} instead.`;

export async function runAccountsCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub === '--help' || sub === '-h' || sub === 'help') {
    console.log(ACCOUNTS_USAGE);
    return;
  }
  if (sub !== 'create') {
    throw new UsageError(
      `${sub === undefined ? 'accounts needs a command' : sub.startsWith('-') ? `unknown option ${sub}` : `unknown accounts command "${sub}"`} (its one command is create)\n\n${usageHint('accounts create', ACCOUNTS_USAGE)}`,
    );
  }
  const values = parseCommand('accounts create', ACCOUNTS_USAGE, rest, {
    data: { type: 'string' },
    store: { type: 'string' },
    email: { type: 'string' },
    name: { type: 'string' },
    'balance-cents': { type: 'string' },
    'price-cents-per-minute': { type: 'string' },
    'session-limit': { type: 'string' },
    'billing-mode': { type: 'string' },
    'no-rent': { type: 'boolean', default: false },
    operator: { type: 'boolean', default: false },
  });
  if (!values) return;
  const mode = values['billing-mode'] ?? ACCOUNT_DEFAULTS.billingMode;
  if (mode !== 'metered' && mode !== 'disabled')
    throw new UsageError('--billing-mode must be metered or disabled');
  if (values.store !== undefined && values.data !== undefined)
    throw new UsageError('--store and --data name two different stores; give one of them');
  const opts: NewAccount = {
    ...(values.email !== undefined ? { email: values.email } : {}),
    ...(values.name !== undefined ? { name: values.name } : {}),
    balanceCents: int('balance-cents', values['balance-cents'], ACCOUNT_DEFAULTS.balanceCents, 0),
    priceCentsPerMinute: int(
      'price-cents-per-minute',
      values['price-cents-per-minute'],
      ACCOUNT_DEFAULTS.priceCentsPerMinute,
      0,
    ),
    sessionLimit: int('session-limit', values['session-limit'], ACCOUNT_DEFAULTS.sessionLimit, 0),
    billingMode: mode,
    canRent: !values['no-rent'],
    operator: values.operator,
  };
  const created = await withStore(values, {
    async postgres(db) {
      const { insertAccount } = await import('./stores/postgres/pool.js');
      const rows = newAccountRows(systemClock, cryptoRandom, opts);
      await insertAccount(db, rows);
      return rows.created;
    },
    sqlite: (store) => createAccount(store, systemClock, cryptoRandom, opts),
  });
  if (values.json) process.stdout.write(JSON.stringify(created) + '\n');
  else {
    process.stdout.write(
      `Created account ${created.uid}\n  profile: ${created.profile_id}\n  API key (shown only now): ${created.key}\n`,
    );
  }
}

export const DASHBOARD_USAGE = `Usage: phonelease dashboard [--data DIR | --store postgres://USER@HOST:PORT/DB]
  (--email E | --uid U) [--base-url URL] [--json]

Prints a one-time sign-in link to the dashboard for that account:
<base>/dashboard/sign-in#token=... (default base http://127.0.0.1:8080). The link works
once, for 10 minutes, through a server running on the same data directory or store; the
token is in the URL's fragment, so no server log or Referer ever holds it. With --json,
prints exactly one line {"url":"..."}.`;

export async function runDashboardCommand(argv: string[]): Promise<void> {
  const values = parseCommand('dashboard', DASHBOARD_USAGE, argv, {
    data: { type: 'string' },
    store: { type: 'string' },
    email: { type: 'string' },
    uid: { type: 'string' },
    'base-url': { type: 'string' },
  });
  if (!values) return;
  if (values.store !== undefined && values.data !== undefined)
    throw new UsageError('--store and --data name two different stores; give one of them');
  if ((values.email === undefined) === (values.uid === undefined))
    throw new UsageError(
      `dashboard needs the account: --email E or --uid U (one of them)\n\n${usageHint('dashboard', DASHBOARD_USAGE)}`,
    );
  const base = values['base-url'] ?? `http://${SERVER_DEFAULTS.host}:8080`;
  if (!/^https?:\/\/[^\s/]+(\/[^\s#?]*)?$/.test(base))
    throw new UsageError(
      `--base-url must be the server's URL, such as https://phones.example.com (got "${base}")`,
    );
  const ref: AccountRef = values.uid !== undefined ? { uid: values.uid } : { email: values.email! };
  const url = await withStore(values, {
    async postgres(db) {
      const { PostgresDashboardStore } = await import('./stores/postgres/dashboard.js');
      return createSignInLink(new PostgresDashboardStore(db), systemClock, cryptoRandom, ref, base);
    },
    sqlite: (store) =>
      createSignInLink(new SqliteDashboardStore(store), systemClock, cryptoRandom, ref, base),
  });
  if (values.json) process.stdout.write(JSON.stringify({ url }) + '\n');
  else process.stdout.write(`Sign in to the dashboard (the link works once, for 10 minutes):\n  ${url}\n`);
}

/**
 * Runs one of `use` on the store --store or --data names, then closes it: PostgreSQL (loaded
 * only then, and migrated first) or the data directory's SQLite store.
 */
async function withStore<T>(
  values: { store?: string; data?: string },
  use: { postgres(db: Db): Promise<T>; sqlite(store: SqliteStore): T | Promise<T> },
): Promise<T> {
  if (values.store !== undefined) {
    const url = storeUrl(values.store);
    const { migratePg, openPool } = await import('./stores/postgres/pool.js');
    const db = openPool(url, createLogger({ level: 'warn' }), 1);
    try {
      await migratePg(db);
      return await use.postgres(db);
    } finally {
      await db.end();
    }
  }
  const store = new SqliteStore(openDatabase(values.data ?? defaultDataDir()));
  try {
    return await use.sqlite(store);
  } finally {
    store.close();
  }
}

/** A --store value: a PostgreSQL URL (the only shared store there is). */
function storeUrl(value: string): string {
  if (!/^postgres(ql)?:\/\/[^\s]+$/.test(value))
    throw new UsageError(
      `--store must be a PostgreSQL URL such as postgres://USER@HOST:5432/DB (got "${value.replace(/:[^:@/]*@/, ':***@')}")`,
    );
  return value;
}
