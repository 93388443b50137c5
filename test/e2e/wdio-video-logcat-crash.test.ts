/**
 * What the WebdriverIO service captures while a test runs, under the real wdio runner with
 * real Appium on a virtual phone of a real server: with `video: 'on-failure'` a failed
 * test's video is saved (checked with ffprobe) and a passing one's is not; each test's whole
 * log is its own; an app crash is named in the output and saved.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/util/ports.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { decodeErrors, probe } from '../support/video.js';
import { runWdio, wdioConfig, type WdioRun } from '../support/wdio-inline.js';
import { quietPort } from '../support/ports.js';

let t: TestServer;
let env: NodeJS.ProcessEnv;
let run: WdioRun;

// One session's phone serves the three tests (scope 'session'): each is captured on its own.
const SPEC = `
describe('captured', () => {
  it('passes', async () => {
    const phone = await browser.phonelease();
    await phone.shell("log -t mytest 'the passing test'");
    await driver.activateApp('com.phonelease.login');
  });

  it('fails', async () => {
    const phone = await browser.phonelease();
    await phone.shell("log -t mytest 'the failing test starts'");
    await driver.activateApp('com.phonelease.login');
    await $('id=com.phonelease.login:id/username').setValue('demo');
    await expect($('id=com.phonelease.login:id/result')).toHaveText('Welcome, demo!', { wait: 500 });
  });

  it('crashes the app', async () => {
    const phone = await browser.phonelease();
    await driver.activateApp('com.phonelease.login');
    await $('id=com.phonelease.login:id/username').setValue('crash');
    await $('~password').setValue('anything');
    await $('//*[@text="Log in"]').click();
    await browser.waitUntil(async () => (await phone.shell('pidof com.phonelease.login')).exitCode === 1);
  });
});
`;

beforeAll(async () => {
  t = await startTestServer({ bootMs: 50, phones: 5 });
  // Our own adb server: the run must not touch a shared 5037.
  env = {
    PHONELEASE_BASE_URL: t.url,
    PHONELEASE_API_KEY: t.account.key,
    ANDROID_ADB_SERVER_PORT: String(await quietPort()),
  };
  run = await runWdio(
    'wdio-video',
    {
      'wdio.conf.ts': wdioConfig({ appiumPort: await freePort(), service: "{ video: 'on-failure' }" }),
      'specs/captured.e2e.ts': SPEC,
    },
    { env },
  );
}, 300_000);
afterAll(async () => {
  // Appium started that adb server as a daemon, as stock adb does; it is this run's alone.
  await new Promise<void>((resolve) =>
    execFile('adb', ['kill-server'], { env: { ...process.env, ...env } }, () => resolve()),
  );
  await t?.close();
});

const dir = () => join(run.dir, 'out', 'phonelease');
const files = () => (existsSync(dir()) ? readdirSync(dir()).sort() : []);
const stem = (test: string) => `captured.e2e.ts--${test}--0-0--`;

describe('phonelease WebdriverIO service captures each test', () => {
  it("saves a failed test's video with video 'on-failure', prints its path, and keeps none of a passing test", async () => {
    expect(run.exitCode, run.output.slice(-3000)).toBe(1);
    const video = join(dir(), `${stem('fails')}phone-video.mp4`);
    expect(files()).toContain(`${stem('fails')}phone-video.mp4`);
    expect(run.output).toContain(video);
    const { stream } = await probe(video);
    expect(stream).toMatchObject({ codec_name: 'h264', width: 720, height: 1280 });
    expect(await decodeErrors(video)).toBe('');
    expect(
      files().filter((f) => f.startsWith(stem('passes')) || f.startsWith(stem('crashes-the-app'))),
    ).not.toContainEqual(expect.stringMatching(/phone-video/));
    // Nothing captured is left behind.
    expect(files().filter((f) => f.startsWith('.phone-capture-'))).toEqual([]);
  });

  it("saves a failed test's own log: from its start, none of the test before it", () => {
    const log = readFileSync(join(dir(), `${stem('fails')}phone-logcat.txt`), 'utf8');
    expect(log).toMatch(/ I mytest\s*: the failing test starts$/m);
    expect(log).not.toContain('the passing test');
  });

  it('names an app crash in the output and saves its lines, in a passing test too', () => {
    expect(run.output).toMatch(
      /\[phonelease 0-0\] "crashes the app": the app com\.phonelease\.login crashed during this test: java\.lang\.IllegalStateException: Login crashed on purpose/,
    );
    const crash = readFileSync(join(dir(), `${stem('crashes-the-app')}phone-crash.txt`), 'utf8');
    expect(crash).toMatch(
      /E AndroidRuntime: FATAL EXCEPTION: main\n.*Process: com\.phonelease\.login, PID: \d+/,
    );
  });
});
