/**
 * Recording the virtual phone's screen to an MP4, as `screenrecord` records a phone's.
 *
 * A frame is taken whenever the screen changes, as SurfaceFlinger hands screenrecord a frame
 * only when something was drawn: a still screen costs nothing, and the frame's duration in
 * the file is how long the screen stayed that way. Changes that come faster than `maxFps`
 * (30 a second by default) are taken at that rate. While the encoder is busy with a frame,
 * one frame taken meanwhile waits for it here and later changes wait to be taken (older
 * screens are dropped, as a phone's encoder drops frames it cannot keep up with).
 *
 * A frame costs the phone's own thread something a phone's compositor does elsewhere. The
 * UI's screen goes to the encoder thread as the calls that draw it (its display list, made
 * once per version), and that thread draws it, only where it changed, and encodes it; a
 * source with pixels only is drawn on the phone's thread (10-30 ms for a whole screen) and
 * its pixels are copied over. So that recording does not slow the phone (and the test
 * driving it) by more than about a tenth, frames are taken no more often than that share
 * of the thread allows, nor than lets the encoder's thread use more than 0.3 of a core (a
 * whole new screen costs it 30-90 ms; on two cores the test waits for that CPU); but always
 * at 10 a second or more while the screen changes, so every change is in the video within
 * 100 ms of when it was on the screen.
 *
 * The file is written as it is recorded (samples, then the index once recording ends):
 * `bytes()` at any moment is what the phone's file holds, and a recording that is aborted
 * (the process killed) leaves a file without an index, which players refuse, as on a phone.
 */
import { MemorySink, type ByteSink } from '../../../../src/video/io.js';
import { Mp4Writer } from '../../../../src/video/mp4-write.js';
import { BT601_LIMITED } from './h264/parameter-sets.js';
import {
  encoderWhenReady,
  FrameSuperseded,
  inlineFrameEncoder,
  type EncoderThreads,
  workerFrameEncoder,
  type EncodedFrame,
  type FrameEncoder,
  type FrameEncoderConfig,
} from './frame-encoder.js';
import { DEVICE } from '../identity.js';
import type { DisplayList } from '../ui/display-list.js';
import { INFO_PAGE_HOLD_MS } from './overlay.js';
import { contentArea, type ContentArea } from './scale.js';

/** The screen a recorder watches: the virtual phone's UI, or anything drawn like it. */
export interface ScreenSource {
  readonly width: number;
  readonly height: number;
  /** The screen now, RGBA, width x height; read before the next change. */
  renderRgba(): Uint8Array;
  /**
   * Optional: the screen now as drawing calls (see ui/display-list.ts). When given, frames
   * are drawn on the encoder's thread, not the phone's: the recorder uses this instead of
   * renderRgba(), unless it returns null (the screen cannot be drawn so now).
   */
  displayList?(): DisplayList | null;
  /** Calls `listener` after every visible change; returns unsubscribe. */
  onChange(listener: () => void): () => void;
}

/**
 * Frames taken but not yet written: one being encoded and the next held until the encoder
 * is free, so the screen is taken while the encoder works. More would only add latency.
 */
const MAX_PENDING = 2;

/**
 * A frame taken: the screen as drawing calls or pixels (a copy), its number (from 1), and
 * when it was shown; or the information page (number 0).
 */
interface Taken {
  list: DisplayList | null;
  pixels: Uint8Array | null;
  infoPage?: readonly string[];
  number: number;
  timeMs: number;
}

/** The fewest frames a second while the screen keeps changing. */
const MIN_FPS = 10;
/**
 * The longest gap between frames that the encoder's cost may bring about: 12 a second, so
 * that timers firing late on a busy machine still leave 10 or more.
 */
const ENCODER_GAP_MS = 1000 / 12;

/**
 * The display's refresh rate: a frame is shown, and so timed in the video, at a vsync, as
 * SurfaceFlinger hands screenrecord a frame per composition. On that grid a player or
 * ffmpeg finds the video's frame rate (60) and keeps every frame's time; at times of a
 * microsecond's precision, ffmpeg guessed a rate from the average and its decoding to a rate
 * (`ffmpeg -i video.mp4 -f null -`) complained of frames in one slot.
 */
const VSYNCS_PER_SECOND = DEVICE.refreshRate;

/** How much sooner than asked a timer may fire: node rounds its delay down to a millisecond. */
const TIMER_EARLY_MS = 2;

