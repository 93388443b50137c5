/**
 * A test's whole log: `logcat -b all -v threadtime` followed over ADB from the moment it
 * starts until stop(), written to a local file whose size is capped, with crashes detected
 * on the way.
 *
 * The cap keeps the beginning and the end: the first half of the budget is written as the
 * lines come, the last lines are kept in memory within the other half, and at stop() they
 * follow a line that says how much was cut between them. A failure is usually explained by
 * the end of the log, and the beginning shows the phone the test started with.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import type { RunningCommand } from '../adb/phone-adb.js';
import { sleep } from '../util/time.js';
import { CrashDetector, type AppCrash } from './crashes.js';

/** What the capture needs of a phone: a long-running shell command, and a short one. */
export interface LogcatSource {
  spawn(command: string): Promise<RunningCommand>;
  shell(command: string): Promise<unknown>;
}

/** How long stop() waits for its end line to come back through the log. */
const END_LINE_TIMEOUT_MS = 3000;

export interface LogcatCaptureOptions {
  /** The file to write (created or replaced). */
  path: string;
  /** The most bytes the file may hold (default 8 MiB); the middle of a longer log is cut. */
  maxBytes?: number;
}

export interface LogcatResult {
  path: string;
  /** Bytes written to the file. */
  bytes: number;
  /** Lines the log had, and how many of them the cap cut out. */
  lines: number;
  linesCut: number;
  /** App crashes the log showed. */
  crashes: AppCrash[];
}

export const DEFAULT_LOGCAT_MAX_BYTES = 8 * 1024 * 1024;

/**
 * The log from now on. logcat's `-T` takes a time, the phone's own clock says what "now" is
 * there (a host's may differ), and `date` gives whole seconds only: logcat starts at the
 * beginning of the current second, and a line the capture logs right after reading the time
 * marks where it really starts. Lines before that mark (an earlier test's, logged in the
 * same second) are left out.
 */
function followFromNow(startLine: string): string {
  return `t="$(date +'%m-%d %H:%M:%S.000')"; log -t phonelease '${startLine}'; exec logcat -b all -v threadtime -T "$t"`;
}

/**
 * Lines read before the start line are held back, up to this many bytes: should the line
 * never come (a clock set back), they are kept after all rather than the log lost.
 */
const BEFORE_START_MAX_BYTES = 1024 * 1024;

export class LogcatCapture {
  readonly #source: LogcatSource;
  readonly #command: RunningCommand;
  /** The line logged as the capture starts; null once it came back. */
  #startLine: string | null;
  /** Lines read before the start line came back (see BEFORE_START_MAX_BYTES). */
  #beforeStart: string[] = [];
  #beforeStartBytes = 0;
  /** The end line stop() logs, and what hears it come back. */
  #endLine: { text: string; heard: () => void } | null = null;
  readonly #file: WriteStream;
  readonly #path: string;
  readonly #headBudget: number;
  readonly #tailBudget: number;
  readonly #detector = new CrashDetector();
  #headBytes = 0;
  #headFull = false;
  /** Lines past the head's budget: the latest ones, within the tail's budget. */
  #tail: string[] = [];
  /** Where the kept tail starts in #tail (dropping from the front without shifting). */
  #tailStart = 0;
  #tailBytes = 0;
  #lines = 0;
  #linesCut = 0;
  #partial = '';
  readonly #reading: Promise<void>;
  readonly #reader: ReturnType<RunningCommand['output']['getReader']>;
  #stopping: Promise<LogcatResult> | null = null;

  private constructor(
    source: LogcatSource,
    command: RunningCommand,
    file: WriteStream,
    options: LogcatCaptureOptions,
    startLine: string,
  ) {
    this.#source = source;
    this.#startLine = startLine;
    this.#command = command;
    // Its exit is of no interest (the capture ends it); a connection that dies rejects it.
    command.exited.catch(() => undefined);
    this.#file = file;
    this.#path = options.path;
    const max = options.maxBytes ?? DEFAULT_LOGCAT_MAX_BYTES;
    if (!(Number.isInteger(max) && max >= 1024)) {
      throw new RangeError(`maxBytes must be a whole number of at least 1024 bytes (got ${max})`);
    }
    // Room for the line that says what was cut.
    this.#headBudget = Math.floor(max / 2);
    this.#tailBudget = max - this.#headBudget - 200;
    this.#reader = command.output.getReader();
    this.#reading = this.#read();
  }

