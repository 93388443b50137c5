/**
 * What recording the virtual phone's screen costs: the H.264 encoder's time and CPU per
 * frame (a new screen, a screen that comes back, a typed character, an unchanged screen),
 * the bytes a minute of a changing screen takes, and a worker-thread recording's frame rate
 * and main-thread cost, beside the baseline measured in the same run: encoding the same screens as
 * the PNG the server already makes for every frame.png (pngjs, the options phone-ui uses).
 *
 * Frames are drawn by the virtual phone's own UI (launcher, Login app, Settings) before
 * timing starts, so drawing is not counted; the encoder and the PNG encoder see the same
 * pixels. The runs alternate in rounds so load from elsewhere falls on all of them alike;
 * each figure is the median of its rounds.
 *
 * Goals: a typed character <= 0.5x the PNG encode of its frame; an unchanged frame
 * <= 0.2x; a whole-screen change within 10x (it is encoded on a worker thread), a screen
 * that comes back from an earlier picture within 0.5x; a minute of typing with app
 * switches under 2 MB at the default 20 Mbit/s.
 *
 * Run: npx tsx bench/video-encoder.ts [--rounds 5] [--frames 20]
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { PNG } from 'pngjs';
import { H264Encoder } from '../server/devices/virtual/video/h264/encoder.js';
import { startScreenRecording, type ScreenSource } from '../server/devices/virtual/video/recorder.js';
import { MemorySink } from '../src/video/io.js';
import { Mp4Writer } from '../src/video/mp4-write.js';
import { phoneUi, tapId } from '../test/support/video.js';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '5' }, frames: { type: 'string', default: '20' } },
});
const ROUNDS = Number(values.rounds);
const FRAMES = Number(values.frames);
const W = 720;
const H = 1280;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

// ---- screens, drawn once ----
const ui = phoneUi();
const launcher = ui.renderRgba().slice();
ui.launch('com.phonelease.login');
const login = ui.renderRgba().slice();
tapId(ui, 'com.phonelease.login:id/username');
const typed: Uint8Array[] = [];
for (let i = 0; i < 40; i++) {
  ui.text('abcdefghij'[i % 10]!);
  typed.push(ui.renderRgba().slice());
}
ui.launch('com.android.settings');
const settings = ui.renderRgba().slice();

function png(rgba: Uint8Array): Buffer {
  const image = new PNG({ width: W, height: H });
  image.data = Buffer.from(rgba.buffer, rgba.byteOffset, rgba.byteLength);
  return PNG.sync.write(image, {
    colorType: 6,
    inputColorType: 6,
    inputHasAlpha: true,
    deflateLevel: 1,
    filterType: 1,
  });
}

interface Measure {
  wallMs: number;
  cpuMs: number;
  bytes: number;
}

/** Times `n` calls of `body` (each returning bytes produced), per call. */
function measure(n: number, body: (i: number) => number): Measure {
  let bytes = 0;
  const c0 = cpuMs();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) bytes += body(i);
  return { wallMs: (performance.now() - t0) / n, cpuMs: (cpuMs() - c0) / n, bytes: bytes / n };
}

const nalBytes = (p: { nalUnits: Uint8Array[] }) => p.nalUnits.reduce((s, x) => s + x.length, 0);

const runs: Record<string, Measure[]> = {};
const record = (name: string, m: Measure) => (runs[name] ??= []).push(m);

/** An encoder for the screens above with no IDR picture but the first (`references`: 8 by default). */
const streamOf = (references?: number) =>
  new H264Encoder({
    width: W,
    height: H,
    bitRate: 20_000_000,
    idrIntervalMs: 1e12,
    ...(references ? { references } : {}),
  });

for (let round = 0; round < ROUNDS; round++) {
  const pngScreens = [launcher, login, settings, typed[5]!];
  record(
    'PNG encode (frame.png)',
    measure(FRAMES, (i) => png(pngScreens[i % pngScreens.length]!).length),
  );

  // A whole-screen change every frame: launcher, Login, Settings in turn. First to a screen
  // the stream's references do not hold (one reference: only the last picture), which is
  // coded whole; then with the references a stream keeps, where each screen comes back from
  // the picture it was last in (a test going back and forth between its screens).
  const cycle = [launcher, login, settings];
  const fresh = streamOf(1);
  fresh.encode(settings, 0);
  record(
    'H.264 a new screen',
    measure(FRAMES, (i) => nalBytes(fresh.encode(cycle[i % 3]!, (i + 1) * 100))),
  );
  const whole = streamOf();
  whole.encode(launcher, 0);
  whole.encode(login, 50);
  whole.encode(settings, 100);
  record(
    'H.264 a screen come back',
    measure(FRAMES, (i) => nalBytes(whole.encode(cycle[i % 3]!, (i + 2) * 100))),
  );

  const typing = streamOf();
  typing.encode(login, 0);
  record(
    'H.264 a typed character',
    measure(FRAMES, (i) => nalBytes(typing.encode(typed[i % typed.length]!, (i + 1) * 100))),
  );

  const still = streamOf();
  still.encode(login, 0);
  record(
    'H.264 unchanged screen',
    measure(FRAMES, (i) => nalBytes(still.encode(login, (i + 1) * 100))),
  );
}

