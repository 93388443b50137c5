/**
 * The dashboard in real Chromium: a browser context per signed-in person, with what the
 * tests check on every page collected as it happens (console errors, uncaught exceptions,
 * the URL of every request), and the screenshots docs/ shows.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterEach, expect } from 'vitest';

export const LAPTOP = { width: 1366, height: 768 };

/**
 * How long a test polls for what a page shows (`expect.poll(fn, WAIT)`): pages poll the
 * server every second or two, and servers end phones and confirm cleanup at their own pace
 * on a busy machine.
 */
export const WAIT = { timeout: 15_000 };
export const PHONE = { width: 390, height: 844 };

export interface DashboardTab {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught exceptions of the page and its frames (the viewer's too). */
  problems: string[];
  /** Every request URL the page (and its frames) made. */
  requests: string[];
  /** Closes the context. */
  close(): Promise<void>;
}

/**
 * A fresh browser context (its own sessionStorage, so its own sign-in) on `baseUrl`.
 * `expectedStatuses`: answers a test provokes on purpose (a 404 it asserts), which Chromium
 * reports on the console as "Failed to load resource"; any other is a problem.
 */
export async function openDashboard(
  browser: Browser,
  baseUrl: string,
  opts: { viewport?: { width: number; height: number }; expectedStatuses?: number[] } = {},
): Promise<DashboardTab> {
  const context = await browser.newContext({ viewport: opts.viewport ?? LAPTOP });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
  const page = await context.newPage();
  const problems: string[] = [];
  const requests: string[] = [];
  const expected = new Set(opts.expectedStatuses ?? []);
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const status = /status of (\d{3})/.exec(msg.text())?.[1];
    if (status && expected.has(Number(status))) return;
    problems.push(`console: ${msg.text()} (${msg.location().url})`);
  });
  page.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
  page.on('request', (req) => requests.push(req.url()));
  return { context, page, problems, requests, close: () => context.close() };
}

/**
 * Opens tabs that close after each test of the file (call it at the top level of a test
 * file, as serverPerTest): `const tab = tabsPerTest(() => browser)`.
 */
export function tabsPerTest(
  browser: () => Browser,
): (baseUrl: string, opts?: Parameters<typeof openDashboard>[2]) => Promise<DashboardTab> {
  const open: DashboardTab[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((tab) => tab.close()));
  });
  return async (baseUrl, opts) => {
    const tab = await openDashboard(browser(), baseUrl, opts);
    open.push(tab);
    return tab;
  };
}

/** Opens the sign-in link (as a person pastes it) and waits for the Sessions page. */
export async function signInWithLink(tab: DashboardTab, link: string): Promise<void> {
  await tab.page.goto(link);
  await expect.poll(() => heading(tab.page), WAIT).toBe('Sessions');
}

/** Signs in through the sign-in page's API key field. */
export async function signInWithKey(tab: DashboardTab, baseUrl: string, key: string): Promise<void> {
  await tab.page.goto(`${baseUrl}/dashboard/sign-in`);
  await tab.page.getByLabel('API key').fill(key);
  await tab.page.getByRole('button', { name: 'Sign in' }).click();
  await expect.poll(() => heading(tab.page), WAIT).toBe('Sessions');
}

/** The page's h1 text, or null while it has none. */
export async function heading(page: Page): Promise<string | null> {
  const h1 = page.locator('main h1');
  return (await h1.count()) === 1 ? h1.textContent() : null;
}

/** Moves to a page through the navigation bar (as a person does) and waits for its heading. */
export async function visit(page: Page, name: string, title = name): Promise<void> {
  await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name, exact: true }).click();
  await expect.poll(() => heading(page), WAIT).toBe(title);
}

/** The width of the phone picture on a Sessions card (0 until one has loaded). */
export const pictureWidth = (card: Locator): Promise<number> =>
  card.locator('img.thumb').evaluate((img: HTMLImageElement) => img.naturalWidth);

/** The width of the live screen in the session page's embedded viewer (720 once it shows). */
export const viewerScreenWidth = (page: Page): Promise<number> =>
  page
    .frameLocator('iframe.viewer')
    .locator('#screen')
    .evaluate((img: HTMLImageElement) => img.naturalWidth);

/** The dashboard's sign-in token, as the page keeps it (to check it against the API). */
export async function tokenOf(page: Page): Promise<string> {
  const stored = await page.evaluate(() => sessionStorage.getItem('phonelease.dashboard.sign-in'));
  if (!stored) throw new Error('the page holds no sign-in');
  return (JSON.parse(stored) as { token: string }).token;
}

/** Reads the clipboard the page wrote to. */
export const clipboard = (page: Page): Promise<string> => page.evaluate(() => navigator.clipboard.readText());

/** Fails with what went wrong if the page logged an error or made a request that carried a secret. */
export function expectCleanTab(tab: DashboardTab, secrets: string[]): void {
  expect(tab.problems).toEqual([]);
  for (const secret of secrets) {
    expect(tab.requests.filter((url) => url.includes(secret))).toEqual([]);
  }
}

const SHOTS = process.env.PHONELEASE_DASHBOARD_SCREENSHOTS;
const DOCS = fileURLToPath(new URL('../../docs/', import.meta.url));

/**
 * Saves docs/dashboard-<name>.png when PHONELEASE_DASHBOARD_SCREENSHOTS=1 (how the docs'
 * pictures are made: `PHONELEASE_DASHBOARD_SCREENSHOTS=1 npx vitest run
 * test/e2e/dashboard-pages.test.ts`); otherwise nothing, so test runs leave docs/ alone.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(DOCS, { recursive: true });
  // Let the blob: pictures and the chart finish drawing.
  await page.waitForLoadState('networkidle').catch(() => undefined);
  await page.screenshot({ path: `${DOCS}dashboard-${name}.png`, fullPage: false });
}
