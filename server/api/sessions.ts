/**
 * Sessions: create (idempotent by key), list, read (with a long poll), end, and the receipt
 * of a keyed create.
 */
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ERROR_CODES, Release, Session } from '../../src/api/schemas.js';
import { apiError } from '../errors.js';
import type { LiveSession, Runtime } from '../runtime/runtime.js';
import { receiptView, sessionView } from '../runtime/views.js';
import { ownerUid, readCaller } from './auth.js';
import { createSessionSpec, noReceipt, readSessionSpec, receiptSpec } from './route-specs.js';
import { PRIVATE_HEADERS, REFUSALS, SidParams, sessionFor, touched, type SessionViews } from './common.js';
import type { RouteOptions } from './deps.js';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

/** Long poll: answers as soon as the session's state, location or cleanup changes, or after ms. */
function waitForChange(
  runtime: Runtime,
  live: LiveSession,
  ms: number,
  req: FastifyRequest,
): Promise<LiveSession> {
  const snapshot = () => `${live.row.state}/${live.location}/${live.row.cleanup_status}`;
  const before = snapshot();
  return new Promise((resolve) => {
    const check = (changed: LiveSession) => {
      if (changed === live && snapshot() !== before) done();
    };
    const done = () => {
      clearTimeout(timer);
      runtime.off('changed', check);
      runtime.off('closing', check);
      runtime.off('ended', check);
      req.raw.off('close', done);
      resolve(live);
    };
    const timer = setTimeout(done, ms);
    runtime.on('changed', check);
    runtime.on('closing', check);
    runtime.on('ended', check);
    req.raw.once('close', done);
  });
}

export const sessionRoutes: FastifyPluginAsyncTypebox<RouteOptions & { views: SessionViews }> = async (
  app,
  { deps, views },
) => {
  const { runtime, store } = deps;

  app.post('/sessions', createSessionSpec, async (req, reply) => {
    const uid = ownerUid(req);
    const key = req.headers['idempotency-key'];
    const { outcome, live } = runtime.admit(uid, req.body ?? {}, key ?? null);
    if (outcome === 'recorded') {
      throw apiError(
        ERROR_CODES.createRequestRecorded,
        'The request was recorded but the runtime is unavailable; look it up with GET /sessions/requests/{request_key} or retry with the same key and body.',
        { id: live.row.id, ...(key ? { request_key: key } : {}), outcome: 'unknown' },
        { 'retry-after': '2' },
      );
    }
    // Sessions carry secrets (watch_url, the ADB unlock code): no cache keeps them.
    return reply
      .code(202)
      .headers(PRIVATE_HEADERS)
      .send(sessionView(live, views.context(req), { owner: true }));
  });

  app.get(
    '/sessions',
    { config: { auth: 'owner' }, schema: { response: { 200: Type.Array(Session), ...REFUSALS } } },
    async (req, reply) => {
      const c = views.context(req);
      reply.headers(PRIVATE_HEADERS);
      return runtime.list(ownerUid(req)).map((l) => sessionView(l, c, { owner: true }));
    },
  );

  app.get('/sessions/:sid', readSessionSpec, async (req, reply) => {
    const caller = readCaller(req);
    reply.headers(PRIVATE_HEADERS);
    let live = touched(deps, sessionFor(deps, caller, req.params.sid));
    // Only a session in transition is worth waiting on: a ready or failed session answers
    // at once (the caller cannot tell us what it last saw, so "until it changes" would
    // otherwise mean "for the whole wait" right after a fast boot).
    const wait = req.query.wait ?? 0;
    const transitional =
      live.row.state === 'provisioning' ||
      (live.row.state === 'closing' && live.row.cleanup_status !== 'complete');
    if (wait > 0 && transitional) live = await waitForChange(runtime, live, wait * 1000, req);
    return sessionView(live, views.context(req), { owner: caller.kind === 'owner' });
  });

  app.delete(
    '/sessions/:sid',
    {
      config: { auth: 'owner' },
      schema: { params: SidParams, response: { 200: Release, 202: Release, ...REFUSALS } },
    },
    async (req, reply) => {
      const { released } = await runtime.release(ownerUid(req), req.params.sid);
      return reply.code(released ? 200 : 202).send({ released, cleanup_pending: !released });
    },
  );

  app.get('/sessions/requests/:request_key', receiptSpec, async (req) => {
    const uid = ownerUid(req);
    const key = req.params.request_key;
    const receipt = store.receipt(uid, key);
    const row = receipt ? store.session(receipt.sid) : undefined;
    if (!receipt || !row) throw noReceipt();
    return receiptView(row, key);
  });
};
