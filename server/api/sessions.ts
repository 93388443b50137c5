/**
 * Sessions: create (idempotent by key), list, read (with a long poll), end, and the receipt
 * of a keyed create.
 */
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import {
  CreateReceipt,
  CreateSessionBody,
  ERROR_CODES,
  ErrorBody,
  MAX_WAIT_S,
  REQUEST_KEY_PATTERN,
  Release,
  Session,
} from '../../src/api/schemas.js';
import { ApiError, apiError } from '../errors.js';
import type { SessionSnapshot } from '../runtime/directory.js';
import { ownerUid, readCaller } from './auth.js';
import { PRIVATE_HEADERS, REFUSALS, SessionViews, SidParams } from './common.js';
import { partMessages } from './refusals.js';
import { receiptView, sessionView } from './views.js';
import type { RoutePlugin } from './types.js';

/** A session in transition: worth waiting on (a ready or failed one answers at once). */
const transitional = (s: SessionSnapshot) =>
  s.row.state === 'provisioning' || (s.row.state === 'closing' && s.row.cleanup_status !== 'complete');

/** An AbortSignal that aborts when the client of `req` goes away. */
function whileConnected(req: FastifyRequest): AbortSignal {
  const gone = new AbortController();
  req.raw.once('close', () => gone.abort());
  return gone.signal;
}

export const sessionRoutes: RoutePlugin = async (app, { deps }) => {
  const { directory } = deps;
  const views = new SessionViews(deps);

  app.post(
    '/sessions',
    {
      config: { auth: 'owner' },
      schema: {
        body: Type.Optional(CreateSessionBody),
        headers: Type.Object({
          'idempotency-key': Type.Optional(Type.String({ pattern: REQUEST_KEY_PATTERN })),
        }),
        response: { 202: Session, 410: ErrorBody, 503: ErrorBody, ...REFUSALS },
      },
      schemaErrorFormatter: partMessages({
        headers: `Idempotency-Key must match ${REQUEST_KEY_PATTERN}; use one stable key per logical start.`,
      }),
      // No body at all means the defaults; a JSON null or array is still refused.
      preValidation: async (req) => {
        if (req.body === undefined) req.body = {};
      },
    },
    async (req, reply) => {
      const key = req.headers['idempotency-key'] ?? null;
      const { outcome, session } = await directory
        .admit(ownerUid(req), req.body ?? {}, key)
        .catch((err: unknown) => {
          if (err instanceof ApiError) deps.metrics?.admission({ refused: err.code });
          throw err;
        });
      deps.metrics?.admission(outcome);
      if (outcome === 'recorded') {
        throw apiError(
          ERROR_CODES.createRequestRecorded,
          'The request was recorded but the runtime is unavailable; look it up with GET /sessions/requests/{request_key} or retry with the same key and body.',
          { id: session.row.id, ...(key ? { request_key: key } : {}), outcome: 'unknown' },
          { 'retry-after': '2' },
        );
      }
      // Sessions carry secrets (watch_url, the ADB unlock code): no cache keeps them.
      return reply
        .code(202)
        .headers(PRIVATE_HEADERS)
        .send(sessionView(session, views.context(req), { owner: true }));
    },
  );

  app.get(
    '/sessions',
    { config: { auth: 'owner' }, schema: { response: { 200: Type.Array(Session), ...REFUSALS } } },
    async (req, reply) => {
      const sessions = await directory.list(ownerUid(req));
      const c = views.context(req);
      reply.headers(PRIVATE_HEADERS);
      return sessions.map((s) => sessionView(s, c, { owner: true }));
    },
  );

  app.get(
    '/sessions/:sid',
    {
      config: { auth: 'read' },
      schema: {
        params: SidParams,
        querystring: Type.Object({
          token: Type.Optional(Type.String()),
          wait: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WAIT_S })),
        }),
        response: { 200: Session, ...REFUSALS },
      },
    },
    async (req, reply) => {
      const caller = readCaller(req);
      reply.headers(PRIVATE_HEADERS);
      let session = await directory.session(caller, req.params.sid, { touch: true });
      // Only a session in transition is worth waiting on: a ready or failed session answers
      // at once (the caller cannot tell us what it last saw, so "until it changes" would
      // otherwise mean "for the whole wait" right after a fast boot).
      const wait = req.query.wait ?? 0;
      if (wait > 0 && transitional(session))
        session = await directory.changed(session, wait * 1000, whileConnected(req));
      return sessionView(session, views.context(req), { owner: caller.kind === 'owner' });
    },
  );

  app.delete(
    '/sessions/:sid',
    {
      config: { auth: 'owner' },
      schema: { params: SidParams, response: { 200: Release, 202: Release, ...REFUSALS } },
    },
    async (req, reply) => {
      const { released } = await directory.end(ownerUid(req), req.params.sid);
      return reply.code(released ? 200 : 202).send({ released, cleanup_pending: !released });
    },
  );

  app.get(
    '/sessions/requests/:request_key',
    {
      config: { auth: 'owner' },
      schema: {
        // Any key: one that no create could have used has no receipt, so it is a 404 like any
        // unknown key (the contract answers this lookup only 200, 404, 401, 403 or 500).
        params: Type.Object({ request_key: Type.String() }),
        response: { 200: CreateReceipt, ...REFUSALS },
      },
    },
    async (req) => {
      const key = req.params.request_key;
      const row = await directory.receipt(ownerUid(req), key);
      if (!row)
        throw apiError(
          ERROR_CODES.notFound,
          'No create request with this key is recorded for this account; retry the create with the same key and body (not a new key).',
        );
      return receiptView(row, key);
    },
  );
};
