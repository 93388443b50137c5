/**
 * Scaling and encoding screen frames, on a worker thread or the caller's.
 *
 * Measured on a 2-core machine: a frame in which the whole 720x1280 screen changed (an app
 * opening, the periodic IDR picture) takes 100-200 ms to encode; a typed character, a few
 * ms. A phone's ADB, its UI and the server that hosts it share one event loop, so 100 ms
 * there would stall all of them; the encoder runs on a worker thread and the loop only
 * hands over the screen and writes the encoded bytes. The screen goes over as the calls
 * that draw it (a display list, well under a millisecond to copy) when the source can
 * give them: drawing a whole screen costs 20-100 ms too, and then the worker does that as
 * well. Pixels (about 1 ms to copy) come from sources that only have pixels.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { DisplayListPlayer, type DisplayList } from '../ui/display-list.js';
import { TextRenderer } from '../ui/font.js';
import { Canvas } from '../ui/raster.js';
import { H264Encoder, SparePictures, type EncodedPicture } from './h264/encoder.js';
import { ScreenCache, type ScreenCacheOptions } from './h264/screen-cache.js';
import { drawCaption, drawInfoPage } from './overlay.js';
import { ScreenScaler } from './scale.js';

export interface FrameEncoderConfig {
  screenWidth: number;
  screenHeight: number;
  videoWidth: number;
  videoHeight: number;
  bitRate: number;
  maxFps: number;
  idrIntervalMs?: number;
}

export interface EncodedFrame extends EncodedPicture {
  timeMs: number;
  /** CPU time the scaling and encoding took, in ms. */
  encodeMs: number;
}

export interface FrameEncoder {
  /**
   * Encodes a screen frame (RGBA, screen size) shown at `timeMs`, with `caption` (a time
   * stamp: see overlay.ts) over it if given. The pixels are read or copied before this
   * returns, so the caller may draw over them at once.
   */
  encode(pixels: Uint8Array, timeMs: number, caption?: string): Promise<EncodedFrame>;
  /**
   * Draws a screen (screen size) and encodes it as shown at `timeMs`: the drawing is done
   * where the encoding is, off the caller's thread for a worker. The list is copied before
   * this returns.
   */
  encodeDrawing(list: DisplayList, timeMs: number, caption?: string): Promise<EncodedFrame>;
  /** Encodes screenrecord's information page (see overlay.ts) as shown at `timeMs`. */
  encodeInfoPage(paragraphs: readonly string[], timeMs: number): Promise<EncodedFrame>;
  /**
   * A newer frame replaces those given so far: where the encoder can undo a frame part
   * encoded, it gives them up (they reject with FrameSuperseded) and goes on to the next
   * as if they had never been given; a frame it cannot give up is encoded as usual.
   */
  supersede(): void;
  close(): Promise<void>;
}

/** A frame given up for a newer one (FrameEncoder.supersede). */
export class FrameSuperseded extends Error {
  override name = 'FrameSuperseded';
  constructor() {
    super('video encoder: the frame was replaced by a newer one');
  }
}

/**
 * What an encoder thread keeps from one recording to the next: glyph masks, once made, serve
 * every recording after; the canvas the last screen was drawn on, with the last few screens
 * that changed whole, so that a screen shown again (the next test's phone starts where the
 * last one's did, the app it opens is the same) is copied, not drawn; and the screens coded
 * whole (see h264/screen-cache.ts), so that a screen an earlier recording showed, or this
 * one showed before, is not encoded again.
 */
export class ThreadKeep {
  readonly fonts = new TextRenderer();
  readonly codedScreens: ScreenCache;
  /** Reference pictures' memory one recording's encoder leaves to the next one's. */
  readonly spares = new SparePictures();
  /** How many whole screens the canvas keeps (4 by default: 15 MB at 720x1280). */
  readonly screens: number;
  /** Draws each screen over the last one, on a canvas of the screen's size. */
  player: DisplayListPlayer | null = null;

  constructor(options: { screens?: number; codedScreens?: ScreenCacheOptions } = {}) {
    this.screens = options.screens ?? 4;
    this.codedScreens = new ScreenCache(options.codedScreens);
  }
}

/** What the worker thread runs for one frame, and what runs in place without one. */
export class FramePipeline {
  private readonly scaler: ScreenScaler;
  private readonly encoder: H264Encoder;
  /** A video frame with something drawn over it (a caption, the information page), made when first needed. */
  #overlay: Canvas | null = null;

