/**
 * What the Playwright fixture captures while a test runs, under the real runner on virtual
 * phones of a real server: the phone's video as the project's `video` option says (checked
 * with ffprobe), the test's whole log, and an app crash named in the report.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  runInlineTest,
  type FlatTest,
  type InlineRun,
  type JsonAttachment,
} from '../support/playwright-inline.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { decodeErrors, probe } from '../support/video.js';

let t: TestServer;
let run: InlineRun;

// One run of the runner for every case: each is a test of its own, on a phone of its own.
const SPEC = `
import { test, expect } from 'phonelease/playwright';

/** When the body started and ended, printed for the check against the video's length. */
async function timed(body: () => Promise<void>): Promise<void> {
  const started = Date.now();
  try {
    await body();
  } finally {
    console.log('body=' + started + '-' + Date.now());
  }
}

async function signInAs(phone, user: string) {
  await phone.launch('com.phonelease.login');
  await phone.getById('username').fill(user);
  await phone.getById('password').fill('secret');
  await phone.getById('login').click();
}

test('fails with its video kept', async ({ phone }) => {
  await timed(async () => {
    await phone.shell("log -t mytest 'hello from the test start'");
    await phone.launch('com.phonelease.login');
    await phone.getById('username').fill('demo');
    // A screen that changes for a while: the video has something to show.
    await phone.press('Home');
    await phone.launch('com.phonelease.login');
  });
  expect('shown').toBe('not shown');
});

test('passes and keeps no video', async ({ phone }) => {
  await phone.shell("log -t mytest 'a passing test'");
  await phone.launch('com.phonelease.login');
});

test.describe('video on', () => {
  test.use({ phoneOptions: { video: 'on' } });
  test('passes and keeps its video', async ({ phone }) => {
    await phone.launch('com.phonelease.login');
  });
});

test.describe('video off for the phone alone', () => {
  test.use({ phoneOptions: { video: 'off' } });
  test('fails without a video', async ({ phone }) => {
    await phone.launch('com.phonelease.login');
    expect(1).toBe(2);
  });
});

test.describe('a video the phone cannot record', () => {
  // screenrecord refuses an odd width, as Android's encoder does.
  test.use({ phoneOptions: { video: { mode: 'on', size: { width: 721, height: 1280 } } } });
  test('passes without it, and says why', async ({ phone }) => {
    await phone.launch('com.phonelease.login');
  });
});

test('fails after the app crashed', async ({ phone }) => {
  await signInAs(phone, 'crash');
  await expect(phone.getByText('Welcome, crash!')).toBeVisible({ timeout: 2000 });
});

test('passes although the app crashed', async ({ phone }) => {
  await signInAs(phone, 'crash');
  await expect.poll(async () => (await phone.shell('pidof com.phonelease.login')).exitCode).toBe(1);
});
`;

beforeAll(async () => {
  t = await startTestServer({ bootMs: 50, phones: 20, account: { sessionLimit: 50 } });
  run = await runInlineTest(
    'video-logcat-crash',
    {
      'playwright.config.ts': `