  /** Starts following the phone's log into `options.path`. */
  static async start(source: LogcatSource, options: LogcatCaptureOptions): Promise<LogcatCapture> {
    const file = createWriteStream(options.path);
    await once(file, 'open');
    try {
      const startLine = `the log phonelease follows starts here (${randomBytes(4).toString('hex')})`;
      const command = await source.spawn(followFromNow(startLine));
      return new LogcatCapture(source, command, file, options, startLine);
    } catch (error) {
      file.destroy();
      throw error;
    }
  }

  /** Crashes seen so far (those whose lines have ended). */
  get crashes(): readonly AppCrash[] {
    return this.#detector.crashes;
  }

  /** Stops following and finishes the file. Idempotent. */
  stop(): Promise<LogcatResult> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<LogcatResult> {
    // Lines logged just before stop() may still be on their way: the capture logs a line of
    // its own and reads until it comes back, so the file holds everything logged before.
    const text = `end of the log phonelease follows (${randomBytes(4).toString('hex')})`;
    const heard = new Promise<void>((resolve) => (this.#endLine = { text, heard: resolve }));
    const bound = new AbortController();
    await Promise.race([
      this.#source.shell(`log -t phonelease '${text}'`).then(() => heard),
      this.#reading,
      sleep(END_LINE_TIMEOUT_MS, bound.signal).catch(() => undefined),
    ]).catch(() => undefined);
    bound.abort();
    await this.#command.kill().catch(() => undefined);
    // The stream may stay open a while after the kill: what was read is the log.
    await this.#reader.cancel().catch(() => undefined);
    await this.#reading;
    if (this.#partial) this.#line(this.#partial);
    this.#partial = '';
    this.#keepBeforeStart();
    this.#detector.end();
    if (this.#linesCut > 0) {
      this.#file.write(
        `--------- phonelease: ${this.#linesCut} lines cut here to keep this file under ${this.#headBudget * 2} bytes; the log goes on with its last lines\n`,
      );
    }
    for (const line of this.#tail.slice(this.#tailStart)) this.#file.write(line);
    this.#file.end();
    await once(this.#file, 'close');
    return {
      path: this.#path,
      bytes: this.#file.bytesWritten,
      lines: this.#lines,
      linesCut: this.#linesCut,
      crashes: [...this.#detector.crashes],
    };
  }

  async #read(): Promise<void> {
    const reader = this.#reader;
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const text = this.#partial + decoder.decode(value, { stream: true });
        const parts = text.split('\n');
        this.#partial = parts.pop() ?? '';
        for (const part of parts) this.#line(part);
      }
    } catch {
      // The stream ends with an error when the connection goes (the phone ended): what
      // was read is the log.
    }
  }

  #line(text: string): void {
    const line = text.endsWith('\r') ? text.slice(0, -1) : text;
    if (this.#endLine && line.endsWith(this.#endLine.text)) this.#endLine.heard();
    if (this.#startLine !== null) {
      if (line.endsWith(this.#startLine)) {
        this.#startLine = null;
        this.#beforeStart = [];
      } else {
        this.#beforeStart.push(line);
        this.#beforeStartBytes += line.length + 1;
        if (this.#beforeStartBytes > BEFORE_START_MAX_BYTES) this.#keepBeforeStart();
        return;
      }
    }
    this.#keep(line);
  }

  /** The start line did not come back (yet): what was held back is the log after all. */
  #keepBeforeStart(): void {
    if (this.#startLine === null) return;
    this.#startLine = null;
    const held = this.#beforeStart;
    this.#beforeStart = [];
    for (const line of held) this.#keep(line);
  }

  #keep(line: string): void {
    this.#lines++;
    this.#detector.push(line);
    const entry = `${line}\n`;
    const size = Buffer.byteLength(entry);
    if (!this.#headFull && this.#headBytes + size <= this.#headBudget) {
      this.#headBytes += size;
      this.#file.write(entry);
      return;
    }
    // Once a line missed the head, every later one goes to the tail: the file stays in order.
    this.#headFull = true;
    this.#tail.push(entry);
    this.#tailBytes += size;
    while (this.#tailBytes > this.#tailBudget && this.#tailStart < this.#tail.length) {
      this.#tailBytes -= Buffer.byteLength(this.#tail[this.#tailStart++]!);
      this.#linesCut++;
    }
    if (this.#tailStart > 4096 && this.#tailStart * 2 > this.#tail.length) {
      this.#tail = this.#tail.slice(this.#tailStart);
      this.#tailStart = 0;
    }
  }
}
