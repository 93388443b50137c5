/**
 * The dashboard's pages on a deployment (PostgreSQL, 2 API nodes, a device host, each its
 * own process started through the CLI), in real Chromium. The browser uses node 1 while
 * sessions and keys are made through node 0, so every page reads what the other node wrote,
 * and the session page's viewer is relayed to the host that holds the phone.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/chromium.js';
import { runCli } from '../support/cli.js';
import {
  clipboard,
  WAIT,
  expectCleanTab,
  heading,
  tabsPerTest,
  pictureWidth,
  screenshot,
  signInWithKey,
  signInWithLink,
  tokenOf,
  viewerScreenWidth,
  visit,
} from '../support/dashboard-browser.js';
import { Deployment, type CreatedAccountLine } from '../support/deployment.js';
import { postgresMissing, startPostgres, type PostgresCluster } from '../support/postgres.js';
import { Api } from '../support/server.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the dashboard tests on a deployment: ${missing}`);

const PRICE = 7;
const EMAIL = 'deploy-qa@example.com';

describe.skipIf(missing !== null)('the dashboard on a deployment, through the other API node', () => {
  let cluster: PostgresCluster;
  let d: Deployment;
  let browser: Browser;
  let account: CreatedAccountLine;
  let operator: CreatedAccountLine;

  beforeAll(async () => {
    cluster = await startPostgres();
    d = await Deployment.start(cluster, { nodes: 2, hosts: [['--phones', '3']] });
    account = await d.account(['--email', EMAIL, '--price-cents-per-minute', String(PRICE)]);
    operator = await d.account(['--email', 'ops@example.com', '--operator', '--billing-mode', 'disabled']);
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await d?.stop();
    await cluster?.stop();
  });

  /** Node 1, where the browser is; node 0 makes the sessions and keys. */
  const browserNode = () => d.nodes[1]!.url;
  const node0 = () => d.api(0, account.key);

  async function signInLink(uid: string): Promise<string> {
    const r = await runCli([
      'dashboard',
      '--store',
      d.store,
      '--uid',
      uid,
      '--base-url',
      browserNode(),
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as { url: string }).url;
  }

  const openTab = tabsPerTest(() => browser);
  const tab = (opts: Parameters<typeof openTab>[1] = {}) => openTab(browserNode(), opts);

  it('signs in by link on one node; the token is honoured by the other; a reused link is refused', async () => {
    const link = await signInLink(account.uid);
    const me = await tab();
    await signInWithLink(me, link);
    const jwt = await tokenOf(me.page);
    expect((await d.api(0, jwt).get('/me')).body.email).toBe(EMAIL);

    const again = await openTab(d.nodes[0]!.url, { expectedStatuses: [401] });
    await again.page.goto(link.replace(browserNode(), d.nodes[0]!.url));
    await expect.poll(() => heading(again.page), WAIT).toBe('This sign-in link was already used');
    expectCleanTab(me, [jwt, new URL(link).hash.slice(1)]);
    expectCleanTab(again, []);
  });

  it('a session made through node 0 shows live on node 1, its page shows the phone, and "End session" puts it in History with its cost', async () => {
    const me = await tab();
    await signInWithLink(me, await signInLink(account.uid));
    const before = (await node0().get('/me')).body.balance_cents as number;
    const created = await node0().post('/sessions', { body: { timeout_seconds: 600 } });
    expect(created.status).toBe(202);
    const sid: string = created.body.id;
    const card = me.page.locator(`li[data-sid="${sid}"]`);
    await expect.poll(() => card.count(), { timeout: 2_000 }).toBe(1);
    await expect.poll(() => pictureWidth(card), WAIT).toBe(720);

    await card.getByRole('heading').getByRole('link').click();
    await expect.poll(() => heading(me.page), WAIT).toBe('Session');
    await expect.poll(() => viewerScreenWidth(me.page), { timeout: 20_000 }).toBe(720);
    const adb = (await node0().get(`/sessions/${sid}/adb`)).body;
    await me.page.locator('.line', { hasText: 'adb connect' }).getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => clipboard(me.page), WAIT).toBe(`adb connect ${adb.host}:${adb.port}`);

    // The first minute is billed once it starts (a second after ready).
    await expect.poll(async () => (await node0().get('/me')).body.balance_cents, WAIT).toBeLessThan(before);
    await me.page.getByRole('button', { name: 'End session' }).click();
    await expect
      .poll(() => me.page.getByRole('heading', { name: 'This session has ended' }).count(), WAIT)
      .toBe(1);
    await d.waitGone(node0(), sid);

    await visit(me.page, 'History');
    const record = (await node0().get('/history')).body.find((r: { sid: string }) => r.sid === sid);
    expect(record.cost_cents).toBeGreaterThanOrEqual(PRICE);
    const row = me.page.locator('tr', { hasText: sid });
    await expect.poll(() => row.count(), WAIT).toBe(1);
    expect(await row.locator('td').nth(5).textContent()).toBe(`$${(record.cost_cents / 100).toFixed(2)}`);
    expectCleanTab(me, [await tokenOf(me.page), adb.code]);
  });

  it('a key made on node 1 works with the CLI through node 0 until "Revoke"; "Sign out" ends the token on both', async () => {
    const me = await tab({ expectedStatuses: [401] });
    await signInWithKey(me, browserNode(), account.key);
    await visit(me.page, 'Keys');
    await me.page.getByLabel('Label').fill('deploy CI');
    await me.page.getByRole('button', { name: 'Create key' }).click();
    const shown = me.page.locator('.created-key code');
    await expect.poll(() => shown.textContent(), WAIT).toMatch(/^pck_/);
    const key = (await shown.textContent())!;
    const env = { PHONELEASE_BASE_URL: d.nodes[0]!.url, PHONELEASE_API_KEY: key };
    expect((await runCli(['me', '--json'], env)).code).toBe(0);
    await me.page
      .locator('tr', { hasText: 'deploy CI' })
      .getByRole('button', { name: 'Revoke deploy CI' })
      .click();
    await expect.poll(() => me.page.locator('tr', { hasText: 'deploy CI' }).count(), WAIT).toBe(0);
    expect((await runCli(['me', '--json'], env)).code).toBe(1);

    const jwt = await tokenOf(me.page);
    await me.page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => heading(me.page), WAIT).toBe('Sign in');
    for (const i of [0, 1]) expect((await d.api(i, jwt).get('/sessions')).status).toBe(401);
    expectCleanTab(me, [key, jwt, account.key]);
  });

  it('Fleet shows each device host to an operator, and is a 404 to others', async () => {
    const op = await tab();
    await signInWithLink(op, await signInLink(operator.uid));
    await visit(op.page, 'Fleet');
    const host = d.hosts[0]!.line.host;
    const row = op.page.locator('tr', { hasText: host });
    await expect.poll(() => row.count(), WAIT).toBe(1);
    expect(await row.locator('td').nth(2).textContent()).toBe('3');
    expect(await op.page.getByRole('heading', { name: 'Boot times' }).count()).toBe(1);
    await screenshot(op.page, 'fleet-deployment');

    const me = await tab({ expectedStatuses: [404] });
    await signInWithLink(me, await signInLink(account.uid));
    expect(await me.page.getByRole('navigation').getByRole('link', { name: 'Fleet' }).count()).toBe(0);
    await me.page.goto(`${browserNode()}/dashboard/fleet`);
    await expect.poll(() => heading(me.page), WAIT).toBe('Page not found');
    expect((await new Api(d.nodes[0]!.url, await tokenOf(me.page)).get('/dashboard/api/fleet')).status).toBe(
      404,
    );
    expectCleanTab(op, []);
    expectCleanTab(me, []);
  });
});
