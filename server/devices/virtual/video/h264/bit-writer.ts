/**
 * Writing an H.264 RBSP bit by bit (clause 7.2): fixed-length fields u(n), Exp-Golomb codes
 * ue(v)/se(v) (clause 9.1), and the trailing bits that end every RBSP; and wrapping an RBSP
 * into a NAL unit with emulation prevention (7.4.1).
 */
import type { Code } from './tables.js';

export class BitWriter {
  private buffer: Uint8Array;
  private length = 0;
  /** Bits not yet in a whole byte: the low `pending` bits of `current` (fewer than 8). */
  private current = 0;
  private pending = 0;

  constructor(capacity = 4096) {
    this.buffer = new Uint8Array(capacity);
  }

  /** Bits written so far. */
  get bitLength(): number {
    return this.length * 8 + this.pending;
  }

  get byteAligned(): boolean {
    return this.pending === 0;
  }

  /** u(n): `value` in `bits` bits, most significant first (bits <= 32). */
  u(bits: number, value: number): void {
    if (bits > 24) {
      // Keep every step within 31 bits of integer arithmetic.
      this.u(bits - 16, Math.floor(value / 65536));
      this.u(16, value & 0xffff);
      return;
    }
    let current = (this.current << bits) | (value & ((1 << bits) - 1));
    let pending = this.pending + bits;
    while (pending >= 8) {
      pending -= 8;
      if (this.length === this.buffer.length) {
        const grown = new Uint8Array(this.buffer.length * 2);
        grown.set(this.buffer);
        this.buffer = grown;
      }
      this.buffer[this.length++] = (current >> pending) & 0xff;
    }
    current &= (1 << pending) - 1;
    this.current = current;
    this.pending = pending;
  }

  flag(value: boolean): void {
    this.u(1, value ? 1 : 0);
  }

  code(c: Code): void {
    this.u(c.length, c.value);
  }

  /** ue(v): unsigned Exp-Golomb. */
  ue(value: number): void {
    if (!(value >= 0 && Number.isInteger(value))) throw new RangeError(`ue(v) of ${value}`);
    const x = value + 1;
    const bits = 31 - Math.clz32(x);
    if (x >= 2 ** 32) throw new RangeError(`ue(v) of ${value} is too large`);
    this.u(bits, 0);
    this.u(bits + 1, x);
  }

  /** se(v): signed Exp-Golomb (k > 0 maps to 2k - 1, k <= 0 to -2k). */
  se(value: number): void {
    this.ue(value > 0 ? 2 * value - 1 : -2 * value);
  }

  /** The bits written from bit `from` on, packed from the first byte's most significant bit. */
  bitsFrom(from: number): { data: Uint8Array; bits: number } {
    const bits = this.bitLength - from;
    if (!(Number.isInteger(from) && from >= 0 && bits >= 0)) throw new RangeError(`no bits from ${from}`);
    // The bits not yet in a byte, as the byte they will begin (zeros after them).
    const tail = this.pending > 0 ? (this.current << (8 - this.pending)) & 0xff : 0;
    const byteAt = (i: number) => (i < this.length ? this.buffer[i]! : i === this.length ? tail : 0);
    const data = new Uint8Array(Math.ceil(bits / 8));
    const start = from >> 3;
    const shift = from & 7;
    for (let i = 0; i < data.length; i++) {
      data[i] = ((byteAt(start + i) << shift) | (byteAt(start + i + 1) >> (8 - shift))) & 0xff;
    }
    // Past the last bit, zeros (the next byte's bits may be the writer's, not these).
    if (bits % 8 !== 0) data[data.length - 1]! &= (0xff << (8 - (bits % 8))) & 0xff;
    return { data, bits };
  }

  /** Writes `bits` bits of `data` (as bitsFrom gives them). */
  bits(data: Uint8Array, bits: number): void {
    const whole = bits >> 3;
    for (let i = 0; i < whole; i++) this.u(8, data[i]!);
    const rest = bits & 7;
    if (rest > 0) this.u(rest, data[whole]! >> (8 - rest));
  }

  /** rbsp_trailing_bits(): a stop bit, then zeros to the byte boundary. */
  trailingBits(): void {
    this.u(1, 1);
    if (this.pending > 0) this.u(8 - this.pending, 0);
  }

  /** The bytes written (call after trailingBits(), which aligns them). */
  bytes(): Uint8Array {
    if (this.pending !== 0) throw new Error('the RBSP does not end on a byte boundary');
    return this.buffer.slice(0, this.length);
  }
}

/**
 * A NAL unit from its header byte and RBSP: wherever two zero bytes would be followed by a
 * byte <= 3, an emulation prevention byte 0x03 goes between, so no start code can appear
 * inside (7.4.1).
 */
export function nalUnit(header: number, rbsp: Uint8Array): Uint8Array {
  const out = new Uint8Array(1 + rbsp.length + Math.ceil(rbsp.length / 2) + 1);
  out[0] = header;
  let n = 1;
  let zeros = 0;
  for (const byte of rbsp) {
    if (zeros >= 2 && byte <= 3) {
      out[n++] = 3;
      zeros = 0;
    }
    out[n++] = byte;
    zeros = byte === 0 ? zeros + 1 : 0;
  }
  return out.slice(0, n);
}
