/**
 * Access to a running phone: its screen as a PNG, viewer capability URLs (watch or control),
 * and its ADB endpoint through the gateway (and revoking it).
 */
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { AdbAccess, Revoked, ViewerCapability } from '../../src/api/schemas.js';
import { seconds } from '../clock.js';
import type { SessionSnapshot } from '../runtime/directory.js';
import type { Grants, ViewerMode } from '../runtime/grants.js';
import { readCaller } from './auth.js';
import { PRIVATE_HEADERS, REFUSALS, SidParams } from './common.js';
import type { RoutePlugin } from './types.js';

/** A viewer URL lives at most this long, and never past its session. */
const VIEWER_MAX_S = 3600;

const TokenQuery = Type.Object({ token: Type.Optional(Type.String()) });

/**
 * The viewer capability of a ready session: a URL under `base` that expires with its
 * session, and within VIEWER_MAX_S. Any API node opens it (a deployment's tokens are signed).
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
  const { directory, grants, clock } = deps;
  const owned = (req: FastifyRequest, sid: string) =>
    directory.session(readCaller(req), sid, { touch: true });

  /** A viewer URL of a ready session. */
  const viewerUrl = (req: FastifyRequest, mode: ViewerMode, session: SessionSnapshot) => {
    directory.phone(session);
    return viewerCapability(
      grants,
      deps.publicUrl(req.headers.host),
      session.row,
      mode,
      seconds(clock.now()),
    );
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
    async (req, reply) => {
      const session = await directory.session(readCaller(req), req.params.sid, { touch: true });
      return reply.headers(PRIVATE_HEADERS).send(viewerUrl(req, 'view', session));
    },
  );

  app.get(
    '/sessions/:sid/adb',
    { config: { auth: 'owner' }, schema: { params: SidParams, response: { 200: AdbAccess, ...REFUSALS } } },
    async (req, reply) => {
      const session = await owned(req, req.params.sid);
      directory.phone(session);
      const r = session.row;
      reply.headers(PRIVATE_HEADERS);
      // The session's own device host's gateway, or this server's.
      const endpoint = session.adbEndpoint ?? deps.adbEndpoint?.(req.headers.host);
      if (!r.adb_enabled || !r.adb_code || !endpoint) return { enabled: false };
      return {
        enabled: true,
        transport: 'adb' as const,
        host: endpoint.host,
        port: endpoint.port,
        code: r.adb_code,
        expires_at: r.expires_at,
      };
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
