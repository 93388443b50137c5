/**
 * Mobile web under the real Playwright runner: `phonePage` runs in the leased phone's Chrome
 * (a real Chromium behind the virtual phone), reaches the test's own server only through
 * `phone.reverse()`, shows on the phone's screen, and leaves no browser process behind.
 */
import { existsSync, readFileSync } from 'node:fs';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInlineTest, type FlatTest } from '../support/playwright-inline.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import { leasePhone } from '../../src/index.js';
import { uiEngineOf } from '../../src/lease/lease.js';
import { launchChromium } from '../support/chromium.js';

let t: TestServer;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  t = await startTestServer({ bootMs: 50, phones: 20, account: { sessionLimit: 50 } });
  env = { PHONELEASE_BASE_URL: t.url, PHONELEASE_API_KEY: t.account.key };
});
afterAll(() => t.close());

const config = (extra = '') => `
import { defineConfig } from '@playwright/test';
export default defineConfig({ timeout: 60_000, workers: 1, outputDir: './test-results', ${extra} });
`;

/** A small shop page served by the spec itself; `label` tells two of them apart. */
const SERVE = `
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
export async function serveShop(label: string, colour: string): Promise<{ port: number; server: Server }> {
  const html = \`<!doctype html><meta name="viewport" content="width=device-width">
<body style="margin:0;background:\${colour}"><h1>\${label}</h1>
<button onclick="document.getElementById('done').textContent='Thank you, ' + innerWidth + 'px'">Buy</button>
<p id="done"></p></body>\`;
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { port: (server.address() as AddressInfo).port, server };
}
`;

