/**
 * What recording a test costs: the same test on the virtual phone without a recording of
 * its screen, with one that is kept (phone.startRecording() before, phone.stopRecording(path)
 * after, so the stop, the pull and the join are counted: a failed test, or video 'on') and
 * with one that is discarded (phone.discardRecording() after: a passing test under
 * 'retain-on-failure', the common case), in the same run on the same phone, at the bit rate
 * the fixtures record tests at; the
 * CPU the recording costs (process CPU, which includes the phone's encoder thread, since
 * the server runs in this process); the bytes a minute of a changing screen takes; and the
 * frames a second in the video (the screen changes all the time here: at least 10).
 *
 * The test is a Login app flow with locators (launch, fill both fields, sign in, wait for
 * the welcome, open Settings, go home), repeated, at two lengths: ten flows (a very short
 * test: 110-300 ms on the virtual phone, whose locators answer in a few ms) and as many as
 * take about UI_TEST_MS without recording (counted once, before the rounds): the length of a
 * short UI test on a phone. A recording costs a fixed part (screenrecord starts; at the end
 * the frame being encoded and the last screen are encoded, the file is pulled) and a part
 * while it runs (the encoder thread's CPU, on a machine whose cores the test wants too); the
 * "cost" lines show both. Runs alternate (plain, kept, discarded) in rounds so load from
 * elsewhere falls on all alike; figures are medians.
 *
 * It runs the built package (dist/), as users do: the phone's encoder thread then starts
 * from plain JavaScript.
 *
 * Then, what a test on a newly leased phone pays to start recording (the fixtures lease one
 * per test), against a second start on the same phone.
 *
 * Last, the same from a user's side: Playwright runs whose tests each do the flow
 * SUITE_FLOWS times with the `phone` fixture (a phone per test from the zero-config
 * embedded server, in its own process as users run it), in rounds of one test per video
 * mode: off, 'retain-on-failure' (the tests pass: their videos are discarded) and 'on'
 * (every video kept), set per test by phoneOptions.video, in an order that turns from round
 * to round. Modes compared within a round share the run's processes and the moment's load:
 * runs compared with each other differed by 10-15% with nothing changed. Figures are
 * medians of the durations the runner reports and of each round's ratio to its test without
 * video (each run's first round, which starts the server's encoder threads, left out).
 *
 * Goal: a recorded test at most 10% longer than the same test without recording.
 *
 * Run: npm run build && npx tsx bench/video.ts [rounds] [flows of the longer test]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Lease } from '../src/index.js';
import type * as Client from '../src/index.js';
import type * as Server from '../server/main.js';
import type * as Mp4Read from '../src/video/mp4-read.js';
import type * as Io from '../src/video/io.js';
import type * as Capture from '../fixtures/shared/capture.js';
import { runInlineTest } from '../test/support/playwright-inline.js';

const dist = new URL('../dist/', import.meta.url);
const { leasePhone } = (await import(new URL('src/index.js', dist).href)) as typeof Client;
const { startServer } = (await import(new URL('server/main.js', dist).href)) as typeof Server;
const { readMp4 } = (await import(new URL('src/video/mp4-read.js', dist).href)) as typeof Mp4Read;
const { FileSource } = (await import(new URL('src/video/io.js', dist).href)) as typeof Io;
const { TEST_VIDEO_BIT_RATE } = (await import(
  new URL('fixtures/shared/capture.js', dist).href
)) as typeof Capture;
const RECORDING = { bitRate: TEST_VIDEO_BIT_RATE };

const ROUNDS = Number(process.argv[2] ?? 7);
/** The very short test's flows. */
const SHORT_FLOWS = 10;
/** How long the longer test takes without recording: a short UI test on a phone. */
const UI_TEST_MS = 1500;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** One pass of the flow. */
async function loginFlow(phone: Lease): Promise<void> {
  await phone.launch('com.phonelease.login');
  await phone.getById('username').fill('demo');
  await phone.getById('password').fill('secret');
  await phone.getById('login').click();
  await phone.getByText('Welcome, demo!').waitFor();
  await phone.launch('com.android.settings');
  await phone.press('Home');
  await phone.shell('am force-stop com.phonelease.login; am force-stop com.android.settings');
}

/** A test: the flow `flows` times. */
async function loginTest(phone: Lease, flows: number): Promise<void> {
  for (let i = 0; i < flows; i++) await loginFlow(phone);
}

/**
 * The test of `flows` flows without recording, with its video kept and with it discarded,
 * in alternating rounds; prints the medians and the ratios.
 */
