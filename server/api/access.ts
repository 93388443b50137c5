/**
 * Access to a running phone: its screen as a PNG, viewer capability URLs (watch or control),
 * and its ADB endpoint through the gateway (and revoking it).
 */
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { AdbAccess, Revoked, ViewerCapability } from '../../src/api/schemas.js';
import { seconds } from '../clock.js';
import type { Grants, ViewerMode } from '../runtime/grants.js';
import type { LiveSession } from '../runtime/runtime.js';
import { ownerUid, readCaller } from './auth.js';
import { PRIVATE_HEADERS, REFUSALS, SidParams, sessionFor, touched } from './common.js';
import type { RoutePlugin } from './types.js';

/** A viewer URL lives at most this long, and never past its session. */
const VIEWER_MAX_S = 3600;

const TokenQuery = Type.Object({ token: Type.Optional(Type.String()) });

/**
 * The viewer capability of a ready session: a URL under `base` that expires with its
 * session, and within VIEWER_MAX_S. The embedded server and API nodes answer with it.
 */
export function viewerCapability(
  grants: Pick<Grants, 'issueViewer'>,
  base: string,
  session: { id: string; expires_at: number },
  mode: ViewerMode,
  nowSec: number,
): { url: string; expires_at: number } {
  const expiresAt = Math.min(session.expires_at, nowSec + VIEWER_MAX_S);
  return { url: `${base}/v/${grants.issueViewer(session.id, mode, expiresAt)}`, expires_at: expiresAt };
}

export const accessRoutes: RoutePlugin = async (app, { deps }) => {
  const { runtime, grants, clock } = deps;

  const viewerUrl = (req: FastifyRequest, mode: ViewerMode, live: LiveSession) => {
    runtime.requireReady(live);
    return viewerCapability(grants, deps.publicUrl(req.headers.host), live.row, mode, seconds(clock.now()));
  };

  app.get(
    '/sessions/:sid/frame.png',
    { config: { auth: 'read' }, schema: { params: SidParams, querystring: TokenQuery } },
    async (req, reply) => {
      const png = await runtime.frame(sessionFor(deps, readCaller(req), req.params.sid));
      return reply
        .code(200)
        .headers({ 'content-type': 'image/png', ...PRIVATE_HEADERS })
        .send(png);
    },
  );

  app.get(
    '/sessions/:sid/owner-viewer',
    {
      config: { auth: 'owner' },
      schema: { params: SidParams, response: { 200: ViewerCapability, ...REFUSALS } },
    },
    async (req, reply) => {
      const live = touched(deps, runtime.get(ownerUid(req), req.params.sid));
      return reply.headers(PRIVATE_HEADERS).send(viewerUrl(req, 'owner', live));
    },
  );

  app.get(
    '/sessions/:sid/viewer',
    {
      config: { auth: 'read' },
      schema: {
        params: SidParams,
        querystring: TokenQuery,
        response: { 200: ViewerCapability, ...REFUSALS },
      },
    },
    async (req, reply) => {
      const live = touched(deps, sessionFor(deps, readCaller(req), req.params.sid));
      return reply.headers(PRIVATE_HEADERS).send(viewerUrl(req, 'view', live));
    },
  );

  app.get(
    '/sessions/:sid/adb',
    { config: { auth: 'owner' }, schema: { params: SidParams, response: { 200: AdbAccess, ...REFUSALS } } },
    async (req, reply) => {
      const live = touched(deps, runtime.get(ownerUid(req), req.params.sid));
      runtime.requireReady(live);
      const r = live.row;
      reply.headers(PRIVATE_HEADERS);
      if (!r.adb_enabled || !r.adb_code) return { enabled: false };
      const { host, port } = deps.adbEndpoint(req.headers.host);
      return {
        enabled: true,
        transport: 'adb' as const,
        host,
        port,
        code: r.adb_code,
        expires_at: r.expires_at,
      };
    },
  );

  app.delete(
    '/sessions/:sid/adb',
    { config: { auth: 'owner' }, schema: { params: SidParams, response: { 200: Revoked, ...REFUSALS } } },
    async (req) => {
      runtime.revokeAdb(runtime.get(ownerUid(req), req.params.sid));
      return { revoked: true };
    },
  );
};
