/**
 * Byte plumbing for shell commands: outputs that write synchronously and expose drain()
 * for flow control, inputs that are read asynchronously, and in-memory pipes between them.
 */
import { randomBytes } from 'node:crypto';
import type { Writable } from 'node:stream';
import { FsError } from '../fs.js';

/** Where a FileOutput writes: the filesystem (or a caller's view of it). */
interface FileWriter {
  writeFile(path: string, data: Buffer, options: { append: boolean }): void;
}

/** A pseudo-terminal (`/dev/pts/N`): what adbd gives a session with a pty. */
export interface Terminal {
  /** `pts/0` */
  readonly name: string;
  /** Window size the client reported (0 until it does, as on a fresh pty). */
  rows: number;
  cols: number;
  /** Whether the terminal echoes what is typed (`stty -echo` turns it off). */
  echo: boolean;
}

export interface Output {
  write(data: string | Buffer): void;
  /** Resolves when the sink can take more (or will never again: closed sinks drop data). */
  drain(): Promise<void>;
  /** True once nobody reads this output any more (the host closed, a pipe reader exited). */
  readonly closed: boolean;
  /** The terminal this output is, when it is one (`test -t 1`, `tty`). */
  readonly terminal?: Terminal;
  /**
   * Counts the caller as holding this output open, as a process holds a file descriptor;
   * returns the release. An ADB shell stream ends only once no process holds it.
   */
  hold?(): () => void;
}

export interface Input {
  /** Next chunk, or null at end of input. */
  read(): Promise<Buffer | null>;
  /**
   * Puts bytes back to be read first: the shell's `read` takes one line and leaves the rest
   * of the chunk to whoever reads next, as reading a pipe one byte at a time would.
   */
  unread?(chunk: Buffer): void;
  /** The terminal this input is, when it is one (`test -t 0`, `tty`, `stty`). */
  readonly terminal?: Terminal;
}

/** No input at all (what a background job reads instead of the terminal: /dev/null). */
export const EMPTY_INPUT: Input = { read: () => Promise.resolve(null) };

/** An output that swallows everything (/dev/null). */
export const NULL_OUTPUT: Output = {
  write: () => undefined,
  drain: () => Promise.resolve(),
  closed: false,
};

/**
 * How much a command may hold in memory at once (whole-input readers such as sort or
 * md5sum -, command substitution). Phones share the server's memory: `yes | sort` must fail
 * on its own phone, not take the server down.
 */
export const MAX_IN_MEMORY = 64 * 1024 * 1024;

export async function readAll(input: Input, limit = MAX_IN_MEMORY): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const c = await input.read();
    if (c === null) return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    size += c.length;
    if (size > limit) throw new Error(`input is larger than ${limit / 1024 / 1024} MiB: out of memory`);
    chunks.push(c);
  }
}

/** Collects everything written (command substitution, redirections, tests). */
export class BufferOutput implements Output {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly limit = MAX_IN_MEMORY) {}

  /** Past the limit the output closes, so the producer stops (as on a full pipe that nobody reads). */
  get closed(): boolean {
    return this.size > this.limit;
  }

  write(data: string | Buffer): void {
    if (this.closed) return;
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    this.size += chunk.length;
    if (this.size <= this.limit) this.chunks.push(chunk);
  }
  drain(): Promise<void> {
    return Promise.resolve();
  }
  bytes(): Buffer {
    if (this.chunks.length !== 1) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }
  text(): string {
    return this.bytes().toString('utf8');
  }
}

/**
 * Output appended to a file, like an open file descriptor (`>` redirections, logcat -f):
 * every write goes straight to the file, so a long-running command's output shows while it
 * runs and nothing piles up in memory. A write that fails (a full disk) stores what fits and
 * closes the output, so producers stop as on a write error; the caller reports `error`.
 */
export class FileOutput implements Output {
  /** Why writing stopped, once it did. */
  error: FsError | null = null;

  constructor(
    private readonly fs: FileWriter,
    readonly path: string,
  ) {}

  get closed(): boolean {
    return this.error !== null;
  }

  write(data: string | Buffer): void {
    if (this.error) return;
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    if (buf.length === 0) return;
    try {
      this.fs.writeFile(this.path, buf, { append: true });
    } catch (error) {
      if (!(error instanceof FsError)) throw error;
      this.error = error;
    }
  }

  drain(): Promise<void> {
    return Promise.resolve();
  }
}

export class BufferInput implements Input {
  private done = false;
  private readonly back: Buffer[] = [];
  constructor(private readonly data: Buffer) {}
  read(): Promise<Buffer | null> {
    const back = this.back.shift();
    if (back) return Promise.resolve(back);
    if (this.done || this.data.length === 0) return Promise.resolve(null);
    this.done = true;
    return Promise.resolve(this.data);
  }
  unread(chunk: Buffer): void {
    if (chunk.length > 0) this.back.unshift(chunk);
  }
}

