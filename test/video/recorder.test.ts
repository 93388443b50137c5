/**
 * Recording the virtual phone's screen: a real virtual phone (its UI and system side, as the
 * backend boots it) recorded while someone types into its Login app, checked with ffprobe
 * and ffmpeg. Time is the recorder's injected clock wherever a duration is asserted. Tests
 * about what is recorded encode on the test's thread; the phone's worker thread writes the
 * same bytes (one test shows it) and is used where it is the subject.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeviceBackend } from '../../server/devices/types.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import type { VirtualPhone } from '../../server/devices/virtual/phone.js';
import {
  startScreenRecording,
  type RecorderOptions,
  type ScreenRecording,
  type ScreenSource,
} from '../../server/devices/virtual/video/recorder.js';
import { readdirSync, readFileSync } from 'node:fs';
import {
  EncoderThreads,
  FrameSuperseded,
  inlineFrameEncoder,
  type FrameEncoder,
  type FrameEncoderConfig,
} from '../../server/devices/virtual/video/frame-encoder.js';
import { contentArea } from '../../server/devices/virtual/video/scale.js';
import { Mp4FormatError } from '../../src/video/box.js';
import { bufferSource } from '../../src/video/io.js';
import { readMp4 } from '../../src/video/mp4-read.js';
import { quietLog } from '../support/virtual-adb.js';
import { decodeErrors, decodeRgb, packets, phoneUi, probe, psnrRgb, run, tapId } from '../support/video.js';

const dir = mkdtempSync(join(tmpdir(), 'phonelease-rec-'));
let backend: DeviceBackend;
let phone: VirtualPhone;

beforeAll(async () => {
  backend = createVirtualBackend({ bootMs: 0, chromium: null });
  phone = (await backend.boot({
    sessionId: 'recorder-test',
    restoreFrom: null,
    signal: new AbortController().signal,
    log: quietLog,
  })) as VirtualPhone;
});

afterAll(async () => {
  await backend.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The phone's screen as the system side sees it (a recorder counts as someone watching). */
function screenOf(p: VirtualPhone): ScreenSource {
  const device = p.device;
  return {
    width: device.ui.width,
    height: device.ui.height,
    renderRgba: () => device.ui.renderRgba(),
    onChange: (listener) => device.onScreenChange(listener),
  };
}

/** A phone UI of the test's own as a recorder's source (pixels; add displayList to draw on the encoder's side). */
function sourceOf(ui: ReturnType<typeof phoneUi>): ScreenSource {
  return {
    width: ui.width,
    height: ui.height,
    renderRgba: () => ui.renderRgba(),
    onChange: (listener) => ui.onChange(listener),
  };
}

function save(name: string, bytes: Uint8Array): string {
  const file = join(dir, name);
  writeFileSync(file, bytes);
  return file;
}

/**
 * A phone UI of the test's own, drawn on the encoder's side, recorded on a manual clock by
 * `threads` (the test's stand-in for the server's encoder threads), taking frames at once.
 */
async function recordDrawn(threads: Pick<EncoderThreads, 'encoder'>) {
  const ui = phoneUi();
  const clock = manualClock();
  const recording = await startScreenRecording(
    { ...sourceOf(ui), displayList: () => ui.displayList!() },
    { threads, now: clock.now, threadShare: 1, encoderShare: 1 },
  );
  return { ui, clock, recording };
}

/** Waits (without sleeping) until the recording has written `n` frames. */
async function framesReach(recording: ScreenRecording, n: number): Promise<void> {
  while (recording.stats.frames < n) await new Promise((r) => setImmediate(r));
}

/** Encoder threads whose encoder says that every frame cost its thread `costMs`. */
function costingThreads(costMs: number): Pick<EncoderThreads, 'encoder'> {
  const costing = (work: Promise<Awaited<ReturnType<FrameEncoder['encode']>>>) =>
    work.then((f) => ({ ...f, encodeMs: costMs }));
  return {
    encoder: async (config: FrameEncoderConfig): Promise<FrameEncoder> => {
      const inner = inlineFrameEncoder(config);
      return {
        ...inner,
        encode: (pixels, timeMs, caption) => costing(inner.encode(pixels, timeMs, caption)),
        encodeDrawing: (list, timeMs, caption) => costing(inner.encodeDrawing(list, timeMs, caption)),
      };
    },
  };
}

/** A clock the test moves by hand. */
function manualClock(startMs = 1000) {
  const clock = { ms: startMs, now: () => clock.ms };
  return clock;
}

