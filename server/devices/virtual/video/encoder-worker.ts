/**
 * The video encoder's worker thread (see frame-encoder.ts): draws, scales and encodes the
 * frames it is sent, one at a time, and sends back each picture's NAL units; frames of a
 * recording given up are skipped, and the one it is on stopped.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { EncodeStopped } from './h264/encoder.js';
import {
  FramePipeline,
  ThreadKeep,
  type ConfigMessage,
  type FrameMessage,
  type WorkerReply,
  type WorkerStart,
} from './frame-encoder.js';

/** The encoder thread's nice value: below the phone's (and the test's) threads. */
const BACKGROUND_NICE = 10;

/**
 * Makes this thread yield the CPU to the rest of the machine when both want it. Encoding is
 * the work a phone's hardware encoder does beside the phone, not in its way: on a busy
 * machine (a CI runner's few cores shared by the test runner, the phone and the encoder)
 * the test keeps its pace and the video takes fewer frames, as a phone's encoder drops the
 * frames it cannot keep up with; on an idle core it encodes at full speed. Linux only: there
 * a thread has a nice value of its own (setpriority on its thread id), elsewhere the call
 * would lower the whole process.
 */
function yieldToThePhone(): void {
  if (process.platform !== 'linux') return;
  try {
    // /proc/thread-self names this thread: <pid>/task/<tid>.
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, BACKGROUND_NICE);
  } catch {
    // No /proc (a sandbox) or no right to change it: the thread keeps the process's priority.
  }
}

const port = parentPort;
if (port) {
  yieldToThePhone();
  // What one recording leaves that serves the next: glyphs, the last screen, opening pictures.
  const keep = new ThreadKeep();
  const start = workerData as WorkerStart;
  const givenUp = new Int32Array(start.givenUp);
  let pipeline = new FramePipeline(start.config, keep);
  port.postMessage({ gen: start.gen, ready: true } satisfies WorkerReply);
  port.on('message', (message: FrameMessage | ConfigMessage) => {
    const gen = message.gen;
    if ('config' in message) {
      // A kept thread starts its next recording: a new encoder, the compiled code kept.
      pipeline = new FramePipeline(message.config, keep);
      port.postMessage({ gen, ready: true } satisfies WorkerReply);
      return;
    }
    // A frame of a recording given up (screenrecord killed) is not worth encoding, nor the
    // rest of one the recording is given up during.
    const givenUpNow = () => gen <= Atomics.load(givenUp, 0);
    if (givenUpNow()) {
      port.postMessage({ gen, skipped: true } satisfies WorkerReply);
      return;
    }
    let reply: WorkerReply;
    let transfer: ArrayBuffer[] = [];
    try {
      const frame =
        'infoPage' in message
          ? pipeline.encodeInfoPage(message.infoPage, message.timeMs, givenUpNow)
          : 'drawing' in message
            ? pipeline.encodeDrawing(message.drawing, message.timeMs, givenUpNow, message.caption)
            : pipeline.encode(new Uint8Array(message.pixels), message.timeMs, givenUpNow, message.caption);
      // Copies of their own move to the main thread: the SPS and PPS stay the encoder's.
      const nalUnits = frame.nalUnits.map((n) => n.slice());
      transfer = nalUnits.map((n) => n.buffer);
      reply = { gen, frame: { ...frame, nalUnits } };
    } catch (error) {
      reply =
        error instanceof EncodeStopped
          ? { gen, skipped: true }
          : { gen, error: error instanceof Error ? error.message : String(error) };
    }
    port.postMessage(reply, transfer);
  });
}
