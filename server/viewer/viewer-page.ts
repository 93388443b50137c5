/**
 * The live viewer page: the phone's screen streamed over a WebSocket, the session's time
 * left, and (owner viewers) taps, swipes, typing and the Back/Home keys. Plain HTML, CSS
 * and one inline script (allowed by the response's CSP nonce); no build step, no framework.
 */
import { esc } from './html.js';

export interface ViewerConfig {
  mode: 'owner' | 'view';
  stream: string;
  device: string;
  expiresAt: number;
}

const CSS = `
  :root { color-scheme: dark; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; --bg: #0f1216; --panel: #181c22; --muted: #9aa3ad; --accent: #7c8cff; --ok: #3ecf8e; --warn: #f5b342; --bad: #f0616d; }
  * { box-sizing: border-box; }
  html, body { height: 100%; }
  body { margin: 0; background: radial-gradient(1200px 600px at 50% -10%, #222a36 0%, var(--bg) 60%); color: #e8eaed; display: flex; flex-direction: column; }
  header { display: flex; align-items: center; gap: 10px; padding: 10px 16px; background: #14181dcc; border-bottom: 1px solid #ffffff10; flex-wrap: wrap; }
  .brand { font-weight: 700; letter-spacing: .2px; }
  .device { color: var(--muted); font-size: 14px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; max-width: 40vw; }
  .spacer { flex: 1; }
  .pill { font-size: 12px; padding: 3px 10px; border-radius: 999px; background: #ffffff12; color: var(--muted); white-space: nowrap; }
  .pill.live { background: #3ecf8e22; color: var(--ok); }
  .pill.wait { background: #f5b34222; color: var(--warn); }
  .pill.ended { background: #f0616d22; color: var(--bad); }
  .pill.mode { background: #7c8cff22; color: var(--accent); }
  main { flex: 1; display: flex; flex-direction: column; align-items: center; justify-content: center; gap: 14px; padding: 14px; min-height: 0; }
  .phone { position: relative; border-radius: 34px; padding: 10px; background: #05070a; box-shadow: 0 20px 60px #000c, inset 0 0 0 2px #2a313b; max-height: 100%; }
  /* Width from whichever bound is tighter (viewport width, or height times the screen's w/h), height from the aspect: no letterboxing. */
  .screen { display: block; border-radius: 26px; width: min(calc(100vw - 48px), calc((100vh - 190px) * var(--rw, 0.5625)), calc(900px * var(--rw, 0.5625))); height: auto; aspect-ratio: var(--ratio, 9 / 16); background: #000; touch-action: none; user-select: none; -webkit-user-drag: none; outline: none; }
  .screen.interactive { cursor: pointer; }
  .screen:focus-visible { box-shadow: 0 0 0 2px #7c8cff88; }
  .overlay { position: absolute; inset: 10px; border-radius: 26px; display: none; align-items: center; justify-content: center; text-align: center; padding: 24px; background: #0b0d10e6; }
  .overlay.show { display: flex; }
  .overlay h2 { margin: 0 0 8px; font-size: 20px; }
  .overlay p { margin: 0; color: var(--muted); line-height: 1.5; }
  .controls { display: flex; gap: 8px; flex-wrap: wrap; justify-content: center; }
  button, input { font: inherit; }
  button { background: #232a33; color: #e8eaed; border: 1px solid #ffffff18; border-radius: 10px; padding: 8px 14px; cursor: pointer; }
  button:hover { background: #2b333e; }
  form { display: flex; gap: 8px; }
  input[type=text] { background: #11151a; color: #e8eaed; border: 1px solid #ffffff20; border-radius: 10px; padding: 8px 12px; width: min(260px, 60vw); }
  .hint { color: var(--muted); font-size: 12px; text-align: center; }
  @media (max-width: 600px) { .device { display: none; } .screen { width: min(calc(100vw - 48px), calc((100vh - 230px) * var(--rw, 0.5625))); } header { padding: 8px 10px; } }
`;