  /** `keep` may come from an earlier pipeline on the same thread (see ThreadKeep). */
  constructor(
    private readonly config: FrameEncoderConfig,
    private readonly keep: ThreadKeep = new ThreadKeep(),
  ) {
    this.scaler = new ScreenScaler(
      config.screenWidth,
      config.screenHeight,
      config.videoWidth,
      config.videoHeight,
    );
    this.encoder = new H264Encoder({
      width: config.videoWidth,
      height: config.videoHeight,
      bitRate: config.bitRate,
      maxFps: config.maxFps,
      idrIntervalMs: config.idrIntervalMs,
      screenCache: keep.codedScreens,
      spares: keep.spares,
    });
  }

  /** Whether a frame stopped part way is undone (see H264Encoder.undoable). */
  get undoable(): boolean {
    return this.encoder.undoable;
  }

  /** Leaves the encoder's reference pictures to the thread's next pipeline; not to be used after. */
  release(): void {
    this.encoder.release();
  }

  /**
   * `stop` gives up the frame part way (EncodeStopped); the pipeline is not used after that
   * unless the frame was undone.
   */
  encode(pixels: Uint8Array, timeMs: number, stop?: () => boolean, caption?: string): EncodedFrame {
    const started = performance.now();
    let frame = this.scaler.scale(pixels);
    if (caption !== undefined) {
      const canvas = this.overlay();
      canvas.data.set(frame);
      drawCaption(canvas, this.keep.fonts, caption);
      frame = canvas.data;
    }
    const picture = this.encoder.encode(frame, timeMs, stop ? { stop } : {});
    return { ...picture, timeMs, encodeMs: performance.now() - started };
  }

  encodeInfoPage(paragraphs: readonly string[], timeMs: number, stop?: () => boolean): EncodedFrame {
    const started = performance.now();
    const canvas = this.overlay();
    drawInfoPage(canvas, this.keep.fonts, paragraphs);
    const picture = this.encoder.encode(canvas.data, timeMs, stop ? { stop } : {});
    return { ...picture, timeMs, encodeMs: performance.now() - started };
  }

  private overlay(): Canvas {
    this.#overlay ??= new Canvas(this.config.videoWidth, this.config.videoHeight);
    return this.#overlay;
  }

  encodeDrawing(list: DisplayList, timeMs: number, stop?: () => boolean, caption?: string): EncodedFrame {
    const started = performance.now();
    const { screenWidth, screenHeight } = this.config;
    let player = this.keep.player;
    if (!player || player.canvas.width !== screenWidth || player.canvas.height !== screenHeight) {
      const canvas = new Canvas(screenWidth, screenHeight);
      player = this.keep.player = new DisplayListPlayer(canvas, this.keep.fonts, this.keep.screens);
    }
    player.draw(list);
    const frame = this.encode(player.canvas.data, timeMs, stop, caption);
    return { ...frame, encodeMs: performance.now() - started };
  }
}

/** Encodes on the calling thread (benchmarks compare the two; tests of the pipeline). */
export function inlineFrameEncoder(config: FrameEncoderConfig): FrameEncoder {
  const pipeline = new FramePipeline(config);
  return {
    encode: async (pixels, timeMs, caption) => pipeline.encode(pixels, timeMs, undefined, caption),
    encodeDrawing: async (list, timeMs, caption) => pipeline.encodeDrawing(list, timeMs, undefined, caption),
    encodeInfoPage: async (paragraphs, timeMs) => pipeline.encodeInfoPage(paragraphs, timeMs),
    // Each frame is encoded before the call returns: none is ever in progress.
    supersede: () => undefined,
    close: async () => undefined,
  };
}

/**
 * An encoder usable at once while its thread is still getting ready (a kept thread still
 * stopping a frame of a killed recording, or a new one loading its code): frames given to
 * it meanwhile are copied now, as the interface promises, and sent in order once it is
 * ready. A thread that never gets ready fails those frames with its error.
 */
export function encoderWhenReady(starting: Promise<FrameEncoder>): FrameEncoder {
  let ready: FrameEncoder | null = null;
  // Nobody may be waiting on it yet: its failure reaches the frames and close().
  starting.then((e) => (ready = e)).catch(() => undefined);
  return {
    encode(pixels, timeMs, caption) {
      if (ready) return ready.encode(pixels, timeMs, caption);
      const copy = pixels.slice();
      return starting.then((e) => e.encode(copy, timeMs, caption));
    },
    encodeDrawing(list, timeMs, caption) {
      if (ready) return ready.encodeDrawing(list, timeMs, caption);
      const copy = structuredClone(list);
      return starting.then((e) => e.encodeDrawing(copy, timeMs, caption));
    },
    encodeInfoPage(paragraphs, timeMs) {
      if (ready) return ready.encodeInfoPage(paragraphs, timeMs);
      const copy = [...paragraphs];
      return starting.then((e) => e.encodeInfoPage(copy, timeMs));
    },
    // Frames given before the encoder is ready wait for it: none has begun.
    supersede: () => ready?.supersede(),
    close: () =>
      starting.then(
        (e) => e.close(),
        () => undefined,
      ),
  };
}

