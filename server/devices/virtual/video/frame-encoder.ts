/**
 * Scaling and encoding screen frames, on a worker thread or the caller's.
 *
 * Measured on a 2-core machine: a frame in which the whole 720x1280 screen changed (an app
 * opening, the periodic IDR picture) takes 100-200 ms to encode; a typed character, a few
 * ms. A phone's ADB, its UI and the server that hosts it share one event loop, so 100 ms
 * there would stall all of them; the encoder runs on a worker thread and the loop only
 * copies the pixels over (about 1 ms) and writes the encoded bytes.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { H264Encoder, type EncodedPicture } from './h264/encoder.js';
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
   * Encodes a screen frame (RGBA, screen size) shown at `timeMs`. The pixels are read or
   * copied before this returns, so the caller may draw over them at once.
   */
  encode(pixels: Uint8Array, timeMs: number): Promise<EncodedFrame>;
  close(): Promise<void>;
}

/** What the worker thread runs for one frame, and what runs in place without one. */
export class FramePipeline {
  private readonly scaler: ScreenScaler;
  private readonly encoder: H264Encoder;

  constructor(config: FrameEncoderConfig) {
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
    });
  }

  encode(pixels: Uint8Array, timeMs: number): EncodedFrame {
    const started = performance.now();
    const picture = this.encoder.encode(this.scaler.scale(pixels), timeMs);
    return { ...picture, timeMs, encodeMs: performance.now() - started };
  }
}

/** Encodes on the calling thread (benchmarks compare the two; tests of the pipeline). */
export function inlineFrameEncoder(config: FrameEncoderConfig): FrameEncoder {
  const pipeline = new FramePipeline(config);
  return {
    encode: async (pixels, timeMs) => pipeline.encode(pixels, timeMs),
    close: async () => undefined,
  };
}

/** Messages to the worker. */
export interface FrameMessage {
  pixels: ArrayBuffer;
  timeMs: number;
}

/** Messages from the worker: ready for frames, a frame, or why one failed. */
export type WorkerReply = { ready: true } | { frame: EncodedFrame } | { error: string };

/**
 * The worker's entry point. Under the test runner this package's modules are TypeScript,
 * which a worker cannot load by itself: there it first registers tsx (a dev dependency),
 * as the runner does for the main thread.
 */
function startWorker(config: FrameEncoderConfig): Worker {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL('./encoder-worker.js', here), { workerData: config });
  // tsx's ESM API, found where this package's tsx is: the worker registers it, then loads
  // the entry point through it.
  const tsxPackage = createRequire(here).resolve('tsx/package.json');
  const tsx = pathToFileURL(join(dirname(tsxPackage), 'dist/esm/api/index.mjs')).href;
  const entry = new URL('./encoder-worker.ts', here).href;
  const source = `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(source, { eval: true, workerData: config });
}

/**
 * Encodes on a worker thread, one frame at a time, in order. Resolves once the worker is
 * ready for frames (as screenrecord prepares its encoder before it starts recording).
 */
export function workerFrameEncoder(config: FrameEncoderConfig): Promise<FrameEncoder> {
  const worker = startWorker(config);
  // The worker must not keep a process alive on its own: whoever records owns the phone.
  worker.unref();
  const waiting: Array<{ resolve: (f: EncodedFrame) => void; reject: (e: Error) => void }> = [];
  let failure: Error | null = null;
  let closed: Promise<void> | null = null;
  const encoder: FrameEncoder = {
    encode(pixels, timeMs) {
      if (failure) return Promise.reject(failure);
      // A copy of its own goes to the worker; the caller's pixels are free at once.
      const copy = pixels.slice().buffer;
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        worker.postMessage({ pixels: copy, timeMs } satisfies FrameMessage, [copy]);
      });
    },
    close() {
      closed ??= worker.terminate().then(() => undefined);
      return closed;
    },
  };
  return new Promise((ready, refused) => {
    const fail = (error: Error) => {
      failure ??= error;
      refused(failure);
      for (const w of waiting.splice(0)) w.reject(failure);
    };
    worker.on('message', (reply: WorkerReply) => {
      if ('ready' in reply) {
        ready(encoder);
        return;
      }
      const next = waiting.shift();
      if (!next) return;
      if ('error' in reply) next.reject(new Error(`video encoder: ${reply.error}`));
      else next.resolve(reply.frame);
    });
    worker.on('error', (error) => fail(error));
    worker.on('exit', () => fail(new Error('video encoder: its worker thread stopped')));
  });
}
