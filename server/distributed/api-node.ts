/**
 * An API node of a deployment whose state is in PostgreSQL: the phone-session API (the same
 * app as the single server's, buildApp) over the shared directory. Any number of them serve
 * the whole API behind any load balancer; they keep nothing of their own that a client
 * depends on (view grants and viewer tokens are HMACs under the deployment's shared secret).
 * With `phones` > 0 the node also runs a device host in the same process.
 *
 * buildApiNode(parts) builds it without a port (tests inject requests into its app);
 * startApiNode(options) opens the store, builds the node and listens.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../api/app.js';
import { systemClock, type Clock } from '../clock.js';
import type { DeviceBackend } from '../devices/types.js';
import { deploymentFleet } from '../fleet.js';
import { listenUrl, once, publicUrlOf } from '../listen.js';
import type { Logger } from '../log.js';
import { SessionChanges } from '../runtime/directory.js';
import { DashboardSessions } from '../runtime/dashboard-sessions.js';
import { Grants } from '../runtime/grants.js';
import { genericDevice } from '../runtime/runtime.js';
import { SharedDirectory } from '../runtime/shared-directory.js';
import { cryptoRandom, type RandomSource } from '../secrets.js';
import { Listener, SESSION_CHANNEL } from '../stores/postgres/notifications.js';
import { migratePg, openPool, sharedSecret, storeUnavailable, type Db } from '../stores/postgres/pool.js';
import { reap } from '../stores/postgres/sessions.js';
import { PostgresDashboardStore } from '../stores/postgres/dashboard.js';
import { readDeploymentState, readStartDurations } from '../stores/postgres/state.js';
import { PostgresStore } from '../stores/postgres/store.js';
import { startDeviceHost, type RunningDeviceHost } from './device-host.js';
import { HostPhones, NodeSigner } from './node-auth.js';
import { ApiNodeMetrics } from './node-metrics.js';
import { ViewerRelay } from './viewer-relay.js';

export interface ApiNodeOptions {
  /** PostgreSQL URL of the deployment. */
  store: string;
  host?: string;
  port?: number;
  /** Phones this node runs itself as a device host (default 0: none). */
  phones?: number;
  bootSlots?: number;
  /** Temporary phones kept booted among those phones (as a device host's --pool). */
  pool?: number;
  /** The backend of those phones (only with phones > 0). */
  backend?: DeviceBackend;
  log: Logger;
  clock?: Clock;
  random?: RandomSource;
  /** Origin allowed to embed the viewer pages (CSP frame-ancestors); null allows none. */
  dashboardOrigin?: string | null;
  /** How often this node looks for dead hosts and passed deadlines (default 1 s). */
  reapEveryMs?: number;
  /** Serve GET /metrics in the Prometheus text format, without an API key (default false). */
  metrics?: boolean;
}

export interface RunningApiNode {
  readonly url: string;
  close(): Promise<void>;
}

/** What an API node is built from: its options resolved, its open store, the deployment's secret. */
export type ApiNodeParts = Required<
  Pick<ApiNodeOptions, 'clock' | 'random' | 'log' | 'dashboardOrigin' | 'metrics'>
> & {
  /** The deployment's store: its URL (for the notification connection) and a pool on it. */
  storeUrl: string;
  db: Db;
  secret: Buffer;
  /** The base URL clients use (`requestHost`: the Host header of the request answered). */
  publicUrl(requestHost?: string): string;
  /** Display label of history records of sessions that never got a phone. */
  genericDevice: string;
};

/** An API node built: its app, and the connection that hears of the deployment's changes. */
export interface ApiNode {
  app: FastifyInstance;
  /** LISTENs for changes of sessions (long polls and DELETE wake on them; until then they poll). */
  changes: Listener;
}