/**
 * Messages to the worker: a frame of recording `gen` to encode, as pixels or as the calls
 * that draw it (with a caption over it, if any), or the information page; `seq` numbers
 * the thread's frames, across its recordings.
 */
export type FrameMessage = FrameContent & { gen: number; seq: number };

/** A frame, as the encoder is given it. */
type FrameContent = (
  | { pixels: ArrayBuffer; caption?: string }
  | { drawing: DisplayList; caption?: string }
  | { infoPage: readonly string[] }
) & { timeMs: number };

/** Messages to a kept worker: recording `gen` begins, with these settings (it answers ready). */
export interface ConfigMessage {
  config: FrameEncoderConfig;
  gen: number;
}

/**
 * Messages from the worker, each about recording `gen`: ready for frames, a frame, a frame
 * skipped (its recording was given up) or superseded (a newer one replaced it), or why one
 * failed.
 */
export type WorkerReply = { gen: number } & (
  { ready: true } | { frame: EncodedFrame } | { skipped: true } | { superseded: true } | { error: string }
);

/** Where in WorkerStart.control the worker reads what to give up. */
export const GIVEN_UP = 0;
export const SUPERSEDED = 1;

/** What a worker starts with: its first recording, and where it reads what to give up. */
export interface WorkerStart {
  config: FrameEncoderConfig;
  gen: number;
  /**
   * Int32 [GIVEN_UP]: the newest recording given up; frames of it and older are skipped,
   * not encoded. [SUPERSEDED]: the newest frame (seq) a newer one replaces; it and those
   * before it are given up where the encoder can undo them.
   */
  control: SharedArrayBuffer;
}

/** A worker thread, and what its encoders share with it. */
interface EncoderThread {
  worker: Worker;
  /** See WorkerStart.control. */
  control: Int32Array;
  /** The newest recording on this thread. */
  gen: number;
  /** The newest frame sent to this thread. */
  seq: number;
}

/**
 * The worker's entry point. Under the test runner this package's modules are TypeScript,
 * which a worker cannot load by itself: there it first registers tsx (a dev dependency),
 * as the runner does for the main thread.
 */
function startWorker(config: FrameEncoderConfig): EncoderThread {
  const control = new SharedArrayBuffer(8);
  const workerData: WorkerStart = { config, gen: 1, control };
  const here = import.meta.url;
  let worker: Worker;
  if (!here.endsWith('.ts')) {
    worker = new Worker(new URL('./encoder-worker.js', here), { workerData });
  } else {
    // tsx's ESM API, found where this package's tsx is: the worker registers it, then loads
    // the entry point through it.
    const tsxPackage = createRequire(here).resolve('tsx/package.json');
    const tsx = pathToFileURL(join(dirname(tsxPackage), 'dist/esm/api/index.mjs')).href;
    const entry = new URL('./encoder-worker.ts', here).href;
    const source = `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(entry)}); });`;
    worker = new Worker(source, { eval: true, workerData });
  }
  return { worker, control: new Int32Array(control), gen: 1, seq: 0 };
}

/**
 * Encoder threads kept between recordings: a phone's, or all the phones' of a server. A new
 * thread takes about a third of a second to start and over a second more for its first
 * frames (its code is not compiled yet); a kept one is ready at once, so a test that
 * records pays neither. At most `keep` idle threads are kept (one by default: a phone
 * rarely records twice at once), since an idle thread holds memory.
 */
export class EncoderThreads {
  private idle: Array<{ thread: EncoderThread; forget: () => void }> = [];
  private closed = false;
  readonly #keep: number;
  #started = 0;

  constructor(options: { keep?: number } = {}) {
    this.#keep = options.keep ?? 1;
  }

  /** Threads started so far: one serves every recording of a phone that records one at a time. */
  get started(): number {
    return this.#started;
  }

  /** An encoder for `config` on a kept thread, or on a new one. */
  encoder(config: FrameEncoderConfig): Promise<FrameEncoder> {
    const thread = this.takeIdle();
    if (!thread) this.#started++;
    return workerFrameEncoder(config, { thread, release: (kept) => this.keep(kept) });
  }

  /** Ends the kept threads (the phone shuts down); encoders in use end when closed. */
  close(): void {
    this.closed = true;
    for (const { thread, forget } of this.idle.splice(0)) {
      forget();
      void thread.worker.terminate();
    }
  }

  private takeIdle(): EncoderThread | null {
    for (let entry = this.idle.pop(); entry; entry = this.idle.pop()) {
      entry.forget();
      if (entry.thread.worker.threadId !== -1) return entry.thread;
    }
    return null;
  }

