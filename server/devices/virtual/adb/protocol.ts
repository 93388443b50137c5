/**
 * ADB wire format: a 24-byte little-endian header (command, arg0, arg1, data length,
 * data checksum, magic) followed by the payload. See docs/dev/protocol.md in AOSP's adb.
 */

export const A_CNXN = 0x4e584e43;
export const A_AUTH = 0x48545541;
export const A_OPEN = 0x4e45504f;
export const A_OKAY = 0x59414b4f;
export const A_WRTE = 0x45545257;
export const A_CLSE = 0x45534c43;
export const A_STLS = 0x534c5453;

/** Protocol version that lets both sides skip payload checksums. */
export const A_VERSION = 0x01000001;
/** The largest payload this device accepts; the host may ask for less in its CNXN. */
export const DEVICE_MAX_PAYLOAD = 1024 * 1024;

export const HEADER_SIZE = 24;

export interface AdbMessage {
  command: number;
  arg0: number;
  arg1: number;
  /** A view into the received bytes; valid for as long as the caller keeps it. */
  payload: Buffer;
}

export function encodeHeader(command: number, arg0: number, arg1: number, length: number): Buffer {
  const header = Buffer.allocUnsafe(HEADER_SIZE);
  header.writeUInt32LE(command >>> 0, 0);
  header.writeUInt32LE(arg0 >>> 0, 4);
  header.writeUInt32LE(arg1 >>> 0, 8);
  header.writeUInt32LE(length >>> 0, 12);
  // Checksums are skipped from version 0x01000001 on; adb 29 neither sends nor checks them.
  header.writeUInt32LE(0, 16);
  header.writeUInt32LE((command ^ 0xffffffff) >>> 0, 20);
  return header;
}

export function commandName(command: number): string {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32LE(command >>> 0, 0);
  return b.toString('latin1');
}

/**
 * Splits a TCP byte stream into messages without copying payloads that arrive in one
 * chunk (the common case for pushes, where chunks are large).
 */
export class MessageReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private header: { command: number; arg0: number; arg1: number; length: number } | null = null;

  constructor(private readonly onMessage: (message: AdbMessage) => void) {}

  /** Feeds bytes; throws on a malformed header (the connection should then be dropped). */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (!this.header) {
        if (this.buffered < HEADER_SIZE) return;
        const h = this.take(HEADER_SIZE);
        const command = h.readUInt32LE(0);
        const magic = h.readUInt32LE(20);
        if ((command ^ 0xffffffff) >>> 0 !== magic)
          throw new Error(`bad ADB magic for ${commandName(command)}`);
        const length = h.readUInt32LE(12);
        // The host may send up to the maximum this device advertises (it never asks for less).
        if (length > DEVICE_MAX_PAYLOAD) throw new Error(`ADB payload too large: ${length}`);
        this.header = { command, arg0: h.readUInt32LE(4), arg1: h.readUInt32LE(8), length };
      }
      if (this.buffered < this.header.length) return;
      const payload = this.header.length === 0 ? Buffer.alloc(0) : this.take(this.header.length);
      const { command, arg0, arg1 } = this.header;
      this.header = null;
      this.onMessage({ command, arg0, arg1, payload });
    }
  }

  /** Removes n bytes from the front; a view when they lie in one chunk, else one copy. */
  private take(n: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length >= n) {
      const out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let offset = 0;
    while (offset < n) {
      const c = this.chunks[0]!;
      const need = n - offset;
      if (c.length <= need) {
        c.copy(out, offset);
        offset += c.length;
        this.chunks.shift();
      } else {
        c.copy(out, offset, 0, need);
        this.chunks[0] = c.subarray(need);
        offset += need;
      }
    }
    this.buffered -= n;
    return out;
  }
}
