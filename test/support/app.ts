/**
 * The API built in-process with buildApp (no port) over a real store, runtime and virtual
 * phones, for tests that drive it with app.inject(): the same wiring as startServer, minus
 * the listeners, so a route test costs no socket.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp, type AppDeps } from '../../server/api/app.js';
import { systemClock, type Clock } from '../../server/clock.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import { createLogger } from '../../server/log.js';
import { wireSingleServer } from '../../server/main.js';
import { createAccount, type CreatedAccount, type NewAccount } from '../../server/runtime/accounts.js';
import type { Runtime } from '../../server/runtime/runtime.js';
import { FleetFigures } from '../../server/fleet.js';
import { DashboardSessions } from '../../server/runtime/dashboard-sessions.js';
import { cryptoRandom } from '../../server/secrets.js';
import { SqliteDashboardStore } from '../../server/stores/sqlite/dashboard.js';
import { openDatabase, SqliteStore } from '../../server/stores/sqlite/store.js';
import { RuntimeStreams, viewerTokenStreams } from '../../server/viewer/stream.js';

export interface InProcessApp {
  app: FastifyInstance;
  deps: AppDeps;
  runtime: Runtime;
  store: SqliteStore;
  account: CreatedAccount;
  createAccount(options?: NewAccount): CreatedAccount;
  /** app.inject with the account's key unless `auth` says otherwise (null: no credential). */
  call(options: InjectOptions & { auth?: string | null }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export async function buildTestApp(
  options: { clock?: Clock; bootMs?: number; phones?: number; account?: NewAccount } = {},
): Promise<InProcessApp> {
  const clock = options.clock ?? systemClock;
  const dataDir = mkdtempSync(join(tmpdir(), 'phonelease-app-'));
  const store = new SqliteStore(openDatabase(dataDir));
  const log = createLogger({ level: 'silent' });
  const backend = createVirtualBackend({ bootMs: options.bootMs ?? 0, host: '127.0.0.1' });
  const secret = cryptoRandom(32);
  const fleet = new FleetFigures();
  const { grants, runtime, directory } = wireSingleServer({
    store,
    backend,
    clock,
    random: cryptoRandom,
    log,
    dataDir,
    secret,
    phones: options.phones ?? 20,
    bootSlots: 4,
    observer: fleet,
  });
  const url = 'http://127.0.0.1:9';
  const deps: AppDeps = {
    directory,
    grants,
    clock,
    log,
    publicUrl: () => url,
    adbEndpoint: () => ({ host: '127.0.0.1', port: 9 }),
    dashboardOrigin: null,
    genericDevice: 'Virtual Android phone',
    signIns: new DashboardSessions({
      store: new SqliteDashboardStore(store),
      secret,
      clock,
      random: cryptoRandom,
    }),
    fleet: () => Promise.resolve(fleet.view(runtime.stats())),
    streams: new RuntimeStreams({ runtime, clock, log, authorize: viewerTokenStreams(grants) }),
  };
  const app = await buildApp(deps);
  directory.recover();
  const newAccount = (o: NewAccount = {}) =>
    createAccount(store, clock, cryptoRandom, { billingMode: 'disabled', ...o });
  const account = newAccount(options.account);
  return {
    app,
    deps,
    runtime,
    store,
    account,
    createAccount: newAccount,
    call: ({ auth, ...inject }) => {
      const key = auth === undefined ? account.key : auth;
      return app.inject({
        ...inject,
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...inject.headers },
      });
    },
    async close() {
      await directory.close();
      await app.close();
      await backend.close();
      store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
