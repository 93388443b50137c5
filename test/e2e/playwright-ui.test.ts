/**
 * Driving the phone's UI from Playwright Test: the real runner on inline projects, phones
 * of a real server. Locators by every selector kind, auto-waiting on a slow login,
 * strict-mode and timeout messages, `.not` and expect's timeout, steps in the JSON
 * report, the UI tree on failure, toHaveValue / toBeFocused / toBeEditable /
 * toBeInViewport with the locator named in each failure, and toHaveScreenshot with
 * --update-snapshots.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInlineTest, type FlatTest, type InlineRun } from '../support/playwright-inline.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  t = await startTestServer({ bootMs: 50, phones: 20, account: { sessionLimit: 200 } });
  env = { PHONELEASE_BASE_URL: t.url, PHONELEASE_API_KEY: t.account.key };
});
afterAll(() => t.close());

const config = (extra = '') => `
import { defineConfig } from '@playwright/test';
export default defineConfig({ timeout: 60_000, workers: 1, outputDir: './test-results', ${extra} });
`;

function byTitle(run: InlineRun, title: string): FlatTest {
  const found = run.tests.find((x) => x.title === title);
  if (!found) throw new Error(`no test "${title}" in the report:\n${run.stdout}\n${run.stderr}`);
  return found;
}

function expectPassed(run: InlineRun, title: string): void {
  const result = byTitle(run, title).results[0]!;
  const why = JSON.stringify({ errors: result.errors, steps: result.steps, stderr: result.stderr }).slice(
    0,
    5000,
  );
  expect(result.status, `${title}: ${why}`).toBe('passed');
}

interface Step {
  title: string;
  error?: unknown;
  steps?: Step[];
}

function stepTitles(steps: Step[] | undefined): string[] {
  return (steps ?? []).flatMap((s) => [s.title, ...stepTitles(s.steps)]);
}

const LOGIN_SPEC = `
import { test, expect } from 'phonelease/playwright';

test('logs in by every selector kind', async ({ phone }) => {
  await phone.launch('com.phonelease.login');
  await phone.getById('username').fill('demo');
  await phone.getByDesc('password').fill('secret');
  await phone.getByText('Log in').click();
  await expect(phone.getById('result')).toHaveText('Welcome, demo!');
  await expect(phone.locator({ res: 'com.phonelease.login:id/result' })).toContainText('demo');
  await expect(phone.locator('xpath=//android.widget.EditText[@resource-id="com.phonelease.login:id/username"]')).toHaveText('demo');
  await expect(phone.getByClass('android.widget.EditText')).toHaveCount(2);
  await expect(phone.getByClass('android.widget.EditText').last()).toHaveAttribute('password', 'true');
  await expect(phone.locator({ clazz: 'android.widget.Button', enabled: true })).toBeEnabled();
  await expect(phone.getByText('Wrong username or password')).toBeHidden();
  await expect(phone.getByText('Wrong username or password')).not.toBeVisible();
});

test('waits for a login that answers late', async ({ phone }) => {
  await phone.launch('com.phonelease.login');
  await phone.getById('username').fill('slow');
  await phone.getById('password').fill('secret');
  await phone.getByText('Log in').click();
  await expect(phone.getById('login')).toBeDisabled();
  await expect(phone.getById('result')).toHaveText('Welcome, slow!');
  await expect(phone.getById('login')).toBeEnabled();
  // An action waits too: the button is disabled until the login answers.
  await phone.getById('username').fill('slow');
  await phone.getByText('Log in').click();
  await phone.getByText('Log in').click();
  await expect(phone.getById('result')).toHaveText('Welcome, slow!');
});

test('expect.timeout bounds an assertion', async ({ phone }) => {
  await phone.launch('com.phonelease.login');
  await phone.getById('username').fill('slow');
  await phone.getById('password').fill('secret');
  await phone.getByText('Log in').click();
  await expect(phone.getById('result')).toHaveText('Welcome, slow!');
});

test('strict mode', async ({ phone }) => {
  await phone.launch('com.phonelease.login');
  await phone.getByClass('android.widget.EditText').fill('demo');
});

test('timeout', async ({ phone }) => {
  await phone.launch('com.phonelease.login');
  await phone.getByText('Sign up').click({ timeout: 500 });
});
`;

describe('locators in Playwright', () => {
  it('drives the login app, waits, reports steps and explains failures', async () => {
    const run = await runInlineTest(
      'ui-login',
      {
        'playwright.config.ts': config(`expect: { timeout: 5000 }`),
        'login.spec.ts': LOGIN_SPEC,
        'timeout.spec.ts': `
          import { test, expect } from 'phonelease/playwright';
          test.use({ phoneOptions: {} });
          test('expect timeout shorter than the login', async ({ phone }) => {
            await phone.launch('com.phonelease.login');
            await phone.getById('username').fill('slow');
            await phone.getById('password').fill('secret');
            await phone.getByText('Log in').click();
            await expect(phone.getById('result')).toHaveText('Welcome, slow!', { timeout: 300 });
          });`,
        'checked.spec.ts': `
          import { test, expect } from 'phonelease/playwright';
          const row = (phone, title) => phone.locator({ clickable: true }).filter({ hasText: title });
          test('toBeChecked reads switches', async ({ phone }) => {
            await phone.shell('settings put global wifi_on 1 && settings put global airplane_mode_on 0');
            await phone.shell('am start -a android.settings.WIRELESS_SETTINGS');
            await expect(row(phone, 'Use Wi-Fi').locator({ checkable: true })).toBeChecked();
            await expect(row(phone, 'Airplane mode').locator({ checkable: true })).not.toBeChecked();
            await expect(row(phone, 'Airplane mode').locator({ checkable: true })).toBeChecked({ checked: false });
          });
          test('toBeChecked on a title', async ({ phone }) => {
            await phone.shell('am start -a android.settings.WIRELESS_SETTINGS');
            await expect(phone.getByText('Airplane mode', { exact: true })).not.toBeChecked({ timeout: 300 });
          });`,
      },
      { env, args: ['--retries=0'] },
    );
    const passed = (title: string) => expectPassed(run, title);
    passed('logs in by every selector kind');
    passed('waits for a login that answers late');
    passed('expect.timeout bounds an assertion');

    // Every action and assertion is a step titled like the call.
    const steps = stepTitles(byTitle(run, 'logs in by every selector kind').results[0]!.steps as Step[]);
    expect(steps).toEqual(
      expect.arrayContaining([
        "phone.launch('com.phonelease.login')",
        "phone.getById('username').fill('demo')",
        "phone.getByDesc('password').fill('secret')",
        "phone.getByText('Log in').click()",
        "expect(phone.getById('result')).toHaveText('Welcome, demo!')",
        "expect(phone.getByText('Wrong username or password')).not.toBeVisible()",
      ]),
    );

    const strict = byTitle(run, 'strict mode').results[0]!;
    expect(strict.status).toBe('failed');
    const strictMessage = strict.errors.map((e) => e.message).join('\n');
    expect(strictMessage).toContain(
      "strict mode violation: phone.getByClass('android.widget.EditText') resolved to 2 elements",
    );
    expect(strictMessage).toMatch(/1\) EditText id=username .* aka phone\.getById\('username'\)/);
    expect(strictMessage).toMatch(/2\) EditText id=password .* aka phone\.getById\('password'\)/);

    const timeout = byTitle(run, 'timeout').results[0]!;
    expect(timeout.status).toBe('failed');
    const timeoutMessage = timeout.errors.map((e) => e.message).join('\n');
    expect(timeoutMessage).toContain('click: Timeout 500ms exceeded');
    expect(timeoutMessage).toContain(
      "phone.getByText('Sign up') matched nothing on screen (com.phonelease.login in front)",
    );
    expect(timeoutMessage).toMatch(/Nearest candidates on screen:\n {2}- \w+ .*text="Sign in"/);
    // The failure carries the UI tree beside the screen and the logcat.
    const names = timeout.attachments.map((a) => a.name);
    expect(names).toEqual(expect.arrayContaining(['phone-screen', 'phone-logcat', 'phone-ui.xml']));
    const tree = timeout.attachments.find((a) => a.name === 'phone-ui.xml')!;
    const xml = tree.path
      ? readFileSync(tree.path, 'utf8')
      : Buffer.from(tree.body ?? '', 'base64').toString();
    expect(xml).toContain('com.phonelease.login:id/username');

    // A view without a checked state fails toBeChecked either way, and says what it is.
    passed('toBeChecked reads switches');
    const title = byTitle(run, 'toBeChecked on a title').results[0]!;
    expect(title.status).toBe('failed');
    expect(title.errors.map((e) => e.message).join('\n')).toContain('Received: not checkable');

    const late = byTitle(run, 'expect timeout shorter than the login').results[0]!;
    expect(late.status).toBe('failed');
    const lateMessage = late.errors.map((e) => e.message).join('\n');
    expect(lateMessage).toContain("Locator:  phone.getById('result')");
    expect(lateMessage).toContain('Expected: "Welcome, slow!"');
    expect(lateMessage).toContain('Received: "Signing in…"');
    expect(lateMessage).toContain('Timeout:  300ms');
  }, 240_000);

  it('asserts values, focus, editability and the viewport, and the new verbs, naming the locator when they fail', async () => {
    const run = await runInlineTest(
      'ui-new-matchers',
      {
        'playwright.config.ts': config(`expect: { timeout: 5000 }`),
        'pass.spec.ts': `
          import { test, expect } from 'phonelease/playwright';

          test('text fields: value, focus, editable', async ({ phone }) => {
            await phone.launch('com.phonelease.login');
            const user = phone.getById('username');
            const password = phone.getById('password');
            await expect(user).toHaveValue('');
            await expect(user).toBeEditable();
            await expect(user).not.toBeEditable({ editable: false });
            await expect(user).not.toBeFocused();
            await user.fill('demo');
            await expect(user).toHaveValue('demo');
            await expect(user).toHaveValue(/^de/);
            await expect(user).not.toHaveValue('demo2');
            await expect(user).toBeFocused();
            await password.fill('secret');
            await expect(password).toBeFocused();
            await expect(user).not.toBeFocused();
            // A password field shows one bullet per character: its length is what can be checked.
            await expect(password).toHaveValue(/^\u2022{6}$/);
            await expect(user).toBeInViewport();
            await expect(user).toBeInViewport({ ratio: 1 });
          });

          test('the viewport: a row the list cuts, then scrolled into view', async ({ phone }) => {
            await phone.launch('com.android.settings');
            const titles = await phone.getById('android:id/title').all();
            const cut = await titles[titles.length - 1].textContent();
            const row = phone.locator({ clickable: true }).filter({ has: phone.getByText(cut, { exact: true }) });
            await expect(row).toBeInViewport();
            await expect(row).not.toBeInViewport({ ratio: 1 });
            await row.scrollIntoView();
            await expect(row).toBeInViewport({ ratio: 1 });
            // Not attached at all (the list keeps no views for rows off screen).
            await expect(phone.getByText('Network & internet')).not.toBeInViewport();
          });

          test('the new verbs are steps titled like the call', async ({ phone }) => {
            await phone.shell('settings put global airplane_mode_on 0');
            await phone.shell('am start -a android.settings.WIRELESS_SETTINGS');
            const rows = phone.locator({ clickable: true });
            const airplane = rows.filter({ has: phone.getByText('Airplane mode', { exact: true }) }).locator({ checkable: true });
            await airplane.setChecked(true);
            await expect(airplane).toBeChecked();
            expect(await phone.getByText('Flight mode').or(phone.getByText('Airplane mode', { exact: true })).isHidden()).toBe(false);
            await expect(phone.getById('android:id/title').and(phone.getByText('Airplane'))).toHaveText('Airplane mode');
          });
        `,
        'fail.spec.ts': `
          import { test, expect } from 'phonelease/playwright';

          test('toHaveValue fails', async ({ phone }) => {
            await phone.launch('com.phonelease.login');
            await phone.getById('username').fill('demo');
            await phone.getById('password').fill('secret');
            await expect.soft(phone.getById('username')).toHaveValue('someone', { timeout: 300 });
            await expect.soft(phone.getById('title')).toHaveValue('Sign in', { timeout: 300 });
            await expect.soft(phone.getById('title')).not.toHaveValue('Sign in', { timeout: 300 });
            await expect.soft(phone.getById('password')).not.toHaveValue('hunter2', { timeout: 300 });
          });

          test('toBeFocused fails', async ({ phone }) => {
            await phone.launch('com.phonelease.login');
            await phone.getById('username').fill('demo');
            await expect.soft(phone.getById('password')).toBeFocused({ timeout: 300 });
            await expect.soft(phone.getById('username')).not.toBeFocused({ timeout: 300 });
          });

          test('toBeEditable fails', async ({ phone }) => {
            await phone.launch('com.phonelease.login');
            await expect.soft(phone.getById('login')).toBeEditable({ timeout: 300 });
            await expect.soft(phone.getById('username')).toBeEditable({ editable: false, timeout: 300 });
            await expect.soft(phone.getById('username')).not.toBeEditable({ timeout: 300 });
          });

          test('toBeInViewport fails', async ({ phone }) => {
            await phone.launch('com.android.settings');
            const titles = await phone.getById('android:id/title').all();
            const cut = await titles[titles.length - 1].textContent();
            console.log('cut=' + cut);
            const row = phone.locator({ clickable: true }).filter({ has: phone.getByText(cut, { exact: true }) });
            await expect.soft(row).toBeInViewport({ ratio: 1, timeout: 300 });
            await expect.soft(phone.getByText('About phone')).toBeInViewport({ timeout: 300 });
            await expect.soft(row).toBeInViewport({ ratio: 2 });
          });

          test('.not on a missing view fails, as in Playwright', async ({ phone }) => {
            await phone.launch('com.phonelease.login');
            // A missing view is not in the viewport: this one passes.
            await expect(phone.getById('no-such-view')).not.toBeInViewport({ timeout: 300 });
            await expect.soft(phone.getById('no-such-view')).not.toBeChecked({ timeout: 300 });
            await expect.soft(phone.getById('no-such-view')).not.toHaveText('x', { timeout: 300 });
          });
        `,
      },
      { env, args: ['--retries=0'] },
    );
    for (const title of [
      'text fields: value, focus, editable',
      'the viewport: a row the list cuts, then scrolled into view',
      'the new verbs are steps titled like the call',
    ])
      expectPassed(run, title);
    const steps = stepTitles(
      byTitle(run, 'the new verbs are steps titled like the call').results[0]!.steps as Step[],
    );
    expect(steps).toEqual(
      expect.arrayContaining([
        "phone.locator({ clickable: true }).filter({ has: phone.getByText('Airplane mode', { exact: true }) }).locator({ checkable: true }).setChecked(true)",
        "phone.getByText('Flight mode').or(phone.getByText('Airplane mode', { exact: true })).isHidden()",
        "expect(phone.getById('android:id/title').and(phone.getByText('Airplane'))).toHaveText('Airplane mode')",
      ]),
    );
    expect(
      stepTitles(byTitle(run, 'text fields: value, focus, editable').results[0]!.steps as Step[]),
    ).toEqual(
      expect.arrayContaining([
        "expect(phone.getById('username')).toHaveValue('demo')",
        "expect(phone.getById('username')).not.toBeFocused()",
        "expect(phone.getById('username')).toBeEditable()",
        "expect(phone.getById('username')).toBeInViewport()",
      ]),
    );

    /** Checks a failed test's messages, one per soft assertion in order, each holding its parts. */
    const expectFailures = (title: string, messages: Array<Array<string | RegExp>>) => {
      const result = byTitle(run, title).results[0]!;
      expect(result.status, title).toBe('failed');
      const errors = result.errors.map((e) => e.message ?? '');
      expect(errors, title).toHaveLength(messages.length);
      messages.forEach((parts, i) => {
        for (const part of parts)
          if (typeof part === 'string') expect(errors[i]).toContain(part);
          else expect(errors[i]).toMatch(part);
      });
    };

    // A label is no text field: it fails either way, and says what it is.
    const label = [
      "Locator:  phone.getById('title')",
      'Received: not a text field (android.widget.TextView); toHaveText reads the text of other views',
    ];
    expectFailures('toHaveValue fails', [
      ["Locator:  phone.getById('username')", 'Expected: "someone"', 'Received: "demo"'],
      label,
      label,
      [
        "Locator:  phone.getById('password')",
        'a password field: the phone shows one \u2022 per character, never the text',
      ],
    ]);
    expectFailures('toBeFocused fails', [
      ["Locator:  phone.getById('password')", 'Expected: focused', 'Received: not focused'],
      ["Locator:  phone.getById('username')", 'Expected: not focused', 'Timeout:  300ms'],
    ]);
    expectFailures('toBeEditable fails', [
      ["Locator:  phone.getById('login')", 'Received: not a text field (android.widget.Button)'],
      ["Locator:  phone.getById('username')", 'Expected: read-only', 'Received: editable'],
      ["Locator:  phone.getById('username')", 'Expected: not editable'],
    ]);
    const cut = /cut=(.+)/.exec(run.stdout)?.[1];
    expect(cut, run.stdout).toBeTruthy();
    expectFailures('toBeInViewport fails', [
      [
        `Locator:  phone.locator({ clickable: true }).filter({ has: phone.getByText('${cut}', { exact: true }) })`,
        'Expected: at least 100% in the viewport',
        /Received: [1-9]\d% in the viewport \(the list's bottom edge cuts it\)/,
      ],
      ["Locator:  phone.getByText('About phone')", 'Received: <element(s) not found>'],
      ['toBeInViewport: ratio must be a number from 0 to 1 (got 2)'],
    ]);
    expectFailures('.not on a missing view fails, as in Playwright', [
      [
        "Locator:  phone.getById('no-such-view')",
        'Expected: not checked',
        'Received: <element(s) not found>',
      ],
      ["Locator:  phone.getById('no-such-view')", 'Received: <element(s) not found>'],
    ]);
  }, 240_000);

  it('compares the screen with a snapshot file, attaches a diff, and updates it on request', async () => {
    const files = {
      'playwright.config.ts': config(),
      'shot.spec.ts': `
        import { test, expect } from 'phonelease/playwright';
        test('looks right', async ({ phone }) => {
          await phone.launch('com.phonelease.login');
          if (process.env.TYPE_NAME) await phone.getById('username').fill(process.env.TYPE_NAME);
          await expect(phone).toHaveScreenshot('login.png', { mask: [phone.getById('title')] });
        });`,
    };
    const shot = (args: string[] = [], extra: NodeJS.ProcessEnv = {}) =>
      runInlineTest('ui-shot', files, { env: { ...env, ...extra }, args: ['--retries=0', ...args] });

    // No snapshot yet: the first run writes it and fails, as Playwright does for pages.
    const first = await shot();
    const firstResult = byTitle(first, 'looks right').results[0]!;
    expect(firstResult.status).toBe('failed');
    expect(firstResult.errors.map((e) => e.message).join('\n')).toContain("doesn't exist");
    const snapshot = join(first.dir, 'shot.spec.ts-snapshots', 'login-linux.png');
    expect(existsSync(snapshot)).toBe(true);

    // Same files, same screen: it passes. (Each run is a new directory: copy the snapshot over.)
    const again = await runWithSnapshot(files, snapshot, env, []);
    expectPassed(again, 'looks right');

    // The screen changed: it fails with expected, actual and diff images attached.
    const changed = await runWithSnapshot(files, snapshot, { ...env, TYPE_NAME: 'demo' }, []);
    const failed = byTitle(changed, 'looks right').results[0]!;
    expect(failed.status).toBe('failed');
    expect(failed.errors.map((e) => e.message).join('\n')).toMatch(
      /\d+ pixels \(ratio [\d.]+ of all image pixels\) are different/,
    );
    const diff = failed.attachments.find((a) => a.name === 'login-diff.png');
    expect(diff?.path, JSON.stringify(failed.attachments.map((a) => [a.name, a.path]))).toBeTruthy();
    const diffPng = PNG.sync.read(readFileSync(diff!.path!));
    let red = 0;
    for (let i = 0; i < diffPng.data.length; i += 4)
      if (diffPng.data[i] === 255 && diffPng.data[i + 1] === 0 && diffPng.data[i + 2] === 0) red++;
    expect(red).toBeGreaterThan(0);
    expect(failed.attachments.map((a) => a.name)).toEqual(
      expect.arrayContaining(['login-expected.png', 'login-actual.png', 'login-diff.png']),
    );

    // --update-snapshots takes the new screen, and it passes from then on.
    const updated = await runWithSnapshot(files, snapshot, { ...env, TYPE_NAME: 'demo' }, [
      '--update-snapshots',
    ]);
    expectPassed(updated, 'looks right');
    const newSnapshot = join(updated.dir, 'shot.spec.ts-snapshots', 'login-linux.png');
    const after = await runWithSnapshot(files, newSnapshot, { ...env, TYPE_NAME: 'demo' }, []);
    expectPassed(after, 'looks right');
    rmSync(first.dir, { recursive: true, force: true });
  }, 300_000);
});

/** Runs `files` with an existing snapshot file placed where Playwright looks for it. */
function runWithSnapshot(
  files: Record<string, string>,
  snapshot: string,
  env: NodeJS.ProcessEnv,
  args: string[],
): Promise<InlineRun> {
  const png = readFileSync(snapshot).toString('base64');
  return runInlineTest(
    'ui-shot',
    {
      ...files,
      // Written by a tiny global setup so the snapshot bytes travel inside the project.
      'setup.ts': `
        import { mkdirSync, writeFileSync } from 'node:fs';
        import { join } from 'node:path';
        export default function () {
          const dir = join(import.meta.dirname, 'shot.spec.ts-snapshots');
          mkdirSync(dir, { recursive: true });
          writeFileSync(join(dir, 'login-linux.png'), Buffer.from('${png}', 'base64'));
        }`,
      'playwright.config.ts': config(`globalSetup: './setup.ts'`),
    },
    { env, args: ['--retries=0', ...args] },
  );
}