/** The first vsync at or after `ms`, vsyncs counted from `originMs`. */
function atVsync(ms: number, originMs: number): number {
  // Multiplied first, so that a time on the grid stays on it exactly (200 ms is 12 vsyncs).
  const vsyncs = Math.ceil(((ms - originMs) * VSYNCS_PER_SECOND) / 1000 - 1e-9);
  return originMs + (vsyncs * 1000) / VSYNCS_PER_SECOND;
}

/** A cost's moving average (0: none measured yet) with the newest measurement. */
function movingAverage(average: number, ms: number): number {
  return average === 0 ? ms : (average + ms) / 2;
}

/** screenrecord's defaults on Android 14 (see SCREENRECORD.md). */
export const SCREENRECORD_DEFAULTS = { bitRate: 20_000_000, timeLimitS: 180 } as const;

export interface RecorderOptions {
  /** The video's size (`--size`); the screen's, rounded down to even numbers, by default. */
  size?: { width: number; height: number };
  /** Bits per second (`--bit-rate`); 20 Mbit/s by default. */
  bitRate?: number;
  /** Seconds after which the recording ends by itself (`--time-limit`); 180 by default, 0 for none. */
  timeLimitS?: number;
  /** The most frames a second; 30 by default. */
  maxFps?: number;
  /**
   * The share of the phone's thread that taking frames may use (making the display list or
   * drawing the screen, handing it over), from 0 to 1; 0.1 by default. Never fewer than 10 frames a second, whatever it costs.
   */
  threadShare?: number;
  /**
   * The share of a core the encoder's thread may use (drawing and encoding frames), from 0
   * to 1 (no limit but the encoder being busy); 0.3 by default. A screen that changes all over (a new screen, a scroll) costs the
   * encoder 30-90 ms a frame, so it is then recorded at 12 frames a second, not 30; small
   * changes (typing, a toggle) cost a few ms and keep every frame up to `maxFps`.
   */
  encoderShare?: number;
  /** Where frames are encoded: a worker thread (default) or the caller's thread. */
  encodeOn?: 'worker' | 'main';
  /** Encoder threads to take one from and give it back to (the server's, kept between recordings). */
  threads?: Pick<EncoderThreads, 'encoder'>;
  /** A clock in ms that only moves forward (frame times); performance.now by default. */
  now?: () => number;
  /**
   * Where the file is written as it is recorded (a file on the phone, as screenrecord's
   * muxer writes its output file); memory by default.
   */
  sink?: RecordingSink;
  /** What `screenrecord --bugreport` adds to the video; nothing by default. */
  overlay?: RecordingOverlay;
}

/** What `screenrecord --bugreport` adds to the video (see overlay.ts). */
export interface RecordingOverlay {
  /** The information page's paragraphs ('' a gap), shown first, before the recording's start. */
  infoPage?: readonly string[];
  /**
   * The time stamp over each frame of the screen, given when it was shown (on the
   * recorder's clock), its number (from 1) and how many frames were dropped so far.
   */
  caption?: (timeMs: number, frame: number, dropped: number) => string;
}

/** A sink whose whole content can be read back: what `bytes()` and the result return. */
export interface RecordingSink extends ByteSink {
  bytes(): Uint8Array;
}

export interface RecordingResult {
  /** The finished MP4. */
  bytes: Uint8Array;
  frames: number;
  durationUs: number;
  endedBy: 'stop' | 'time-limit';
}

/** Frame statistics a caller may print (screenrecord --verbose) or measure. */
export interface RecordingStats {
  frames: number;
  /** Frames taken and not yet written (being encoded, or waiting for the encoder). */
  pending: number;
  /** Bytes of the file so far. */
  bytes: number;
  /** Sum of the frames' encode times, ms. */
  encodeMs: number;
}

/**
 * Starts recording `source`. The first frame is the screen as it is now. Throws a
 * RangeError for a size the encoder cannot make (odd, too small or too large).
 */
