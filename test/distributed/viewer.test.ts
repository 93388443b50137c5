/**
 * Live viewers and the watch page on a deployment (2 API nodes, a device host, started
 * through the CLI), in real Chromium: a session created through one node is watched and
 * driven through the other, whose viewer stream is relayed to the host holding the phone.
 * The phone is checked through stock adb at the host's gateway.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { foregroundPackage } from '../support/adb.js';
import { launchChromium, openViewer as openViewerIn } from '../support/chromium.js';
import { Deployment, type CreatedAccountLine } from '../support/deployment.js';
import { postgresMissing, startPostgres, type PostgresCluster } from '../support/postgres.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the deployment viewer tests: ${missing}`);

// The Login icon: third on the home screen, after Settings and Chrome (as test/e2e/viewer.test.ts).
const LOGIN_ICON = { x: 446, y: 360 };

describe.skipIf(missing !== null)('live viewers on a deployment', () => {
  let cluster: PostgresCluster;
  let d: Deployment;
  let browser: Browser;
  let account: CreatedAccountLine;

  beforeAll(async () => {
    cluster = await startPostgres();
    d = await Deployment.start(cluster, { nodes: 2, hosts: [['--phones', '3']] });
    account = await d.account();
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await d?.stop();
    await cluster?.stop();
  });

  /** A ready session created through node 0. */
  async function readySession(): Promise<{ id: string; watch_url: string }> {
    const created = await d.api(0, account.key).post('/sessions', { body: { timeout_seconds: 600 } });
    expect(created.status).toBe(202);
    return d.api(0, account.key).waitFor(created.body.id, ['ready']);
  }

  const openViewer = (url: string) => openViewerIn(browser, url);

  async function clickPhone(page: Page, x: number, y: number) {
    const box = (await page.locator('#screen').boundingBox())!;
    await page.mouse.click(box.x + (x / 720) * box.width, box.y + (y / 1280) * box.height);
  }

  it('the owner viewer, opened through the other node, shows the phone and a click reaches it', async () => {
    const s = await readySession();
    const capability = await d.api(1, account.key).get(`/sessions/${s.id}/owner-viewer`);
    expect(capability.status).toBe(200);
    expect(capability.headers['cache-control']).toContain('no-store');
    expect(capability.body.url.startsWith(d.nodes[1]!.url + '/v/')).toBe(true);
    const page = await openViewer(capability.body.url);
    expect(
      await page
        .locator('#screen')
        .evaluate((img: HTMLImageElement) => [img.naturalWidth, img.naturalHeight]),
    ).toEqual([720, 1280]);
    await expect.poll(() => page.locator('#state').textContent()).toBe('Live');
    expect(await page.locator('.pill.mode').textContent()).toBe('Interactive');
    const shots = process.env.PHONELEASE_SCREENSHOT_DIR;
    if (shots) {
      mkdirSync(shots, { recursive: true });
      await page.screenshot({ path: join(shots, 'deployment-owner-viewer.png') });
    }
    expect(await foregroundPackage(d.api(0, account.key), s.id)).toBe('com.android.launcher3');
    const before = await page.locator('#screen').getAttribute('src');
    await clickPhone(page, LOGIN_ICON.x, LOGIN_ICON.y);
    await expect
      .poll(() => foregroundPackage(d.api(0, account.key), s.id), { timeout: 10_000 })
      .toBe('com.phonelease.login');
    // The new screen was pushed to the page through the relay.
    await expect.poll(() => page.locator('#screen').getAttribute('src')).not.toBe(before);

    // The same URL works through the node that did not issue it (one load balancer, any node).
    const other = await openViewer(capability.body.url.replace(d.nodes[1]!.url, d.nodes[0]!.url));
    await expect.poll(() => other.locator('#state').textContent()).toBe('Live');
    await other.close();

    // Ending the session through the other node ends the stream; the URL then says so.
    await d.api(0, account.key).delete(`/sessions/${s.id}`);
    await expect.poll(() => page.locator('#overlay h2').textContent()).toBe('This session has ended');
    await d.waitGone(d.api(1, account.key), s.id);
    const again = await page.goto(capability.body.url);
    expect(again?.status()).toBe(410);
    await page.close();
  });

  it('a shared viewer (the watch_url grant) shows the phone and its stream refuses input', async () => {
    const s = await readySession();
    const grant = new URL(s.watch_url).searchParams.get('token')!;
    const capability = await d.api(1, account.key).as(null).get(`/sessions/${s.id}/viewer?token=${grant}`);
    expect(capability.status).toBe(200);
    const page = await openViewer(capability.body.url);
    expect(await page.locator('.pill.mode').textContent()).toBe('View only');
    expect(await page.locator('#back').count()).toBe(0);
    await expect.poll(() => page.locator('#state').textContent()).toBe('Live');
    // Input the page itself would never send, on a stream of the same page origin.
    const reply = await page.evaluate(
      async (path) => {
        const ws = new window.WebSocket(`ws://${location.host}${path}`);
        return new Promise<string>((resolve) => {
          ws.onmessage = (ev) => {
            if (typeof ev.data === 'string' && JSON.parse(ev.data).type === 'error') resolve(ev.data);
          };
          ws.onopen = () => ws.send(JSON.stringify({ type: 'tap', x: 446, y: 360 }));
        });
      },
      new URL(capability.body.url).pathname + '/stream',
    );
    expect(JSON.parse(reply)).toMatchObject({ type: 'error', code: 'read_only' });
    expect(await foregroundPackage(d.api(0, account.key), s.id)).toBe('com.android.launcher3');
    await page.close();
    await d.api(0, account.key).delete(`/sessions/${s.id}`);
  });

  it('the watch page behind watch_url shows the phone, on either node', async () => {
    const s = await readySession();
    for (const node of d.nodes) {
      const url = new URL(s.watch_url);
      const page = await browser.newPage();
      const res = await page.goto(node.url + url.pathname + url.search);
      expect(res?.status()).toBe(200);
      await page.waitForFunction(
        () => (document.getElementById('frame') as HTMLImageElement).naturalWidth > 0,
        undefined,
        { timeout: 15_000 },
      );
      expect(await page.locator('#state').textContent()).toBe('ready');
      await page.close();
    }
    await d.api(0, account.key).delete(`/sessions/${s.id}`);
  });

  it('refuses grants of another session, grants on the owner viewer, and streams from other origins', async () => {
    const [a, b] = [await readySession(), await readySession()];
    const grantA = new URL(a.watch_url).searchParams.get('token')!;
    for (const i of [0, 1]) {
      const anon = d.api(i, account.key).as(null);
      // Another session's grant: that session is not visible to it (404), as on the single server.
      expect((await anon.get(`/sessions/${b.id}/viewer?token=${grantA}`)).status).toBe(404);
      expect((await anon.get(`/watch/${b.id}?token=${grantA}`)).status).toBe(404);
      // A grant is never the owner.
      const asOwner = await d.api(i, grantA).get(`/sessions/${a.id}/owner-viewer`);
      expect(asOwner.status).toBe(403);
      expect(asOwner.body.code).toBe('forbidden');
      // A forged grant is unauthenticated, and the answer does not echo it.
      const forged = grantA.slice(0, 10) + (grantA[10] === 'A' ? 'B' : 'A') + grantA.slice(11);
      const refused = await anon.get(`/sessions/${a.id}/viewer?token=${forged}`);
      expect(refused.status).toBe(401);
      expect(refused.raw.toString()).not.toContain(grantA.slice(4, 20));
      // Another account sees nothing.
      const stranger = await d.account();
      expect((await d.api(i, stranger.key).get(`/sessions/${a.id}/owner-viewer`)).status).toBe(404);
    }
    const { url } = (await d.api(0, account.key).get(`/sessions/${a.id}/owner-viewer`)).body;
    // The viewer URL's still frame, through the node that did not issue it.
    const still = await d
      .api(1, account.key)
      .as(null)
      .get(new URL(url).pathname + '/frame.png');
    expect(still.status).toBe(200);
    expect(still.headers['content-type']).toBe('image/png');
    expect(still.headers['cache-control']).toContain('no-store');
    // A viewer URL whose token was altered is the expired page, not someone's phone.
    const token = new URL(url).pathname.split('/')[2]!;
    const altered = url.replace(token, token.slice(0, 5) + (token[5] === 'A' ? 'B' : 'A') + token.slice(6));
    const page = await browser.newPage();
    expect((await page.goto(altered))?.status()).toBe(404);
    expect(await page.locator('h2').textContent()).toBe('This viewer link has expired');
    await page.close();
    // A page of another site cannot open the stream with the token.
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(url.replace(/^http/, 'ws') + '/stream', {
        headers: { origin: 'http://evil.example' },
      });
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
    });
    expect(status).toBe(403);
    // And device hosts take no stream that an API node did not sign.
    const hostStatus = await new Promise<number>((resolve) => {
      const ws = new WebSocket(
        `${d.hosts[0]!.line.url.replace(/^http/, 'ws')}/internal/sessions/${a.id}/stream/owner/9999999999`,
      );
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
      ws.on('error', () => resolve(0));
    });
    expect(hostStatus).toBe(401);
    expect(await foregroundPackage(d.api(0, account.key), a.id)).toBe('com.android.launcher3');
    for (const s of [a, b]) await d.api(0, account.key).delete(`/sessions/${s.id}`);
    // No node or host logged a grant or a viewer token.
    expect(d.logs()).not.toContain(grantA.slice(4, 30));
    expect(d.logs()).not.toContain(token.slice(0, 30));
  });
});