async function measure(phone: Lease, flows: number, what: string): Promise<void> {
  const plain: { ms: number; cpu: number }[] = [];
  const recorded: { ms: number; cpu: number; bytes: number; seconds: number; frames: number }[] = [];
  const discarded: { ms: number; cpu: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let c0 = cpuMs();
    let t0 = performance.now();
    await loginTest(phone, flows);
    plain.push({ ms: performance.now() - t0, cpu: cpuMs() - c0 });

    const file = join(data, `round-${round}.mp4`);
    c0 = cpuMs();
    t0 = performance.now();
    await phone.startRecording(RECORDING);
    await loginTest(phone, flows);
    const result = await phone.stopRecording(file);
    const ms = performance.now() - t0;
    const cpu = cpuMs() - c0;
    const source = await FileSource.open(file);
    try {
      const { track } = await readMp4(source, file);
      recorded.push({
        ms,
        cpu,
        bytes: statSync(file).size,
        seconds: result.durationSeconds,
        frames: track.samples.length,
      });
    } finally {
      await source.close();
    }

    c0 = cpuMs();
    t0 = performance.now();
    await phone.startRecording(RECORDING);
    await loginTest(phone, flows);
    await phone.discardRecording();
    discarded.push({ ms: performance.now() - t0, cpu: cpuMs() - c0 });
  }
  const plainMs = median(plain.map((r) => r.ms));
  const recordedMs = median(recorded.map((r) => r.ms));
  const plainCpu = median(plain.map((r) => r.cpu));
  const recordedCpu = median(recorded.map((r) => r.cpu));
  const perMinute = median(recorded.map((r) => (r.bytes / r.seconds) * 60));
  const discardedMs = median(discarded.map((r) => r.ms));
  const discardedCpu = median(discarded.map((r) => r.cpu));
  const recordingS = median(recorded.map((r) => r.seconds));
  const row = (name: string, ms: number, cpu: number, rest: string) =>
    console.log(
      `${name.padEnd(28)} ${ms.toFixed(0).padStart(6)} ms   cpu ${cpu.toFixed(0).padStart(6)} ms   ${rest}`,
    );
  // The duration's ratio is the median of each round's (recorded / plain of the same round):
  // load from elsewhere that lasts a few seconds falls on both halves of a pair alike.
  const ratios = (runs: { ms: number }[], ms: number, cpu: number) =>
    `${median(runs.map((r, i) => r.ms / plain[i]!.ms)).toFixed(2)}x duration (goal <= 1.10x; ${(ms / plainMs).toFixed(2)}x of the medians), ${(cpu / plainCpu).toFixed(2)}x cpu`;
  console.log(
    `${what}: ${flows} login flows on the virtual phone, ${ROUNDS} rounds, medians; recorded at ${TEST_VIDEO_BIT_RATE / 1e6} Mbit/s as the fixtures record`,
  );
  row('without recording', plainMs, plainCpu, '(baseline)');
  row(
    'recorded, video discarded',
    discardedMs,
    discardedCpu,
    ratios(discarded, discardedMs, discardedCpu) + '  (a passing test, retain-on-failure)',
  );
  row(
    'recorded, video kept',
    recordedMs,
    recordedCpu,
    ratios(recorded, recordedMs, recordedCpu) + '  (a failed test, or video on)',
  );
  row(
    "discarded recording's cost",
    discardedMs - plainMs,
    discardedCpu - plainCpu,
    `per test (${((discardedCpu - plainCpu) / (discardedMs / 1000) / 10).toFixed(1)}% of one core while recording)`,
  );
  row(
    "kept recording's cost",
    recordedMs - plainMs,
    recordedCpu - plainCpu,
    `per test (${((recordedCpu - plainCpu) / recordingS / 10).toFixed(1)}% of one core while recording)`,
  );
  console.log(
    `file size          ${(perMinute / 1e6).toFixed(2)} MB per minute of this test's changing screen`,
  );
  console.log(
    `frame rate         ${median(recorded.map((r) => r.frames / r.seconds)).toFixed(1)} frames a second in the video (at least 10 while the screen changes)`,
  );
}

