/**
 * Access to a running phone: its screen as a PNG, viewer capability URLs (watch or control),
 * and its ADB endpoint through the gateway (and revoking it).
 */
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { AdbAccess, Revoked, ViewerCapability } from '../../src/api/schemas.js';
import { seconds } from '../clock.js';
import type { SessionSnapshot } from '../runtime/directory.js';
import type { ViewerMode } from '../runtime/grants.js';
import { readCaller } from './auth.js';
import { PRIVATE_HEADERS, REFUSALS, SidParams } from './common.js';
import type { RoutePlugin } from './types.js';
import { adbAccess } from './views.js';

/** A viewer URL lives at most this long, and never past its session. */
const VIEWER_MAX_S = 3600;

const TokenQuery = Type.Object({ token: Type.Optional(Type.String()) });

export const accessRoutes: RoutePlugin = async (app, { deps }) => {
  const { directory, grants, clock } = deps;
  const owned = (req: FastifyRequest, sid: string) =>
    directory.session(readCaller(req), sid, { touch: true });

  /**
   * The viewer capability of a ready session: a URL that expires with its session, and within
   * VIEWER_MAX_S. Any API node opens it (a deployment's tokens are signed).
   */
  const viewerUrl = (req: FastifyRequest, mode: ViewerMode, session: SessionSnapshot) => {
    directory.phone(session);
    const expiresAt = Math.min(session.row.expires_at, seconds(clock.now()) + VIEWER_MAX_S);
    const token = grants.issueViewer(session.row.id, mode, expiresAt);
    return { url: `${deps.publicUrl(req.headers.host)}/v/${token}`, expires_at: expiresAt };
  };

  app.get(
    '/sessions/:sid/frame.png',
    { config: { auth: 'read' }, schema: { params: SidParams, querystring: TokenQuery } },
    async (req, reply) => {
      const session = await directory.session(readCaller(req), req.params.sid);
      const png = await directory.phone(session).frame();
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
    async (req, reply) =>
      reply.headers(PRIVATE_HEADERS).send(viewerUrl(req, 'owner', await owned(req, req.params.sid))),
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
    async (req, reply) =>
      reply.headers(PRIVATE_HEADERS).send(viewerUrl(req, 'view', await owned(req, req.params.sid))),
  );

  app.get(
    '/sessions/:sid/adb',
    { config: { auth: 'owner' }, schema: { params: SidParams, response: { 200: AdbAccess, ...REFUSALS } } },
    async (req, reply) => {
      const session = await owned(req, req.params.sid);
      directory.phone(session);
      reply.headers(PRIVATE_HEADERS);
      const adb = adbAccess(session, deps.adbEndpoint?.(req.headers.host));
      return adb ? { enabled: true, transport: 'adb' as const, ...adb } : { enabled: false };
    },
  );

  app.delete(
    '/sessions/:sid/adb',
    { config: { auth: 'owner' }, schema: { params: SidParams, response: { 200: Revoked, ...REFUSALS } } },
    async (req) => {
      await directory.revokeAdb(await directory.session(readCaller(req), req.params.sid));
      return { revoked: true };
    },
  );
};
