/**
 * The video encoder's worker thread (see frame-encoder.ts): draws, scales and encodes the
 * frames it is sent, one at a time, and sends back each picture's NAL units; frames of a
 * recording given up are skipped, and the one it is on stopped; a frame a newer one
 * replaces is stopped and undone where the encoder can undo it.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { messageOf } from '../../../../src/util/message.js';
import { EncodeStopped } from './h264/encoder.js';
import {
  FramePipeline,
  GIVEN_UP,
  SUPERSEDED,
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
  // What one recording leaves that serves the next: glyphs, the last screens, coded screens.
  const keep = new ThreadKeep();
  const start = workerData as WorkerStart;
  const control = new Int32Array(start.control);
  let pipeline = new FramePipeline(start.config, keep);
  port.postMessage({ gen: start.gen, ready: true } satisfies WorkerReply);
  port.on('message', (message: FrameMessage | ConfigMessage) => {
    const gen = message.gen;
    if ('config' in message) {
      // A kept thread starts its next recording: a new encoder, the compiled code kept, and
      // the last encoder's memory.
      pipeline.release();
      pipeline = new FramePipeline(message.config, keep);
      port.postMessage({ gen, ready: true } satisfies WorkerReply);
      return;
    }
    // A frame of a recording given up (screenrecord killed) is not worth encoding, nor the
    // rest of one the recording is given up during.
    const givenUpNow = () => gen <= Atomics.load(control, GIVEN_UP);
    if (givenUpNow()) {
      port.postMessage({ gen, skipped: true } satisfies WorkerReply);
      return;
    }
    // A frame a newer one replaces (the screen as it was when recording stopped) is not
    // begun, and one begun is given up where the encoder can undo it.
    const supersededNow = () => message.seq <= Atomics.load(control, SUPERSEDED);
    if (supersededNow()) {
      port.postMessage({ gen, superseded: true } satisfies WorkerReply);
      return;
    }
    const stop = () => givenUpNow() || (supersededNow() && pipeline.undoable);
    let reply: WorkerReply;
    let transfer: ArrayBuffer[] = [];
    try {
      const frame =
        'infoPage' in message
          ? pipeline.encodeInfoPage(message.infoPage, message.timeMs, stop)
          : 'drawing' in message
            ? pipeline.encodeDrawing(message.drawing, message.timeMs, stop, message.caption)
            : pipeline.encode(new Uint8Array(message.pixels), message.timeMs, stop, message.caption);
      // Copies of their own move to the main thread: the SPS and PPS stay the encoder's.
      const nalUnits = frame.nalUnits.map((n) => n.slice());
      transfer = nalUnits.map((n) => n.buffer);
      reply = { gen, frame: { ...frame, nalUnits } };
    } catch (error) {
      reply = !(error instanceof EncodeStopped)
        ? { gen, error: messageOf(error) }
        : givenUpNow()
          ? { gen, skipped: true }
          : { gen, superseded: true };
    }
    port.postMessage(reply, transfer);
  });
}
