/**
 * Playwright in the phone's browser: the way chrome://inspect and Playwright's own Android
 * support reach Chrome on a device. Chrome serves DevTools on the abstract socket
 * `chrome_devtools_remote`; a local forward to it over the lease's ADB connection is a
 * DevTools endpoint on 127.0.0.1, and `chromium.connectOverCDP` turns it into a Browser.
 *
 *   const context = await phone.launchBrowser();
 *   const page = await context.newPage();
 *
 * Playwright is an optional peer dependency, so it is imported only when a browser is asked for.
 */
import { get } from 'node:http';
import type { Browser, BrowserContext, BrowserType } from '@playwright/test';
import { PhoneleaseError } from '../errors.js';
import type { ShellResult } from '../adb/phone-adb.js';
import { messageOf } from '../util/message.js';
import { sleep } from '../util/time.js';

export const CHROME_PACKAGE = 'com.android.chrome';
export const CHROME_ACTIVITY = 'com.google.android.apps.chrome.Main';
export const DEVTOOLS_SOCKET = 'chrome_devtools_remote';

export interface LaunchBrowserOptions {
  /** The browser's package (default com.android.chrome). */
  package?: string;
  /** The activity `am start -n` opens (default Chrome's launcher activity). */
  activity?: string;
  /** The abstract socket its DevTools listen on (default chrome_devtools_remote). */
  socket?: string;
  /** How long to wait for DevTools after starting the browser, in ms (default 30 000). */
  timeoutMs?: number;
}

/** The phone has no browser to drive (`com.android.chrome` is not installed or is disabled). */
export class BrowserUnavailableError extends PhoneleaseError {
  override name = 'BrowserUnavailableError';
  declare readonly code: 'browser_unavailable';
  constructor(pkg: string) {
    super(
      'browser_unavailable',
      `The phone has no browser: ${pkg} is not installed or is disabled. Install Chrome on the phone (phone.install(apk)), enable it (pm enable ${pkg}), or pass launchBrowser({ package }) for another Chromium-based browser. (phonelease's virtual phone runs its Chrome on the server machine's Chromium: install Debian's chromium there, or set PHONELEASE_CHROMIUM for the server.)`,
    );
  }
}

/** The browser started but its DevTools socket never answered. */
export class DevToolsTimeoutError extends PhoneleaseError {
  override name = 'DevToolsTimeoutError';
  declare readonly code: 'devtools_timeout';
  constructor(socket: string, timeoutMs: number, detail: string) {
    super(
      'devtools_timeout',
      `The phone's browser did not open its DevTools socket @${socket} within ${timeoutMs} ms (${detail}). Check the phone's logcat for a browser crash, or raise launchBrowser({ timeoutMs }).`,
    );
  }
}

/** What launchBrowser needs from a lease. */
export interface BrowserHost {
  shell(command: string): Promise<ShellResult>;
  forward(localPort: number, remote: number | string): Promise<number>;
  removeForward(localPort: number): Promise<void>;
}

/** A browser connected over the phone's DevTools; close() disconnects and stops the forward. */
export interface PhoneBrowser {
  browser: Browser;
  context: BrowserContext;
  close(): Promise<void>;
}

/** GET /json/version through the forward: whether DevTools answer, and if not, why. */
function probe(port: number, timeoutMs = 2000): Promise<{ ok: true } | { ok: false; why: string }> {
  return new Promise((resolve) => {
    const request = get(
      { host: '127.0.0.1', port, path: '/json/version', timeout: timeoutMs },
      (response) => {
        response.resume();
        resolve(
          response.statusCode === 200
            ? { ok: true }
            : { ok: false, why: `DevTools answered ${response.statusCode}` },
        );
      },
    );
    request.once('timeout', () => request.destroy(new Error('no answer')));
    request.once('error', (error) => resolve({ ok: false, why: messageOf(error) }));
  });
}

async function loadChromium(): Promise<BrowserType> {
  try {
    return (await import('@playwright/test')).chromium;
  } catch {
    try {
      return (await import('playwright-core')).chromium;
    } catch (error) {
      throw new PhoneleaseError(
        'playwright_missing',
        `launchBrowser() needs Playwright: npm install -D @playwright/test (${messageOf(error)}).`,
      );
    }
  }
}

/**
 * Connects Playwright to the phone's browser, starting it first when its DevTools socket
 * does not answer. Resolves with the browser's default context (the phone's real profile
 * and tabs, as a user sees them).
 */
export async function launchBrowser(
  host: BrowserHost,
  options: LaunchBrowserOptions = {},
): Promise<PhoneBrowser> {
  const pkg = options.package ?? CHROME_PACKAGE;
  const activity = options.activity ?? CHROME_ACTIVITY;
  const socket = options.socket ?? DEVTOOLS_SOCKET;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const chromium = await loadChromium();
  const port = await host.forward(0, `localabstract:${socket}`);
  try {
    let answer = await probe(port);
    if (!answer.ok) {
      const listed = await host.shell(`pm list packages -e ${pkg}`);
      if (!listed.stdout.split('\n').some((line) => line.trim() === `package:${pkg}`))
        throw new BrowserUnavailableError(pkg);
      const started = await host.shell(
        `am start -n ${pkg}/${activity} -a android.intent.action.VIEW -d about:blank`,
      );
      const output = `${started.stdout}${started.stderr}`;
      if (started.exitCode !== 0 || /^Error/m.test(output))
        throw new PhoneleaseError('browser_start_failed', `Starting ${pkg} failed: ${output.trim()}.`);
      const deadline = Date.now() + timeoutMs;
      while (!answer.ok && Date.now() < deadline) {
        await sleep(100);
        answer = await probe(port, Math.max(100, Math.min(2000, deadline - Date.now())));
      }
      if (!answer.ok) throw new DevToolsTimeoutError(socket, timeoutMs, answer.why);
    }
    const browser = await chromium.connectOverCDP(`http://127.0.0.1:${port}`);
    const context = browser.contexts()[0];
    if (!context) {
      await browser.close().catch(() => undefined);
      throw new PhoneleaseError('browser_start_failed', `${pkg} has no browser context to drive.`);
    }
    let closing: Promise<void> | null = null;
    const close = (): Promise<void> => {
      closing ??= (async () => {
        // The context first, not just the browser: Playwright's test runner finishes its trace
        // chunk and failure screenshots for a context it is told is closing (a browser that only
        // disconnects loses them). Over CDP this closing only disconnects: Chrome and its tabs
        // stay on the phone, as they would for a user.
        await context.close().catch(() => undefined);
        await browser.close().catch(() => undefined);
        await host.removeForward(port).catch(() => undefined);
      })();
      return closing;
    };
    // Closed from Playwright's side (context.close(), browser.close()): the forward goes too.
    browser.once('disconnected', () => void close());
    return { browser, context, close };
  } catch (error) {
    await host.removeForward(port).catch(() => undefined);
    throw error;
  }
}