const SCRIPT = `
const cfg = JSON.parse(document.getElementById('cfg').textContent);
const img = document.getElementById('screen');
const statePill = document.getElementById('state');
const timePill = document.getElementById('time');
const overlay = document.getElementById('overlay');
let screen = { w: 720, h: 1280 };
let offset = 0;
let expiresAt = cfg.expiresAt;
let ended = false;
let ws = null;
let failures = 0;

function setState(text, cls) { statePill.textContent = text; statePill.className = 'pill ' + cls; }
function showEnded(title, text) {
  ended = true;
  setState('Ended', 'ended');
  overlay.querySelector('h2').textContent = title;
  overlay.querySelector('p').textContent = text;
  overlay.classList.add('show');
}
function tick() {
  if (ended) return;
  const left = Math.max(0, Math.round(expiresAt - (Date.now() / 1000 + offset)));
  const m = Math.floor(left / 60), s = left % 60;
  timePill.textContent = (m >= 60 ? Math.floor(m / 60) + 'h ' + (m % 60) + 'm' : m + ':' + String(s).padStart(2, '0')) + ' left';
  if (left === 0) showEnded('This session has expired', 'Its time ran out and the phone was handed back.');
}
setInterval(tick, 1000);
tick();

function connect() {
  if (ended) return;
  const proto = location.protocol === 'https:' ? 'wss://' : 'ws://';
  ws = new WebSocket(proto + location.host + cfg.stream);
  ws.binaryType = 'blob';
  ws.onopen = () => { failures = 0; setState('Live', 'live'); };
  ws.onmessage = (ev) => {
    if (typeof ev.data !== 'string') {
      const url = URL.createObjectURL(ev.data);
      const old = img.src;
      img.src = url;
      if (old.startsWith('blob:')) setTimeout(() => URL.revokeObjectURL(old), 1000);
      return;
    }
    const msg = JSON.parse(ev.data);
    if (msg.type === 'hello') {
      setScreen(msg.screen);
      offset = msg.now - Date.now() / 1000;
      expiresAt = msg.expires_at;
      tick();
    } else if (msg.type === 'ended') {
      showEnded(msg.reason === 'expired' ? 'This viewer link has expired' : 'This session has ended',
        msg.reason === 'expired' ? 'Ask the session owner for a new link.' : 'The phone was handed back. Start a new session to see a phone.');
    } else if (msg.type === 'error') {
      console.warn('viewer:', msg.code, msg.message);
    }
  };
  ws.onclose = () => {
    if (ended) return;
    failures++;
    setState('Reconnecting…', 'wait');
    // The link may have expired or the session closed: after a few tries, reload to let
    // the server say which.
    if (failures >= 4) { location.reload(); return; }
    setTimeout(connect, Math.min(500 * 2 ** failures, 4000));
  };
}
connect();
function setScreen(size) {
  screen = size;
  img.style.setProperty('--ratio', screen.w + ' / ' + screen.h);
  img.style.setProperty('--rw', String(screen.w / screen.h));
}
// A phone turned sideways sends frames of the other shape: they set the screen's size.
img.addEventListener('load', () => {
  if (img.naturalWidth && (img.naturalWidth !== screen.w || img.naturalHeight !== screen.h))
    setScreen({ w: img.naturalWidth, h: img.naturalHeight });
});

function send(msg) { if (ws && ws.readyState === 1 && cfg.mode === 'owner') ws.send(JSON.stringify(msg)); }
function toPhone(ev) {
  const r = img.getBoundingClientRect();
  // object-fit: contain keeps the aspect; find the drawn area inside the element box.
  const scale = Math.min(r.width / screen.w, r.height / screen.h);
  const dw = screen.w * scale, dh = screen.h * scale;
  const x = (ev.clientX - r.left - (r.width - dw) / 2) / scale;
  const y = (ev.clientY - r.top - (r.height - dh) / 2) / scale;
  return { x: Math.max(0, Math.min(screen.w - 1, Math.round(x))), y: Math.max(0, Math.min(screen.h - 1, Math.round(y))) };
}

if (cfg.mode === 'owner') {
  let down = null;
  img.addEventListener('pointerdown', (ev) => { ev.preventDefault(); img.focus(); img.setPointerCapture(ev.pointerId); down = { p: toPhone(ev), t: performance.now(), cx: ev.clientX, cy: ev.clientY }; });
  img.addEventListener('pointerup', (ev) => {
    if (!down) return;
    const p = toPhone(ev);
    const moved = Math.hypot(ev.clientX - down.cx, ev.clientY - down.cy);
    if (moved < 8) send({ type: 'tap', x: down.p.x, y: down.p.y });
    else send({ type: 'swipe', x1: down.p.x, y1: down.p.y, x2: p.x, y2: p.y, durationMs: Math.round(Math.min(2000, Math.max(60, performance.now() - down.t))) });
    down = null;
  });
  img.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') send({ type: 'key', key: 'enter' });
    else if (ev.key === 'Backspace') send({ type: 'key', key: 'del' });
    else if (ev.key === 'Escape') send({ type: 'key', key: 'back' });
    else if (ev.key.length === 1 && !ev.ctrlKey && !ev.metaKey) send({ type: 'text', text: ev.key });
    else return;
    ev.preventDefault();
  });
  document.getElementById('back').addEventListener('click', () => send({ type: 'key', key: 'back' }));
  document.getElementById('home').addEventListener('click', () => send({ type: 'key', key: 'home' }));
  document.getElementById('typeform').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const field = document.getElementById('typed');
    if (field.value) send({ type: 'text', text: field.value });
    field.value = '';
  });
}
`;

export function viewerHtml(nonce: string, cfg: ViewerConfig): string {
  const owner = cfg.mode === 'owner';
  const controls = owner
    ? `<div class="controls">
        <button id="back" type="button" aria-label="Back">◀ Back</button>
        <button id="home" type="button" aria-label="Home">● Home</button>
        <form id="typeform" action="#"><input id="typed" type="text" placeholder="Type into the phone…" autocomplete="off" aria-label="Text to type"><button type="submit">Send</button></form>
      </div>
      <div class="hint">Click to tap, drag to swipe; with the screen focused, typing goes to the phone (Esc = Back).</div>`
    : `<div class="hint">View only: you can watch this phone but not control it.</div>`;
  // JSON in a script element: escape "<" so the config can never close the element.
  const json = JSON.stringify(cfg).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1,viewport-fit=cover">
<title>phonelease · ${esc(cfg.device)}</title><link rel="icon" href="data:,"><style>${CSS}</style></head>
<body>
<header>
  <span class="brand">phonelease</span><span class="device">${esc(cfg.device)}</span><span class="spacer"></span>
  <span class="pill mode">${owner ? 'Interactive' : 'View only'}</span>
  <span class="pill wait" id="state">Connecting…</span>
  <span class="pill" id="time"></span>
</header>
<main>
  <div class="phone">
    <img id="screen" class="screen${owner ? ' interactive' : ''}" alt="Live screen of the phone" tabindex="0" draggable="false">
    <div class="overlay" id="overlay" role="status"><div><h2></h2><p></p></div></div>
  </div>
  ${controls}
</main>
<script type="application/json" id="cfg">${json}</script>
<script nonce="${nonce}">${SCRIPT}</script>
</body></html>`;
}
