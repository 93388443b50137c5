/**
 * The phone-session API of an API node: the same paths, schemas, refusals and renderings as
 * the embedded server's routes (server/api/*), answered from the shared store. What needs
 * the phone itself (its frame, operations) is forwarded, signed, to the device host that
 * holds it; ADB goes straight to that host's gateway, which the session's adb object names.
 *
 * The embedded routes read a synchronous in-process runtime (a session read costs no I/O);
 * these await PostgreSQL. Both share everything below the route: schemas, the admission
 * decision, the error registry, the views.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  Account,
  AdbAccess,
  ApiKeyMeta,
  AppEntry,
  CreateKeyBody,
  CreatedKey,
  ERROR_CODES,
  HistoryPage,
  HistoryPageQuery,
  HistoryRecord,
  OpDone,
  PHONE_OPS,
  ProfileReset,
  Release,
  Revoked,
  ScreenGeometry,
  Session,
  TapBody,
  ViewerCapability,
  type PhoneOp,
} from '../../src/api/schemas.js';
import { ApiError, apiError, notFound, notReady, profileHeld } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { newApiKey } from '../runtime/accounts.js';
import type { Grants, ViewerMode } from '../runtime/grants.js';
import type { SessionSnapshot as ViewedSession } from '../runtime/directory.js';
import { accountView, historyView, receiptView, sessionView, type ViewContext } from '../api/views.js';
import { RELEASE_WAIT_MS } from '../runtime/rules.js';
import { keyHint, sha256Hex, type RandomSource } from '../secrets.js';
import { tx, type Db } from '../stores/postgres/pool.js';
import type { AccountRow, KeyRow, ProfileRow, ReceiptRow } from '../runtime/rows.js';
import { viewerCapability } from '../api/access.js';
import { ownerUid, readCaller } from '../api/auth.js';
import { PRIVATE_HEADERS, REFUSALS, SidParams } from '../api/common.js';
import { HISTORY_LIMIT, PAGE_DEFAULT, decodeCursor, encodeCursor, type Cursor } from '../api/history.js';
import { partMessages } from '../api/refusals.js';
import {
  createSessionSpec,
  noReceipt,
  readSessionSpec,
  receiptSpec,
  revokeKeySpec,
  unknownOp,
  unknownOpSpec,
} from '../api/route-specs.js';
import type { Caller } from '../api/types.js';
import { callHost, type NodeSigner } from './node-auth.js';
import type { ApiNodeMetrics } from './node-metrics.js';
import { HOST_CHANNEL, type SessionEvents } from './notifications.js';
import { estimateEta } from './shared-eta.js';
import { admit, count, endSession, one, type SessionRecord } from './shared-sessions.js';

export interface SharedApiDeps {
  db: Db;
  grants: Grants;
  signer: NodeSigner;
  clock: Clock;
  random: RandomSource;
  log: Logger;
  /** The base URL clients use (`requestHost` as for the embedded server). */
  publicUrl(requestHost?: string): string;
  /** Display label of sessions that never got a phone. */
  genericDevice: string;
  /** Wake-ups on session changes (long polls and DELETE wait on them). */
  events: SessionEvents;
  /** Told what each create came to (--metrics); optional. */
  metrics?: Pick<ApiNodeMetrics, 'admission'>;
}

/** A session with the host it runs on (null while queued). */
export type PlacedSession = SessionRecord & {
  host_url: string | null;
  adb_host: string | null;
  adb_port: number | null;
  typical_boot_ms: number;
  /** Unclaimed, and a live host's boot slot is free for it: a host claims it at once. */
  slot_free: boolean;
  /** Computed for provisioning sessions before they are shown (shared-eta.ts). */
  eta_seconds?: number;
};

/**
 * eta_seconds: as estimateEta computed it (the single server's queue model over the live
 * hosts); for a view it did not see, a typical boot once a host has the session, one boot's
 * wait more while it is queued (a typical remaining time, not a promise, as the contract says).
 */