import { defineConfig } from '@playwright/test';
export default defineConfig({
  timeout: 60_000,
  workers: 2,
  outputDir: './test-results',
  use: { video: 'retain-on-failure' },
});
`,
      'a.spec.ts': SPEC,
    },
    { env: { PHONELEASE_BASE_URL: t.url, PHONELEASE_API_KEY: t.account.key } },
  );
}, 300_000);
afterAll(() => t?.close());

function result(title: string) {
  const test: FlatTest | undefined = run.tests.find((x) => x.title === title);
  if (!test) throw new Error(`no test "${title}" in the report:\n${run.stdout}\n${run.stderr}`);
  return test.results[0]!;
}

const named = (attachments: JsonAttachment[], name: string) => attachments.filter((a) => a.name === name);

function text(a: JsonAttachment): string {
  return a.body ? Buffer.from(a.body, 'base64').toString() : readFileSync(a.path!, 'utf8');
}

describe('the phone fixture captures the test', () => {
  it("keeps a failed test's video under retain-on-failure: H.264 at the screen's size, as long as the test", async () => {
    const r = result('fails with its video kept');
    expect(r.status).toBe('failed');
    const [video] = named(r.attachments, 'phone-video');
    expect(video).toMatchObject({ contentType: 'video/mp4' });
    // A file, not bytes in the report: the HTML report plays it.
    expect(video!.path && existsSync(video!.path)).toBeTruthy();
    const { stream, duration } = await probe(video!.path!);
    expect(stream).toMatchObject({ codec_name: 'h264', width: 720, height: 1280 });
    const [, bodyStart, bodyEnd] = /body=(\d+)-(\d+)/.exec(r.stdout.map((s) => s.text).join(''))!.map(Number);
    // The video runs from the phone's ready (after the test's start, before its body) to
    // the test's end: all of the body, and no more than the whole test took (its fixtures'
    // start included) with the moment it takes to stop screenrecord.
    const body = (bodyEnd! - bodyStart!) / 1000;
    const wholeTest = (bodyEnd! - Date.parse(r.startTime)) / 1000;
    expect(duration).toBeGreaterThanOrEqual(body);
    expect(duration).toBeLessThan(wholeTest + 0.5);
    expect(await decodeErrors(video!.path!)).toBe('');
  });

  it('keeps no video of a passing test under retain-on-failure, and deletes it', () => {
    const r = result('passes and keeps no video');
    expect(r.status).toBe('passed');
    expect(r.attachments.filter((a) => a.name.startsWith('phone-'))).toEqual([]);
    // Nothing captured is left behind in the output folder either: only attachments stay.
    const files = readdirSync(join(run.dir, 'test-results'), { recursive: true }).map(String);
    expect(files.filter((f) => f.includes('.phone-capture-'))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.mp4') && !f.includes('/attachments/phone-video-'))).toEqual([]);
  });

  it("keeps a passing test's video when the phone's own option says 'on', and none when it says 'off'", async () => {
    const on = result('passes and keeps its video');
    expect(on.status).toBe('passed');
    const [video] = named(on.attachments, 'phone-video');
    expect((await probe(video!.path!)).stream).toMatchObject({
      codec_name: 'h264',
      width: 720,
      height: 1280,
    });
    const off = result('fails without a video');
    expect(off.status).toBe('failed');
    expect(named(off.attachments, 'phone-video')).toEqual([]);
    expect(named(off.attachments, 'phone-screen')).toHaveLength(1);
  });

  it('attaches the whole log of a failed test, from its first line on', () => {
    const r = result('fails with its video kept');
    const [logcat] = named(r.attachments, 'phone-logcat');
    expect(logcat?.contentType).toBe('text/plain');
    const log = text(logcat!);
    expect(log).toMatch(
      /^\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\s+\d+\s+\d+ I mytest\s*: hello from the test start$/m,
    );
    // The whole test, not the last lines: the log goes on to the app's start.
    expect(log.slice(log.indexOf('hello from the test start'))).toContain('com.phonelease.login');
    // A passing test's log is not kept (attachLogcat: 'on-failure').
    expect(named(result('passes and keeps no video').attachments, 'phone-logcat')).toEqual([]);
  });

  it('says in the report why a video could not be recorded, and does not fail the test for it', () => {
    const r = result('passes without it, and says why');
    expect(r.status).toBe('passed');
    expect(named(r.attachments, 'phone-video')).toEqual([]);
    expect(r.stderr.map((x) => x.text).join('')).toMatch(
      /passes without it, and says why: could not record the phone's screen: screenrecord did not start .*721x1280/,
    );
  });

  it("names an app crash in a failed test's errors and annotations, and attaches its lines", () => {
    const r = result('fails after the app crashed');
    expect(r.status).toBe('failed');
    const errors = r.errors.map((e) => e.message ?? '').join('\n');
    expect(errors).toContain(
      'phonelease: the app com.phonelease.login crashed during this test: java.lang.IllegalStateException: Login crashed on purpose',
    );
    expect(r.annotations).toContainEqual({
      type: 'phone-crash',
      description: expect.stringMatching(
        /^the app com\.phonelease\.login crashed during this test: java\.lang\.IllegalStateException: /,
      ),
    });
    const [crash] = named(r.attachments, 'phone-crash');
    expect(text(crash!)).toMatch(
      /E AndroidRuntime: FATAL EXCEPTION: main\n.*Process: com\.phonelease\.login, PID: \d+/,
    );
    expect(text(crash!)).toMatch(/\tat /);
  });

  it('annotates a passing test whose app crashed, and attaches the crash, without failing it', () => {
    const r = result('passes although the app crashed');
    expect(r.status).toBe('passed');
    expect(r.errors).toEqual([]);
    expect(named(r.attachments, 'phone-crash')).toHaveLength(1);
    expect(r.annotations?.map((a) => a.type)).toContain('phone-crash');
  });
});