/** Lines `key=value` the specs printed. */
function printed(tests: FlatTest[], key: string): string[] {
  return tests.flatMap((x) =>
    x.results.flatMap((r) =>
      r.stdout.flatMap((s) =>
        [...(s.text ?? '').matchAll(new RegExp(`${key}=(\\S+)`, 'g'))].map((m) => m[1]!),
      ),
    ),
  );
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitGone(pid: number, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return !alive(pid);
}

describe('phonePage', () => {
  it('opens the test server through reverse, clicks, asserts, shows on the phone, and leaves no process', async () => {
    const run = await runInlineTest(
      'mobile-web-buy',
      {
        'playwright.config.ts': config(),
        'serve.ts': SERVE,
        'buy.spec.ts': `
import { readFileSync } from 'node:fs';
import { PNG } from 'pngjs';
import { test, expect } from 'phonelease/playwright';
import { serveShop } from './serve';

/** Pixels of the phone's screen (frame.png) that have the shop's green. */
async function greenPixels(phone: { snapshot(): Promise<{ data: Buffer }> }): Promise<number> {
  const png = PNG.sync.read((await phone.serviceScreenshot()).data);
  let n = 0;
  for (let i = 0; i < png.data.length; i += 4)
    if (png.data[i] === 0x00 && png.data[i + 1] === 0xa8 && png.data[i + 2] === 0x6b) n++;
  return n;
}

test('checkout works on a phone', async ({ phone, phonePage }) => {
  const { port, server } = await serveShop('Phone shop', '#00a86b');
  // The phone's localhost is its own: without reverse the runner's server is out of reach.
  const refused = await phonePage.goto('http://localhost:' + port + '/');
  expect(refused?.status()).toBe(502);
  await expect(phonePage.getByRole('heading')).toHaveText('Nothing listens on localhost:' + port + ' on the phone');
  await phone.reverse(port);
  await phonePage.goto('http://localhost:' + port + '/');
  await phonePage.getByRole('button', { name: 'Buy' }).click();
  await expect(phonePage.getByText('Thank you')).toBeVisible();
  // A phone-sized mobile viewport (Pixel 8 at 2x: 360 CSS px wide) and a mobile Chrome.
  await expect(phonePage.locator('#done')).toHaveText('Thank you, 360px');
  expect(await phonePage.evaluate(() => navigator.userAgent)).toMatch(/Android 14; Pixel 8.*Mobile Safari/);
  expect(await phonePage.evaluate(() => navigator.maxTouchPoints)).toBeGreaterThan(0);
  // Every tab is phone-sized, not only the one in front (Playwright screenshots them all on failure).
  const widths = await Promise.all(phonePage.context().pages().map((p) => p.evaluate(() => screen.width)));
  expect(widths.length).toBeGreaterThan(1);
  expect(widths).toEqual(widths.map(() => 360));
  // A denser display (wm density, as a tester tries the page on another phone): the page
  // gets the viewport of the display as it is sized now, and back after the reset.
  await phone.shell('wm density 480');
  await expect.poll(() => phonePage.evaluate(() => [innerWidth, devicePixelRatio])).toEqual([240, 3]);
  await phone.shell('wm density reset');
  await expect.poll(() => phonePage.evaluate(() => [innerWidth, devicePixelRatio])).toEqual([360, 2]);
  // The phone's own screen shows the page (frame.png is what the viewer and reports show).
  await expect.poll(() => greenPixels(phone), { timeout: 15_000 }).toBeGreaterThan(100_000);
  const cdp = await phonePage.context().browser()!.newBrowserCDPSession();
  const info = (await cdp.send('SystemInfo.getProcessInfo')) as { processInfo: { type: string; id: number }[] };
  const pid = info.processInfo.find((p) => p.type === 'browser')!.id;
  const profile = /--user-data-dir=(\\S+)/.exec(readFileSync('/proc/' + pid + '/cmdline', 'utf8').replace(/\\0/g, ' '))![1];
  console.log('chromium-pid=' + pid + ' profile=' + profile);
  server.close();
});`,
      },
      { env },
    );
    expect(run.exitCode, run.stdout + run.stderr).toBe(0);
    expect(run.tests.map((x) => x.status)).toEqual(['expected']);
    const [pid] = printed(run.tests, 'chromium-pid').map(Number);
    const [profile] = printed(run.tests, 'profile');
    expect(pid).toBeGreaterThan(0);
    // The lease ended with the test: its Chromium and its profile are gone.
    expect(await waitGone(pid!)).toBe(true);
    expect(existsSync(profile!)).toBe(false);
  });

  it('runs two phones with two pages at once in two workers', async () => {
    const run = await runInlineTest(
      'mobile-web-two',
      {
        'playwright.config.ts': config(`fullyParallel: true, workers: 2`),
        'serve.ts': SERVE,
        'two.spec.ts': `
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, expect } from 'phonelease/playwright';
import { serveShop } from './serve';

for (const label of ['Alpha', 'Beta']) {
  test('shop ' + label, async ({ phone, phonePage }, info) => {
    const { port, server } = await serveShop(label, '#ffffff');
    await phone.reverse(port, port);
    await phonePage.goto('http://localhost:' + port + '/');
    await expect(phonePage.getByRole('heading')).toHaveText(label);
    // Both pages are open at the same moment: each waits for the other.
    writeFileSync(join(info.config.rootDir, label + '.open'), '');
    const other = label === 'Alpha' ? 'Beta' : 'Alpha';
    await expect.poll(() => existsSync(join(info.config.rootDir, other + '.open')), { timeout: 30_000 }).toBe(true);
    await phonePage.getByRole('button', { name: 'Buy' }).click();
    await expect(phonePage.getByText('Thank you')).toBeVisible();
    await expect(phonePage.getByRole('heading')).toHaveText(label);
    console.log('phone=' + phone.id + ' worker=' + info.workerIndex);
    server.close();
  });
}`,
      },
      { env },
    );
    expect(run.exitCode, run.stdout + run.stderr).toBe(0);
    expect(run.tests.map((x) => x.status)).toEqual(['expected', 'expected']);
    const phones = printed(run.tests, 'phone');
    expect(new Set(phones).size).toBe(2);
    expect(new Set(printed(run.tests, 'worker')).size).toBe(2);
  });

  it("attaches the page's screenshot and the phone's screen when a test fails", async () => {
    const run = await runInlineTest(
      'mobile-web-fail',
      {
        'playwright.config.ts': config(),
        'fail.spec.ts': `
import { test, expect } from 'phonelease/playwright';
test('fails on the phone page', async ({ phonePage }) => {
  await phonePage.setContent('<meta name="viewport" content="width=device-width"><h1>Broken checkout</h1>');
  await expect(phonePage.getByText('Thank you')).toBeVisible({ timeout: 500 });
});`,
      },
      { env },
    );
    expect(run.exitCode).toBe(1);
    const result = run.tests[0]!.results[0]!;
    const names = result.attachments.map((a) => a.name);
    expect(names).toEqual(expect.arrayContaining(['phone-page', 'phone-screen']));
    const page = result.attachments.find((a) => a.name === 'phone-page')!;
    const png = PNG.sync.read(page.path ? readFileSync(page.path) : Buffer.from(page.body!, 'base64'));
    // The page screenshot is the phone's viewport at its pixel ratio.
    expect(png.width).toBe(720);
  });

  it("the owner viewer's tap on the phone's screen clicks the button under it in the page", async () => {
    const phone = await leasePhone({ baseUrl: t.url, apiKey: t.account.key });
    const viewerBrowser = await launchChromium();
    try {
      const context = await phone.launchBrowser();
      const page = await context.newPage();
      await page.setContent(
        '<meta name="viewport" content="width=device-width"><body style="margin:0;background:#00a86b">' +
          '<button style="margin:40px;width:200px;height:80px" onclick="this.textContent=\'Bought\'">Buy</button>',
      );
      // The phone's screen shows the page (the tab in front is watched, taps go to it).
      await expect
        .poll(
          async () =>
            PNG.sync.read((await phone.serviceScreenshot()).data).data.readUInt32BE(4 * (720 * 900 + 360)),
          {
            timeout: 15_000,
          },
        )
        .toBe(0x00a86bff);
      // Where the button is on the phone's screen: the page's position (the WebView's bounds)
      // plus the button's CSS box at the phone's 2x density.
      const webView = /compositor_view_holder"[^>]*bounds="\[(\d+),(\d+)\]/.exec(
        await uiEngineOf(phone).treeXml(),
      );
      expect(webView).not.toBeNull();
      const box = (await page.getByRole('button').boundingBox())!;
      const x = Number(webView![1]) + (box.x + box.width / 2) * 2;
      const y = Number(webView![2]) + (box.y + box.height / 2) * 2;

      const { url } = (await t.api.get(`/sessions/${phone.id}/owner-viewer`)).body as { url: string };
      const viewer = await viewerBrowser.newPage({ viewport: { width: 1280, height: 800 } });
      await viewer.goto(url);
      await expect.poll(() => viewer.locator('#state').textContent(), { timeout: 15_000 }).toBe('Live');
      const screen = (await viewer.locator('#screen').boundingBox())!;
      await viewer.mouse.click(screen.x + (x / 720) * screen.width, screen.y + (y / 1280) * screen.height);
      await expect.poll(() => page.getByRole('button').textContent(), { timeout: 10_000 }).toBe('Bought');
    } finally {
      await viewerBrowser.close();
      await phone.end();
    }
  });

  it('says what to do when the browser is missing, a port is already reversed, or DevTools never answer', async () => {
    const run = await runInlineTest(
      'mobile-web-errors',
      {
        'playwright.config.ts': config(),
        'errors.spec.ts': `
import { test, expect } from 'phonelease/playwright';
test('errors', async ({ phone }) => {
  await phone.reverse(4555, 4556);
  await expect(phone.reverse(4555)).rejects.toMatchObject({ code: 'port_already_reversed' });
  await expect(phone.launchBrowser({ socket: 'no_such_socket', timeoutMs: 1500 })).rejects.toMatchObject({
    code: 'devtools_timeout',
  });
  await phone.shell('pm disable-user com.android.chrome');
  const error = await phone.launchBrowser().catch((e: Error) => e);
  expect(error).toMatchObject({ code: 'browser_unavailable' });
  expect((error as Error).message).toContain('pm enable com.android.chrome');
});`,
      },
      { env },
    );
    expect(run.exitCode, run.stdout + run.stderr).toBe(0);
  });

  it('a server machine without Chromium gives phones without Chrome, and launchBrowser says so at once', async () => {
    const bare = await startTestServer({
      backend: createVirtualBackend({ bootMs: 50, chromium: '/nonexistent/chromium' }),
    });
    try {
      const phone = await leasePhone({ baseUrl: bare.url, apiKey: bare.account.key });
      try {
        expect((await phone.shell('pm list packages -e com.android.chrome')).stdout).toBe('');
        const error = await phone.launchBrowser().catch((e: Error) => e);
        expect(error).toMatchObject({ code: 'browser_unavailable' });
        expect((error as Error).message).toContain("install Debian's chromium");
      } finally {
        await phone.end();
      }
    } finally {
      await bare.close();
    }
  });
});