function eta(live: ViewedSession): number | undefined {
  if (live.location === null) return undefined;
  const row = live.row as PlacedSession;
  if (row.eta_seconds !== undefined) return row.eta_seconds;
  const typicalMs = row.typical_boot_ms;
  return Math.max(1, Math.ceil(((live.location === 'queued' ? 2 : 1) * typicalMs) / 1000));
}

/** What a boot takes on the live hosts, on average (for sessions no host has claimed yet). */
const TYPICAL_BOOT = `coalesce((SELECT avg(typical_boot_ms) FROM hosts WHERE state = 'live'), 1000)`;
/**
 * Whether an unclaimed session has a boot slot waiting for it: the unclaimed sessions up to
 * it in queue order fit in what the live hosts can start now, each host counting the boot
 * slots its claimed boots leave and no more than its phones left. A profile whose save is on
 * a live host waits for that host alone (the claim brings it there).
 */
const SLOT_FREE = `CASE WHEN s.state = 'provisioning' AND s.host_id IS NULL THEN
  (SELECT count(*) FROM sessions q WHERE q.done = 0 AND q.state = 'provisioning' AND q.host_id IS NULL AND q.seq <= s.seq)
  <= (SELECT coalesce(sum(GREATEST(0, LEAST(
        h.boot_slots - (SELECT count(*) FROM sessions b WHERE b.host_id = h.id AND b.done = 0 AND b.state = 'provisioning'),
        h.phones - (SELECT count(*) FROM sessions b WHERE b.host_id = h.id AND b.done = 0)))), 0)
      FROM hosts h WHERE h.state = 'live'
       AND h.id = coalesce((SELECT p.saved_host FROM profiles p JOIN hosts ph ON ph.id = p.saved_host
                            WHERE p.id = s.profile_id AND p.state = 'stored' AND ph.state = 'live'), h.id))
  ELSE false END`;
/** A session with its host's endpoints, and what a boot takes there (or anywhere, while queued). */
const PLACED = `SELECT s.*, h.url AS host_url, h.adb_host, h.adb_port,
  coalesce(h.typical_boot_ms, ${TYPICAL_BOOT}) AS typical_boot_ms, ${SLOT_FREE} AS slot_free
  FROM sessions s LEFT JOIN hosts h ON h.id = s.host_id`;

export function viewed(row: PlacedSession): ViewedSession {
  return {
    row,
    activityMs: row.last * 1000,
    // As the contract defines them: queued only while every boot slot is busy. A session a
    // host has not claimed yet but will at once (a slot is free) is already booting.
    location:
      row.state === 'provisioning' ? (row.host_id === null && !row.slot_free ? 'queued' : 'booting') : null,
    startupSource: row.startup_source,
    ...(row.adb_host !== null && row.adb_port !== null
      ? { adbEndpoint: { host: row.adb_host, port: row.adb_port } }
      : {}),
  };
}

/** Resolves account keys over the shared store: every lookup asks it, so a revocation holds on every node at once. */
export class SharedAccounts {
  constructor(private readonly db: Db) {}

  async authenticate(rawKey: string): Promise<string | null> {
    const hash = sha256Hex(rawKey);
    const row = await one<KeyRow>(this.db, 'SELECT * FROM api_keys WHERE key_hash = $1', [hash]);
    return row && row.revoked === null ? row.uid : null;
  }
}