const baseline = median(runs['PNG encode (frame.png)']!.map((m) => m.wallMs));
console.log(`screen ${W}x${H}, ${ROUNDS} rounds of ${FRAMES} frames; medians per frame`);
for (const [name, ms] of Object.entries(runs)) {
  const wall = median(ms.map((m) => m.wallMs));
  const cpu = median(ms.map((m) => m.cpuMs));
  const bytes = median(ms.map((m) => m.bytes));
  console.log(
    `${name.padEnd(28)} ${wall.toFixed(2).padStart(8)} ms  cpu ${cpu.toFixed(2).padStart(8)} ms  ` +
      `${Math.round(bytes).toString().padStart(7)} B  ${(wall / baseline).toFixed(2)}x PNG`,
  );
}

// ---- a minute of a changing screen ----
// Someone types into the Login app (five characters a second, as fast as people type) and
// switches app every ten seconds: 300 small changes and 6 whole-screen ones, with an IDR
// picture every 5 s as the recorder makes them.
async function minuteOfUse(): Promise<{ mp4: number; pngs: number; frames: number }> {
  const encoder = new H264Encoder({ width: W, height: H, bitRate: 20_000_000 });
  const sink = new MemorySink();
  const writer = await Mp4Writer.start(sink, { width: W, height: H });
  let pngs = 0;
  let frames = 0;
  for (let t = 0; t < 60_000; t += 200) {
    const screen =
      t % 10_000 === 0 ? [launcher, login, settings][(t / 10_000) % 3]! : typed[(t / 200) % typed.length]!;
    await writer.addFrame({ nalUnits: encoder.encode(screen, t).nalUnits, timeUs: t * 1000 });
    pngs += png(screen).length;
    frames++;
  }
  const summary = await writer.finish(60_000_000);
  return { mp4: summary.bytes, pngs, frames };
}
const minute = await minuteOfUse();
console.log(
  `a minute of typing with app switches (${minute.frames} frames): MP4 ${(minute.mp4 / 1e6).toFixed(2)} MB; ` +
    `the same frames as PNGs ${(minute.pngs / 1e6).toFixed(1)} MB (${(minute.mp4 / minute.pngs).toFixed(3)}x)`,
);

// ---- a recording on a worker thread, as the phone runs it ----
// Changes every 50 ms (20 a second) for 3 s; how many the recorder keeps up with, and what
// each frame costs the main thread: drawing the screen (the phone's UI draws it whole) and
// the recorder's own part (copying the pixels to the worker, writing the MP4).
interface WorkerFigures {
  fps: number;
  drawMs: number;
  recorderMs: number;
  encodeMs: number;
}
async function workerRecording(): Promise<WorkerFigures> {
  const phone = phoneUi();
  phone.launch('com.phonelease.login');
  tapId(phone, 'com.phonelease.login:id/username');
  let drawMs = 0;
  const source: ScreenSource = {
    width: W,
    height: H,
    renderRgba: () => {
      const t = performance.now();
      const pixels = phone.renderRgba();
      drawMs += performance.now() - t;
      return pixels;
    },
    onChange: (listener) => phone.onChange(listener),
  };
  const recording = await startScreenRecording(source);
  while (recording.stats.frames === 0) await new Promise((r) => setImmediate(r));
  drawMs = 0;
  let typingMs = 0;
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  const f0 = recording.stats.frames;
  const e0 = recording.stats.encodeMs;
  await new Promise<void>((resolve) => {
    let n = 0;
    const timer = setInterval(() => {
      const t = performance.now();
      phone.text('abcdefghij'[n % 10]!);
      typingMs += performance.now() - t;
      if (++n === 60) {
        clearInterval(timer);
        resolve();
      }
    }, 50);
  });
  const seconds = (performance.now() - t0) / 1000;
  const frames = recording.stats.frames - f0;
  // The main thread's busy time (its event loop's, not the worker's), less drawing and typing.
  const busyMs = performance.eventLoopUtilization(elu0).active;
  const result = {
    fps: frames / seconds,
    drawMs: drawMs / frames,
    recorderMs: (busyMs - drawMs - typingMs) / frames,
    encodeMs: (recording.stats.encodeMs - e0) / frames,
  };
  await recording.stop();
  return result;
}
const worker = await workerRecording();
console.log(
  `recording on a worker thread, 20 changes/s: ${worker.fps.toFixed(1)} frames/s; per frame: main thread ` +
    `${worker.recorderMs.toFixed(1)} ms recorder + ${worker.drawMs.toFixed(1)} ms drawing the screen, ` +
    `worker ${worker.encodeMs.toFixed(1)} ms encoding`,
);
