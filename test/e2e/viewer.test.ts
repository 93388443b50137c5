/**
 * The live viewer in real Chromium (Debian's /usr/bin/chromium through playwright-core),
 * against the real server, with the phone checked through stock adb.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ManualClock } from '../../server/clock.js';
import { freePort } from '../../src/util/ports.js';
import { foregroundPackage as foregroundPackageOf } from '../support/adb.js';
import { launchChromium, openViewer as openViewerIn } from '../support/chromium.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let browser: Browser;
let dashPort: number;
const clock = new ManualClock(Date.now());

beforeAll(async () => {
  dashPort = await freePort();
  t = await startTestServer({ clock, bootMs: 0, dashboardOrigin: `http://127.0.0.1:${dashPort}` });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

async function readySession(timeout = 7200): Promise<string> {
  const s = (await t.api.post('/sessions', { body: { timeout_seconds: timeout } })).body;
  await t.api.waitFor(s.id, ['ready']);
  return s.id;
}

/** The app in front of the phone, through stock adb. */
const foregroundPackage = (sid: string) => foregroundPackageOf(t.api, sid);

/** Clicks the launcher icon of an app on the page's phone screen, in phone pixels. */
async function clickPhone(page: Page, x: number, y: number) {
  const box = (await page.locator('#screen').boundingBox())!;
  await page.mouse.click(box.x + (x / 720) * box.width, box.y + (y / 1280) * box.height);
}

// The Login icon: third on the home screen, after Settings and Chrome.
const LOGIN_ICON = { x: 446, y: 360 };

const openViewer = (url: string) => openViewerIn(browser, url);

describe('owner viewer', () => {
  it('shows the phone live and a click on an app icon opens that app', async () => {
    const sid = await readySession();
    const { url } = (await t.api.get(`/sessions/${sid}/owner-viewer`)).body;
    const page = await openViewer(url);
    expect(
      await page
        .locator('#screen')
        .evaluate((img: HTMLImageElement) => [img.naturalWidth, img.naturalHeight]),
    ).toEqual([720, 1280]);
    await expect.poll(() => page.locator('#state').textContent()).toBe('Live');
    expect(await page.locator('#time').textContent()).toMatch(/left$/);
    expect(await foregroundPackage(sid)).toBe('com.android.launcher3');
    const before = await page.locator('#screen').getAttribute('src');
    await clickPhone(page, LOGIN_ICON.x, LOGIN_ICON.y);
    await expect.poll(() => foregroundPackage(sid), { timeout: 10_000 }).toBe('com.phonelease.login');
    // The new screen was pushed to the page.
    await expect.poll(() => page.locator('#screen').getAttribute('src')).not.toBe(before);
    // Back through the page's button returns to the launcher.
    await page.locator('#back').click();
    await expect.poll(() => foregroundPackage(sid), { timeout: 10_000 }).toBe('com.android.launcher3');
    await page.close();
  });

  it('tells the page when the session closes, and the URL then shows the ended page', async () => {
    const sid = await readySession();
    const { url } = (await t.api.get(`/sessions/${sid}/owner-viewer`)).body;
    const page = await openViewer(url);
    await t.api.delete(`/sessions/${sid}`);
    await expect.poll(() => page.locator('#overlay h2').textContent()).toBe('This session has ended');
    const again = await page.goto(url);
    expect(again?.status()).toBe(410);
    expect(await page.locator('h2').textContent()).toBe('This session has ended');
    await page.close();
  });
});

describe('view-only viewer', () => {
  it('ignores clicks, and the server refuses input sent on its stream', async () => {
    const sid = await readySession();
    const { url } = (await t.api.get(`/sessions/${sid}/viewer`)).body;
    const page = await openViewer(url);
    expect(await page.locator('.pill.mode').textContent()).toBe('View only');
    expect(await page.locator('#back').count()).toBe(0);
    await clickPhone(page, LOGIN_ICON.x, LOGIN_ICON.y);
    // Inject input the page itself would never send, on a stream of the same page origin.
    const reply = await page.evaluate(
      async (path) => {
        const ws = new window.WebSocket(`ws://${location.host}${path}`);
        return new Promise<string>((resolve) => {
          ws.onmessage = (ev) => {
            if (typeof ev.data === 'string' && JSON.parse(ev.data).type === 'error') resolve(ev.data);
          };
          ws.onopen = () => ws.send(JSON.stringify({ type: 'tap', x: 274, y: 360 }));
        });
      },
      new URL(url).pathname + '/stream',
    );
    expect(JSON.parse(reply)).toMatchObject({ type: 'error', code: 'read_only' });
    expect(await foregroundPackage(sid)).toBe('com.android.launcher3');
    await page.close();
  });

  it('refuses a stream opened from another origin', async () => {
    const sid = await readySession();
    const { url } = (await t.api.get(`/sessions/${sid}/owner-viewer`)).body;
    const stream = url.replace(/^http/, 'ws') + '/stream';
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(stream, { headers: { origin: 'http://evil.example' } });
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
    });
    expect(status).toBe(403);
    expect(await foregroundPackage(sid)).toBe('com.android.launcher3');
  });
});

describe('expiry and embedding', () => {
  it('an expired URL shows the expired page', async () => {
    const sid = await readySession(7200);
    const { url, expires_at } = (await t.api.get(`/sessions/${sid}/owner-viewer`)).body;
    expect(expires_at).toBe(Math.floor(clock.now() / 1000) + 3600);
    const page = await openViewer(url);
    await clock.advance(3601_000);
    await expect.poll(() => page.locator('#overlay h2').textContent()).toBe('This viewer link has expired');
    const again = await page.goto(url);
    expect(again?.status()).toBe(404);
    expect(await page.locator('h2').textContent()).toBe('This viewer link has expired');
    // The session itself is still live: only the URL expired.
    expect((await t.api.get(`/sessions/${sid}`)).body.state).toBe('ready');
    await page.close();
  });

  it('only the dashboard origin can embed the viewer', async () => {
    const sid = await readySession();
    const { url } = (await t.api.get(`/sessions/${sid}/viewer`)).body;
    const embedder = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><iframe id="v" src="${url}" width="400" height="800"></iframe>`);
    });
    await new Promise<void>((resolve) => embedder.listen(dashPort, '127.0.0.1', resolve));
    const other = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><iframe id="v" src="${url}" width="400" height="800"></iframe>`);
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const framed = async (origin: string) => {
        const page = await browser.newPage();
        await page.goto(origin);
        await page.waitForTimeout(1500);
        const frame = page.frames().find((f) => f !== page.mainFrame());
        const loaded = frame
          ? await frame.evaluate(() => !!document.getElementById('screen')).catch(() => false)
          : false;
        await page.close();
        return loaded;
      };
      expect(await framed(`http://127.0.0.1:${dashPort}/`)).toBe(true);
      expect(await framed(`http://localhost:${(other.address() as AddressInfo).port}/`)).toBe(false);
    } finally {
      embedder.close();
      other.close();
    }
  });
});