export const sharedApiRoutes: FastifyPluginAsyncTypebox<{ deps: SharedApiDeps }> = async (app, { deps }) => {
  const { db, clock, events } = deps;
  const nowSec = () => Math.floor(clock.now() / 1000);

  const context = (req: FastifyRequest): ViewContext => {
    const base = deps.publicUrl(req.headers.host);
    return {
      eta,
      nowMs: clock.now(),
      watchUrl: (sid) => `${base}/watch/${sid}?token=${deps.grants.viewGrant(sid)}`,
      adbEndpoint: null,
    };
  };

  /** The live session `sid` as the caller may see it (the same 404 as an unknown id otherwise). */
  const sessionFor = async (
    caller: Exclude<Caller, { kind: 'public' }>,
    sid: string,
  ): Promise<PlacedSession> => {
    const row = await one<PlacedSession>(db, `${PLACED} WHERE s.id = $1 AND s.done = 0`, [sid]);
    if (!row || (caller.kind === 'owner' && row.uid !== caller.uid)) throw notFound();
    return row;
  };
  const owned = (req: FastifyRequest, sid: string) => sessionFor({ kind: 'owner', uid: ownerUid(req) }, sid);

  /** idle_s counts from the last API activity; recorded at most once a second per session. */
  const touch = async (row: PlacedSession): Promise<PlacedSession> => {
    const now = nowSec();
    if (row.last < now) {
      await db.query('UPDATE sessions SET last = $2 WHERE id = $1 AND last < $2', [row.id, now]);
      row.last = now;
    }
    return row;
  };

  const ready = (row: PlacedSession): string => {
    if (row.state !== 'ready' || row.host_url === null) throw notReady(row.state, row.id);
    return row.host_url;
  };

  /** Forwards a request about a ready session's phone to its host, signed; answers with the host's answer. */
  const forward = async (
    reply: FastifyReply,
    row: PlacedSession,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<FastifyReply> => {
    const answer = await callHost(deps.signer, deps.log, row.id, ready(row), method, path, body);
    return (
      reply
        .code(answer.status)
        .headers({ 'content-type': answer.contentType, ...PRIVATE_HEADERS })
        // A Buffer is sent as it came: the host's JSON or PNG, not serialised again.
        .send(answer.payload)
    );
  };

  // ---------------------------------------------------------------------------------
  // Sessions

  app.post('/sessions', createSessionSpec, async (req, reply) => {
    const { row, outcome } = await admit(db, {
      uid: ownerUid(req),
      body: req.body ?? {},
      requestKey: req.headers['idempotency-key'] ?? null,
      nowMs: clock.now(),
      random: deps.random,
    }).catch((err: unknown) => {
      if (err instanceof ApiError) deps.metrics?.admission({ refused: err.code });
      throw err;
    });
    deps.metrics?.admission(outcome);
    // As stored now, with its host: a replay of a session that is ready names its gateway.
    const placed = await one<PlacedSession>(db, `${PLACED} WHERE s.id = $1`, [row.id]);
    if (!placed) throw notFound();
    await estimateEta(db, [placed], clock.now());
    // Sessions carry secrets (watch_url, the ADB unlock code): no cache keeps them.
    return reply
      .code(202)
      .headers(PRIVATE_HEADERS)
      .send(sessionView(viewed(placed), context(req), { owner: true }));
  });

  app.get(
    '/sessions',
    { config: { auth: 'owner' }, schema: { response: { 200: Type.Array(Session), ...REFUSALS } } },
    async (req, reply) => {
      reply.headers(PRIVATE_HEADERS);
      const rows = (
        await db.query<PlacedSession>(`${PLACED} WHERE s.uid = $1 AND s.done = 0 ORDER BY s.seq`, [
          ownerUid(req),
        ])
      ).rows;
      await estimateEta(db, rows, clock.now());
      const c = context(req);
      return rows.map((r) => sessionView(viewed(r), c, { owner: true }));
    },
  );

  app.get('/sessions/:sid', readSessionSpec, async (req, reply) => {
    const caller = readCaller(req);
    reply.headers(PRIVATE_HEADERS);
    let row = await touch(await sessionFor(caller, req.params.sid));
    const wait = req.query.wait ?? 0;
    const transitional =
      row.state === 'provisioning' || (row.state === 'closing' && row.cleanup_status !== 'complete');
    if (wait > 0 && transitional) {
      // The long poll over the shared store: re-read whenever the session's change is
      // announced (notifications.ts), until state, placement or cleanup changes.
      const snapshot = (r: PlacedSession) => `${r.state}/${r.host_id}/${r.cleanup_status}/${r.done}`;
      const before = snapshot(row);
      const until = clock.now() + wait * 1000;
      let gone = false;
      req.raw.once('close', () => (gone = true));
      while (!gone && clock.now() < until) {
        // Registered before the read: a change committed after it wakes this wait.
        const changed = events.next(row.id, until - clock.now());
        const next = await one<PlacedSession>(db, `${PLACED} WHERE s.id = $1`, [row.id]);
        if (!next) break;
        row = next;
        if (snapshot(row) !== before) break;
        await changed;
      }
    }
    await estimateEta(db, [row], clock.now());
    return sessionView(viewed(row), context(req), { owner: caller.kind === 'owner' });
  });

  app.delete(
    '/sessions/:sid',
    {
      config: { auth: 'owner' },
      schema: { params: SidParams, response: { 200: Release, 202: Release, ...REFUSALS } },
    },
    async (req, reply) => {
      const row = await owned(req, req.params.sid);
      await tx(db, (c) => endSession(c, row.id, 'released', nowSec()));
      // The host confirms the cleanup; its commit announces it (notifications.ts).
      const until = Date.now() + RELEASE_WAIT_MS;
      let released = false;
      for (;;) {
        const changed = events.next(row.id, until - Date.now());
        released = (await count(db, 'SELECT done AS n FROM sessions WHERE id = $1', [row.id])) === 1;
        if (released || Date.now() >= until) break;
        await changed;
      }
      return reply.code(released ? 200 : 202).send({ released, cleanup_pending: !released });
    },
  );

  app.get('/sessions/requests/:request_key', receiptSpec, async (req) => {
    const key = req.params.request_key;
    const receipt = await one<ReceiptRow>(db, 'SELECT * FROM receipts WHERE uid = $1 AND request_key = $2', [
      ownerUid(req),
      key,
    ]);
    const row = receipt
      ? await one<SessionRecord>(db, 'SELECT * FROM sessions WHERE id = $1', [receipt.sid])
      : undefined;
    if (!receipt || !row) throw noReceipt();
    return receiptView(row, key);
  });

  // ---------------------------------------------------------------------------------
  // Access to the phone: its frame and operations on its host, ADB at its host's gateway

  app.get(
    '/sessions/:sid/frame.png',
    {
      config: { auth: 'read' },
      schema: { params: SidParams, querystring: Type.Object({ token: Type.Optional(Type.String()) }) },
    },
    async (req, reply) => {
      const row = await sessionFor(readCaller(req), req.params.sid);
      return forward(reply, row, 'GET', `/internal/sessions/${encodeURIComponent(row.id)}/frame.png`);
    },
  );

  /** A viewer URL of a ready session; any API node serves it (the token is signed, not stored). */
  const viewerUrl = (req: FastifyRequest, row: PlacedSession, mode: ViewerMode) => {
    ready(row);
    return viewerCapability(deps.grants, deps.publicUrl(req.headers.host), row, mode, nowSec());
  };
  app.get(
    '/sessions/:sid/owner-viewer',
    {
      config: { auth: 'owner' },
      schema: { params: SidParams, response: { 200: ViewerCapability, ...REFUSALS } },
    },
    async (req, reply) =>
      reply
        .headers(PRIVATE_HEADERS)
        .send(viewerUrl(req, await touch(await owned(req, req.params.sid)), 'owner')),
  );
  app.get(
    '/sessions/:sid/viewer',
    {
      config: { auth: 'read' },
      schema: {
        params: SidParams,
        querystring: Type.Object({ token: Type.Optional(Type.String()) }),
        response: { 200: ViewerCapability, ...REFUSALS },
      },
    },
    async (req, reply) =>
      reply
        .headers(PRIVATE_HEADERS)
        .send(viewerUrl(req, await touch(await sessionFor(readCaller(req), req.params.sid)), 'view')),
  );

  app.get(
    '/sessions/:sid/adb',
    { config: { auth: 'owner' }, schema: { params: SidParams, response: { 200: AdbAccess, ...REFUSALS } } },
    async (req, reply) => {
      const row = await touch(await owned(req, req.params.sid));
      ready(row);
      reply.headers(PRIVATE_HEADERS);
      if (!row.adb_enabled || !row.adb_code || row.adb_host === null || row.adb_port === null)
        return { enabled: false };
      return {
        enabled: true,
        transport: 'adb' as const,
        host: row.adb_host,
        port: row.adb_port,
        code: row.adb_code,
        expires_at: row.expires_at,
      };
    },
  );

  app.delete(
    '/sessions/:sid/adb',
    { config: { auth: 'owner' }, schema: { params: SidParams, response: { 200: Revoked, ...REFUSALS } } },
    async (req) => {
      const row = await owned(req, req.params.sid);
      await tx(db, async (c) => {
        await c.query('UPDATE sessions SET adb_enabled = 0 WHERE id = $1', [row.id]);
        // The host cuts open relays when it hears of it.
        if (row.host_id !== null) await c.query(`SELECT pg_notify('${HOST_CHANNEL}', $1)`, [row.host_id]);
      });
      // Cut the open relays before answering, as the embedded server does. A host that does
      // not answer soon (callHost logs it) still applies the stored revocation when it hears
      // of it, so the answer does not wait out an unreachable host.
      if (row.state === 'ready' && row.host_url !== null) {
        const path = `/internal/sessions/${encodeURIComponent(row.id)}/adb/revoke`;
        await callHost(
          deps.signer,
          deps.log,
          row.id,
          row.host_url,
          'POST',
          path,
          undefined,
          RELEASE_WAIT_MS,
        ).catch(() => undefined);
      }
      return { revoked: true };
    },
  );

  const opPath = (op: PhoneOp) => `/sessions/:sid/ops/${op}` as const;
  const internalOp = (sid: string, op: PhoneOp) => `/internal/sessions/${encodeURIComponent(sid)}/ops/${op}`;
  for (const op of PHONE_OPS) {
    if (op === 'input.tap') continue;
    const response =
      op === 'screen.bounds'
        ? { 200: ScreenGeometry, ...REFUSALS }
        : op === 'apps.list'
          ? { 200: Type.Array(AppEntry), ...REFUSALS }
          : op === 'nav.home'
            ? { 200: OpDone, ...REFUSALS }
            : undefined;
    app.post(
      opPath(op),
      { config: { auth: 'owner' }, schema: { params: SidParams, ...(response ? { response } : {}) } },
      async (req, reply) =>
        forward(
          reply,
          await touch(await owned(req, req.params.sid)),
          'POST',
          internalOp(req.params.sid, op),
          {},
        ),
    );
  }
  app.post(
    opPath('input.tap'),
    {
      config: { auth: 'owner' },
      schema: { params: SidParams, body: TapBody, response: { 200: OpDone, ...REFUSALS } },
      schemaErrorFormatter: partMessages({
        body: 'input.tap needs a JSON body {"x": integer >= 0, "y": integer >= 0} in screen pixels.',
      }),
    },
    async (req, reply) =>
      forward(
        reply,
        await touch(await owned(req, req.params.sid)),
        'POST',
        internalOp(req.params.sid, 'input.tap'),
        req.body,
      ),
  );
  app.post('/sessions/:sid/ops/:op', unknownOpSpec, async (req) => {
    throw unknownOp(req.params.op);
  });

  // ---------------------------------------------------------------------------------
  // The account

  app.get(
    '/me',
    { config: { auth: 'owner' }, schema: { response: { 200: Account, ...REFUSALS } } },
    async (req) => {
      const uid = ownerUid(req);
      const a = await one<AccountRow>(db, 'SELECT * FROM accounts WHERE uid = $1', [uid]);
      const profile = await one<ProfileRow>(db, 'SELECT * FROM profiles WHERE uid = $1', [uid]);
      if (!a || !profile) throw new Error(`account ${uid} has no account or profile row`);
      const live = (
        await db.query<{ billing_mode: 'metered' | 'disabled' }>(
          'SELECT billing_mode FROM sessions WHERE uid = $1 AND done = 0 ORDER BY seq',
          [uid],
        )
      ).rows;
      return accountView({
        account: a,
        profile,
        active: live.length,
        billingMode: live[0]?.billing_mode ?? null,
      });
    },
  );

  app.post(
    '/me/keys',
    {
      config: { auth: 'owner' },
      schema: { body: CreateKeyBody, response: { 200: CreatedKey, ...REFUSALS } },
    },
    async (req, reply) => {
      const key = newApiKey(deps.random);
      const row: KeyRow = {
        key_hash: sha256Hex(key),
        uid: ownerUid(req),
        label: req.body.label,
        hint: keyHint(key),
        created: nowSec(),
        revoked: null,
      };
      await db.query(
        'INSERT INTO api_keys (key_hash, uid, label, hint, created, revoked) VALUES ($1, $2, $3, $4, $5, NULL)',
        [row.key_hash, row.uid, row.label, row.hint, row.created],
      );
      reply.headers(PRIVATE_HEADERS);
      return { key, key_hash: row.key_hash, label: row.label, hint: row.hint, created: row.created };
    },
  );

  app.get(
    '/me/keys',
    { config: { auth: 'owner' }, schema: { response: { 200: Type.Array(ApiKeyMeta), ...REFUSALS } } },
    async (req) =>
      (
        await db.query<KeyRow>(
          'SELECT * FROM api_keys WHERE uid = $1 AND revoked IS NULL ORDER BY created, key_hash',
          [ownerUid(req)],
        )
      ).rows,
  );

  app.delete('/me/keys/:key_hash', revokeKeySpec, async (req) => {
    const done = await db.query(
      'UPDATE api_keys SET revoked = $1 WHERE key_hash = $2 AND uid = $3 AND revoked IS NULL',
      [nowSec(), req.params.key_hash, ownerUid(req)],
    );
    if (!done.rowCount)
      throw apiError(ERROR_CODES.notFound, 'No active key with this key_hash on this account.');
    return { revoked: true };
  });

  app.post(
    '/me/profile/reset',
    { config: { auth: 'owner' }, schema: { response: { 200: ProfileReset, ...REFUSALS } } },
    async (req) => {
      const uid = ownerUid(req);
      const id = await tx(db, async (c) => {
        const profile = await one<ProfileRow>(c, 'SELECT * FROM profiles WHERE uid = $1 FOR UPDATE', [uid]);
        if (!profile) throw new Error(`account ${uid} has no profile`);
        if (profile.holder || profile.state === 'saving') {
          throw profileHeld(profile.holder, 'end that session, then reset');
        }
        // Hosts restore a profile only while it is `stored`: its save on its host is forgotten.
        await c.query(
          "UPDATE profiles SET state = 'empty', exact = 1, saved_at = $2, saved_host = NULL WHERE id = $1",
          [profile.id, nowSec()],
        );
        return profile.id;
      });
      return { id, reset: true };
    },
  );

  // ---------------------------------------------------------------------------------
  // History

  const history = async (uid: string, limit: number, after?: Cursor) =>
    (after
      ? await db.query<SessionRecord>(
          'SELECT * FROM sessions WHERE uid = $1 AND done = 1 AND (created < $2 OR (created = $2 AND id < $3)) ORDER BY created DESC, id DESC LIMIT $4',
          [uid, after.created, after.id, limit],
        )
      : await db.query<SessionRecord>(
          'SELECT * FROM sessions WHERE uid = $1 AND done = 1 ORDER BY created DESC, id DESC LIMIT $2',
          [uid, limit],
        )
    ).rows;

  app.get(
    '/history',
    { config: { auth: 'owner' }, schema: { response: { 200: Type.Array(HistoryRecord), ...REFUSALS } } },
    async (req) =>
      (await history(ownerUid(req), HISTORY_LIMIT)).map((r) => historyView(r, deps.genericDevice)),
  );

  app.get(
    '/history/page',
    {
      config: { auth: 'owner' },
      schema: { querystring: HistoryPageQuery, response: { 200: HistoryPage, ...REFUSALS } },
    },
    async (req) => {
      const limit = req.query.limit ?? PAGE_DEFAULT;
      let after: Cursor | undefined;
      if (req.query.cursor !== undefined) {
        after = decodeCursor(req.query.cursor);
        if (!after)
          throw apiError(
            ERROR_CODES.invalidRequest,
            'cursor is not valid; pass next_cursor from the previous page unchanged.',
          );
      }
      const rows = await history(ownerUid(req), limit + 1, after);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        items: page.map((r) => historyView(r, deps.genericDevice)),
        next_cursor: rows.length > limit && last ? encodeCursor(last) : null,
      };
    },
  );
};
