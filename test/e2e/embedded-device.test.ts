/**
 * The zero-config fixtures with the user's own app, under the real Playwright runner: the
 * embedded server picks virtual phones or emulators as `phonelease doctor` judges this
 * machine and says so in the run's first line, `device: 'emulator'` on a machine that
 * cannot fails at once with the doctor's findings, `phoneOptions.apps` installs the app
 * under test (not again on a phone the server preinstalled), and `phone.launch()` of an
 * app the virtual phone cannot run fails with app_not_runnable.
 */
import { describe, expect, it } from 'vitest';
import { testApkFile } from '../support/apk-builder.js';
import { makeFakeSdk } from '../support/fake-sdk/index.js';
import { embeddedServers } from '../support/processes.js';
import { runInlineTest, type InlineRun } from '../support/playwright-inline.js';

const SETTINGS_APK =
  'node_modules/appium-uiautomator2-driver/node_modules/io.appium.settings/apks/settings_apk-debug.apk';

const config = (use = '') => `
import { defineConfig } from '@playwright/test';
export default defineConfig({ timeout: 120_000, workers: 1, outputDir: './test-results', use: { ${use} } });
`;

/** No phone service configured and no Android SDK: only the machine decides. */
const NO_SDK = {
  PHONELEASE_BASE_URL: '',
  PHONELEASE_API_KEY: '',
  PHONELEASE_DEVICE: undefined,
  ANDROID_HOME: undefined,
  ANDROID_SDK_ROOT: undefined,
};

/** What the specs printed, and the lines phonelease wrote on the workers' stderr. */
function outputOf(run: InlineRun): { stdout: string; stderr: string } {
  const results = run.tests.flatMap((x) => x.results);
  return {
    stdout: results.flatMap((r) => r.stdout.map((s) => s.text ?? '')).join(''),
    stderr: results.flatMap((r) => r.stderr.map((s) => s.text ?? '')).join('') + run.stderr,
  };
}

describe("the embedded server's phones", () => {
  it('auto without an Android SDK: virtual phones, saying why; apps installed once, preinstalled ones found', async () => {
    const abs = new URL(`../../${SETTINGS_APK}`, import.meta.url).pathname;
    const notes = testApkFile('notes.apk', {
      package: 'com.example.notes',
      label: 'Notes',
      activities: ['.Main'],
      launcher: true,
    });
    const run = await runInlineTest(
      'device-auto-virtual',
      {
        'playwright.config.ts': config(
          `phoneOptions: { apps: ['${abs}'] }, phoneleaseServer: { preinstall: ['${abs}'] }`,
        ),
        'a.spec.ts': `
        import { test, expect } from 'phonelease/playwright';
        test('has the app', async ({ phone }) => {
          const paths = (await phone.shell('pm path io.appium.settings')).stdout;
          expect(paths).toMatch(/^package:\\/data\\/app\\//);
          // Preinstalled when the phone booted: the lease found it and installed nothing.
          const log = (await phone.shell('logcat -d -s PackageManager')).stdout;
          expect(log).not.toContain('Installed io.appium.settings');
          // So is the UiAutomator2 server that locators run on: the first locator of a
          // fresh phone starts it and installs nothing.
          expect((await phone.shell('pm path io.appium.uiautomator2.server')).stdout).toMatch(/^package:/);
          await phone.launch('com.phonelease.login');
          await expect(phone.getById('username')).toBeVisible();
          const after = (await phone.shell('logcat -d -s PackageManager')).stdout;
          expect(after).not.toContain('Installed io.appium.uiautomator2');
          console.log('device=' + phone.session.device);
        });
        test.describe(() => {
          test.use({ phoneOptions: { apps: ['${abs}', '${notes}'] } });
          test('cannot run an app it has no model of', async ({ phone }) => {
            const error = await phone.launch('com.example.notes').catch((e) => e);
            expect(error.code).toBe('app_not_runnable');
            expect(error.message).toContain("phoneleaseServer: { device: 'emulator' }");
            await expect(phone.getByText("Notes can't run on this virtual phone")).toBeVisible();
            console.log('refused=' + error.name);
          });
        });`,
      },
      { env: NO_SDK },
    );
    expect(run.exitCode, run.stderr.slice(-3000)).toBe(0);
    const { stdout, stderr } = outputOf(run);
    const first = stderr.split('\n').find((l) => l.startsWith('[phonelease]'));
    expect(first).toBe(
      '[phonelease] virtual phones: no Android SDK (ANDROID_HOME unset) — phonelease doctor says how to run your app on emulators',
    );
    expect(stdout).toContain('device=Virtual Android phone');
    expect(stdout).toContain('refused=AppNotRunnableError');
    // The second test's other app was installed at its lease (and the first one skipped).
    expect(stderr).toContain(`installed com.example.notes (${notes}, 1 KB)`);
    expect(stderr).toContain('io.appium.settings is already on phone');
  });

  it("device: 'emulator' on a machine that cannot fails at once with the doctor's findings", async () => {
    const run = await runInlineTest(
      'device-emulator-refused',
      {
        'playwright.config.ts': config(`phoneleaseServer: { device: 'emulator' }`),
        'a.spec.ts': `
        import { test } from 'phonelease/playwright';
        test('needs a phone', async ({ phone }) => { console.log('got ' + phone.id); });`,
      },
      { env: NO_SDK },
    );
    expect(run.exitCode).not.toBe(0);
    const message = run.tests[0]!.results[0]!.errors.map((e) => e.message ?? '').join('\n');
    expect(message).toContain(
      "The embedded phonelease server could not start: device: 'emulator' needs a machine that passes phonelease doctor, and this one does not (no Android SDK (ANDROID_HOME unset))",
    );
    expect(message).toContain('[FAIL] sdk: No Android SDK: ANDROID_HOME (or ANDROID_SDK_ROOT) is not set.');
    expect(message).toContain('export ANDROID_HOME=$HOME/Android/Sdk');
    expect(outputOf(run).stdout).not.toContain('got ');
  });

  it('auto with an Android SDK, an AVD and KVM the emulator can use: emulators', async () => {
    const sdk = await makeFakeSdk();
    try {
      const run = await runInlineTest(
        'device-auto-emulator',
        {
          'playwright.config.ts': config(),
          'a.spec.ts': `
          import { test, expect } from 'phonelease/playwright';
          test('on an emulator', async ({ phone }) => {
            console.log('device=' + phone.session.device);
            expect((await phone.shell('getprop ro.build.version.sdk')).stdout.trim()).toBe('34');
          });`,
        },
        {
          env: {
            ...NO_SDK,
            ...sdk.env,
            // The emulator backend's golden snapshots go under the fake home, not the user's cache.
            XDG_CACHE_HOME: `${sdk.home}/.cache`,
          },
          timeoutMs: 300_000,
        },
      );
      expect(run.exitCode, run.stderr.slice(-3000)).toBe(0);
      const { stdout, stderr } = outputOf(run);
      expect(stderr).toContain(
        `[phonelease] Android SDK emulators (AVD "test_phone"): phonelease doctor's checks pass on this machine`,
      );
      expect(stdout).toMatch(/device=.*[Ee]mulator/);
      // The embedded server ends with the run, its emulators with it (and stops writing
      // into the SDK's home, which is removed next).
      await expect.poll(() => embeddedServers(run.dir), { timeout: 15_000 }).toEqual([]);
    } finally {
      await sdk.close();
    }
  }, 360_000);
});
