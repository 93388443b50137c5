/**
 * Locators on a leased phone of the real server: the login app driven by every selector
 * kind on both back ends (the UiAutomator2 server installed from the npm package, and the
 * `uiautomator dump` fallback), strict mode, timeouts that name what is on screen, and
 * auto-waiting for a login that answers late.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leasePhone, type Lease } from '../../src/index.js';
import { uiEngineOf } from '../../src/lease/lease.js';
import { StrictModeViolationError, UiTimeoutError } from '../../src/ui/index.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { leaseOptions, type RecordingLogger } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ bootMs: 20, phones: 8 });
}, 60_000);
afterAll(() => t?.close());

async function lease(engine?: 'dump' | 'uiautomator2'): Promise<Lease & { log: RecordingLogger }> {
  const opts = leaseOptions(t);
  const phone = await leasePhone(opts);
  if (engine) uiEngineOf(phone).configure({ engine });
  uiEngineOf(phone).configure({ actionTimeout: 10_000 });
  return Object.assign(phone, { log: opts.logger });
}

describe.each(['uiautomator2', 'dump'] as const)('locators over %s', (engine) => {
  it('logs in through every selector kind', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.phonelease.login');
    await phone.getById('username').fill('demo');
    await phone.getByDesc('password').fill('secret');
    await phone.locator({ clazz: 'android.widget.Button', text: 'Log in' }).click();
    await phone.locator('xpath=//*[@resource-id="com.phonelease.login:id/result"]').waitFor();
    expect(await phone.getById('com.phonelease.login:id/result').textContent()).toBe('Welcome, demo!');
    expect(await phone.getByText(/welcome, \w+!/i).count()).toBe(1);
    expect(await phone.getByText('sign IN').count()).toBe(1);
    expect(await phone.getByText('sign IN', { exact: true }).count()).toBe(0);
    expect(await phone.getByClass('android.widget.EditText').count()).toBe(2);
    expect(await phone.getByClass('android.widget.EditText').first().getAttribute('text')).toBe('demo');
    expect(await phone.getByClass('android.widget.EditText').last().getAttribute('password')).toBe('true');
    // fill replaces what was typed before.
    await phone.getById('username').fill('someone');
    expect(await phone.getById('username').textContent()).toBe('someone');
    await phone.getById('username').clear();
    expect(await phone.getById('username').textContent()).toBe('');
    if (engine === 'uiautomator2') expect(phone.log.lines.join('\n')).not.toMatch(/falls back/);
  });

  it('reads back text that the XML escapes', async () => {
    await using phone = await lease(engine);
    await phone.launch('com.phonelease.login');
    const text = `Tom & "Jerry" <3 it's`;
    await phone.getById('username').fill(text);
    expect(await phone.getById('username').textContent()).toBe(text);
    expect(await phone.getByText(text, { exact: true }).count()).toBe(1);
  });
});

describe('the UiAutomator2 engine', () => {
  it('installs the server from the npm package on a fresh phone, once', async () => {
    await using phone = await lease();
    const before = await phone.shell('pm list instrumentation');
    expect(before.stdout).not.toContain('io.appium.uiautomator2.server.test/');
    await phone.launch('com.phonelease.login');
    expect(await phone.getByText('Log in').count()).toBe(1);
    const after = await phone.shell('pm list instrumentation');
    expect(after.stdout).toContain(
      'io.appium.uiautomator2.server.test/androidx.test.runner.AndroidJUnitRunner',
    );
    expect(phone.log.lines.filter((l) => /installed the UiAutomator2 server/.test(l))).toHaveLength(1);
    expect(phone.log.lines.join('\n')).not.toMatch(/falls back/);
  });
});

describe('strictness and timeouts', () => {
  it('fails an action on a locator that matches several views, listing them', async () => {
    await using phone = await lease();
    await phone.launch('com.phonelease.login');
    const error = await phone
      .getByClass('android.widget.EditText')
      .fill('x')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StrictModeViolationError);
    const message = (error as Error).message;
    expect(message).toContain("phone.getByClass('android.widget.EditText') resolved to 2 elements");
    expect(message).toContain("aka phone.getById('username')");
    expect(message).toContain("aka phone.getById('password')");
  });

  it('names the locator and the nearest views on screen when an element never shows', async () => {
    await using phone = await lease();
    await phone.launch('com.phonelease.login');
    const error = await phone
      .getByText('Log on', { exact: true })
      .click({ timeout: 300 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UiTimeoutError);
    const message = (error as Error).message;
    expect(message).toContain('click: Timeout 300ms exceeded');
    expect(message).toContain("phone.getByText('Log on', { exact: true }) matched nothing on screen");
    expect(message).toMatch(/Nearest candidates on screen:\n {2}- Button id=login text="Log in"/);
  });
});

describe.each(['uiautomator2', 'dump'] as const)('reads of the screen over %s', (engine) => {
  /** Counts the engine's reads of the tree from here on. */
  async function countReads(phone: Lease): Promise<{ reads: number }> {
    const counter = { reads: 0 };
    const driver = await uiEngineOf(phone).driver();
    const source = driver.source.bind(driver);
    driver.source = () => {
      counter.reads++;
      return source();
    };
    return counter;
  }

  it('takes a recent read as the first of the two that "stable" compares, unless input came since; a dump needs one', async () => {
    await using phone = await lease(engine);
    // `uiautomator dump` reads only a settled screen, so one read is stable on its own.
    const fresh = engine === 'dump' ? 1 : 2;
    // A window no stall of a loaded machine outlasts: this test is about what counts, not when.
    uiEngineOf(phone).configure({ recentReadMs: 60_000 });
    const counter = await countReads(phone);
    await phone.launch('com.phonelease.login');
    // The launch read the screen last and nothing was sent since: one fresh read to compare.
    let before = counter.reads;
    await phone.getById('username').fill('demo');
    expect(counter.reads - before).toBe(1);
    // The fill typed: its read is no longer recent, so two fresh reads.
    before = counter.reads;
    await phone.getByDesc('password').fill('secret');
    expect(counter.reads - before).toBe(fresh);
    // A read, then a shell command (it may change the screen): two fresh reads again.
    await phone.getById('login').isVisible();
    await phone.shell('true');
    before = counter.reads;
    await phone.getByText('Log in').click();
    expect(counter.reads - before).toBe(fresh);
    expect(await phone.getById('result').textContent()).toBe('Welcome, demo!');
    // Past the window, a read is not recent either.
    uiEngineOf(phone).configure({ recentReadMs: 0 });
    await phone.getById('username').isVisible();
    await new Promise((resolve) => setTimeout(resolve, 5));
    before = counter.reads;
    await phone.getById('username').fill('someone');
    expect(counter.reads - before).toBe(fresh);
    expect(await phone.getById('username').textContent()).toBe('someone');
  });
});
