/**
 * A device host: runs phones for a deployment whose state is in PostgreSQL, with the same
 * runtime as the single server (server/runtime/runtime.ts). Sessions reach its runtime from
 * the shared queue (HostLoop: it claims what it can serve, heartbeats, follows what other
 * nodes did to its sessions); each move of their lifecycle is recorded in the shared store
 * (PostgresLedger). With a pool it keeps temporary phones booted ahead of demand, publishes
 * how many are warm, and a host that would cold-boot a temporary session leaves it, for its
 * first seconds, to a host that has a warm one.
 *
 * Clients reach its phones directly: ADB through this host's own gateway (the session's adb
 * object names it), and frames, input, apps and viewer streams through API nodes, which ask
 * here signed (node-auth.ts); its HTTP side answers nobody else.
 *
 * buildDeviceHost(parts) builds it without a port; startDeviceHost(options) opens the store,
 * builds the host, listens and joins the deployment.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ERROR_CODES } from '../../src/api/schemas.js';
import { AdbGateway } from '../adb-gateway.js';
import { baseApp } from '../api/app.js';
import { SidParams } from '../api/common.js';
import { systemClock, type Clock } from '../clock.js';
import type { DeviceBackend } from '../devices/types.js';
import { isWildcard, listenUrl, once } from '../listen.js';
import { apiError, notFound } from '../errors.js';
import type { Logger } from '../log.js';
import { HOST_DEFAULTS, HostLoop } from '../runtime/host-loop.js';
import { ProfileSaves } from '../runtime/profile-saves.js';
import { Runtime, type LiveSession } from '../runtime/runtime.js';
import { cryptoRandom, type RandomSource } from '../secrets.js';
import { PostgresHosts } from '../stores/postgres/hosts.js';
import { PostgresLedger } from '../stores/postgres/ledger.js';
import { HOST_CHANNEL, Listener, QUEUE_CHANNEL } from '../stores/postgres/notifications.js';
import { migratePg, openPool, sharedSecret, type Db } from '../stores/postgres/pool.js';
import { RuntimeStreams } from '../viewer/stream.js';
import { NODE_HEADER, NodeSigner } from './node-auth.js';
import { HOST_STREAM_PATH } from './viewer-relay.js';

export interface DeviceHostOptions {
  /** PostgreSQL URL of the deployment. */
  store: string;
  /** Interface the host's HTTP server and ADB gateway listen on (default 127.0.0.1). */
  host?: string;
  port?: number;
  /** Phones this host runs at once (its share of the deployment's capacity). */
  phones: number;
  bootSlots: number;
  /** Temporary phones kept booted ahead of demand, within `phones` (default 0: none). */
  pool?: number;
  backend: DeviceBackend;
  /** Profile saves of the sessions this host ran (default: a temp dir removed on close). */
  dataDir?: string;
  /** Declared to the deployment: silent for longer than this, the host is dead (default 15 s). */
  lostAfterMs?: number;
  /** How often it heartbeats, claims and follows (default 500 ms). */
  tickMs?: number;
  log: Logger;
  clock?: Clock;
  random?: RandomSource;
}

export interface RunningDeviceHost {
  readonly id: string;
  readonly url: string;
  /** Ends its sessions (`lost`: their phones go with the host) and leaves the deployment. */
  close(): Promise<void>;
}

/** What a device host is built from: its options resolved, its open store and the deployment's secret. */
export type DeviceHostParts = Required<Omit<DeviceHostOptions, 'store' | 'host' | 'port'>> & {
  /** The deployment's store: its URL (for the notification connection) and a pool on it. */
  storeUrl: string;
  db: Db;
  secret: Buffer;
};

/** A device host built: its runtime and loop, its HTTP side and gateway (not listening), and its wake-ups. */
export interface DeviceHost {
  runtime: Runtime;
  loop: HostLoop;
  app: FastifyInstance;
  gateway: AdbGateway;
  /** LISTENs for admitted sessions to claim and for changes to its own. */
  changes: Listener;
}

/** Input an API node passes on (already checked against its route's schema). */
const InputBody = Type.Union([
  Type.Object({
    type: Type.Literal('tap'),
    x: Type.Integer({ minimum: 0 }),
    y: Type.Integer({ minimum: 0 }),
  }),
  Type.Object({
    type: Type.Literal('key'),
    key: Type.Union([Type.Literal('home'), Type.Literal('back'), Type.Literal('enter'), Type.Literal('del')]),
  }),
]);

