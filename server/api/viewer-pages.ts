/**
 * Pages behind watch_url and the viewer capability URLs. The watch page shows the
 * refreshing snapshot; the viewer pages show the phone and (owner only) send input.
 * Every response is private, unreferred and embeddable only by the dashboard origin.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { RoutePlugin } from './types.js';
import { FRAME_INTERVAL_MS } from '../runtime/rules.js';
import { viewerHtml } from '../viewer/viewer-page.js';
import { esc, goneHtml, page, securityHeaders } from '../viewer/html.js';
import { notFound } from '../errors.js';

/** The pages over the app's session directory, view grants and viewer streams. */
export const viewerPages: RoutePlugin = async (app, { deps }) => {
  const { directory, grants, streams, dashboardOrigin } = deps;
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!streams.handleUpgrade(req, socket, head)) socket.destroy();
  });
  app.addHook('onClose', async () => streams.close());

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
      if (grants.viewGrantSession(token) !== req.params.sid)
        return send(reply, 404, goneHtml(nonce, 'invalid'), nonce);
      const live = (await directory.find(req.params.sid))?.row;
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
      const grant = grants.viewer(req.params.token);
      if (!grant) return send(reply, 404, goneHtml(nonce, 'expired'), nonce);
      const live = (await directory.find(grant.sid))?.row;
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
      const grant = grants.viewer(req.params.token);
      const session = grant ? await directory.find(grant.sid) : null;
      if (!session) {
        const e = notFound('This viewer link is no longer valid.');
        return reply.code(e.status).headers(securityHeaders(dashboardOrigin)).send(e.body());
      }
      const png = await directory.phone(session).frame();
      return reply.headers({ ...securityHeaders(dashboardOrigin), 'content-type': 'image/png' }).send(png);
    },
  );
};
