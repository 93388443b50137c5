/**
 * startApiNode(): an API node of a deployment whose state is in PostgreSQL. Any number of
 * them serve the whole API behind any load balancer; they keep nothing of their own that a
 * client depends on (view grants are HMACs under the deployment's shared secret). With
 * `phones` > 0 the node also runs a device host in the same process.
 */
import type { AddressInfo } from 'node:net';
import { baseApp } from '../api/app.js';
import { systemClock, type Clock } from '../clock.js';
import type { DeviceBackend } from '../devices/types.js';
import { apiError, type ApiError } from '../errors.js';
import type { Logger } from '../log.js';
import { Grants } from '../runtime/grants.js';
import { cryptoRandom, type RandomSource } from '../secrets.js';
import {
  StoreUnavailableError,
  isTransient,
  migratePg,
  openPool,
  sharedSecret,
} from '../stores/postgres/pool.js';
import { ERROR_CODES } from '../../src/api/schemas.js';
import { SharedAccounts, sharedApiRoutes } from './api-routes.js';
import { startDeviceHost, type RunningDeviceHost } from './device-host.js';
import { viewerPagesOf } from '../viewer/pages.js';
import { metricsRoutes } from '../api/metrics.js';
import { NodeSigner } from './node-auth.js';
import { ApiNodeMetrics } from './node-metrics.js';
import { SessionEvents } from './notifications.js';
import { deploymentViewers } from './viewer-proxy.js';
import { reap } from './shared-sessions.js';

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

/** A lost database is the caller's to retry: a 500 that says so (retryable, receipts resolve creates). */
function storeErrors(err: Error): ApiError | undefined {
  if (err instanceof StoreUnavailableError || isTransient(err)) {
    return apiError(
      ERROR_CODES.internal,
      'The shared store (PostgreSQL) is unavailable; retry shortly (a create with an Idempotency-Key is resolved through GET /sessions/requests/{key}).',
    );
  }
  return undefined;
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
  // Signed viewer URLs: the load balancer may send a viewer page to any node.
  const grants = new Grants(secret, clock, random, true);
  const signer = new NodeSigner(secret);
  const wildcard = listenHost === '0.0.0.0' || listenHost === '::';
  const publicHost = wildcard ? '127.0.0.1' : listenHost;
  let url = '';
  // Long polls and DELETE wake on the commits that change their session, on any node.
  const events = new SessionEvents(options.store, log);
  const { app } = baseApp({ directory: new SharedAccounts(db), grants }, log, storeErrors);
  const metrics = options.metrics ? new ApiNodeMetrics(db) : undefined;
  // Before the routes: the hook then times every one of them.
  metrics?.observe(app);
  await app.register(sharedApiRoutes, {
    deps: {
      db,
      grants,
      signer,
      clock,
      random,
      log,
      // Behind a load balancer the URLs handed out name the address the client used.
      publicUrl: (requestHost) => (wildcard && requestHost ? `http://${requestHost}` : url),
      genericDevice: options.backend?.name === 'emulator' ? 'Android emulator' : 'Virtual Android phone',
      events,
      ...(metrics ? { metrics } : {}),
    },
  });
  if (metrics) await app.register(metricsRoutes, { metrics });

  await app.register(viewerPagesOf, {
    source: deploymentViewers({ db, grants, signer, log }),
    dashboardOrigin: options.dashboardOrigin ?? null,
  });

  let ownHost: RunningDeviceHost | null = null;
  let reaping: NodeJS.Timeout | null = null;
  try {
    await events.start();
    await app.listen({ host: listenHost, port: options.port ?? 0 });
    const { port } = app.server.address() as AddressInfo;
    url = `http://${publicHost.includes(':') ? `[${publicHost}]` : publicHost}:${port}`;
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
    await events.close();
    await db.end().catch(() => undefined);
    throw err;
  }
  // Dead hosts and passed deadlines are noticed by every node; each is handled once.
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
    ...(metrics ? { metrics: `${url}/metrics` } : {}),
  });

  let closing: Promise<void> | null = null;
  return {
    url,
    close() {
      closing ??= (async () => {
        closed = true;
        if (reaping) clearTimeout(reaping);
        await ownHost?.close();
        await app.close();
        await events.close();
        await db.end();
      })();
      return closing;
    },
  };
}
