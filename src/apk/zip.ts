/**
 * Reads entries of a zip archive (an APK) from its central directory: stored and
 * deflated entries, with zip64 sizes and offsets.
 */
import { crc32, deflateRawSync, inflateRawSync } from 'node:zlib';

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

/**
 * Writes a zip archive of deflated entries (what a phone's bugreportz produces), readable by
 * ZipReader and by any unzip.
 */
export function writeZip(entries: ReadonlyArray<{ name: string; data: Buffer }>, mtime: Date): Buffer {
  const time = (mtime.getUTCHours() << 11) | (mtime.getUTCMinutes() << 5) | (mtime.getUTCSeconds() >> 1);
  const date = ((mtime.getUTCFullYear() - 1980) << 9) | ((mtime.getUTCMonth() + 1) << 5) | mtime.getUTCDate();
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const { name, data } of entries) {
    const nameBytes = Buffer.from(name, 'utf8');
    const compressed = deflateRawSync(data);
    const crc = crc32(data);
    // The fields both headers hold, at their offsets (the central one adds "made by" first).
    const common = (header: Buffer, at: number) => {
      header.writeUInt16LE(20, at); // version needed: 2.0 (deflate)
      header.writeUInt16LE(0x0800, at + 2); // UTF-8 names
      header.writeUInt16LE(8, at + 4); // deflated
      header.writeUInt16LE(time, at + 6);
      header.writeUInt16LE(date, at + 8);
      header.writeUInt32LE(crc, at + 10);
      header.writeUInt32LE(compressed.length, at + 14);
      header.writeUInt32LE(data.length, at + 18);
      header.writeUInt16LE(nameBytes.length, at + 22);
    };
    const local = Buffer.alloc(30);
    local.writeUInt32LE(LOC_SIG, 0);
    common(local, 4);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(CEN_SIG, 0);
    central.writeUInt16LE(0x0314, 4); // made by: Unix, 2.0
    common(central, 6);
    central.writeUInt32LE((0o100644 << 16) >>> 0, 38); // a regular file, rw-r--r--
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, compressed);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + compressed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(EOCD_SIG, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}
