/**
 * The dashboard's pages in real Chromium (Debian's /usr/bin/chromium through
 * playwright-core) against the real single server: signing in by link and by key, the live
 * Sessions list and a session's page with its live phone, ending it into History with its
 * cost, keys that work with the CLI until revoked, refused links, signing out, the Fleet
 * page for operators only. Every test checks that the page logged no error and that no
 * request URL carried a secret.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock.js';
import { launchChromium } from '../support/chromium.js';
import { runCli } from '../support/cli.js';
import {
  PHONE,
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
  type DashboardTab,
} from '../support/dashboard-browser.js';
import { Api, startTestServer, type TestServer } from '../support/server.js';

const PRICE = 7;
const EMAIL = 'qa-lead@example.com';
// Deadlines and billing run on this clock, so a session's billable minutes are exact.
const clock = new ManualClock(Date.now());
let t: TestServer;
let dataDir: string;
let browser: Browser;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'phonelease-dashboard-'));
  t = await startTestServer({
    clock,
    bootMs: 0,
    dataDir,
    account: { email: EMAIL, name: 'QA lead', billingMode: 'metered', priceCentsPerMinute: PRICE },
  });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** A one-time sign-in link, made the way an operator makes one: `phonelease dashboard`. */
async function cliSignInLink(): Promise<string> {
  const r = await runCli(['dashboard', '--data', dataDir, '--email', EMAIL, '--base-url', t.url, '--json']);
  expect(r.code, r.stderr).toBe(0);
  const { url } = JSON.parse(r.stdout) as { url: string };
  expect(url).toMatch(new RegExp(`^${t.url}/dashboard/sign-in#token=`));
  return url;
}

/**
 * The same link from the running server, dated by its clock (the tests move that clock;
 * the CLI dates its links by the real one).
 */
const signInLink = (uid = t.account.uid): Promise<string> => t.server.signInLink(uid);

const linkToken = (link: string) => new URL(link).hash.slice('#token='.length);

const openTab = tabsPerTest(() => browser);
const tab = (opts: Parameters<typeof openTab>[1] = {}) => openTab(t.url, opts);

/** A tab signed in as the main account, by link. */
async function signedIn(opts: Parameters<typeof openTab>[1] = {}): Promise<DashboardTab> {
  const opened = await tab(opts);
  await signInWithLink(opened, await signInLink());
  return opened;
}