export async function startScreenRecording(
  source: ScreenSource,
  options: RecorderOptions = {},
): Promise<ScreenRecording> {
  const width = options.size?.width ?? source.width - (source.width % 2);
  const height = options.size?.height ?? source.height - (source.height % 2);
  if (!(Number.isInteger(width) && Number.isInteger(height) && width >= 16 && height >= 16)) {
    throw new RangeError(`cannot record at ${width}x${height}: the video needs at least 16x16 pixels`);
  }
  if (width % 2 !== 0 || height % 2 !== 0 || width > 4096 || height > 4096) {
    throw new RangeError(
      `cannot record at ${width}x${height}: width and height must be even and at most 4096`,
    );
  }
  const maxFps = options.maxFps ?? 30;
  const config: FrameEncoderConfig = {
    screenWidth: source.width,
    screenHeight: source.height,
    videoWidth: width,
    videoHeight: height,
    bitRate: options.bitRate ?? SCREENRECORD_DEFAULTS.bitRate,
    maxFps,
  };
  const starting =
    options.encodeOn === 'main'
      ? Promise.resolve(inlineFrameEncoder(config))
      : options.threads
        ? options.threads.encoder(config)
        : workerFrameEncoder(config);
  const encoder = encoderWhenReady(starting);
  const sink = options.sink ?? new MemorySink();
  let writer: Mp4Writer;
  try {
    writer = await Mp4Writer.start(sink, { width, height, colour: BT601_LIMITED });
  } catch (error) {
    void encoder.close();
    throw error;
  }
  // The file exists from here, and the recording begins now, not once the encoder's thread
  // is ready (a kept thread may still be stopping a frame of a killed recording; a new one
  // loads its code): whoever waits for the file to know that the screen is recorded goes on
  // at once, and what the screen does meanwhile is in the video.
  return new ScreenRecording(source, encoder, writer, sink, {
    width,
    height,
    maxFps,
    threadShare: options.threadShare ?? 0.1,
    encoderShare: options.encoderShare ?? 0.3,
    timeLimitS: options.timeLimitS ?? SCREENRECORD_DEFAULTS.timeLimitS,
    now: options.now ?? (() => performance.now()),
    overlay: options.overlay ?? {},
  });
}

interface Settings {
  width: number;
  height: number;
  maxFps: number;
  threadShare: number;
  encoderShare: number;
  timeLimitS: number;
  now: () => number;
  overlay: RecordingOverlay;
}

export class ScreenRecording {
  /** Where the screen lies in the video (all of it unless `size` has another aspect ratio). */
  readonly content: ContentArea;
  readonly width: number;
  readonly height: number;
  /** Settles when the recording has ended and its file is finished (or failed). */
  readonly finished: Promise<RecordingResult>;

  /** When recording began, on the recorder's clock (`now`). */
  readonly startedMs: number;
  private readonly intervalMs: number;
  /** The time between frames now: intervalMs, or longer while frames cost the thread more. */
  private gapMs: number;
  /** What taking a frame costs the phone's thread, ms (a moving average). */
  private captureCostMs = 0;
  /** What drawing and encoding a frame costs the encoder's thread, ms (a moving average). */
  private encodeCostMs = 0;
  private readonly unsubscribe: () => void;
  private readonly limitTimer: NodeJS.Timeout | null;
  private captureTimer: NodeJS.Timeout | null = null;
  private lastCaptureMs = -Infinity;
  /** When the last frame taken is shown in the video: the vsync of its capture, or the next free one. */
  private lastShownMs = -Infinity;
  /** The screen changed since the last frame was taken. */
  private dirty = true;
  /** Frames taken and not yet written; they are written in order, one after another. */
  private pending = 0;
  private written: Promise<void> = Promise.resolve();
  /** Whether the encoder has a frame now. */
  private encoding = false;
  /** The frame taken while the encoder was busy: it goes to the encoder once that is free. */
  private held: Taken | null = null;
  /** Whether the encoder has given back a frame of the screen (the information page is not one). */
  private screenEncoded = false;
  private ending: Promise<RecordingResult> | null = null;
  private aborted = false;
  private failure: Error | null = null;
  private encodeMs = 0;
  /** Frames of the screen taken so far, and those of them dropped before they were encoded. */
  private taken = 0;
  private dropped = 0;
  private settle!: { resolve: (r: RecordingResult) => void; reject: (e: Error) => void };

  constructor(
    private readonly source: ScreenSource,
    private readonly encoder: FrameEncoder,
    private readonly writer: Mp4Writer,
    private readonly sink: RecordingSink,
    private readonly settings: Settings,
  ) {
    this.width = settings.width;
    this.height = settings.height;
    this.content = contentArea(source.width, source.height, settings.width, settings.height);
    this.intervalMs = 1000 / settings.maxFps;
    this.gapMs = this.intervalMs;
    this.finished = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    // Nobody may be waiting when a recording fails on its own; the failure still reaches
    // whoever asks (stop(), finished).
    this.finished.catch(() => undefined);
    this.startedMs = settings.now();
    this.unsubscribe = source.onChange(() => {
      this.dirty = true;
      this.schedule();
    });
    this.limitTimer =
      settings.timeLimitS > 0
        ? setTimeout(() => void this.end('time-limit').catch(() => undefined), settings.timeLimitS * 1000)
        : null;
    this.limitTimer?.unref();
    // The information page goes to the encoder before the screen's first frame, shown a
    // little before the recording's start (so a player holds it on screen until then).
    const infoPage = settings.overlay.infoPage;
    if (infoPage) {
      this.pending++;
      this.send({
        list: null,
        pixels: null,
        infoPage,
        number: 0,
        timeMs: this.startedMs - INFO_PAGE_HOLD_MS,
      });
    }
    this.schedule();
  }

