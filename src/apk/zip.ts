/**
 * Reads entries of a zip archive (an APK) from its central directory: stored and
 * deflated entries, with zip64 sizes and offsets.
 */
import { inflateRawSync } from 'node:zlib';

export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
}

export class ZipError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ZipError';
  }
}

const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const CEN_SIG = 0x02014b50;
const LOC_SIG = 0x04034b50;

export class ZipReader {
  readonly entries: Map<string, ZipEntry>;
  /** Where the central directory starts: an APK's signing block ends right before it. */
  centralDirectoryOffset = 0;

  constructor(private readonly data: Buffer) {
    this.entries = this.readCentralDirectory();
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  read(name: string): Buffer | null {
    const entry = this.entries.get(name);
    if (!entry) return null;
    const d = this.data;
    const off = entry.localHeaderOffset;
    if (off + 30 > d.length || d.readUInt32LE(off) !== LOC_SIG)
      throw new ZipError(`bad local header for ${name}`);
    const start = off + 30 + d.readUInt16LE(off + 26) + d.readUInt16LE(off + 28);
    const raw = d.subarray(start, start + entry.compressedSize);
    if (raw.length !== entry.compressedSize) throw new ZipError(`truncated entry ${name}`);
    if (entry.method === 0) return raw;
    if (entry.method === 8) return inflateRawSync(raw);
    throw new ZipError(`unsupported compression method ${entry.method} for ${name}`);
  }

  private readCentralDirectory(): Map<string, ZipEntry> {
    const d = this.data;
    if (d.length < 22) throw new ZipError('not a zip file (too short)');
    let eocd = -1;
    const stop = Math.max(0, d.length - 22 - 0xffff);
    for (let i = d.length - 22; i >= stop; i--) {
      if (d.readUInt32LE(i) === EOCD_SIG) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) throw new ZipError('not a zip file (no end of central directory)');
    let count = d.readUInt16LE(eocd + 10);
    let cdSize = d.readUInt32LE(eocd + 12);
    let cdOffset = d.readUInt32LE(eocd + 16);
    if (
      (count === 0xffff || cdOffset === 0xffffffff) &&
      eocd >= 20 &&
      d.readUInt32LE(eocd - 20) === ZIP64_LOCATOR_SIG
    ) {
      const z = Number(d.readBigUInt64LE(eocd - 20 + 8));
      if (d.readUInt32LE(z) !== ZIP64_EOCD_SIG) throw new ZipError('bad zip64 end of central directory');
      count = Number(d.readBigUInt64LE(z + 32));
      cdSize = Number(d.readBigUInt64LE(z + 40));
      cdOffset = Number(d.readBigUInt64LE(z + 48));
    }
    if (cdOffset + cdSize > d.length) throw new ZipError('central directory out of range');
    this.centralDirectoryOffset = cdOffset;
    const entries = new Map<string, ZipEntry>();
    let p = cdOffset;
    for (let i = 0; i < count; i++) {
      if (p + 46 > d.length || d.readUInt32LE(p) !== CEN_SIG)
        throw new ZipError('bad central directory entry');
      const method = d.readUInt16LE(p + 10);
      let compressedSize = d.readUInt32LE(p + 20);
      let size = d.readUInt32LE(p + 24);
      const nameLen = d.readUInt16LE(p + 28);
      const extraLen = d.readUInt16LE(p + 30);
      const commentLen = d.readUInt16LE(p + 32);
      let localHeaderOffset = d.readUInt32LE(p + 42);
      const name = d.toString('utf8', p + 46, p + 46 + nameLen);
      // zip64 extra field: the 0xffffffff fields, in order, as u64
      let e = p + 46 + nameLen;
      const extraEnd = e + extraLen;
      while (e + 4 <= extraEnd) {
        const id = d.readUInt16LE(e);
        const len = d.readUInt16LE(e + 2);
        if (id === 0x0001) {
          let q = e + 4;
          if (size === 0xffffffff) {
            size = Number(d.readBigUInt64LE(q));
            q += 8;
          }
          if (compressedSize === 0xffffffff) {
            compressedSize = Number(d.readBigUInt64LE(q));
            q += 8;
          }
          if (localHeaderOffset === 0xffffffff) localHeaderOffset = Number(d.readBigUInt64LE(q));
        }
        e += 4 + len;
      }
      entries.set(name, { name, method, compressedSize, size, localHeaderOffset });
      p = extraEnd + commentLen;
    }
    return entries;
  }
}