export async function buildDeviceHost(parts: DeviceHostParts): Promise<DeviceHost> {
  const { db, clock, random, log } = parts;
  const signer = new NodeSigner(parts.secret);
  let loop: HostLoop | null = null;
  const hostId = () => loop?.id ?? '';
  const runtime = new Runtime({
    ledger: new PostgresLedger(db, hostId, () => clock.now(), log),
    backend: parts.backend,
    saves: new ProfileSaves(join(parts.dataDir, 'profiles')),
    clock,
    random,
    log,
    phones: parts.phones,
    bootSlots: parts.bootSlots,
    pool: parts.pool,
    // Refills come after each claim: a free slot then is one no queued session could use.
    refill: 'on-request',
    // A phone stopped or a boot settled: there may be room to claim more now.
    freed: () => loop?.poke(),
    logContext: () => ({ host: hostId() }),
  });
  loop = new HostLoop({
    runtime,
    store: new PostgresHosts(db, log),
    clock,
    random,
    log,
    device: parts.backend.name,
    lostAfterMs: parts.lostAfterMs,
    tickMs: parts.tickMs,
  });
  const gateway = new AdbGateway(runtime, log, clock);

  // The host's HTTP side: frames, input and apps for API nodes, each request signed.
  const { app } = baseApp(
    { directory: { authenticate: () => null }, grants: { viewGrantSession: () => null } },
    log,
  );
  app.addHook('onRequest', (req, _reply, done) => {
    if (req.routeOptions.url === '/healthz') return done();
    const path = req.url.split('?')[0] ?? '';
    if (!signer.verify(req.headers[NODE_HEADER] as string | undefined, req.method, path)) {
      return done(
        apiError(
          ERROR_CODES.unauthenticated,
          'Only the API nodes of this deployment may call a device host.',
        ),
      );
    }
    done();
  });
  // Live viewer streams, relayed here by API nodes (viewer-relay.ts), which checked the
  // page's origin and its viewer token and signed the mode and expiry they decided.
  const streams = new RuntimeStreams({
    runtime,
    clock,
    log,
    authorize: (req, path) => {
      const m = HOST_STREAM_PATH.exec(path);
      if (!m) return null;
      const header = req.headers[NODE_HEADER];
      if (!signer.verify(typeof header === 'string' ? header : undefined, 'GET', path))
        return { refuse: 401, text: 'Unauthorized' };
      return { sid: m[1]!, mode: m[2] === 'owner' ? 'owner' : 'view', expiresAt: Number(m[3]) };
    },
  });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!streams.handleUpgrade(req, socket, head)) socket.destroy();
  });
  app.addHook('onClose', async () => streams.close());

  const held = (sid: string): LiveSession => {
    const live = runtime.get(sid);
    if (!live) throw notFound();
    return live;
  };
  app.get('/healthz', { config: { auth: 'public' } }, async () => ({
    host: hostId(),
    phones: runtime.size,
    pool: runtime.stats().pool,
  }));
  // The signature checked above is their authentication.
  const internal = { config: { auth: 'public' }, schema: { params: SidParams } } as const;
  app.get('/internal/sessions/:sid/frame.png', internal, async (req, reply) =>
    reply.header('content-type', 'image/png').send(await runtime.frame(held(req.params.sid))),
  );
  app.post(
    '/internal/sessions/:sid/input',
    { ...internal, schema: { params: SidParams, body: InputBody } },
    async (req) => {
      await runtime.input(held(req.params.sid), req.body);
      return { ok: true };
    },
  );
  app.get('/internal/sessions/:sid/apps', internal, async (req) =>
    runtime.phone(held(req.params.sid)).apps(),
  );
  app.post('/internal/sessions/:sid/adb/revoke', internal, async (req) => {
    // Applied now, so that no relay outlives the API node's answer (the loop applies the
    // stored revocation too, for a node that could not ask).
    const live = runtime.get(req.params.sid);
    if (live?.row.adb_enabled) runtime.revokeAdb(live);
    return { revoked: true };
  });

  // Wake-ups: a session admitted anywhere (claim it), or a change to one of ours.
  const changes = new Listener({
    url: parts.storeUrl,
    channels: [QUEUE_CHANNEL, HOST_CHANNEL],
    onNotification: (channel, payload) => {
      if (channel === QUEUE_CHANNEL || payload === hostId()) loop?.poke();
    },
    onConnected: () => loop?.poke(),
    log,
  });
  return { runtime, loop, app, gateway, changes };
}

/** An address other machines reach this one by, for a host listening on a wildcard. */
function reachableAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

export async function startDeviceHost(options: DeviceHostOptions): Promise<RunningDeviceHost> {
  const { log } = options;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? cryptoRandom;
  const listenHost = options.host ?? '127.0.0.1';
  const ephemeral = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'phonelease-host-'));
  const db = openPool(options.store, log, 10);
  const cleanupStart = async () => {
    await options.backend.close().catch(() => undefined);
    await db.end().catch(() => undefined);
    if (ephemeral) rmSync(dataDir, { recursive: true, force: true });
  };
  let secret: Buffer;
  try {
    await migratePg(db);
    secret = await sharedSecret(db, random);
  } catch (err) {
    await cleanupStart();
    throw err;
  }
  const host = await buildDeviceHost({
    storeUrl: options.store,
    db,
    secret,
    backend: options.backend,
    dataDir,
    phones: options.phones,
    bootSlots: options.bootSlots,
    pool: Math.min(options.pool ?? 0, options.phones),
    lostAfterMs: options.lostAfterMs ?? HOST_DEFAULTS.lostAfterMs,
    tickMs: options.tickMs ?? HOST_DEFAULTS.tickMs,
    clock,
    random,
    log,
  });
  const { app, gateway, loop, changes } = host;
  let url = '';
  try {
    const adbPort = await gateway.listen(listenHost, 0);
    const advertised = isWildcard(listenHost) ? reachableAddress() : listenHost;
    url = await listenUrl(app, listenHost, options.port ?? 0, advertised);
    await loop.register({ url, adbHost: advertised, adbPort });
    await changes.start();
    loop.start();
    log.info('device host registered', {
      host: loop.id,
      url,
      adb_gateway_port: adbPort,
      phones: options.phones,
      pool: Math.min(options.pool ?? 0, options.phones),
    });
  } catch (err) {
    await changes.close();
    await app.close().catch(() => undefined);
    await gateway.close().catch(() => undefined);
    await cleanupStart();
    throw err;
  }

  return {
    id: loop.id,
    url,
    close: once(async () => {
      await loop.close();
      await changes.close();
      await app.close();
      await gateway.close();
      await cleanupStart();
    }),
  };
}