describe('signing in', () => {
  it('by link: the token leaves the address bar at once, reaches only a POST body, and signs in', async () => {
    const link = await cliSignInLink();
    const me = await tab();
    await signInWithLink(me, link);
    expect(me.page.url()).toBe(`${t.url}/dashboard/sessions`);
    expect(await me.page.locator('header .email').textContent()).toBe(EMAIL);
    const jwt = await tokenOf(me.page);
    // The JWT is an owner credential on the ordinary API.
    const account = await new Api(t.url, jwt).get('/me');
    expect(account.status).toBe(200);
    expect(account.body.email).toBe(EMAIL);
    expectCleanTab(me, [linkToken(link), jwt]);
  });

  it('by API key, typed into the sign-in form', async () => {
    const me = await tab({ expectedStatuses: [401] });
    await me.page.goto(`${t.url}/dashboard/sign-in`);
    expect(await heading(me.page)).toBe('Sign in');
    await screenshot(me.page, 'sign-in');
    // A wrong key first: refused in the API's words, and nothing is stored.
    await me.page.getByLabel('API key').fill('pck_not-a-key');
    await me.page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => me.page.getByRole('alert').textContent(), WAIT).toMatch(/not valid/);
    expect(await me.page.evaluate(() => sessionStorage.length)).toBe(0);
    await signInWithKey(me, t.url, t.account.key);
    expect(await me.page.locator('header .email').textContent()).toBe(EMAIL);
    expectCleanTab(me, [t.account.key, await tokenOf(me.page)]);
  });

  it('a reused link is refused with a page that says so and what to do', async () => {
    const link = await signInLink();
    await signInWithLink(await tab(), link);
    const again = await tab({ expectedStatuses: [401] });
    await again.page.goto(link);
    await expect.poll(() => heading(again.page), WAIT).toBe('This sign-in link was already used');
    expect(again.page.url()).toBe(`${t.url}/dashboard/sign-in`);
    expect(await again.page.getByRole('alert').textContent()).toContain('phonelease dashboard');
    // The key form is there to sign in another way.
    expect(await again.page.getByLabel('API key').count()).toBe(1);
    await screenshot(again.page, 'sign-in-used');
    expectCleanTab(again, [linkToken(link)]);
  });

  it('an expired link (older than 10 minutes) is refused with a page that says so', async () => {
    const link = await signInLink();
    await clock.advance(10 * 60_000 + 1_000);
    const late = await tab({ expectedStatuses: [401] });
    await late.page.goto(link);
    await expect.poll(() => heading(late.page), WAIT).toBe('This sign-in link has expired');
    expect(await late.page.getByRole('alert').textContent()).toContain('phonelease dashboard');
    expectCleanTab(late, [linkToken(link)]);
  });

  it('"Sign out" ends the token everywhere; a page whose token stops working goes to sign-in', async () => {
    const me = await signedIn({ expectedStatuses: [401] });
    const jwt = await tokenOf(me.page);
    await me.page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => heading(me.page), WAIT).toBe('Sign in');
    expect(await me.page.getByRole('status').textContent()).toBe('You are signed out.');
    expect((await new Api(t.url, jwt).get('/me')).status).toBe(401);
    expect((await new Api(t.url, jwt).get('/sessions')).status).toBe(401);

    // Signed out elsewhere (another tab, or past its 12 hours): the next poll finds out.
    const other = await signedIn({ expectedStatuses: [401] });
    await visit(other.page, 'History');
    await new Api(t.url, await tokenOf(other.page)).post('/dashboard/api/sign-out');
    await other.page.getByRole('navigation').getByRole('link', { name: 'Sessions' }).click();
    await expect.poll(() => heading(other.page), WAIT).toBe('Sign in');
    expect(await other.page.getByRole('status').textContent()).toMatch(/Sign in again/);
    // Signing in again returns to the page that was open.
    await other.page.getByLabel('API key').fill(t.account.key);
    await other.page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => heading(other.page), WAIT).toBe('Sessions');
    expectCleanTab(me, [jwt]);
    expectCleanTab(other, []);
  });
});