const data = mkdtempSync(join(tmpdir(), 'phonelease-bench-video-'));
const server = await startServer({ port: 0, phones: 1, bootMs: 0, log: 'error' });
try {
  const account = server.createAccount({ billingMode: 'disabled' });
  const phone = await leasePhone({
    baseUrl: server.url,
    apiKey: account.key,
    reaper: false,
    handleSignals: false,
    ledger: false,
  });
  try {
    // Warm up: the UI server, the first screens drawn, the first recording.
    await loginTest(phone, SHORT_FLOWS);
    await phone.startRecording(RECORDING);
    await loginTest(phone, SHORT_FLOWS);
    await phone.stopRecording(join(data, 'warm.mp4'));
    await phone.startRecording(RECORDING);
    await loginTest(phone, SHORT_FLOWS);
    await phone.discardRecording();
    // The longer test's flows: as many as take UI_TEST_MS (a flow's time: the fastest of
    // three short tests), unless given.
    let flowMs = Infinity;
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      await loginTest(phone, SHORT_FLOWS);
      flowMs = Math.min(flowMs, (performance.now() - t0) / SHORT_FLOWS);
    }
    const longFlows = Number(process.argv[3] ?? Math.max(SHORT_FLOWS, Math.round(UI_TEST_MS / flowMs)));

    await measure(phone, SHORT_FLOWS, 'a very short test');
    await measure(phone, longFlows, `a test about as long as a short UI test (${UI_TEST_MS} ms)`);
  } finally {
    await phone.end();
  }

  // The fixtures lease a phone per test: its first recording's start, against a second one
  // on the same phone (whose encoder thread is ready), on phones leased one after another.
  const firstStart: number[] = [];
  const againStart: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    await using fresh = await leasePhone({
      baseUrl: server.url,
      apiKey: account.key,
      reaper: false,
      handleSignals: false,
      ledger: false,
    });
    for (const into of [firstStart, againStart]) {
      const t0 = performance.now();
      await fresh.startRecording(RECORDING);
      into.push(performance.now() - t0);
      await fresh.discardRecording();
    }
  }
  console.log(
    `start on a new phone ${median(firstStart).toFixed(0).padStart(6)} ms   median of ${ROUNDS} phones leased one after another ` +
      `(the server's first ${firstStart[0]!.toFixed(0)} ms); again on the same phone ${median(againStart).toFixed(0)} ms: ` +
      `${(median(firstStart) / median(againStart)).toFixed(2)}x`,
  );
} finally {
  await server.close();
  rmSync(data, { recursive: true, force: true });
}

/** Tests of one to two seconds each (on this project's machines), as the longer test above. */
const SUITE_FLOWS = 60;
/** Rounds of a run: in each, one test per mode, in an order that turns from round to round. */
const SUITE_ROUNDS = 9;
const SUITE_RUNS = 3;
const SUITE_MODES = ['off', 'retain-on-failure', 'on'] as const;
const suiteConfig = `
import { defineConfig } from '@playwright/test';
export default defineConfig({ timeout: 60_000, reporter: 'json', workers: 1 });
`;
// Round 0 warms the run up (the server's encoder threads, the worker's code) and is left out.
const suiteSpec = `
import { test, expect } from 'phonelease/playwright';
const modes = ${JSON.stringify(SUITE_MODES)};
for (let round = 0; round <= ${SUITE_ROUNDS}; round++) {
  for (let k = 0; k < modes.length; k++) {
    const mode = modes[(round + k) % modes.length];
    test.describe(() => {
      test.use({ phoneOptions: { video: mode } });
      test(round + ' ' + mode, async ({ phone }) => {
        for (let flow = 0; flow < ${SUITE_FLOWS}; flow++) {
          await phone.launch('com.phonelease.login');
          await phone.getById('username').fill('demo');
          await phone.getById('password').fill('secret');
          await phone.getById('login').click();
          await expect(phone.getByText('Welcome, demo!')).toBeVisible();
          await phone.launch('com.android.settings');
          await phone.press('Home');
        }
      });
    });
  }
}
`;
// Per mode, the test durations by round, over all runs; a round's tests follow one another,
// so load from elsewhere that lasts a few seconds falls on all its modes alike.
const durations = new Map<string, number[]>(SUITE_MODES.map((m) => [m, []]));
for (let run = 0; run < SUITE_RUNS; run++) {
  const result = await runInlineTest('bench-video-suite', {
    'playwright.config.ts': suiteConfig,
    'login.spec.ts': suiteSpec,
  });
  if (result.exitCode !== 0) throw new Error(`the suite failed:\n${result.stdout}\n${result.stderr}`);
  const byTitle = new Map(result.tests.map((t) => [t.title, t.results[0]!.duration]));
  for (let round = 1; round <= SUITE_ROUNDS; round++) {
    for (const mode of SUITE_MODES) durations.get(mode)!.push(byTitle.get(`${round} ${mode}`)!);
  }
}
const offs = durations.get('off')!;
console.log(
  `a Playwright suite: ${SUITE_RUNS} runs of ${SUITE_ROUNDS} rounds, each round a test of ${SUITE_FLOWS} login flows per video mode (set by phoneOptions.video, the order turning), a phone each from the embedded server; medians`,
);
for (const mode of SUITE_MODES) {
  const ms = median(durations.get(mode)!);
  // The median of each round's ratio to the same round's test without video.
  const ratio = median(durations.get(mode)!.map((d, i) => d / offs[i]!));
  const what =
    mode === 'off'
      ? '(baseline)'
      : `${ratio.toFixed(2)}x duration (goal <= 1.10x; ${(ms / median(offs)).toFixed(2)}x of the medians)  ${mode === 'on' ? '(every video kept)' : '(the tests pass: videos discarded)'}`;
  console.log(`video '${mode}'`.padEnd(28) + ` ${ms.toFixed(0).padStart(6)} ms   ${what}`);
}
