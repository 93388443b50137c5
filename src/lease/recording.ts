/**
 * Recording a leased phone's screen with the phone's own `screenrecord`, over the lease's
 * ADB connection, as Appium does: it works on every Android phone (emulators, real phones,
 * the virtual phone) and needs nothing installed on either side.
 *
 * screenrecord stops at its time limit (3 minutes by default), so a longer recording is
 * pieces recorded one after another; at stop the last piece is sent SIGINT (screenrecord
 * then finishes its file), each piece is pulled and deleted on the phone, and the pieces
 * are joined into one MP4 without re-encoding.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningCommand, ShellResult } from '../adb/phone-adb.js';
import { ConfigurationError } from '../errors.js';
import type { PhoneleaseLogger } from '../util/log.js';
import { messageOf } from '../util/message.js';
import { sleep } from '../util/time.js';
import { joinMp4 } from '../video/mp4-join.js';

export interface RecordingOptions {
  /**
   * Seconds one screenrecord piece lasts (its `--time-limit`) before the next one starts;
   * 180 by default, screenrecord's own limit (and its maximum on most phones).
   */
  pieceSeconds?: number;
  /** The video's size, e.g. `{ width: 360, height: 640 }` (`--size`); the screen's by default. */
  size?: { width: number; height: number };
  /** Bits per second (`--bit-rate`); screenrecord's default (20 Mbit/s on Android 14) by default. */
  bitRate?: number;
}

export interface RecordingResult {
  /** The MP4 written. */
  path: string;
  /** How many screenrecord pieces it was joined from. */
  pieces: number;
  /** The video's length in seconds. */
  durationSeconds: number;
}

/** What recording needs of the phone's ADB connection. */
export interface RecordingAdb {
  spawn(command: string): Promise<RunningCommand>;
  shell(command: string): Promise<ShellResult>;
  pull(remote: string): Promise<Buffer>;
}

/** How long a stopped screenrecord may take to finish its file before it is given up. */
const FINISH_TIMEOUT_MS = 15_000;
const DEFAULT_PIECE_SECONDS = 180;

interface Piece {
  remote: string;
  /** The screenrecord's pid on the phone, once it said. */
  pid: Promise<number>;
  /** Its exit status: 0 when its file is finished. */
  exited: Promise<number>;
  /** What it printed so far (its pid first, then any error). */
  output(): string;
  command: RunningCommand;
}

export class PhoneRecording {
  readonly #adb: RecordingAdb;
  readonly #logger: PhoneleaseLogger;
  readonly #args: string[];
  /** The pieces' paths on the phone, without `-N.mp4`. */
  readonly #prefix: string;
  readonly #pieces: Piece[] = [];
  /** The piece being recorded (or started) now. */
  #current: Promise<Piece> | null = null;
  #stopping = false;
  #failure: unknown = null;

  private constructor(adb: RecordingAdb, logger: PhoneleaseLogger, args: string[], prefix: string) {
    this.#adb = adb;
    this.#logger = logger;
    this.#args = args;
    this.#prefix = prefix;
  }

  /** Starts screenrecord on the phone; resolves once it runs. */
  static async start(
    adb: RecordingAdb,
    options: RecordingOptions,
    logger: PhoneleaseLogger,
  ): Promise<PhoneRecording> {
    const args = screenrecordArgs(options);
    const recording = new PhoneRecording(
      adb,
      logger,
      args,
      `/sdcard/phonelease-recording-${randomBytes(4).toString('hex')}`,
    );
    const piece = await recording.#next();
    // screenrecord creates its file once its encoder runs (Appium waits for it the same
    // way); one that refuses to start (a bad size, no screenrecord at all) exits instead.
    if (!(await startedRecording(adb, piece))) {
      await recording.#deletePieces();
      throw new Error(
        `screenrecord did not start (exit status ${await piece.exited}): ${said(piece) || 'no message'}`,
      );
    }
    return recording;
  }

