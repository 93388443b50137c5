/**
 * The virtual phone's Chrome: the page is screencast only while someone looks at the screen,
 * so a capture taken when nobody did must still show the page as it is now; and its DevTools
 * socket declines WebSocket compression, which only cost CPU on both ends.
 */
import { createServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { PNG } from 'pngjs';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeviceBackend } from '../../server/devices/types.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import type { VirtualPhone } from '../../server/devices/virtual/phone.js';
import { quietLog } from '../support/virtual-adb.js';

let backend: DeviceBackend;
let phone: VirtualPhone;

beforeAll(async () => {
  backend = createVirtualBackend({ bootMs: 0 });
  phone = (await backend.boot({
    sessionId: 'screen',
    restoreFrom: null,
    signal: new AbortController().signal,
    log: quietLog,
  })) as VirtualPhone;
  // A server an app on the phone runs: the browser reaches it as localhost:8123.
  phone.device.network.listen(8123, (socket) => pages.emit('connection', socket), {
    uid: 10_200,
    bind: 'any',
  });
});

afterAll(async () => {
  await backend?.close();
});

/** A page filled with one colour, served inside the phone on port 8123. */
function coloured(name: string, color: string): string {
  return `http://localhost:8123/${name}?${encodeURIComponent(color)}`;
}

/** Pages the browser has painted (each reports it after two animation frames). */
const painted = new Set<string>();
/** How far the pages were scrolled, as they report it (CSS pixels). */
const scrolledTo: number[] = [];

const pages = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname.startsWith('/painted/')) painted.add(url.pathname.slice('/painted/'.length));
  if (url.pathname.startsWith('/scrolled/')) scrolledTo.push(Number(url.pathname.slice('/scrolled/'.length)));
  res.setHeader('content-type', 'text/html');
  const name = url.pathname.slice(1);
  const color = decodeURIComponent(url.search.slice(1));
  res.end(
    `<body style="margin:0;background:${color};height:3000px" ` +
      `onscroll="fetch('/scrolled/' + Math.round(scrollY))" ` +
      `onload="requestAnimationFrame(() => requestAnimationFrame(() => fetch('/painted/${name}')))">`,
  );
});

/** How many pixels of the phone's screen (frame.png) have exactly this colour. */
async function pixelsOf(rgb: [number, number, number]): Promise<number> {
  const png = PNG.sync.read(await phone.capture());
  let n = 0;
  for (let i = 0; i < png.data.length; i += 4)
    if (png.data[i] === rgb[0] && png.data[i + 1] === rgb[1] && png.data[i + 2] === rgb[2]) n++;
  return n;
}

async function until(what: string, done: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** What `am start -a android.intent.action.VIEW -d URL` does: Chrome in front, showing URL. */
function startChrome(url: string): { ok: boolean } {
  return phone.device.activity.startActivity({
    component: { pkg: 'com.android.chrome', cls: 'com.google.android.apps.chrome.Main' },
    pkg: null,
    action: 'android.intent.action.VIEW',
    categories: [],
    data: url,
    flags: 0,
  });
}

describe("the phone's screen shows its browser's page", () => {
  it('as it is now, in one capture, after the page changed while nobody looked at the screen', async () => {
    const browser = phone.device.browser!;
    expect(browser).not.toBeNull();
    const started = startChrome(coloured('green', '#00a86b'));
    expect(started.ok).toBe(true);
    await until('the green page', () => painted.has('green'));
    await expect.poll(() => pixelsOf([0x00, 0xa8, 0x6b]), { timeout: 15_000 }).toBeGreaterThan(100_000);

    // Nobody looks at the screen for longer than a capture keeps the screencast on ...
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    // ... while the page changes. One capture, no polling: it shows the red page, not the
    // last frame from when someone looked.
    browser.open(coloured('red', '#d01c1c'));
    await until('the red page', () => painted.has('red'));
    expect(await pixelsOf([0xd0, 0x1c, 0x1c])).toBeGreaterThan(100_000);
    expect(await pixelsOf([0x00, 0xa8, 0x6b])).toBe(0);
  });
});

describe("a finger on the browser's page", () => {
  it('scrolls the page with a swipe, as touches the page sees; a drag, which Chrome takes as a long press first, is refused', async () => {
    startChrome(coloured('tall', '#3060c0'));
    await until('the tall page', () => painted.has('tall'));
    const ui = phone.device.ui;
    scrolledTo.length = 0;
    // The finger moves up: the page's content follows it, scrolled down.
    ui.swipe(360, 1100, 360, 500, 300);
    // 600 pixels of the screen: 300 CSS pixels at its 2x, less what the touch slop takes.
    await until('the page to scroll', () => scrolledTo.some((y) => y > 200));
    const down = Math.max(...scrolledTo);
    // And back: the finger moves down, the page goes back towards its top.
    scrolledTo.length = 0;
    ui.swipe(360, 500, 360, 1100, 300);
    await until('the page to scroll back', () => scrolledTo.some((y) => y < down));
    expect(ui.drag(360, 1100, 360, 500, 300)).toMatch(/tall|localhost/);
  });
});

describe("the phone's DevTools socket", () => {
  it('serves DevTools over WebSocket without compression, though the client offers it', async () => {
    expect(startChrome('about:blank').ok).toBe(true);
    await until('the DevTools socket', () =>
      phone.device.network.abstractSockets.has('chrome_devtools_remote'),
    );
    // A local port forwarded to the socket, as `adb forward tcp:0 localabstract:...` makes.
    const forward = createNetServer((tcp) => {
      const inner = phone.device.network.connectAbstract('chrome_devtools_remote');
      if (!inner) return tcp.destroy();
      tcp.on('error', () => inner.destroy());
      inner.on('error', () => tcp.destroy());
      tcp.pipe(inner).pipe(tcp);
    });
    await new Promise<void>((resolve) => forward.listen(0, '127.0.0.1', resolve));
    const { port } = forward.address() as AddressInfo;
    const version = (await (await fetch(`http://127.0.0.1:${port}/json/version`)).json()) as {
      webSocketDebuggerUrl: string;
    };
    const path = new URL(version.webSocketDebuggerUrl).pathname;
    // As Playwright's connectOverCDP does: permessage-deflate offered.
    const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, {
      perMessageDeflate: { clientNoContextTakeover: true },
    });
    try {
      await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
      expect(ws.extensions).toBe('');
      const reply = new Promise<string>((resolve) =>
        ws.once('message', (data: Buffer) => resolve(data.toString())),
      );
      ws.send(JSON.stringify({ id: 1, method: 'Browser.getVersion' }));
      expect(JSON.parse(await reply)).toMatchObject({
        id: 1,
        result: { product: expect.stringMatching(/Chrome/) },
      });
    } finally {
      ws.terminate();
      forward.close();
    }
  });
});