describe('sessions', () => {
  it('a session created through the API shows within 2 s with its live picture, and its page shows the phone', async () => {
    const me = await signedIn();
    const jwt = await tokenOf(me.page);
    const created = await t.api.post('/sessions', { body: { timeout_seconds: 3600 } });
    expect(created.status).toBe(202);
    const sid: string = created.body.id;
    const card = me.page.locator(`li[data-sid="${sid}"]`);
    // The list polls every second: the new session is there within 2 s, without a reload.
    await expect.poll(() => card.count(), { timeout: 2_000 }).toBe(1);
    await t.api.waitFor(sid, ['ready']);
    await expect.poll(() => card.locator('.badge').textContent(), WAIT).toBe('Ready');
    expect(await card.locator('dd').allTextContents()).toEqual([
      'Running',
      expect.stringMatching(/s$/),
      expect.stringMatching(/^59 min|^1 h/),
      'Temporary phone',
    ]);
    // The small live picture: frame.png fetched with the header, shown through a blob: URL.
    const picture = card.locator('img.thumb');
    await expect
      .poll(() => picture.evaluate((img: HTMLImageElement) => [img.src.slice(0, 5), img.naturalWidth]), WAIT)
      .toEqual(['blob:', 720]);
    await screenshot(me.page, 'sessions');

    await card.getByRole('heading').getByRole('link').click();
    await expect.poll(() => heading(me.page), WAIT).toBe('Session');
    expect(me.page.url()).toBe(`${t.url}/dashboard/sessions/${sid}`);
    // The owner viewer, embedded: its live picture of the phone's screen.
    await expect.poll(() => viewerScreenWidth(me.page), WAIT).toBe(720);
    await screenshot(me.page, 'session');

    // The adb line, copied; the unlock code only on demand.
    const adb = (await t.api.get(`/sessions/${sid}/adb`)).body;
    const line = `adb connect ${adb.host}:${adb.port}`;
    expect(await me.page.getByText(line, { exact: true }).count()).toBe(1);
    expect(await me.page.getByText(adb.code).count()).toBe(0);
    await me.page.locator('.line', { hasText: line }).getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => clipboard(me.page), WAIT).toBe(line);
    await me.page.getByRole('button', { name: 'Show unlock code' }).click();
    expect(await me.page.locator('.code-slot code').textContent()).toBe(adb.code);
    await me.page.getByRole('button', { name: 'Hide unlock code' }).click();
    expect(await me.page.getByText(adb.code).count()).toBe(0);

    // The view-only link: copied, never shown, and it opens the view-only viewer.
    await me.page.getByRole('button', { name: 'Copy view-only link' }).click();
    await expect.poll(() => clipboard(me.page), WAIT).toMatch(new RegExp(`^${t.url}/`));
    const viewOnly = await clipboard(me.page);
    const watcher = await tab();
    await watcher.page.goto(viewOnly);
    await expect.poll(() => watcher.page.locator('.pill.mode').textContent(), WAIT).toBe('View only');

    await me.page.getByRole('button', { name: 'Revoke ADB' }).click();
    await expect
      .poll(() => me.page.getByText('ADB access is revoked for this session.').count(), WAIT)
      .toBe(1);
    expect((await t.api.get(`/sessions/${sid}/adb`)).body.enabled).toBe(false);

    await me.page.getByRole('button', { name: 'End session' }).click();
    await expect
      .poll(() => me.page.getByRole('heading', { name: 'This session has ended' }).count(), WAIT)
      .toBe(1);
    await t.api.waitGone(sid);
    expectCleanTab(me, [jwt, adb.code, viewOnly]);
  });

  it('"End session" ends it, and it moves to History with its billable minutes and cost', async () => {
    const me = await signedIn();
    const created = await t.api.post('/sessions', { body: { timeout_seconds: 3600 } });
    const sid: string = created.body.id;
    await t.api.waitFor(sid, ['ready']);
    // Two started minutes: billed from ready, each at its start.
    await clock.advance(90_000);
    await me.page.goto(`${t.url}/dashboard/sessions/${sid}`);
    await expect.poll(() => me.page.locator('.session-page .badge').textContent(), WAIT).toBe('Ready');
    await me.page.getByRole('button', { name: 'End session' }).click();
    await expect
      .poll(() => me.page.getByRole('heading', { name: 'This session has ended' }).count(), WAIT)
      .toBe(1);
    await t.api.waitGone(sid);
    // Gone from the live list...
    await visit(me.page, 'Sessions');
    await expect.poll(() => me.page.locator(`li[data-sid="${sid}"]`).count(), WAIT).toBe(0);
    // ...and in History, with its cost.
    await visit(me.page, 'History');
    const row = me.page.locator('tr', { hasText: sid });
    await expect.poll(() => row.count(), WAIT).toBe(1);
    expect(await row.locator('td').allTextContents()).toEqual([
      expect.any(String),
      expect.stringContaining(sid),
      'Ended by its owner',
      '2 min',
      '2 min',
      `$0.${String(2 * PRICE).padStart(2, '0')}`,
    ]);
    // The chart counts today's minutes.
    await expect
      .poll(() => me.page.locator('figure.chart svg').getAttribute('aria-label'), WAIT)
      .toMatch(/: [1-9]\d* billable minutes? in the last 30 days$/);
    await screenshot(me.page, 'history');
    // A browser whose clock is a day and a half behind the server's (a skewed laptop, or
    // midnight on one side only) still charts the minutes the server billed.
    await me.page.clock.setFixedTime(clock.now() - 36 * 3600_000);
    await me.page.reload();
    await expect
      .poll(() => me.page.locator('figure.chart svg').getAttribute('aria-label'), WAIT)
      .toMatch(/: [1-9]\d* billable minutes? in the last 30 days$/);
    expectCleanTab(me, []);
  });

  it('History pages through the whole history with "Load more"', async () => {
    // Its own account, so the count is exact: 53 finished sessions, 50 to a page.
    const { account, api } = t.other({ billingMode: 'disabled' });
    for (let i = 0; i < 53; i++) {
      const s = (await api.post('/sessions', { body: { timeout_seconds: 600 } })).body;
      await api.waitFor(s.id, ['ready']);
      await api.delete(`/sessions/${s.id}`);
      await api.waitGone(s.id);
    }
    const me = await tab();
    await signInWithKey(me, t.url, account.key);
    await visit(me.page, 'History');
    await expect.poll(() => me.page.locator('tbody tr').count(), WAIT).toBe(50);
    expect(await me.page.getByRole('status').textContent()).toBe('Showing the newest 50 sessions.');
    await me.page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => me.page.locator('tbody tr').count(), WAIT).toBe(53);
    expect(await me.page.getByRole('status').textContent()).toBe('53 finished sessions: the whole history.');
    expect(await me.page.getByRole('button', { name: 'Load more' }).isHidden()).toBe(true);
    // Billing disabled: nothing billable to chart.
    expect(await me.page.locator('figure.chart svg').getAttribute('aria-label')).toMatch(
      /: 0 billable minutes/,
    );
    expectCleanTab(me, []);
  });

  it('on a phone-sized screen the list and the session page fit the width', async () => {
    const me = await signedIn({ viewport: PHONE });
    const s = (await t.api.post('/sessions', { body: { timeout_seconds: 3600 } })).body;
    await t.api.waitFor(s.id, ['ready']);
    const card = me.page.locator(`li[data-sid="${s.id}"]`);
    await expect.poll(() => pictureWidth(card), WAIT).toBe(720);
    const overflow = () =>
      me.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(await overflow()).toBe(0);
    await screenshot(me.page, 'sessions-phone');
    await card.getByRole('heading').getByRole('link').click();
    await expect.poll(() => viewerScreenWidth(me.page), WAIT).toBe(720);
    expect(await overflow()).toBe(0);
    await screenshot(me.page, 'session-phone');
    await t.api.delete(`/sessions/${s.id}`);
    await t.api.waitGone(s.id);
    expectCleanTab(me, []);
  });

  it('every page is reachable with the keyboard alone', async () => {
    const me = await signedIn();
    // A fresh load starts at the top: the skip link, the brand, then the pages in order.
    await me.page.reload();
    await expect.poll(() => heading(me.page), WAIT).toBe('Sessions');
    const focused: string[] = [];
    for (let i = 0; i < 8; i++) {
      await me.page.keyboard.press('Tab');
      focused.push(await me.page.evaluate(() => document.activeElement?.textContent?.trim() ?? ''));
    }
    expect(focused).toEqual([
      'Skip to content',
      'phonelease',
      'Sessions',
      'History',
      'Keys',
      'Profile phone',
      'Account',
      'Sign out',
    ]);
    // Enter on a link moves there, and the new page's heading takes the focus.
    await me.page.keyboard.press('Shift+Tab');
    await me.page.keyboard.press('Enter');
    await expect.poll(() => heading(me.page), WAIT).toBe('Account');
    expect(await me.page.evaluate(() => document.activeElement?.tagName)).toBe('H1');
    expectCleanTab(me, []);
  });
});