  /** Keeps a thread for the next recording; false when it should end instead. */
  private keep(thread: EncoderThread): boolean {
    if (this.closed || this.idle.length >= this.#keep) return false;
    // A kept thread may still be finishing a frame of a killed recording: should it fail or
    // stop meanwhile, it is dropped here, where its error is heard, never handed out dead.
    const { worker } = thread;
    const drop = () => {
      this.idle = this.idle.filter((e) => e !== entry);
      void worker.terminate();
    };
    const entry = {
      thread,
      forget: () => {
        worker.off('error', drop);
        worker.off('exit', drop);
      },
    };
    worker.once('error', drop);
    worker.once('exit', drop);
    this.idle.push(entry);
    return true;
  }
}

/** A kept thread to configure instead of a new one, and where it goes back when closed. */
interface Reuse {
  thread: EncoderThread | null;
  /** Takes the thread back; false when it should end instead. */
  release(thread: EncoderThread): boolean;
}

/**
 * Encodes on a worker thread, one frame at a time, in order. Resolves once the worker is
 * ready for frames (as screenrecord prepares its encoder before it starts recording).
 */
export function workerFrameEncoder(config: FrameEncoderConfig, reuse?: Reuse): Promise<FrameEncoder> {
  const kept = reuse?.thread ?? null;
  if (kept) kept.gen++;
  const thread = kept ?? startWorker(config);
  const { worker } = thread;
  const gen = thread.gen;
  // The worker must not keep a process alive on its own: whoever records owns the phone.
  worker.unref();
  const waiting: Array<{ resolve: (f: EncodedFrame) => void; reject: (e: Error) => void }> = [];
  let failure: Error | null = null;
  let closed: Promise<void> | null = null;
  // Set by the promise below (its executor runs at once); close() takes them off a kept thread.
  let onMessage!: (reply: WorkerReply) => void;
  let onError!: (error: Error) => void;
  let onExit!: () => void;
  const send = (message: FrameContent, transfer: ArrayBuffer[] = []): Promise<EncodedFrame> => {
    if (failure) return Promise.reject(failure);
    return new Promise((resolve, reject) => {
      waiting.push({ resolve, reject });
      worker.postMessage({ ...message, gen, seq: ++thread.seq } satisfies FrameMessage, transfer);
    });
  };
  const encoder: FrameEncoder = {
    encode(pixels, timeMs, caption) {
      // A copy of its own goes to the worker; the caller's pixels are free at once.
      const copy = pixels.slice().buffer;
      return send({ pixels: copy, timeMs, ...(caption !== undefined && { caption }) }, [copy]);
    },
    encodeDrawing(list, timeMs, caption) {
      // Structured clone copies the calls (and any picture in them) before this returns.
      return send({ drawing: list, timeMs, ...(caption !== undefined && { caption }) });
    },
    encodeInfoPage(paragraphs, timeMs) {
      return send({ infoPage: paragraphs, timeMs });
    },
    supersede() {
      if (waiting.length > 0) Atomics.store(thread.control, SUPERSEDED, thread.seq);
    },
    close() {
      closed ??= (async () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        // Frames still waiting belong to a recording given up (screenrecord killed): the
        // thread stops the one it is on within a row of macroblocks and skips those still
        // queued, so it serves the next recording at once instead of a new thread that is
        // slow to start.
        if (waiting.length > 0) Atomics.store(thread.control, GIVEN_UP, gen);
        for (const w of waiting.splice(0)) w.reject(new Error('video encoder: closed'));
        if (failure === null && reuse?.release(thread)) return;
        await worker.terminate();
      })();
      return closed;
    },
  };
  return new Promise((ready, refused) => {
    const fail = (error: Error) => {
      failure ??= error;
      refused(failure);
      for (const w of waiting.splice(0)) w.reject(failure);
    };
    onMessage = (reply: WorkerReply) => {
      // Answers about an earlier recording on this thread (one given up) are not this one's.
      if (reply.gen !== gen) return;
      if ('ready' in reply) {
        ready(encoder);
        return;
      }
      const next = waiting.shift();
      if (!next) return;
      if ('error' in reply) next.reject(new Error(`video encoder: ${reply.error}`));
      else if ('skipped' in reply) next.reject(new Error('video encoder: the recording was given up'));
      else if ('superseded' in reply) next.reject(new FrameSuperseded());
      else next.resolve(reply.frame);
    };
    onError = (error: Error) => fail(error);
    onExit = () => fail(new Error('video encoder: its worker thread stopped'));
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    // A kept thread is told the new recording's settings; it answers ready.
    if (kept) worker.postMessage({ config, gen } satisfies ConfigMessage);
  });
}
