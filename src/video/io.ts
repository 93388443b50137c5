/**
 * Where MP4 bytes come from and go to. A writer appends and patches a few bytes it wrote
 * before (the mdat size); a reader reads ranges, so a large recording is never held in
 * memory just to find its index. Files and in-memory buffers implement both.
 */
import { open, type FileHandle } from 'node:fs/promises';

/** Something a writer streams bytes into. */
export interface ByteSink {
  /** Appends bytes at the end. */
  append(bytes: Uint8Array): Promise<void>;
  /** Overwrites bytes already written, at `position`. */
  patch(position: number, bytes: Uint8Array): Promise<void>;
}

/** Something a reader reads ranges from. */
export interface ByteSource {
  readonly size: number;
  /** Reads exactly `length` bytes at `position` (fewer only at the end). */
  read(position: number, length: number): Promise<Uint8Array>;
}

/** A sink that keeps everything in memory; `bytes()` is what a file would hold now. */
export class MemorySink implements ByteSink {
  private buffer = new Uint8Array(64 * 1024);
  private length = 0;

  get size(): number {
    return this.length;
  }

  async append(bytes: Uint8Array): Promise<void> {
    if (this.length + bytes.length > this.buffer.length) {
      // Doubling keeps appends amortised O(1) for a recording that grows frame by frame.
      const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.length + bytes.length));
      grown.set(this.buffer.subarray(0, this.length));
      this.buffer = grown;
    }
    this.buffer.set(bytes, this.length);
    this.length += bytes.length;
  }

  async patch(position: number, bytes: Uint8Array): Promise<void> {
    if (position + bytes.length > this.length) throw new RangeError('patch past the end of what was written');
    this.buffer.set(bytes, position);
  }

  /** A copy of the bytes written so far. */
  bytes(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }
}

/** A source over bytes already in memory. */
export function bufferSource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    read: async (position, length) => bytes.subarray(position, Math.min(bytes.length, position + length)),
  };
}

/** A file opened for reading ranges; close it when done. */
export class FileSource implements ByteSource {
  private constructor(
    private readonly handle: FileHandle,
    readonly size: number,
  ) {}

  static async open(path: string): Promise<FileSource> {
    const handle = await open(path, 'r');
    try {
      return new FileSource(handle, (await handle.stat()).size);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async read(position: number, length: number): Promise<Uint8Array> {
    const want = Math.max(0, Math.min(length, this.size - position));
    const out = new Uint8Array(want);
    let got = 0;
    while (got < want) {
      const { bytesRead } = await this.handle.read(out, got, want - got, position + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return got === want ? out : out.subarray(0, got);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** A new file (truncated if it exists) written at explicit positions; close it when done. */
export class FileSink implements ByteSink {
  private length = 0;

  private constructor(private readonly handle: FileHandle) {}

  static async create(path: string): Promise<FileSink> {
    return new FileSink(await open(path, 'w'));
  }

  async append(bytes: Uint8Array): Promise<void> {
    await this.writeAt(this.length, bytes);
    this.length += bytes.length;
  }

  async patch(position: number, bytes: Uint8Array): Promise<void> {
    if (position + bytes.length > this.length) throw new RangeError('patch past the end of what was written');
    await this.writeAt(position, bytes);
  }

  private async writeAt(position: number, bytes: Uint8Array): Promise<void> {
    let done = 0;
    while (done < bytes.length) {
      const { bytesWritten } = await this.handle.write(bytes, done, bytes.length - done, position + done);
      done += bytesWritten;
    }
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
