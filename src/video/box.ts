/**
 * ISO BMFF (MP4) boxes at the byte level: a field builder that writes big-endian numbers,
 * box and full-box framing, and a reader that walks the boxes inside a buffer.
 *
 * Every box is `size:u32 type:fourcc payload`; a size of 1 means a 64-bit size follows the
 * type, a size of 0 means "to the end of the enclosing space" (only a file's last box).
 */

/** A growable list of big-endian fields; `bytes()` joins them. */
export class Fields {
  private readonly parts: Uint8Array[] = [];
  private length = 0;

  private push(part: Uint8Array): this {
    this.parts.push(part);
    this.length += part.length;
    return this;
  }

  private number(bytes: number, write: (view: DataView) => void): this {
    const part = new Uint8Array(bytes);
    write(new DataView(part.buffer));
    return this.push(part);
  }

  u8(value: number): this {
    return this.number(1, (v) => v.setUint8(0, value));
  }
  u16(value: number): this {
    return this.number(2, (v) => v.setUint16(0, value));
  }
  i16(value: number): this {
    return this.number(2, (v) => v.setInt16(0, value));
  }
  u32(value: number): this {
    return this.number(4, (v) => v.setUint32(0, value));
  }
  i32(value: number): this {
    return this.number(4, (v) => v.setInt32(0, value));
  }
  u64(value: number): this {
    return this.number(8, (v) => v.setBigUint64(0, BigInt(value)));
  }
  /** A four-character code such as 'avc1'. */
  fourcc(code: string): this {
    if (code.length !== 4) throw new Error(`not a four-character code: '${code}'`);
    return this.push(new TextEncoder().encode(code));
  }
  zeros(count: number): this {
    return this.push(new Uint8Array(count));
  }
  bytes(...parts: Uint8Array[]): this {
    for (const p of parts) this.push(p);
    return this;
  }

  toBytes(): Uint8Array {
    return concatBytes(this.parts, this.length);
  }
}

export function concatBytes(parts: readonly Uint8Array[], total?: number): Uint8Array {
  const out = new Uint8Array(total ?? parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A box: its 8-byte header (or 16 when the payload needs a 64-bit size) and the payload. */
export function box(type: string, ...payload: Uint8Array[]): Uint8Array {
  const size = 8 + payload.reduce((n, p) => n + p.length, 0);
  if (size > 0xffffffff) {
    return new Fields()
      .u32(1)
      .fourcc(type)
      .u64(size + 8)
      .bytes(...payload)
      .toBytes();
  }
  return new Fields()
    .u32(size)
    .fourcc(type)
    .bytes(...payload)
    .toBytes();
}

/** A full box: a box whose payload starts with a version byte and 24 bits of flags. */
export function fullBox(type: string, version: number, flags: number, ...payload: Uint8Array[]): Uint8Array {
  return box(type, new Fields().u32(((version & 0xff) << 24) | (flags & 0xffffff)).toBytes(), ...payload);
}

/** One box found inside a buffer: where its payload starts and ends. */
export interface BoxView {
  type: string;
  /** Offset of the box's first header byte within the buffer. */
  start: number;
  /** Offset of the first payload byte. */
  payload: number;
  /** Offset just past the box. */
  end: number;
}

const decoder = new TextDecoder('latin1');

export function fourccAt(bytes: Uint8Array, offset: number): string {
  return decoder.decode(bytes.subarray(offset, offset + 4));
}

/** The boxes one after another in bytes[start, end); refuses a box that overruns its parent. */
export function* boxesIn(bytes: Uint8Array, start = 0, end = bytes.length): Generator<BoxView> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = start;
  while (at + 8 <= end) {
    let size = view.getUint32(at);
    const type = fourccAt(bytes, at + 4);
    let header = 8;
    if (size === 1) {
      if (at + 16 > end) throw new Mp4FormatError(`box '${type}' at ${at} is cut off`);
      size = Number(view.getBigUint64(at + 8));
      header = 16;
    } else if (size === 0) {
      size = end - at;
    }
    if (size < header || at + size > end) {
      throw new Mp4FormatError(`box '${type}' at ${at} claims ${size} bytes, past the end of its parent`);
    }
    yield { type, start: at, payload: at + header, end: at + size };
    at += size;
  }
}

/** The first child box of the given type, or undefined. */
export function childBox(bytes: Uint8Array, parent: BoxView, type: string, skip = 0): BoxView | undefined {
  for (const b of boxesIn(bytes, parent.payload + skip, parent.end)) if (b.type === type) return b;
  return undefined;
}

/** Follows a path of box types (e.g. ['mdia', 'minf', 'stbl']) from a parent box. */
export function boxAtPath(bytes: Uint8Array, parent: BoxView, path: readonly string[]): BoxView | undefined {
  let at: BoxView | undefined = parent;
  for (const type of path) {
    if (!at) return undefined;
    at = childBox(bytes, at, type);
  }
  return at;
}

/**
 * A file or buffer that is not an MP4 this library can read: cut off before its index (moov)
 * was written, fragmented, or without an H.264 video track. The message names the problem.
 */
export class Mp4FormatError extends Error {
  readonly code = 'mp4_unreadable';
  constructor(message: string) {
    super(message);
    this.name = 'Mp4FormatError';
  }
}