  /** The file as it is now: without its index until the recording has finished. */
  bytes(): Uint8Array {
    return this.sink.bytes();
  }

  get stats(): RecordingStats {
    return {
      frames: this.writer.frames,
      pending: this.pending,
      bytes: this.writer.size,
      encodeMs: this.encodeMs,
    };
  }

  /** Ends the recording and finishes its file (what SIGINT does to screenrecord). Idempotent. */
  stop(): Promise<RecordingResult> {
    return this.end('stop');
  }

  /**
   * Ends the recording without finishing the file (the process was killed): `bytes()` keeps
   * what was written, with no index. `finished` rejects.
   */
  async abort(): Promise<void> {
    if (this.ending) return;
    this.aborted = true;
    this.dropHeld();
    this.ending = Promise.reject(new Error('the recording was aborted before it finished'));
    this.ending.catch(() => undefined);
    this.halt();
    await this.encoder.close();
    this.settle.reject(new Error('the recording was aborted before it finished'));
  }

  private halt(): void {
    this.unsubscribe();
    if (this.limitTimer) clearTimeout(this.limitTimer);
    if (this.captureTimer) clearTimeout(this.captureTimer);
    this.captureTimer = null;
  }

  private end(reason: RecordingResult['endedBy']): Promise<RecordingResult> {
    this.ending ??= (async () => {
      this.halt();
      // The video ends when the recording was stopped, not when its last frames are encoded
      // (later on a busy machine, where the encoder yields): the screen showed nothing after.
      const stoppedMs = this.settings.now();
      try {
        // A change not yet taken (the frame rate held it back) was on the screen before the
        // recording stopped: a phone would have shown and encoded it, so the screen as it is
        // now is the last frame. It takes the place of a frame still held for the encoder
        // (as while recording, the newest screen goes next), so the stop waits for one less;
        // and of the frame being encoded, where the encoder can give that up (not the first
        // screen: the video begins with the screen at the start), so it waits for only this.
        if (this.dirty && !this.failure) {
          if (this.held) this.dropped++;
          this.dropHeld();
          this.capture();
          if (this.held && this.screenEncoded) this.encoder.supersede();
        }
        await this.drain();
        // No frame came back (stopped before the first one was taken): the screen as it is is the video.
        if (this.writer.frames === 0 && !this.failure) {
          this.capture();
          await this.drain();
        }
        if (this.failure) throw this.failure;
        const endMs = Math.max(atVsync(stoppedMs, this.startedMs), this.lastShownMs);
        const summary = await this.writer.finish(endMs * 1000);
        const result: RecordingResult = {
          bytes: this.sink.bytes(),
          frames: summary.frames,
          durationUs: summary.durationUs,
          endedBy: reason,
        };
        this.settle.resolve(result);
        return result;
      } catch (error) {
        const failure = error instanceof Error ? error : new Error(String(error));
        this.settle.reject(failure);
        throw failure;
      } finally {
        await this.encoder.close();
      }
    })();
    return this.ending;
  }

  /** Waits until every frame taken is written. */
  private async drain(): Promise<void> {
    while (this.pending > 0) await this.written;
  }

  /** Takes the next frame as soon as the frame rate and the encoder allow. */
  private schedule(): void {
    if (this.ending || this.captureTimer || this.pending >= MAX_PENDING || !this.dirty) return;
    const plannedGapMs = this.gapMs;
    const wait = Math.max(0, this.lastCaptureMs + plannedGapMs - this.settings.now());
    // Even with no wait, the frame is taken on the next turn of the event loop: one user
    // action often changes the screen several times in a row, and only the result counts.
    this.captureTimer = setTimeout(() => {
      this.captureTimer = null;
      this.capture(plannedGapMs);
    }, wait);
    this.captureTimer.unref();
  }

  /**
   * Spaces frames so that taking them uses at most threadShare of the phone's thread and
   * encoding them at most encoderShare of a core: on a machine whose cores the test wants
   * too (a CI runner), the encoder's work slows the test down. Never fewer than 10 a second.
   */
  private pace(): void {
    const forThread = Math.min(this.captureCostMs / this.settings.threadShare, 1000 / MIN_FPS);
    const share = this.settings.encoderShare;
    const forEncoder = share >= 1 ? 0 : Math.min(this.encodeCostMs / share, ENCODER_GAP_MS);
    this.gapMs = Math.max(this.intervalMs, forThread, forEncoder);
  }