describe('keys, profile, account', () => {
  it('a key created on the Keys page works with the CLI and stops working after "Revoke"', async () => {
    const me = await signedIn();
    await visit(me.page, 'Keys');
    await me.page.getByLabel('Label').fill('CI main');
    await me.page.getByRole('button', { name: 'Create key' }).click();
    const shown = me.page.locator('.created-key code');
    await expect.poll(() => shown.textContent(), WAIT).toMatch(/^pck_/);
    const key = (await shown.textContent())!;
    await me.page.locator('.created-key').getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => clipboard(me.page), WAIT).toBe(key);
    const row = me.page.locator('tr', { hasText: 'CI main' });
    await expect.poll(() => row.count(), WAIT).toBe(1);
    await screenshot(me.page, 'keys');

    const env = { PHONELEASE_BASE_URL: t.url, PHONELEASE_API_KEY: key };
    const works = await runCli(['sessions', '--json'], env);
    expect(works.code, works.stderr).toBe(0);
    expect(Array.isArray(JSON.parse(works.stdout))).toBe(true);

    // "Done" hides the raw key for good.
    await me.page.getByRole('button', { name: 'Done' }).click();
    expect(await me.page.getByText(key).count()).toBe(0);
    await row.getByRole('button', { name: 'Revoke CI main' }).click();
    await expect.poll(() => row.count(), WAIT).toBe(0);
    const refused = await runCli(['sessions', '--json'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/not valid|unauthenticated|revoked/i);
    expectCleanTab(me, [key]);
  });

  it('Profile phone: its state and holder; "Reset profile phone" is refused with the reason while held', async () => {
    const me = await signedIn({ expectedStatuses: [409] });
    const held = (
      await t.api.post('/sessions', { body: { profile_id: t.account.profile_id, timeout_seconds: 600 } })
    ).body;
    await t.api.waitFor(held.id, ['ready']);
    await visit(me.page, 'Profile phone');
    const holder = me.page.locator('dd a', { hasText: held.id });
    await expect.poll(() => holder.count(), WAIT).toBe(1);
    await me.page.getByRole('button', { name: 'Reset profile phone' }).click();
    await expect
      .poll(() => me.page.locator('.error[role=alert]:not([hidden])').textContent(), WAIT)
      .toContain(held.id);
    await screenshot(me.page, 'profile');
    await t.api.delete(`/sessions/${held.id}`);
    await t.api.waitGone(held.id);
    // The page keeps itself current: the holder goes, and the reset goes through.
    await expect.poll(() => me.page.locator('dd', { hasText: 'No session' }).count(), WAIT).toBe(1);
    await me.page.getByRole('button', { name: 'Reset profile phone' }).click();
    await expect.poll(() => me.page.getByText('The profile phone was reset.').isVisible(), WAIT).toBe(true);
    expect((await t.api.get('/me')).body.profile.state).toBe('empty');
    expectCleanTab(me, []);
  });

  it('Account: balance, rate, limit and slots in use, and why it cannot rent', async () => {
    const me = await signedIn();
    await visit(me.page, 'Account');
    const facts = Object.fromEntries(
      await me.page
        .locator('.facts > div')
        .evaluateAll((rows) =>
          rows.map((r) => [r.querySelector('dt')!.textContent, r.querySelector('dd')!.textContent]),
        ),
    );
    const account = (await t.api.get('/me')).body;
    expect(facts).toMatchObject({
      Email: EMAIL,
      Balance: `$${(account.balance_cents / 100).toFixed(2)}`,
      Rate: `$0.0${PRICE} per minute`,
      'Session limit': String(account.session_limit),
      'Slots in use': `${account.active_session_count} of ${account.session_limit} (${account.available_session_slots} free)`,
      'Can rent': 'Yes',
    });
    await screenshot(me.page, 'account');

    const blocked = t.other({
      canRent: false,
      rentBlockedReason: 'The beta is full; you are on the waiting list.',
    });
    const them = await tab();
    await signInWithKey(them, t.url, blocked.account.key);
    await visit(them.page, 'Account');
    expect(await them.page.locator('.facts dd.refused, .facts .refused').textContent()).toBe(
      'No: The beta is full; you are on the waiting list.',
    );
    expectCleanTab(me, []);
    expectCleanTab(them, []);
  });
});

