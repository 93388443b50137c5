/**
 * Pages behind watch_url and the viewer capability URLs. The watch page shows the
 * refreshing snapshot; the viewer pages show the phone and (owner only) send input.
 * Every response is private, unreferred and embeddable only by the dashboard origin.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { RoutePlugin } from '../api/types.js';
import type { ViewerGrant } from '../runtime/grants.js';
import { FRAME_INTERVAL_MS } from '../runtime/rules.js';
import { viewerHtml } from './viewer-page.js';
import { esc, goneHtml, page, securityHeaders } from './html.js';
import { notFound } from '../errors.js';

/** What the pages show of a live session. */
export interface PagedSession {
  id: string;
  device: string | null;
  state: string;
  expires_at: number;
}

/**
 * Where the pages find sessions, frames and streams: the embedded runtime, or the shared
 * store and the device hosts of a deployment (server/distributed/viewer-proxy.ts).
 */
export interface ViewerSource {
  isViewGrantFor(token: string, sid: string): boolean;
  /** The grant behind a viewer URL's token, or null when unknown or expired. */
  viewer(token: string): ViewerGrant | null;
  /** The live session, or null once it has ended. */
  live(sid: string): Promise<PagedSession | null>;
  /** The session's current frame (as frame.png). */
  frame(sid: string): Promise<Buffer>;
  /** Takes a viewer stream's upgrade; false when the request is not one. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  close(): void;
}

/** The pages over any source; the embedded server's viewerPages and API nodes register it. */
export const viewerPagesOf: FastifyPluginAsyncTypebox<{
  source: ViewerSource;
  dashboardOrigin: string | null;
}> = async (app, { source, dashboardOrigin }) => {
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!source.handleUpgrade(req, socket, head)) socket.destroy();
  });
  app.addHook('onClose', async () => source.close());

  const send = (reply: FastifyReply, status: number, html: string, nonce: string) =>
    reply
      .code(status)
      .headers({
        ...securityHeaders(dashboardOrigin, nonce),
        'content-type': 'text/html; charset=utf-8',
      })
      .send(html);

  // watch_url: the refreshing snapshot, readable by whoever holds the view grant.
  app.get(
    '/watch/:sid',
    {
      config: { auth: 'public' },
      schema: {
        params: Type.Object({ sid: Type.String({ maxLength: 100 }) }),
        querystring: Type.Object({ token: Type.Optional(Type.String()) }),
      },
    },
    async (req, reply) => {
      const nonce = randomBytes(16).toString('base64');
      const token = req.query.token ?? '';
      if (!source.isViewGrantFor(token, req.params.sid))
        return send(reply, 404, goneHtml(nonce, 'invalid'), nonce);
      const live = await source.live(req.params.sid);
      if (!live) return send(reply, 404, goneHtml(nonce, 'ended'), nonce);
      const frameUrl = `/sessions/${encodeURIComponent(live.id)}/frame.png?token=${encodeURIComponent(token)}`;
      const body = `<header><h1>phonelease · ${esc(live.device ?? 'phone')}</h1><span class="meta" id="state">${esc(live.state)}</span></header>
<main><img class="phone" id="frame" alt="Phone screen"></main>`;
      const script = `
const img = document.getElementById('frame'); const state = document.getElementById('state');
async function refresh() {
  try {
    const r = await fetch(${JSON.stringify(frameUrl)}, { cache: 'no-store' });
    if (r.ok) { const url = URL.createObjectURL(await r.blob()); const old = img.src; img.src = url; if (old.startsWith('blob:')) URL.revokeObjectURL(old); state.textContent = 'ready'; }
    else if (r.status === 404) { state.textContent = 'ended'; return; }
    else state.textContent = r.status === 409 ? 'not ready' : 'waiting for a frame';
  } catch { state.textContent = 'offline'; }
  setTimeout(refresh, ${FRAME_INTERVAL_MS});
}
refresh();`;
      return send(reply, 200, page('phonelease · watch', body, nonce, script), nonce);
    },
  );

  // Viewer capability pages: the live phone over a WebSocket; owner pages also send input.
  app.get(
    '/v/:token',
    {
      config: { auth: 'public' },
      schema: { params: Type.Object({ token: Type.String({ maxLength: 200 }) }) },
    },
    async (req, reply) => {
      const nonce = randomBytes(16).toString('base64');
      const grant = source.viewer(req.params.token);
      if (!grant) return send(reply, 404, goneHtml(nonce, 'expired'), nonce);
      const live = await source.live(grant.sid);
      if (!live || live.state === 'closing') return send(reply, 410, goneHtml(nonce, 'ended'), nonce);
      const config = {
        mode: grant.mode,
        stream: `/v/${req.params.token}/stream`,
        device: live.device ?? 'Android phone',
        expiresAt: Math.min(grant.expiresAt, live.expires_at),
      };
      return send(reply, 200, viewerHtml(nonce, config), nonce);
    },
  );

  app.get(
    '/v/:token/frame.png',
    {
      config: { auth: 'public' },
      schema: { params: Type.Object({ token: Type.String({ maxLength: 200 }) }) },
    },
    async (req, reply) => {
      const grant = source.viewer(req.params.token);
      const live = grant ? await source.live(grant.sid) : null;
      if (!grant || !live) {
        const e = notFound('This viewer link is no longer valid.');
        return reply.code(e.status).headers(securityHeaders(dashboardOrigin)).send(e.body());
      }
      const png = await source.frame(live.id);
      return reply.headers({ ...securityHeaders(dashboardOrigin), 'content-type': 'image/png' }).send(png);
    },
  );
};

/** The pages over the app's session directory, grants and streams. */
export const viewerPages: RoutePlugin = async (app, { deps }) => {
  const { directory, grants, streams } = deps;
  const source: ViewerSource = {
    isViewGrantFor: (token, sid) => grants.isViewGrantFor(token, sid),
    viewer: (token) => grants.viewer(token),
    live: async (sid) => (await directory.find(sid))?.row ?? null,
    frame: async (sid) => {
      const session = await directory.find(sid);
      if (!session) throw notFound();
      return directory.phone(session).frame();
    },
    handleUpgrade: (req, socket, head) => streams.handleUpgrade(req, socket, head),
    close: () => streams.close(),
  };
  await app.register(viewerPagesOf, { source, dashboardOrigin: deps.dashboardOrigin });
};