/** An Output onto a Node Writable (an ADB stream, possibly through a framer). */
export class WritableOutput implements Output {
  constructor(
    private readonly sink: Writable,
    private readonly transform?: (data: Buffer) => Buffer,
    private readonly isClosed: () => boolean = () => sink.destroyed || sink.writableEnded,
  ) {}
  get closed(): boolean {
    return this.isClosed();
  }
  write(data: string | Buffer): void {
    if (this.closed) return;
    let buf = typeof data === 'string' ? Buffer.from(data) : data;
    if (buf.length === 0) return;
    if (this.transform) buf = this.transform(buf);
    this.sink.write(buf);
  }
  drain(): Promise<void> {
    if (this.closed || !this.sink.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.sink.off('drain', done);
        this.sink.off('close', done);
        resolve();
      };
      this.sink.on('drain', done);
      this.sink.on('close', done);
    });
  }
}

/**
 * An in-memory pipe: `a | b`. The writer is throttled once `capacity` bytes wait unread;
 * when the reader stops (closeReader), writes are dropped, as with SIGPIPE.
 */
export class Pipe implements Input, Output {
  private readonly chunks: Buffer[] = [];
  private buffered = 0;
  private ended = false;
  private readerGone = false;
  private readWaiter: (() => void) | null = null;
  private drainWaiters: (() => void)[] = [];
  private readonly readerGoneListeners = new Set<() => void>();

  constructor(private readonly capacity = 256 * 1024) {}

  get closed(): boolean {
    return this.readerGone;
  }

  write(data: string | Buffer): void {
    if (this.readerGone || this.ended) return;
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    if (buf.length === 0) return;
    this.chunks.push(buf);
    this.buffered += buf.length;
    this.wakeReader();
  }

  drain(): Promise<void> {
    if (this.readerGone || this.buffered < this.capacity) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  end(): void {
    this.ended = true;
    this.wakeReader();
  }

  unread(chunk: Buffer): void {
    if (chunk.length === 0 || this.readerGone) return;
    this.chunks.unshift(chunk);
    this.buffered += chunk.length;
  }

  read(): Promise<Buffer | null> {
    const next = this.chunks.shift();
    if (next) {
      this.buffered -= next.length;
      if (this.buffered < this.capacity) this.wakeWriters();
      return Promise.resolve(next);
    }
    if (this.ended || this.readerGone) return Promise.resolve(null);
    return new Promise((resolve) => {
      this.readWaiter = () => {
        this.readWaiter = null;
        resolve(this.read());
      };
    });
  }

  /** The reader exited: unblock the writer and drop what it writes from now on. */
  closeReader(): void {
    if (this.readerGone) return;
    this.readerGone = true;
    this.chunks.length = 0;
    this.buffered = 0;
    this.wakeWriters();
    this.wakeReader();
    for (const l of this.readerGoneListeners) l();
  }

  onReaderGone(listener: () => void): void {
    this.readerGoneListeners.add(listener);
  }

  private wakeReader(): void {
    this.readWaiter?.();
  }

  private wakeWriters(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }
}

/** How much a file or device read hands out at once. */
const READ_CHUNK = 64 * 1024;

/** A file's bytes as an Input, in views of READ_CHUNK bytes (nothing is copied). */
export class ChunkedInput implements Input {
  private offset = 0;
  private readonly back: Buffer[] = [];
  constructor(private readonly data: Buffer) {}
  unread(chunk: Buffer): void {
    if (chunk.length > 0) this.back.unshift(chunk);
  }
  read(): Promise<Buffer | null> {
    const back = this.back.shift();
    if (back) return Promise.resolve(back);
    if (this.offset >= this.data.length) return Promise.resolve(null);
    const chunk = this.data.subarray(this.offset, this.offset + READ_CHUNK);
    this.offset += chunk.length;
    return Promise.resolve(chunk);
  }
}

/**
 * A device that never runs dry (/dev/zero, /dev/urandom). Each read waits for the event loop
 * to turn, so a reader copying it forever (`cat /dev/zero > /dev/null`) cannot starve the
 * rest of the server; it ends when its process does.
 */
class EndlessInput implements Input {
  constructor(private readonly next: () => Buffer) {}
  read(): Promise<Buffer | null> {
    return new Promise((resolve) => setImmediate(() => resolve(this.next())));
  }
}

const ZEROS = Buffer.alloc(READ_CHUNK);

/** What a file open for reading needs: the caller's view of the filesystem. */
interface FileReader {
  openRead(path: string): { kind: 'file'; data: Buffer } | { kind: 'device'; device: CharDevice };
}

type CharDevice = 'null' | 'zero' | 'tty' | 'random';

/**
 * Opens a file or character device for reading, as `cat`, `<` and `dd if=` do: a file
 * reads its bytes, /dev/null nothing, /dev/zero zeros and /dev/urandom random bytes without
 * end, and /dev/tty the terminal (with none, ENXIO as for a process without a controlling
 * terminal). Throws the FsError of the open.
 */
export function openInput(fs: FileReader, path: string, terminal?: Input): Input {
  const opened = fs.openRead(path);
  if (opened.kind === 'file') return new ChunkedInput(opened.data);
  switch (opened.device) {
    case 'null':
      return EMPTY_INPUT;
    case 'zero':
      return new EndlessInput(() => ZEROS);
    case 'random':
      return new EndlessInput(() => randomBytes(READ_CHUNK));
    case 'tty':
      if (terminal?.terminal) return terminal;
      throw new FsError('ENXIO', path);
  }
}