export async function buildApiNode(parts: ApiNodeParts): Promise<ApiNode> {
  const { db, clock, random, log } = parts;
  // Signed viewer URLs: the load balancer may send a viewer page to any node.
  const grants = new Grants(parts.secret, clock, random, true);
  const signer = new NodeSigner(parts.secret);
  let changes: SessionChanges | null = null;
  const listener = new Listener({
    url: parts.storeUrl,
    channels: [SESSION_CHANNEL],
    onNotification: (_channel, sid) => changes?.wake(sid),
    // Whatever was announced while disconnected is lost: every wait reads again.
    onConnected: () => changes?.wakeAll(),
    log,
  });
  changes = new SessionChanges(listener);
  const directory = new SharedDirectory({
    store: new PostgresStore(db),
    phones: new HostPhones(signer, log),
    changes,
    clock,
    random,
  });
  const app = await buildApp({
    directory,
    grants,
    clock,
    log,
    publicUrl: parts.publicUrl,
    dashboardOrigin: parts.dashboardOrigin,
    genericDevice: parts.genericDevice,
    signIns: new DashboardSessions({
      store: new PostgresDashboardStore(db),
      secret: parts.secret,
      clock,
      random,
    }),
    fleet: async () => {
      // Starts of the last day: the store keeps every session, the figures are about now.
      const since = Math.floor(clock.now() / 1000) - 24 * 60 * 60;
      const [state, starts] = await Promise.all([readDeploymentState(db), readStartDurations(db, since)]);
      return deploymentFleet(state, starts);
    },
    streams: new ViewerRelay({ directory, grants, signer, log }),
    translate: storeUnavailable,
    ...(parts.metrics ? { metrics: new ApiNodeMetrics(db) } : {}),
  });
  return { app, changes: listener };
}

export async function startApiNode(options: ApiNodeOptions): Promise<RunningApiNode> {
  const { log } = options;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? cryptoRandom;
  const listenHost = options.host ?? '127.0.0.1';
  const db = openPool(options.store, log, 20);
  let secret: Buffer;
  try {
    await migratePg(db);
    secret = await sharedSecret(db, random);
  } catch (err) {
    await db.end().catch(() => undefined);
    throw err;
  }
  let url = '';
  const node = await buildApiNode({
    storeUrl: options.store,
    db,
    secret,
    clock,
    random,
    log,
    // Behind a load balancer the URLs handed out name the address the client used.
    publicUrl: publicUrlOf(listenHost, () => url),
    dashboardOrigin: options.dashboardOrigin ?? null,
    genericDevice: genericDevice(options.backend?.name ?? 'virtual'),
    metrics: options.metrics ?? false,
  });
  const { app } = node;

  let ownHost: RunningDeviceHost | null = null;
  try {
    await node.changes.start();
    url = await listenUrl(app, listenHost, options.port ?? 0);
    if ((options.phones ?? 0) > 0 && options.backend) {
      ownHost = await startDeviceHost({
        store: options.store,
        host: listenHost,
        phones: options.phones ?? 0,
        bootSlots: options.bootSlots ?? 4,
        pool: options.pool ?? 0,
        backend: options.backend,
        log: log.child({ role: 'host' }),
        clock,
        random,
      });
    }
  } catch (err) {
    await app.close().catch(() => undefined);
    await node.changes.close();
    await db.end().catch(() => undefined);
    throw err;
  }
  // Dead hosts and passed deadlines are noticed by every node; each is handled once.
  let reaping: NodeJS.Timeout | null = null;
  let reapFailures = 0;
  let closed = false;
  const reapLoop = () => {
    if (closed) return;
    reaping = setTimeout(
      () => {
        reap(db, clock.now(), log).then(
          () => {
            reapFailures = 0;
            reapLoop();
          },
          (err: unknown) => {
            reapFailures++;
            log.warn('could not look for dead hosts and deadlines; retrying', { error: String(err) });
            reapLoop();
          },
        );
      },
      Math.min(10_000, (options.reapEveryMs ?? 1000) * 2 ** reapFailures),
    );
  };
  reapLoop();
  log.info('phonelease API node listening', {
    url,
    own_phones: options.phones ?? 0,
    ...(options.metrics ? { metrics: `${url}/metrics` } : {}),
  });

  return {
    url,
    close: once(async () => {
      closed = true;
      if (reaping) clearTimeout(reaping);
      await ownHost?.close();
      await app.close();
      await node.changes.close();
      await db.end();
    }),
  };
}
