/**
 * HTML building blocks shared by the viewer pages: escaping, the page shell, the "gone"
 * pages and the security headers every page carries.
 */

export function securityHeaders(dashboardOrigin: string | null, nonce?: string): Record<string, string> {
  // The dashboard embeds the owner viewer from the API's own origin ('self'); a dashboard
  // served elsewhere (--dashboard-origin) may embed it too.
  const ancestors = dashboardOrigin ? `'self' ${dashboardOrigin}` : "'self'";
  const script = nonce ? `'nonce-${nonce}'` : "'none'";
  return {
    'cache-control': 'private, no-store',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    // connect-src 'self' covers the same-origin WebSocket (CSP level 3).
    'content-security-policy': `default-src 'none'; img-src 'self' blob: data:; style-src 'unsafe-inline'; script-src ${script}; connect-src 'self'; frame-ancestors ${ancestors}; base-uri 'none'; form-action 'none'`,
  };
}

export const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function page(title: string, body: string, nonce: string, script = ''): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><link rel="icon" href="data:,">
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
      ? [
          'This viewer link has expired',
          'Viewer links expire with their session. Ask the session owner for a new link.',
        ]
      : reason === 'ended'
        ? ['This session has ended', 'The phone was handed back. Start a new session to see a phone.']
        : [
            'This link is not valid',
            'Check that you copied the whole link, or ask the session owner for a new one.',
          ];
  return page(
    text[0]!,
    `<main><div class="notice"><h2>${esc(text[0]!)}</h2><p>${esc(text[1]!)}</p></div></main>`,
    nonce,
  );
}
