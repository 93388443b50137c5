/**
 * The WebdriverIO service under the real wdio runner, with real Appium and the
 * UiAutomator2 driver, against virtual phones of a real server.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/util/ports.js';
import { PhoneleaseWorkerService } from '../../fixtures/wdio/service.js';
import { testApkFile } from '../support/apk-builder.js';
import { embeddedServers, type ProcessInfo } from '../support/processes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { runWdio, wdioConfig } from '../support/wdio-inline.js';
import { quietPort } from '../support/ports.js';

let t: TestServer;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  t = await startTestServer({ bootMs: 50, phones: 20 });
  // Our own adb server: the run must not touch a shared 5037.
  env = {
    PHONELEASE_BASE_URL: t.url,
    PHONELEASE_API_KEY: t.account.key,
    ANDROID_ADB_SERVER_PORT: String(await quietPort()),
  };
});
afterAll(async () => {
  // Appium started that adb server as a daemon, as stock adb does; it is this run's alone.
  await new Promise<void>((resolve) =>
    execFile('adb', ['kill-server'], { env: { ...process.env, ...env } }, () => resolve()),
  );
  await t.close();
});

const phoneIds = (output: string) => [...new Set([...output.matchAll(/phone=(ses_\w+)/g)].map((m) => m[1]!))];

async function expectNoLiveSessions(timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const live = (await t.api.get('/sessions')).body as unknown[];
    if (live.length === 0) return;
    if (Date.now() > deadline) throw new Error(`still live: ${JSON.stringify(live)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function endReasons(ids: string[]): Promise<Array<string | undefined>> {
  const history = (await t.api.get('/history')).body as Array<{ sid: string; end_reason: string }>;
  return ids.map((id) => history.find((h) => h.sid === id)?.end_reason);
}

const LOGIN_SPEC = (name: string, password: string) => `
describe('${name}', () => {
  it('logs in', async () => {
    const phone = await browser.phonelease();
    console.log('phone=' + phone.id);
    await driver.activateApp('com.phonelease.login');
    await $('id=com.phonelease.login:id/username').setValue('demo');
    await $('~password').setValue('${password}');
    await $('//*[@text="Log in"]').click();
    await expect($('id=com.phonelease.login:id/result')).toHaveText('Welcome, demo!');
  });
});
`;

describe('phonelease WebdriverIO service', () => {
  it('runs a passing spec on a leased phone through Appium and ends the phone', async () => {
    const run = await runWdio(
      'wdio-pass',
      {
        'wdio.conf.ts': wdioConfig({ appiumPort: await freePort() }),
        'specs/login.e2e.ts': LOGIN_SPEC('login', 'secret'),
      },
      { env },
    );
    expect(run.exitCode, run.output.slice(-3000)).toBe(0);
    const ids = phoneIds(run.output);
    expect(ids).toHaveLength(1);
    expect(await endReasons(ids)).toEqual(['released']);
    await expectNoLiveSessions();
  });

  it('saves the phone screen (PNG), UI tree and logcat under the output dir when a spec fails, and prints their paths', async () => {
    const run = await runWdio(
      'wdio-fail',
      {
        'wdio.conf.ts': wdioConfig({ appiumPort: await freePort() }),
        'specs/login.e2e.ts': LOGIN_SPEC('wrong password', 'nope'),
      },
      { env },
    );
    expect(run.exitCode).toBe(1);
    const dir = join(run.dir, 'out', 'phonelease');
    const files = existsSync(dir) ? readdirSync(dir).sort() : [];
    const stem = 'login.e2e.ts--logs-in--0-0--';
    expect(files).toEqual([`${stem}phone-logcat.txt`, `${stem}phone-screen.png`, `${stem}phone-ui.xml`]);
    for (const file of files) expect(run.output).toContain(join(dir, file));
    const png = PNG.sync.read(readFileSync(join(dir, `${stem}phone-screen.png`)));
    expect([png.width, png.height]).toEqual([720, 1280]);
    // Appium's page source, taken while the failed login's screen was up.
    expect(readFileSync(join(dir, `${stem}phone-ui.xml`), 'utf8')).toMatch(
      /<hierarchy[\s\S]*com\.phonelease\.login:id\/result/,
    );
    expect(readFileSync(join(dir, `${stem}phone-logcat.txt`), 'utf8')).toContain('com.phonelease.login');
    await expectNoLiveSessions();
  });

  it('gives 2 parallel workers distinct phones, and warns once per run of a renamed option', async () => {
    const run = await runWdio(
      'wdio-parallel',
      {
        'wdio.conf.ts': wdioConfig({
          maxInstances: 2,
          appiumPort: await freePort(),
          service: '{ screenshotOnFailure: true }',
        }),
        'specs/a.e2e.ts': LOGIN_SPEC('a', 'secret'),
        'specs/b.e2e.ts': LOGIN_SPEC('b', 'secret'),
      },
      { env },
    );
    expect(run.exitCode, run.output.slice(-3000)).toBe(0);
    const ids = phoneIds(run.output);
    expect(ids).toHaveLength(2);
    expect(await endReasons(ids)).toEqual(['released', 'released']);
    const warning =
      "[phonelease] warning: the option `screenshotOnFailure` is now `attachScreenshot: 'on-failure' | 'off'`";
    expect(run.output.split(warning)).toHaveLength(2);
    await expectNoLiveSessions();
  });

  it("scope 'test' gives every test a fresh phone and reloads the Appium session onto it", async () => {
    const spec = `
describe('per test', () => {
  for (const n of [1, 2, 3]) {
    it('test ' + n, async () => {
      const phone = await browser.phonelease();
      console.log('phone=' + phone.id);
      // Each test starts on a fresh launcher: the previous test's login did not carry over.
      await driver.activateApp('com.phonelease.login');
      await expect($('id=com.phonelease.login:id/result')).toHaveText('');
      await $('id=com.phonelease.login:id/username').setValue('demo');
      await $('~password').setValue('secret');
      await $('//*[@text="Log in"]').click();
      await expect($('id=com.phonelease.login:id/result')).toHaveText('Welcome, demo!');
    });
  }
});`;
    const run = await runWdio(
      'wdio-scope-test',
      {
        'wdio.conf.ts': wdioConfig({ service: "{ scope: 'test' }", appiumPort: await freePort() }),
        'specs/per-test.e2e.ts': spec,
      },
      { env },
    );
    expect(run.exitCode, run.output.slice(-3000)).toBe(0);
    const ids = phoneIds(run.output);
    expect(ids).toHaveLength(3);
    expect(await endReasons(ids)).toEqual(['released', 'released', 'released']);
    await expectNoLiveSessions();
  });

  it("scope 'test' ends the previous test's phone when moving the WebDriver session to the next one fails", async () => {
    // In this process, hooks called as the runner calls them: the reload onto the fresh
    // phone is what fails (Appium refused it), so no runner is needed to show it.
    const saved = { ...process.env };
    Object.assign(process.env, env, { PHONELEASE_RUN_ID: `reload-${Date.now()}` });
    try {
      const service = new PhoneleaseWorkerService({ scope: 'test', progress: false });
      await service.beforeSession({} as never, {}, ['specs/reload.e2e.ts'], '0-0');
      const first = service.phone;
      expect(first).not.toBeNull();
      const browser = {
        addCommand: () => undefined,
        reloadSession: () => Promise.reject(new Error('Appium refused the new session')),
      };
      service.before({}, [], browser as unknown as WebdriverIO.Browser);
      await service.beforeTest({ title: 'one', fullName: 'reload one' } as never);
      await expect(service.beforeTest({ title: 'two', fullName: 'reload two' } as never)).rejects.toThrow(
        /Appium refused/,
      );
      const second = service.phone;
      expect(second?.id).not.toBe(first?.id);
      expect(first?.ended).toBe(true);
      await service.afterSession();
      await expectNoLiveSessions();
    } finally {
      process.env = saved;
    }
  });

  it("scope 'test' fails the test whose fresh phone cannot be leased, never running it on the old one", async () => {
    // One session at a time for this account: the second test's lease meets the first
    // test's phone still held and is refused with session_limit.
    const limited = t.other({ sessionLimit: 1 });
    const spec = `
describe('per test', () => {
  for (const n of [1, 2, 3]) {
    it('test ' + n, async () => {
      const phone = await browser.phonelease();
      console.log('phone=' + phone.id + ' test=' + n);
      await driver.activateApp('com.phonelease.login');
      await expect($('id=com.phonelease.login:id/result')).toHaveText('');
    });
  }
});`;
    const run = await runWdio(
      'wdio-scope-test-refused',
      {
        'wdio.conf.ts': wdioConfig({ service: "{ scope: 'test' }", appiumPort: await freePort() }),
        'specs/per-test.e2e.ts': spec,
      },
      { env: { ...env, PHONELEASE_API_KEY: limited.account.key } },
    );
    const tail = run.output.slice(-4000);
    expect(run.exitCode, tail).toBe(1);
    expect(run.output, tail).toContain('could not lease a fresh phone for "test 2"');
    // Test 2 never ran on test 1's phone; test 3 got a phone of its own again.
    const ran = [...run.output.matchAll(/phone=(ses_\w+) test=(\d)/g)].map((m) => [m[2], m[1]]);
    expect(ran.map(([n]) => n)).toEqual(['1', '3']);
    expect(ran[0]![1]).not.toBe(ran[1]![1]);
    expect(run.output, tail).toMatch(/1 passing|2 passing/);
    expect(await limited.api.get('/sessions').then((r) => r.body)).toEqual([]);
  });

  it('fails a session whose phone cannot be leased with the phonelease error, before Appium is asked', async () => {
    const wrongKey = 'pck_wrong' + 'x'.repeat(36);
    const run = await runWdio(
      'wdio-wrong-key',
      {
        'wdio.conf.ts': wdioConfig({ appiumPort: await freePort() }),
        'specs/login.e2e.ts': LOGIN_SPEC('login', 'secret'),
      },
      { env: { ...env, PHONELEASE_API_KEY: wrongKey } },
    );
    expect(run.exitCode, run.output.slice(-3000)).toBe(1);
    // The reporter's failure is ours, not Appium's search for a device.
    const tail = run.output.slice(-3000);
    expect(run.output, tail).toMatch(/Failed to create a session:\s*\n.*The API key is not valid/);
    expect(run.output, tail).not.toMatch(/Could not find a connected Android device/);
    expect(run.output).not.toContain(wrongKey);
    // Appium was never asked for a session it could not have.
    const appiumLog = readFileSync(join(run.dir, 'logs', 'wdio-appium.log'), 'utf8');
    expect(appiumLog, appiumLog.slice(-2000)).not.toMatch(/POST \/session\b/);
    await expectNoLiveSessions();
  });

  it('reports the leftover of a killed worker as ended, by id', async () => {
    const spec = `
import { writeFileSync } from 'node:fs';
describe('dies', () => {
  it('is killed holding its phone', async () => {
    const phone = await browser.phonelease();
    writeFileSync('ready', phone.id);
    process.kill(process.pid, 'SIGKILL');
  });
});`;
    const run = await runWdio(
      'wdio-killed',
      { 'wdio.conf.ts': wdioConfig({ appiumPort: await freePort() }), 'specs/die.e2e.ts': spec },
      // No reaper: the launcher's onComplete is what ends the phone.
      { env: { ...env, PHONELEASE_REAPER: '0' } },
    );
    // The spec got its phone before the run was interrupted (else say what the run printed).
    expect(existsSync(join(run.dir, 'ready')), run.output.slice(-6000)).toBe(true);
    const id = readFileSync(join(run.dir, 'ready'), 'utf8');
    expect(run.exitCode).not.toBe(0);
    expect(run.output).toContain(`[phonelease] ended 1 phone(s) left by workers that did not finish (${id})`);
    expect(await endReasons([id])).toEqual(['released']);
    await expectNoLiveSessions();
  });

  it('fails the spec with the reason and claims no leftovers when the service is unreachable', async () => {
    // Nothing listens here: every start fails without a session. The client knows no create
    // can have arrived (the connection was refused), so there is nothing left to end or check.
    const unreachable = `http://127.0.0.1:${await quietPort()}`;
    const run = await runWdio(
      'wdio-unreachable',
      {
        'wdio.conf.ts': wdioConfig({ service: '{ startTimeoutMs: 2000 }', appiumPort: await freePort() }),
        'specs/login.e2e.ts': LOGIN_SPEC('login', 'secret'),
      },
      { env: { ...env, PHONELEASE_BASE_URL: unreachable } },
    );
    expect(run.exitCode, run.output.slice(-3000)).toBe(1);
    expect(run.output).not.toMatch(/ended \d+ phone\(s\)/);
    expect(run.output).toContain('Failed to create a session:');
    expect(run.output).toContain(
      'phonelease could not prepare a phone for this session: Could not reach the phone-session service',
    );
    expect(run.output).not.toContain('could not check whether');
  });

  it('leaves no live session after SIGINT (Ctrl-C) to the run', async () => {
    const spec = `
import { writeFileSync } from 'node:fs';
describe('waits', () => {
  it('holds its phone', async () => {
    const phone = await browser.phonelease();
    writeFileSync('ready', phone.id);
    await browser.pause(60000);
  });
});`;
    const run = await runWdio(
      'wdio-sigint',
      { 'wdio.conf.ts': wdioConfig({ appiumPort: await freePort() }), 'specs/wait.e2e.ts': spec },
      {
        env,
        onSpawn(child, dir) {
          const poll = setInterval(() => {
            if (existsSync(join(dir, 'ready'))) {
              clearInterval(poll);
              process.kill(-child.pid!, 'SIGINT');
            }
          }, 100);
          child.once('close', () => clearInterval(poll));
        },
      },
    );
    const id = readFileSync(join(run.dir, 'ready'), 'utf8');
    expect(run.exitCode).not.toBe(0);
    await expectNoLiveSessions(15_000);
    expect((await endReasons([id]))[0]).toBeDefined();
  });
});

describe('embedded default', () => {
  it('with no PHONELEASE_BASE_URL, one embedded server serves every worker and stops with the run', async () => {
    const spec = (name: string) => `
describe('${name}', () => {
  it('leases from the embedded server', async () => {
    const phone = await browser.phonelease();
    console.log('phone=' + phone.id + ' worker=' + process.pid + ' server=' + process.env.PHONELEASE_BASE_URL);
    await driver.activateApp('com.phonelease.login');
    await expect($('id=com.phonelease.login:id/username')).toBeDisplayed();
  });
});`;
    const seen = new Map<number, ProcessInfo>();
    const run = await runWdio(
      'wdio-embedded',
      {
        'wdio.conf.ts': wdioConfig({ maxInstances: 2, appiumPort: await freePort() }),
        'specs/a.e2e.ts': spec('a'),
        'specs/b.e2e.ts': spec('b'),
      },
      {
        env: { ...env, PHONELEASE_BASE_URL: '', PHONELEASE_API_KEY: '' },
        onSpawn(child, dir) {
          const poll = setInterval(() => {
            for (const p of embeddedServers(dir)) seen.set(p.pid, p);
          }, 100);
          child.once('close', () => clearInterval(poll));
        },
      },
    );
    expect(run.exitCode, run.output.slice(-3000)).toBe(0);
    expect(phoneIds(run.output)).toHaveLength(2);
    const workers = new Set([...run.output.matchAll(/worker=(\d+)/g)].map((m) => m[1]));
    expect(workers.size).toBe(2);
    const servers = new Set([...run.output.matchAll(/server=(\S+)/g)].map((m) => m[1]));
    expect(servers.size).toBe(1);
    expect([...servers][0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // One process for the whole run, its warm pool sized to maxInstances.
    expect([...seen.values()]).toHaveLength(1);
    expect([...seen.values()][0]!.args.join(' ')).toContain('--workers 2');
    // onComplete stopped it (its data and log under outputDir), and nothing is left running.
    const log = readFileSync(join(run.dir, 'out', '.phonelease-server', 'server.log'), 'utf8');
    expect(log).toContain('embedded server stopping');
    expect(embeddedServers(run.dir)).toEqual([]);
    const down = await fetch([...servers][0]!).then(
      () => false,
      () => true,
    );
    expect(down).toBe(true);
  });
});

describe('the app under test', () => {
  it('installs the service option apps before the session; Appium cannot activate an app the phone cannot run', async () => {
    const settings = new URL(
      '../../node_modules/appium-uiautomator2-driver/node_modules/io.appium.settings/apks/settings_apk-debug.apk',
      import.meta.url,
    ).pathname;
    const notes = testApkFile('notes.apk', {
      package: 'com.example.notes',
      label: 'Notes',
      activities: ['.Main'],
      launcher: true,
    });
    const run = await runWdio(
      'wdio-apps',
      {
        'wdio.conf.ts': wdioConfig({
          appiumPort: await freePort(),
          service: `{ apps: ['${settings}', '${notes}'], phoneleaseServer: { device: 'virtual' } }`,
        }),
        'specs/app.e2e.ts': `
describe('app', () => {
  it('has the apps', async () => {
    const phone = await browser.phonelease();
    console.log('paths=' + (await phone.shell('pm path com.example.notes')).stdout.trim());
    const refused = await driver.activateApp('com.example.notes').then(() => 'activated', (e) => e.message);
    console.log('activate=' + refused.replace(/\\n/g, ' '));
  });
});`,
      },
      { env: { ...env, PHONELEASE_BASE_URL: '', PHONELEASE_API_KEY: '' } },
    );
    expect(run.exitCode, run.output.slice(-3000)).toBe(0);
    expect(run.output).toContain("[phonelease] virtual phones (device: 'virtual')");
    expect(run.output).toMatch(/paths=package:\/data\/app\/\S+\/base\.apk/);
    expect(run.output).toMatch(/installed io\.appium\.settings \(.*settings_apk-debug\.apk, 2\.9 MB\)/);
    expect(run.output).toMatch(/activate=.*com\.example\.notes can't run on this virtual phone/);
  });
});