/**
 * A recording of the Login app with its user name field focused, on a clock the test moves
 * by hand (from `startMs`), with the given recording options.
 */
async function recordLogin(options: Omit<RecorderOptions, 'now'>, startMs?: number) {
  const ui = phone.device.ui;
  ui.launch('com.phonelease.login');
  tapId(ui, 'com.phonelease.login:id/username');
  const clock = manualClock(startMs);
  const recording = await startScreenRecording(screenOf(phone), { ...options, now: clock.now });
  return { ui, clock, recording };
}

describe('screen recorder', () => {
  it('records the phone while someone types into the Login app: a frame for every change, 20 a second', async () => {
    // A character every 50 ms on the recorder's clock: the screen changes 20 times a second.
    // (How fast the machine keeps up in real time is measured by bench/video-encoder.ts, and
    // how often frames are taken when drawing them costs the phone much, by bench/video.ts:
    // here the phone's thread may spend all its time on frames.)
    const { ui, clock, recording } = await recordLogin({ threadShare: 1, encoderShare: 1 });
    await framesReach(recording, 1);
    for (let typed = 1; typed <= 40; typed++) {
      clock.ms += 50;
      ui.text('abcdefghij'[typed % 10]!);
      await framesReach(recording, typed + 1);
    }
    clock.ms += 50;
    const result = await recording.stop();

    const file = save('typing.mp4', result.bytes);
    const { stream, duration } = await probe(file);
    expect(stream).toMatchObject({ codec_name: 'h264', width: 720, height: 1280 });
    expect(Number(stream.nb_read_frames)).toBe(41);
    expect(duration).toBeCloseTo(41 * 0.05, 3);
    const got = await packets(file);
    expect(got.length / duration).toBeGreaterThanOrEqual(10);
    got.forEach((p, i) => expect(p.pts).toBeCloseTo(i * 0.05, 4));
    expect(await decodeErrors(file)).toBe('');
    // The video ends on the screen as it was when recording stopped.
    const last = (await decodeRgb(file, 720, 1280)).at(-1)!;
    expect(psnrRgb(ui.renderRgba(), last)).toBeGreaterThan(40);
  });

  it('times frames at the display’s vsyncs, 60 a second, so ffmpeg decodes to its rate without a complaint', async () => {
    // Changes at times off the vsync grid, on a clock that does not start on it either.
    const { ui, clock, recording } = await recordLogin(
      { threadShare: 1, encoderShare: 1, encodeOn: 'main' },
      1003.7,
    );
    await framesReach(recording, 1);
    const steps = [41.3, 37.9, 52.6, 33.4, 71.05, 40.2, 34.9];
    for (const [i, ms] of steps.entries()) {
      clock.ms += ms;
      ui.text('x');
      await framesReach(recording, i + 2);
    }
    clock.ms += 10; // the stop comes between vsyncs, after the last frame's
    const result = await recording.stop();
    const file = save('vsync.mp4', result.bytes);

    const { stream } = await probe(file);
    expect(stream.r_frame_rate).toBe('60/1');
    const shown = (await packets(file)).map((p) => p.pts * 60);
    expect(shown).toHaveLength(steps.length + 1);
    // Each frame at the first vsync after its change: 41.3 ms after the start is the 3rd.
    let at = 0;
    const expected = [0, ...steps.map((ms) => Math.ceil(((at += ms) * 60) / 1000))];
    shown.forEach((vsyncs, i) => expect(vsyncs, `frame ${i}`).toBeCloseTo(expected[i]!, 3));
    // The video lasts until the vsync after the stop.
    expect((result.durationUs * 60) / 1e6).toBeCloseTo(Math.ceil(((at + 10) * 60) / 1000), 3);
    // Decoded to its frame rate, as `ffmpeg -i video.mp4 -f null -` does: nothing to say.
    const r = await run('ffmpeg', ['-v', 'error', '-i', file, '-f', 'null', '-']);
    expect({ code: r.code, stderr: r.stderr.trim() }).toEqual({ code: 0, stderr: '' });
  });

  it('takes the newest screen when changes come faster than it can encode them, and ends on the last', async () => {
    const ui = phone.device.ui;
    const recording = await startScreenRecording(screenOf(phone));
    await framesReach(recording, 1);
    // Forty changes in one go: no encoder keeps up with that, so most are never taken.
    for (let i = 0; i < 40; i++) ui.text(String(i % 10));
    const result = await recording.stop();
    expect(result.frames).toBeGreaterThanOrEqual(2);
    expect(result.frames).toBeLessThan(41);
    const file = save('burst.mp4', result.bytes);
    const last = (await decodeRgb(file, 720, 1280)).at(-1)!;
    expect(psnrRgb(ui.renderRgba(), last)).toBeGreaterThan(40);
  });

  it('spaces frames by what encoding them costs: a screen that changes all over at 12 a second, small changes up to 30', async () => {
    // A screen that changes every 5 ms, encoded by an encoder that says what each frame cost
    // its thread: a whole new screen (60 ms) or a typed character (3 ms).
    async function frameGaps(costMs: number): Promise<number[]> {
      const listeners = new Set<() => void>();
      let shade = 0;
      const source: ScreenSource = {
        width: 64,
        height: 64,
        renderRgba: () => new Uint8Array(64 * 64 * 4).fill(shade),
        onChange: (listener) => {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
      };
      const recording = await startScreenRecording(source, { threads: costingThreads(costMs) });
      const changing = setInterval(() => {
        shade = (shade + 37) % 256;
        for (const listener of listeners) listener();
      }, 5);
      try {
        await framesReach(recording, 8);
      } finally {
        clearInterval(changing);
      }
      const file = save(`paced-${costMs}.mp4`, (await recording.stop()).bytes);
      const times = (await packets(file)).map((p) => p.pts * 1000);
      return times.slice(1).map((t, i) => t - times[i]!);
    }
    // The first gap follows a frame whose cost was not known yet when the next was planned.
    const costly = (await frameGaps(60)).slice(1, 6);
    const cheap = (await frameGaps(3)).slice(1, 6);
    // Timers may fire up to a millisecond early; never sooner than the pacing allows.
    for (const gap of costly) expect(gap).toBeGreaterThanOrEqual(1000 / 12 - 2);
    for (const gap of cheap) expect(gap).toBeGreaterThanOrEqual(1000 / 30 - 2);
    // Cheap frames come at the frame rate's pace, sooner than costly ones ever may (frames
    // are shown at vsyncs: 33, 50 or 67 ms apart, where costly ones are 83 or more).
    expect(Math.min(...cheap)).toBeLessThan(1000 / 12 - 1);
  });

  it('keeps a paced gap whole on the vsync grid when a frame is taken just past a vsync and the next a little early', async () => {
    // Frames cost the encoder 60 ms: 12 a second, 83.3 ms (5 vsyncs) apart.
    const { ui, clock, recording } = await recordLogin({ threads: costingThreads(60), threadShare: 1 });
    await framesReach(recording, 1);
    clock.ms += 100.5; // just past the 6th vsync: shown at the 7th
    ui.text('a');
    await framesReach(recording, 2);
    clock.ms += 82.8; // the next frame's timer fires 0.5 ms before its 83.3 ms are up
    ui.text('b');
    await framesReach(recording, 3);
    const result = await recording.stop();
    const shown = (await packets(save('paced-vsync.mp4', result.bytes))).map((p) => p.pts * 60);
    // Shown at the vsync of its capture would be the 11th: 4 vsyncs, a 12th of a second short.
    [0, 7, 12].forEach((vsyncs, i) => expect(shown[i], `frame ${i}`).toBeCloseTo(vsyncs, 3));
  });

  it('records a still screen as one frame that lasts until the recording stops', async () => {
    const clock = manualClock();
    const recording = await startScreenRecording(screenOf(phone), { now: clock.now, encodeOn: 'main' });
    clock.ms += 5000;
    const result = await recording.stop();
    expect(result).toMatchObject({ frames: 1, durationUs: 5_000_000, endedBy: 'stop' });
    const file = save('still.mp4', result.bytes);
    expect((await probe(file)).duration).toBeCloseTo(5, 3);
    expect(await recording.stop()).toBe(result);
  });

  it('begins at once while its encoder thread is still getting ready: the screen at the start is the first frame', async () => {
    // A thread that takes its time (a kept one still stopping a killed recording's frame, a
    // new one loading its code): the recording must not wait for it to begin.
    let threadReady = false;
    let letReady!: () => void;
    const gate = new Promise<void>((resolve) => (letReady = resolve));
    const threads = {
      encoder: async (config: FrameEncoderConfig): Promise<FrameEncoder> => {
        await gate;
        threadReady = true;
        return inlineFrameEncoder(config);
      },
    };
    const ui = phoneUi();
    const clock = manualClock();
    const atStart = ui.renderRgba().slice();
    const recording = await startScreenRecording(
      { ...sourceOf(ui), displayList: () => ui.displayList!() },
      { threads, now: clock.now, threadShare: 1, encoderShare: 1 },
    );
    // Begun: its file exists (screenrecord's sign that it records), the thread not ready yet.
    expect(threadReady).toBe(false);
    expect(recording.bytes().length).toBeGreaterThan(0);
    while (recording.stats.pending === 0) await new Promise((r) => setImmediate(r));
    clock.ms += 200;
    ui.launch('com.android.settings');
    while (recording.stats.pending < 2) await new Promise((r) => setImmediate(r));
    letReady();
    clock.ms += 200;
    const result = await recording.stop();
    const frames = await decodeRgb(save('late-thread.mp4', result.bytes), 720, 1280);
    expect(frames.length).toBe(2);
    expect(psnrRgb(atStart, frames[0]!)).toBeGreaterThan(40);
    expect(psnrRgb(ui.renderRgba(), frames[1]!)).toBeGreaterThan(40);
    expect(result.durationUs).toBe(400_000);
  });

  it('stops waiting for one frame less when the screen changed after the frame held for the encoder', async () => {
    // The encoder's first frame is held back until the test lets it go: a frame taken
    // meanwhile waits for the encoder, and the screen changes again before the stop.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const threads = {
      encoder: async (config: FrameEncoderConfig): Promise<FrameEncoder> => {
        const inner = inlineFrameEncoder(config);
        let first = true;
        return {
          ...inner,
          encodeDrawing: async (list, timeMs) => {
            const frame = await inner.encodeDrawing(list, timeMs);
            if (first) {
              first = false;
              await released;
            }
            return frame;
          },
        };
      },
    };
    const { ui, clock, recording } = await recordDrawn(threads);
    while (recording.stats.pending === 0) await new Promise((r) => setImmediate(r));
    clock.ms += 100;
    ui.launch('com.phonelease.login');
    while (recording.stats.pending < 2) await new Promise((r) => setImmediate(r));
    clock.ms += 100;
    ui.launch('com.android.settings');
    const stopped = recording.stop();
    release();
    const result = await stopped;
    // The launcher, then Settings as it was at the stop; the Login frame that waited was
    // out of date before the encoder could take it.
    expect(result.frames).toBe(2);
    const file = save('held-frame.mp4', result.bytes);
    expect((await packets(file)).map((p) => Math.round(p.pts * 1000))).toEqual([0, 200]);
    const last = (await decodeRgb(file, 720, 1280)).at(-1)!;
    expect(psnrRgb(ui.renderRgba(), last)).toBeGreaterThan(40);
  });

  it('gives up the frame being encoded when the screen changed after it was taken: the stop waits only for the screen at the stop', async () => {
    // The encoder's second frame (Login) never finishes unless it is given up.
    let supersededAt: number | null = null;
    let giveUp!: (error: Error) => void;
    const threads = {
      encoder: async (config: FrameEncoderConfig): Promise<FrameEncoder> => {
        const inner = inlineFrameEncoder(config);
        let frames = 0;
        return {
          ...inner,
          // Given up, the frame leaves no trace in the encoder: as if never sent.
          encodeDrawing: async (list, timeMs) =>
            ++frames === 2
              ? new Promise<never>((_, reject) => (giveUp = reject))
              : inner.encodeDrawing(list, timeMs),
          supersede: () => {
            supersededAt = frames;
            giveUp(new FrameSuperseded());
          },
        };
      },
    };
    const { ui, clock, recording } = await recordDrawn(threads);
    while (recording.stats.frames === 0) await new Promise((r) => setImmediate(r));
    clock.ms += 100;
    ui.launch('com.phonelease.login');
    while (recording.stats.pending === 0) await new Promise((r) => setImmediate(r));
    clock.ms += 100;
    ui.launch('com.android.settings');
    const result = await recording.stop();
    expect(supersededAt).toBe(2);
    // The launcher, then Settings as it was at the stop, in place of the Login frame.
    expect(result.frames).toBe(2);
    const file = save('superseded.mp4', result.bytes);
    expect(await decodeErrors(file)).toBe('');
    expect((await packets(file)).map((p) => Math.round(p.pts * 1000))).toEqual([0, 200]);
    const last = (await decodeRgb(file, 720, 1280)).at(-1)!;
    expect(psnrRgb(ui.renderRgba(), last)).toBeGreaterThan(40);
  });

  it("gives up a frame on the encoder's thread for a newer one, and goes on as if it had never been sent", async () => {
    const threads = new EncoderThreads();
    try {
      const ui = phoneUi();
      const encoder = await threads.encoder({
        screenWidth: 720,
        screenHeight: 1280,
        videoWidth: 720,
        videoHeight: 1280,
        bitRate: 4_000_000,
        maxFps: 30,
      });
      const home = await encoder.encodeDrawing(ui.displayList!(), 0);
      ui.launch('com.android.settings');
      // A whole new screen takes the thread tens of ms: it is on it, or about to be.
      const replaced = encoder.encodeDrawing(ui.displayList!(), 100).catch((error: unknown) => error);
      encoder.supersede();
      ui.launch('com.phonelease.login');
      const newer = await encoder.encodeDrawing(ui.displayList!(), 200);
      expect(await replaced).toBeInstanceOf(FrameSuperseded);
      // Nothing to give up: the next frames are encoded as usual.
      encoder.supersede();
      tapId(ui, 'com.phonelease.login:id/username');
      ui.text('demo');
      const typed = await encoder.encodeDrawing(ui.displayList!(), 300);
      await encoder.close();
      const stream = [home, newer, typed].flatMap((f) =>
        f.nalUnits.flatMap((n) => [Uint8Array.of(0, 0, 0, 1), n]),
      );
      const file = save('superseded.h264', Buffer.concat(stream));
      expect(await decodeErrors(file)).toBe('');
      const last = (await decodeRgb(file, 720, 1280)).at(-1)!;
      expect(psnrRgb(ui.renderRgba(), last)).toBeGreaterThan(40);
    } finally {
      threads.close();
    }
  });

  it('ends the video when it was stopped, however long its last frames take to encode', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const threads = {
      encoder: async (config: FrameEncoderConfig): Promise<FrameEncoder> => {
        const inner = inlineFrameEncoder(config);
        return {
          ...inner,
          encodeDrawing: async (list, timeMs) => {
            const frame = await inner.encodeDrawing(list, timeMs);
            await released;
            return frame;
          },
        };
      },
    };
    const { clock, recording } = await recordDrawn(threads);
    while (recording.stats.pending === 0) await new Promise((r) => setImmediate(r));
    clock.ms += 300;
    const stopped = recording.stop();
    // A busy machine: the encoder finishes the frame long after the stop.
    clock.ms += 5000;
    release();
    const result = await stopped;
    expect(result).toMatchObject({ frames: 1, durationUs: 300_000 });
  });

  it.skipIf(process.platform !== 'linux')(
    "encodes on a thread below the phone's priority (nice 10; Linux, where a thread has its own)",
    async () => {
      // The nice value of each thread of this process that is new since `before` (threads
      // of earlier tests' encoders may still be ending meanwhile).
      const nices = (before: ReadonlySet<string> = new Set()) =>
        readdirSync('/proc/self/task')
          .filter((tid) => !before.has(tid))
          .map((tid) => {
            // Field 19 of /proc/<pid>/task/<tid>/stat, counted after the ")" that ends the name.
            const fields = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
            return Number(fields[16]);
          });
      const before = new Set(readdirSync('/proc/self/task'));
      const threads = new EncoderThreads();
      try {
        const encoder = await threads.encoder({
          screenWidth: 64,
          screenHeight: 64,
          videoWidth: 64,
          videoHeight: 64,
          bitRate: 1_000_000,
          maxFps: 30,
        });
        expect(nices(before).filter((n) => n === 10)).toEqual([10]);
        // This thread (the phone's) keeps its own.
        expect(readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1]!.split(' ')[16]).toBe('0');
        await encoder.close();
      } finally {
        threads.close();
      }
    },
  );

  it('stops by itself at its time limit and finishes the file', async () => {
    const recording = await startScreenRecording(screenOf(phone), { timeLimitS: 1, encodeOn: 'main' });
    const result = await recording.finished;
    expect(result.endedBy).toBe('time-limit');
    expect(result.durationUs).toBeGreaterThanOrEqual(1_000_000);
    const file = save('limit.mp4', result.bytes);
    expect((await probe(file)).duration).toBeGreaterThanOrEqual(1);
    expect(await decodeErrors(file)).toBe('');
  });

  it('leaves a file without an index when aborted, which players refuse', async () => {
    const recording = await startScreenRecording(screenOf(phone));
    while (recording.stats.frames === 0) await new Promise((r) => setImmediate(r));
    await recording.abort();
    await expect(recording.finished).rejects.toThrow(/aborted/);
    const cut = recording.bytes();
    expect(cut.length).toBeGreaterThan(1000);
    const probed = await run('ffprobe', ['-v', 'error', save('aborted.mp4', cut)]);
    expect(probed.code).not.toBe(0);
    await expect(readMp4(bufferSource(cut))).rejects.toThrow(Mp4FormatError);
  });

  it('hands the thread of a recording killed mid-encode to the next, which records only its own frames', async () => {
    const threads = new EncoderThreads();
    try {
      const ui = phoneUi();
      const source: ScreenSource = {
        width: ui.width,
        height: ui.height,
        renderRgba: () => ui.renderRgba(),
        displayList: () => ui.displayList!(),
        onChange: (listener) => ui.onChange(listener),
      };
      const killed = await startScreenRecording(source, { threads, size: { width: 360, height: 640 } });
      while (killed.stats.frames === 0) await new Promise((r) => setImmediate(r));
      // Whole screens, faster than the thread encodes them: frames are in flight when it dies.
      for (const pkg of ['com.phonelease.login', 'com.android.settings', 'com.phonelease.login']) {
        ui.launch(pkg);
        await new Promise((r) => setTimeout(r, 5));
      }
      while (killed.stats.pending === 0) await new Promise((r) => setImmediate(r));
      await killed.abort();
      await expect(killed.finished).rejects.toThrow(/aborted/);

      const next = await startScreenRecording(source, { threads, size: { width: 720, height: 1280 } });
      while (next.stats.frames === 0) await new Promise((r) => setImmediate(r));
      ui.launch('com.android.settings');
      const before = next.stats.frames;
      while (next.stats.frames === before) await new Promise((r) => setImmediate(r));
      const file = save('after-kill.mp4', (await next.stop()).bytes);
      expect((await probe(file)).stream).toMatchObject({ codec_name: 'h264', width: 720, height: 1280 });
      expect(await decodeErrors(file)).toBe('');
      // Its last frame is the screen as it is now, not a frame the killed recording left behind.
      const last = (await decodeRgb(file, 720, 1280)).at(-1)!;
      expect(psnrRgb(ui.renderRgba(), last)).toBeGreaterThan(40);
      // The killed recording's thread served the next one: no second thread was started.
      expect(threads.started).toBe(1);
    } finally {
      threads.close();
    }
  });

  it('records every phone of a server with the same kept threads: a newly leased phone starts none', async () => {
    const other = (await backend.boot({
      sessionId: 'recorder-test-2',
      restoreFrom: null,
      signal: new AbortController().signal,
      log: quietLog,
    })) as VirtualPhone;
    try {
      const threads = phone.device.encoderThreads;
      expect(other.device.encoderThreads).toBe(threads);
      const before = threads.started;
      for (const p of [phone, other, phone, other]) {
        const recording = await startScreenRecording(screenOf(p), { threads });
        while (recording.stats.frames === 0) await new Promise((r) => setImmediate(r));
        expect((await recording.stop()).frames).toBeGreaterThan(0);
      }
      // One thread at most for four recordings on two phones (none when one was kept already).
      expect(threads.started - before).toBeLessThanOrEqual(1);
    } finally {
      await other.shutdown({ saveTo: null });
    }
  });

  it('fits the screen into another --size as screenrecord does: scaled, centred, black around', async () => {
    const clock = manualClock();
    const recording = await startScreenRecording(screenOf(phone), {
      size: { width: 720, height: 720 },
      now: clock.now,
      encodeOn: 'main',
    });
    expect(recording.content).toEqual({ x: 157, y: 0, width: 405, height: 720 });
    clock.ms += 500;
    const file = save('square.mp4', (await recording.stop()).bytes);
    const { stream } = await probe(file);
    expect([stream.width, stream.height]).toEqual([720, 720]);
    const [frame] = await decodeRgb(file, 720, 720);
    const pixel = (x: number, y: number) => [...frame!.subarray((y * 720 + x) * 3, (y * 720 + x) * 3 + 3)];
    for (const [x, y] of [
      [10, 360],
      [150, 100],
      [570, 600],
      [710, 10],
    ]) {
      for (const c of pixel(x!, y!)) expect(c).toBeLessThan(4);
    }
  });

  it('adds --bugreport’s information page first and a time stamp over each frame, the screen itself untouched', async () => {
    const [W, H] = [360, 640];
    const blue = [51, 102, 153];
    const pixels = new Uint8Array(W * H * 4);
    for (let i = 0; i < W * H; i++) pixels.set([...blue, 255], i * 4);
    let changed = () => {};
    const source: ScreenSource = {
      width: W,
      height: H,
      renderRgba: () => pixels,
      onChange: (listener) => ((changed = listener), () => undefined),
    };
    const clock = manualClock();
    const captions: number[][] = [];
    const recording = await startScreenRecording(source, {
      now: clock.now,
      encodeOn: 'main',
      overlay: {
        infoPage: [
          'Android screenrecord v1.3',
          'Started Fri, 27 Nov 2026 16:00:00 +0000',
          '',
          'ro.product.model: [sdk_gphone64_x86_64]',
        ],
        caption: (timeMs, frame, dropped) => {
          captions.push([timeMs, frame, dropped]);
          return `16:00:00.000 f=${frame} (${dropped})`;
        },
      },
    });
    await framesReach(recording, 2);
    clock.ms += 100;
    // The lower half turns grey.
    for (let i = (W * H) / 2; i < W * H; i++) pixels.set([128, 128, 128, 255], i * 4);
    changed();
    await framesReach(recording, 3);
    clock.ms += 100;
    const result = await recording.stop();
    // The page is shown 250 ms before the recording's start, as screenrecord presents it.
    expect(result).toMatchObject({ frames: 3, durationUs: 450_000 });
    expect(captions).toEqual([
      [1000, 1, 0],
      [1100, 2, 0],
    ]);
    const file = save('bugreport.mp4', result.bytes);
    expect(await decodeErrors(file)).toBe('');
    const [page, first, second] = await decodeRgb(file, W, H);
    const at = (frame: Uint8Array, x: number, y: number) => [
      ...frame.subarray((y * W + x) * 3, (y * W + x) * 3 + 3),
    ];
    /** The largest difference from `want` of any channel of any pixel in the area. */
    const off = (frame: Uint8Array, want: number[], [x0, y0, x1, y1]: number[]) => {
      let most = 0;
      for (let y = y0!; y < y1!; y++) {
        for (let x = x0!; x < x1!; x++)
          at(frame, x, y).forEach((c, i) => (most = Math.max(most, Math.abs(c - want[i]!))));
      }
      return most;
    };
    /** The darkest pixel's brightest channel and the brightest pixel's darkest channel in the area. */
    const extremes = (frame: Uint8Array, [x0, y0, x1, y1]: number[]) => {
      let [darkest, whitest] = [255, 0];
      for (let y = y0!; y < y1!; y++) {
        for (let x = x0!; x < x1!; x++) {
          darkest = Math.min(darkest, Math.max(...at(frame, x, y)));
          whitest = Math.max(whitest, Math.min(...at(frame, x, y)));
        }
      }
      return { darkest, whitest };
    };
    // The information page: a grey frame, black, and white text at the top.
    expect(off(page!, [128, 128, 128], [0, 0, 4, H])).toBeLessThan(10);
    expect(off(page!, [0, 0, 0], [10, 560, 350, 630])).toBeLessThan(10);
    expect(extremes(page!, [10, 10, 350, 40]).whitest).toBeGreaterThan(200);
    // Each frame: white text outlined in black at the top left, the screen as it is elsewhere.
    for (const frame of [first!, second!]) {
      const stamp = extremes(frame, [0, 0, 180, 20]);
      expect(stamp.whitest).toBeGreaterThan(220);
      expect(stamp.darkest).toBeLessThan(40);
      expect(off(frame, blue, [0, 40, W, 300])).toBeLessThan(10);
    }
    expect(off(first!, blue, [0, 340, W, H])).toBeLessThan(10);
    expect(off(second!, [128, 128, 128], [0, 340, W, H])).toBeLessThan(10);
    // The screen's own pixels are not drawn on.
    expect([...pixels.subarray(0, 4)]).toEqual([...blue, 255]);
  });

  it('writes the same file whether it encodes on a worker thread or its caller’s', async () => {
    const files: Uint8Array[] = [];
    for (const encodeOn of ['worker', 'main'] as const) {
      const ui = phoneUi();
      const source: ScreenSource = {
        width: ui.width,
        height: ui.height,
        renderRgba: () => ui.renderRgba(),
        onChange: (listener) => ui.onChange(listener),
      };
      const clock = manualClock();
      const recording = await startScreenRecording(source, {
        encodeOn,
        now: clock.now,
        size: { width: 360, height: 640 },
      });
      while (recording.stats.frames === 0) await new Promise((r) => setImmediate(r));
      for (const pkg of ['com.phonelease.login', 'com.android.settings']) {
        const before = recording.stats.frames;
        clock.ms += 250;
        ui.launch(pkg);
        while (recording.stats.frames === before) await new Promise((r) => setImmediate(r));
      }
      clock.ms += 250;
      files.push((await recording.stop()).bytes);
    }
    expect(Buffer.compare(files[0]!, files[1]!)).toBe(0);
    const got = await packets(save('threads.mp4', files[0]!));
    expect(got.map((p) => p.pts)).toEqual([0, 0.25, 0.5]);
  });

  it('draws its frames on the encoder’s thread, pixel for pixel what screencap shows', async () => {
    // Two recordings of the same phone at once: one hands the worker the phone's drawing
    // calls, the other encodes the pixels of screencap's PNG. The encoder is deterministic,
    // so equal files mean every frame the worker drew is the screenshot, bit for bit.
    const ui = phoneUi();
    const onChange = (listener: () => void) => ui.onChange(listener);
    const drawn: ScreenSource = {
      width: ui.width,
      height: ui.height,
      renderRgba: () => {
        throw new Error('a source with a display list is drawn on the encoder’s thread');
      },
      displayList: () => ui.displayList!(),
      onChange,
    };
    const screenshots: ScreenSource = {
      width: ui.width,
      height: ui.height,
      renderRgba: () => PNG.sync.read(ui.renderPng()).data,
      onChange,
    };
    const clock = manualClock();
    const recordings = [
      await startScreenRecording(drawn, { now: clock.now, encodeOn: 'worker' }),
      await startScreenRecording(screenshots, { now: clock.now, encodeOn: 'main' }),
    ];
    const frames = async (n: number) => Promise.all(recordings.map((r) => framesReach(r, n)));
    await frames(1);
    // Text, icons, switches, a clipped list, and the screen seen before (copied by the encoder).
    const steps = [
      () => ui.launch('com.phonelease.login'),
      () => tapId(ui, 'com.phonelease.login:id/username'),
      () => ui.text('demo user'),
      () => ui.launch('com.android.settings'),
      () => ui.swipe(360, 1000, 360, 400, 300),
      () => ui.key(3),
    ];
    for (const [i, step] of steps.entries()) {
      clock.ms += 100;
      step();
      await frames(i + 2);
    }
    clock.ms += 100;
    const [video, reference] = await Promise.all(recordings.map((r) => r.stop()));
    expect(video!.frames).toBe(steps.length + 1);
    expect(Buffer.compare(video!.bytes, reference!.bytes)).toBe(0);
    // And it is the screen: the last decoded frame is the screenshot, within the coding's loss.
    const decoded = await decodeRgb(save('drawn.mp4', video!.bytes), 720, 1280);
    expect(decoded).toHaveLength(steps.length + 1);
    expect(psnrRgb(PNG.sync.read(ui.renderPng()).data, decoded.at(-1)!)).toBeGreaterThan(40);
  });

  it('refuses a size the encoder cannot make, before recording anything', async () => {
    await expect(
      startScreenRecording(screenOf(phone), { size: { width: 721, height: 1280 } }),
    ).rejects.toThrow(/even/);
    await expect(startScreenRecording(screenOf(phone), { size: { width: 8, height: 8 } })).rejects.toThrow(
      /16x16/,
    );
  });
});

describe('content area', () => {
  it('keeps the screen’s aspect ratio and centres it, with screenrecord’s rounding', () => {
    expect(contentArea(720, 1280, 720, 1280)).toEqual({ x: 0, y: 0, width: 720, height: 1280 });
    expect(contentArea(720, 1280, 360, 640)).toEqual({ x: 0, y: 0, width: 360, height: 640 });
    expect(contentArea(720, 1280, 1280, 720)).toEqual({ x: 437, y: 0, width: 405, height: 720 });
    expect(contentArea(720, 1280, 720, 1600)).toEqual({ x: 0, y: 160, width: 720, height: 1280 });
    expect(contentArea(1080, 2400, 720, 1280)).toEqual({ x: 72, y: 0, width: 576, height: 1280 });
  });
});
