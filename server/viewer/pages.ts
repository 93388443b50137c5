/**
 * Pages behind watch_url and the viewer capability URLs. The watch page shows the
 * refreshing snapshot; the viewer pages show the phone and (owner only) send input.
 * Every response is private, unreferred and embeddable only by the dashboard origin.
 */
import { randomBytes } from 'node:crypto';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppDeps } from '../app.js';
import { FRAME_INTERVAL_MS, type LiveSession } from '../runtime/runtime.js';

type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export function securityHeaders(dashboardOrigin: string | null, nonce?: string): Record<string, string> {
  const ancestors = dashboardOrigin ? dashboardOrigin : "'none'";
  const script = nonce ? `'nonce-${nonce}'` : "'none'";
  return {
    'cache-control': 'private, no-store',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'content-security-policy': `default-src 'none'; img-src 'self' blob: data:; style-src 'unsafe-inline'; script-src ${script}; connect-src 'self'; frame-ancestors ${ancestors}; base-uri 'none'; form-action 'none'`,
  };
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string, nonce: string, script = ''): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title>
<style>
  :root { color-scheme: dark; font-family: system-ui, sans-serif; }
  body { margin: 0; min-height: 100vh; display: flex; flex-direction: column; align-items: center; background: #111418; color: #e8eaed; }
  header { width: 100%; box-sizing: border-box; padding: 12px 16px; display: flex; gap: 12px; align-items: center; justify-content: space-between; background: #1b1f24; }
  header h1 { font-size: 16px; margin: 0; font-weight: 600; }
  .meta { font-size: 13px; color: #9aa0a6; }
  main { flex: 1; display: flex; align-items: center; justify-content: center; padding: 16px; }
  img.phone { max-height: calc(100vh - 110px); max-width: 100%; border-radius: 24px; box-shadow: 0 8px 40px #000a; background: #000; }
  .notice { max-width: 420px; text-align: center; line-height: 1.5; }
  .notice h2 { font-size: 20px; }
</style></head>
<body>${body}${script ? `<script nonce="${nonce}">${script}</script>` : ''}</body></html>`;
}

export function goneHtml(nonce: string, reason: 'ended' | 'expired' | 'invalid'): string {
  const text =
    reason === 'expired'
      ? ['This viewer link has expired', 'Viewer links expire with their session. Ask the session owner for a new link.']
      : reason === 'ended'
        ? ['This session has ended', 'The phone was handed back. Start a new session to see a phone.']
        : ['This link is not valid', 'Check that you copied the whole link, or ask the session owner for a new one.'];
  return page(text[0]!, `<main><div class="notice"><h2>${esc(text[0]!)}</h2><p>${esc(text[1]!)}</p></div></main>`, nonce);
}

export function registerViewerPages(app: App, deps: AppDeps): void {
  const { runtime, grants } = deps;

  const send = (reply: FastifyReply, status: number, html: string, nonce: string) =>
    reply
      .code(status)
      .headers({ ...securityHeaders(deps.dashboardOrigin, nonce), 'content-type': 'text/html; charset=utf-8' })
      .send(html);

  const liveOrNull = (sid: string): LiveSession | null => {
    try {
      return runtime.byId(sid);
    } catch {
      return null;
    }
  };

  // watch_url: the refreshing snapshot, readable by whoever holds the view grant.
  app.get(
    '/watch/:sid',
    { schema: { params: Type.Object({ sid: Type.String({ maxLength: 100 }) }), querystring: Type.Object({ token: Type.Optional(Type.String()) }) } },
    async (req, reply) => {
      const nonce = randomBytes(16).toString('base64');
      const token = req.query.token ?? '';
      if (!grants.isViewGrantFor(token, req.params.sid)) return send(reply, 404, goneHtml(nonce, 'invalid'), nonce);
      const live = liveOrNull(req.params.sid);
      if (!live) return send(reply, 404, goneHtml(nonce, 'ended'), nonce);
      const frameUrl = `/sessions/${encodeURIComponent(live.row.id)}/frame.png?token=${encodeURIComponent(token)}`;
      const body = `<header><h1>phonelease · ${esc(live.row.device ?? 'phone')}</h1><span class="meta" id="state">${esc(live.row.state)}</span></header>
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

  // Viewer capability pages (the live viewer replaces the snapshot loop here).
  app.get('/v/:token', { schema: { params: Type.Object({ token: Type.String({ maxLength: 200 }) }) } }, async (req, reply) => {
    const nonce = randomBytes(16).toString('base64');
    const grant = grants.viewer(req.params.token);
    if (!grant) return send(reply, 404, goneHtml(nonce, 'expired'), nonce);
    const live = liveOrNull(grant.sid);
    if (!live || live.row.state === 'closing') return send(reply, 410, goneHtml(nonce, 'ended'), nonce);
    const body = `<header><h1>phonelease · ${esc(live.row.device ?? 'phone')}</h1><span class="meta">${grant.mode === 'owner' ? 'interactive' : 'view only'}</span></header>
<main><img class="phone" id="frame" alt="Phone screen" src="/v/${esc(req.params.token)}/frame.png"></main>`;
    return send(reply, 200, page('phonelease · viewer', body, nonce), nonce);
  });

  app.get('/v/:token/frame.png', { schema: { params: Type.Object({ token: Type.String({ maxLength: 200 }) }) } }, async (req, reply) => {
    const grant = grants.viewer(req.params.token);
    const live = grant ? liveOrNull(grant.sid) : null;
    if (!grant || !live) {
      return reply.code(404).headers(securityHeaders(deps.dashboardOrigin)).send({ error: 'This viewer link is no longer valid.', code: 'not_found' });
    }
    const png = await runtime.frame(live);
    return reply.headers({ ...securityHeaders(deps.dashboardOrigin), 'content-type': 'image/png' }).send(png);
  });
}