describe('fleet', () => {
  it('an operator sees phones, pool, queue and boot times; others have no Fleet and get 404', async () => {
    const operator = t.server.createAccount({
      operator: true,
      billingMode: 'disabled',
      email: 'ops@example.com',
    });
    const op = await tab();
    await signInWithKey(op, t.url, operator.key);
    const s = (await new Api(t.url, operator.key).post('/sessions', { body: { timeout_seconds: 600 } })).body;
    await new Api(t.url, operator.key).waitFor(s.id, ['ready']);
    await visit(op.page, 'Fleet');
    const fleet = (await new Api(t.url, await tokenOf(op.page)).get('/dashboard/api/fleet')).body;
    expect(fleet.hosts).toBeNull();
    const phones = op.page.locator('section.panel', {
      has: op.page.getByRole('heading', { name: 'Phones', exact: true }),
    });
    await expect.poll(() => phones.locator('dt').allTextContents(), WAIT).toContain('Ready');
    expect(await op.page.getByRole('heading', { name: 'Boot times' }).count()).toBe(1);
    const cold = op.page.locator('tr', { hasText: 'Cold boot' });
    expect(Number(await cold.locator('td').nth(1).textContent())).toBeGreaterThanOrEqual(1);
    expect(await op.page.getByText('This is a single server').count()).toBe(1);

    const me = await signedIn({ expectedStatuses: [404] });
    expect(await me.page.getByRole('navigation').getByRole('link', { name: 'Fleet' }).count()).toBe(0);
    await me.page.goto(`${t.url}/dashboard/fleet`);
    await expect.poll(() => heading(me.page), WAIT).toBe('Page not found');
    expect((await new Api(t.url, await tokenOf(me.page)).get('/dashboard/api/fleet')).status).toBe(404);
    expectCleanTab(op, []);
    expectCleanTab(me, []);
  });
});