  /** Takes a frame now: the pacing timer's, planned `plannedGapMs` after the last, or another's. */
  private capture(plannedGapMs?: number): void {
    if (this.aborted || this.pending >= MAX_PENDING) return;
    this.dirty = false;
    // The first frame is the screen as it was when recording started; each later one is
    // shown at the vsync of its capture, one vsync after the last at least.
    const now = this.lastCaptureMs === -Infinity ? this.startedMs : this.settings.now();
    const vsyncMs = 1000 / VSYNCS_PER_SECOND;
    const atCapture = atVsync(now, this.startedMs);
    let timeMs = Math.max(atCapture, this.lastShownMs + vsyncMs);
    // A frame taken when its pacing allowed is shown as many whole vsyncs after the last as
    // the planned gap holds: node's timers may fire a millisecond early, and after a frame
    // taken just past a vsync, that would show a paced gap a vsync short. Never more than a
    // vsync after its capture's, so that frames do not drift from the clock.
    if (plannedGapMs !== undefined && now - this.lastCaptureMs >= plannedGapMs - TIMER_EARLY_MS) {
      const vsyncs = Math.floor((plannedGapMs * VSYNCS_PER_SECOND) / 1000 + 1e-9);
      timeMs = Math.max(timeMs, Math.min(this.lastShownMs + vsyncs * vsyncMs, atCapture + vsyncMs));
    }
    this.lastCaptureMs = now;
    this.lastShownMs = timeMs;
    let taken: Taken;
    try {
      // Measured on the thread's own clock, whatever clock frames are timed by.
      const began = performance.now();
      const list = this.source.displayList?.() ?? null;
      // Pixels are the source's until its next change: a frame that waits keeps a copy.
      const pixels = list
        ? null
        : this.encoding
          ? this.source.renderRgba().slice()
          : this.source.renderRgba();
      taken = { list, pixels, number: ++this.taken, timeMs };
      this.captureCostMs = movingAverage(this.captureCostMs, performance.now() - began);
      this.pace();
    } catch (error) {
      this.fail(error);
      return;
    }
    this.pending++;
    if (this.encoding) this.held = taken;
    else this.send(taken);
  }

  /** Gives the encoder a frame; it is written after those before it. */
  private send(frame: Taken): void {
    this.encoding = true;
    let encoded: Promise<EncodedFrame>;
    try {
      const { caption } = this.settings.overlay;
      const text =
        caption && frame.number > 0 ? caption(frame.timeMs, frame.number, this.dropped) : undefined;
      encoded = frame.infoPage
        ? this.encoder.encodeInfoPage(frame.infoPage, frame.timeMs)
        : frame.list
          ? this.encoder.encodeDrawing(frame.list, frame.timeMs, text)
          : this.encoder.encode(frame.pixels!, frame.timeMs, text);
    } catch (error) {
      encoded = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    // Its failure is handled below, in turn; until then it must not count as unhandled.
    encoded.catch(() => undefined);
    this.written = this.written.then(async () => {
      try {
        const done = await encoded.catch((error: unknown) => {
          // Given up for the frame held now (see end()): that one goes in its place.
          if (error instanceof FrameSuperseded) return null;
          throw error;
        });
        // The encoder is free: the frame held for it goes now, while this one is written.
        this.encoding = false;
        if (this.aborted || this.failure) {
          this.dropHeld();
          return;
        }
        const next = this.held;
        this.held = null;
        if (next) this.send(next);
        if (!done) {
          this.dropped++;
          return;
        }
        if (!frame.infoPage) this.screenEncoded = true;
        this.encodeMs += done.encodeMs;
        this.encodeCostMs = movingAverage(this.encodeCostMs, done.encodeMs);
        this.pace();
        await this.writer.addFrame({ nalUnits: done.nalUnits, timeUs: done.timeMs * 1000 });
      } catch (error) {
        this.encoding = false;
        this.dropHeld();
        this.fail(error);
      } finally {
        this.pending--;
        this.schedule();
      }
    });
  }

  private dropHeld(): void {
    if (!this.held) return;
    this.held = null;
    this.pending--;
  }

  /** A recording whose encoder or screen failed ends; its error is what stop() and finished report. */
  private fail(error: unknown): void {
    this.failure ??= error instanceof Error ? error : new Error(String(error));
    void this.end('stop').catch(() => undefined);
  }
}