  /** Starts the next piece. */
  #next(): Promise<Piece> {
    const remote = `${this.#prefix}-${this.#pieces.length + 1}.mp4`;
    const next = startPiece(this.#adb, this.#args, remote, (piece) => this.#ended(piece)).then((piece) => {
      this.#pieces.push(piece);
      return piece;
    });
    this.#current = next;
    return next;
  }

  /**
   * A piece ended. One that reached its time limit (exit status 0) is followed by the next,
   * unless the recording stops. One that failed (killed, or screenrecord's own error) ends
   * the recording there: another would most likely fail the same way, and starting one
   * after another for the rest of the test would load the phone for nothing.
   */
  #ended(piece: Piece): void {
    if (this.#stopping || this.#pieces.at(-1) !== piece) return;
    void piece.exited.then((status) => {
      if (this.#stopping) return;
      if (status !== 0) {
        this.#failure = new Error(pieceFailure(piece, status));
        this.#logger.warn(
          `the screen recording stopped: ${messageOf(this.#failure)}; nothing after it is recorded`,
        );
        return;
      }
      this.#next().catch((error: unknown) => {
        this.#failure = error;
      });
    });
  }

  /**
   * Stops recording (SIGINT to screenrecord, which finishes its file), pulls the pieces,
   * joins them into `path` and deletes them on the phone.
   */
  async stop(path: string): Promise<RecordingResult> {
    this.#stopping = true;
    const current = await this.#current?.catch(() => null);
    if (current) await finishPiece(this.#adb, current, this.#logger);
    const work = await mkdtemp(join(tmpdir(), 'phonelease-recording-'));
    let deleting: Promise<void> | null = null;
    try {
      const local: string[] = [];
      let failed: string | null = null;
      for (const piece of this.#pieces) {
        const status = await piece.exited;
        if (status !== 0) {
          failed ??= pieceFailure(piece, status);
          this.#logger.warn(
            `a piece of the screen recording (${piece.remote}) ended with status ${status}; it is left out`,
          );
          continue;
        }
        const file = join(work, `${local.length + 1}.mp4`);
        await writeFile(file, await this.#adb.pull(piece.remote));
        local.push(file);
      }
      // Pulled: the phone's copies are deleted while the local ones are joined.
      deleting = this.#deletePieces();
      if (local.length === 0) {
        throw new Error(
          `the phone recorded no finished video: ${failed ?? (this.#failure ? messageOf(this.#failure) : 'screenrecord ended before it finished a file')}`,
        );
      }
      // One piece is rewritten the same way: the same samples, read back and checked.
      const joined = await joinMp4(local, path);
      const durationSeconds = joined.durationUs / 1e6;
      return { path, pieces: local.length, durationSeconds };
    } finally {
      await (deleting ?? this.#deletePieces());
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * Stops recording and deletes what was recorded, keeping nothing. screenrecord is killed
   * (SIGKILL) rather than asked to finish its file: the frames it has yet to encode and the
   * file's index are work nobody will watch, so a passing test does not wait for them.
   */
  async discard(): Promise<void> {
    this.#stopping = true;
    const current = await this.#current?.catch(() => null);
    if (current) await killPiece(this.#adb, current);
    await this.#deletePieces();
  }

  async #deletePieces(): Promise<void> {
    if (this.#pieces.length === 0) return;
    const r = await this.#adb
      .shell(`rm -f ${this.#pieces.map((p) => p.remote).join(' ')}`)
      .catch((error: unknown) => ({ exitCode: -1, stderr: messageOf(error), stdout: '' }));
    if (r.exitCode !== 0)
      this.#logger.warn(`could not delete the screen recording on the phone: ${r.stderr.trim()}`);
  }
}

function screenrecordArgs(options: RecordingOptions): string[] {
  const seconds = options.pieceSeconds ?? DEFAULT_PIECE_SECONDS;
  if (!(Number.isInteger(seconds) && seconds >= 1 && seconds <= DEFAULT_PIECE_SECONDS)) {
    throw new ConfigurationError(
      `pieceSeconds must be a whole number of seconds from 1 to ${DEFAULT_PIECE_SECONDS} (screenrecord's limit); got ${seconds}.`,
    );
  }
  const args = ['--time-limit', String(seconds)];
  if (options.size) {
    const { width, height } = options.size;
    if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) {
      throw new ConfigurationError(
        `size must be whole pixels, e.g. { width: 360, height: 640 }; got ${width}x${height}.`,
      );
    }
    args.push('--size', `${width}x${height}`);
  }
  if (options.bitRate !== undefined) {
    if (!(
      Number.isInteger(options.bitRate) &&
      options.bitRate >= 100_000 &&
      options.bitRate <= 200_000_000
    )) {
      throw new ConfigurationError(
        `bitRate must be from 100000 to 200000000 bits per second (screenrecord's range); got ${options.bitRate}.`,
      );
    }
    args.push('--bit-rate', String(options.bitRate));
  }
  return args;
}

/**
 * Starts one screenrecord. The shell prints its own pid and then becomes screenrecord
 * (exec), so the pid is screenrecord's: no search by name that could find someone else's.
 */
async function startPiece(
  adb: RecordingAdb,
  args: string[],
  remote: string,
  onExit: (piece: Piece) => void,
): Promise<Piece> {
  const command = await adb.spawn(`echo $$; exec screenrecord ${args.join(' ')} ${remote} 2>&1`);
  let output = '';
  let resolvePid!: (pid: number) => void;
  const pid = new Promise<number>((resolve) => (resolvePid = resolve));
  // The output is read to its end (screenrecord prints nothing more without --verbose), so
  // the stream never stalls.
  const reading = (async () => {
    const reader = command.output.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        output += decoder.decode(value, { stream: true });
        const line = /^(\d+)\n/.exec(output);
        if (line) resolvePid(Number(line[1]));
      }
    } catch {
      // The connection went: the exit says what happened.
    }
  })();
  const exited = command.exited.catch(() => -1);
  const piece: Piece = { remote, pid, exited, command, output: () => output };
  void Promise.all([exited, reading]).then(() => onExit(piece));
  return piece;
}

/** What screenrecord printed after the shell's pid line (its errors: it prints nothing else). */
function said(piece: Piece): string {
  return piece
    .output()
    .replace(/^\d+\n/, '')
    .trim();
}

/** A piece that did not finish its file: its exit status and what it said. */
function pieceFailure(piece: Piece, status: number): string {
  const words = said(piece);
  return `screenrecord (${piece.remote}) exited with status ${status} before it finished its file${words ? `: ${words}` : ''}`;
}

/** How long screenrecord may take to start recording (its file appears). */
const START_TIMEOUT_MS = 20_000;
/**
 * The waits between looks for the file: short first, since the virtual phone's screenrecord
 * starts within milliseconds and every look before it was ready would add to the test's
 * time; then 100 ms, since an emulator's or a real phone's takes a few hundred.
 */
const START_POLL_MS = [5, 10, 20, 40, 80, 100] as const;

/**
 * True once the piece's file exists on the phone, false when screenrecord exited without
 * making one; throws past START_TIMEOUT_MS.
 */
async function startedRecording(adb: RecordingAdb, piece: Piece): Promise<boolean> {
  let exited = false;
  void piece.exited.then(() => (exited = true));
  const deadline = Date.now() + START_TIMEOUT_MS;
  // The first look once the shell has said its pid (it then becomes screenrecord): a look
  // before that finds nothing and costs a wait.
  await settlesWithin(Promise.race([piece.pid, piece.exited]), START_TIMEOUT_MS);
  for (let look = 0; ; look++) {
    // Read before the check: a process that exited and left a file did record.
    const gone = exited;
    if ((await adb.shell(`test -e ${piece.remote}`)).exitCode === 0) return true;
    if (gone) return false;
    if (Date.now() > deadline) {
      throw new Error(
        `screenrecord did not create ${piece.remote} within ${START_TIMEOUT_MS / 1000} s of starting`,
      );
    }
    await sleep(START_POLL_MS[Math.min(look, START_POLL_MS.length - 1)]!);
  }
}

/** How long a killed screenrecord may take to be gone. */
const KILL_TIMEOUT_MS = 5_000;

/**
 * Sends screenrecord `signal` and waits up to `timeoutMs` for it to exit. Returns the pid it
 * signalled and whether it exited in time; null when it had already ended.
 */
async function signalPiece(
  adb: RecordingAdb,
  piece: Piece,
  signal: 'INT' | 'KILL',
  timeoutMs: number,
): Promise<{ pid: number; exited: boolean } | null> {
  const done = await Promise.race([piece.exited.then(() => true), sleep(0).then(() => false)]);
  if (done) return null;
  const pid = await Promise.race([piece.pid, piece.exited.then(() => null)]);
  if (pid === null) return null;
  await adb.shell(`kill -${signal === 'INT' ? 2 : 9} ${pid}`);
  const exited = await settlesWithin(piece.exited, timeoutMs);
  // Past that, the stream is closed: whatever still runs on the phone has nobody to talk to.
  if (!exited) await piece.command.kill().catch(() => undefined);
  return { pid, exited };
}

/** Kills screenrecord (SIGKILL) and waits, briefly, until it is gone; its file is left unfinished. */
async function killPiece(adb: RecordingAdb, piece: Piece): Promise<void> {
  await signalPiece(adb, piece, 'KILL', KILL_TIMEOUT_MS);
}

/** Sends screenrecord SIGINT and waits until it has finished its file and exited. */
async function finishPiece(adb: RecordingAdb, piece: Piece, logger: PhoneleaseLogger): Promise<void> {
  const signalled = await signalPiece(adb, piece, 'INT', FINISH_TIMEOUT_MS);
  if (signalled && !signalled.exited) {
    logger.warn(
      `screenrecord (pid ${signalled.pid}) did not finish its file within ${FINISH_TIMEOUT_MS / 1000} s of SIGINT; the recording may be cut off`,
    );
  }
}

/** Whether `work` settles within `ms`; the timer is cleared either way. */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  const bound = new AbortController();
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      sleep(ms, bound.signal).then(
        () => false,
        () => false,
      ),
    ]);
  } finally {
    bound.abort();
  }
}
