/**
 * The encoder's bit-level pieces against a reader written from the standard: Exp-Golomb and
 * fixed-length fields read back as written, NAL units never contain a start code, every
 * CAVLC code table is prefix-free, residual blocks of any levels decode to those levels,
 * and the colour conversion's one-colour shortcut gives what the per-pixel formula gives.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BitWriter, nalUnit } from '../../server/devices/virtual/video/h264/bit-writer.js';
import { ResidualWriter } from '../../server/devices/virtual/video/h264/cavlc.js';
import { pixelWords, rgbaMacroblockToYuv } from '../../server/devices/virtual/video/h264/color.js';
import {
  CAVLC_TABLES_FOR_TESTS,
  CHROMA_DC_TOTAL_ZEROS,
  RUN_BEFORE,
  TOTAL_ZEROS,
  ZIGZAG,
  coeffTokenCode,
  type Code,
} from '../../server/devices/virtual/video/h264/tables.js';

/** Reads bits MSB first, as a decoder does (clause 7.2). */
class BitReader {
  private at = 0;
  constructor(private readonly bytes: Uint8Array) {}
  bit(): number {
    const byte = this.bytes[this.at >> 3];
    if (byte === undefined) throw new Error('read past the end');
    return (byte >> (7 - (this.at++ & 7))) & 1;
  }
  u(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++) v = v * 2 + this.bit();
    return v;
  }
  ue(): number {
    let zeros = 0;
    while (this.bit() === 0) zeros++;
    return 2 ** zeros - 1 + this.u(zeros);
  }
  se(): number {
    const k = this.ue();
    // k = 0 is 0, not -0 (which toBe tells apart).
    return k % 2 === 1 ? (k + 1) / 2 : k === 0 ? 0 : -k / 2;
  }
  /** Reads the one code of `table` that the next bits spell. */
  code(table: readonly (Code | undefined)[]): number {
    let value = 0;
    for (let length = 1; length <= 16; length++) {
      value = value * 2 + this.bit();
      const found = table.findIndex((c) => c !== undefined && c.length === length && c.value === value);
      if (found >= 0) return found;
    }
    throw new Error('no code matches');
  }
  get position(): number {
    return this.at;
  }
}

/** A reference residual_block_cavlc() parser (9.2), for blocks of `count` levels. */
function readResidualBlock(r: BitReader, count: number, nC: number): number[] {
  const tokens: (Code | undefined)[] = [];
  for (let tc = 0; tc <= Math.min(count, 16); tc++) {
    for (let t1 = 0; t1 <= Math.min(3, tc); t1++) tokens[tc * 4 + t1] = coeffTokenCode(nC, tc, t1);
  }
  const token = r.code(tokens);
  const totalCoeff = token >> 2;
  const trailingOnes = token & 3;
  const levels: number[] = [];
  if (totalCoeff === 0) return new Array<number>(count).fill(0);
  let suffixLength = totalCoeff > 10 && trailingOnes < 3 ? 1 : 0;
  for (let i = 0; i < totalCoeff; i++) {
    if (i < trailingOnes) {
      levels.push(r.bit() === 1 ? -1 : 1);
      continue;
    }
    let prefix = 0;
    while (r.bit() === 0) prefix++;
    let levelCode = Math.min(15, prefix) << suffixLength;
    const suffixSize = prefix === 14 && suffixLength === 0 ? 4 : prefix >= 15 ? prefix - 3 : suffixLength;
    if (suffixLength > 0 || prefix >= 14) levelCode += r.u(suffixSize);
    if (prefix >= 15 && suffixLength === 0) levelCode += 15;
    if (prefix >= 16) levelCode += (1 << (prefix - 3)) - 4096;
    if (i === trailingOnes && trailingOnes < 3) levelCode += 2;
    const level = levelCode % 2 === 0 ? (levelCode + 2) / 2 : (-levelCode - 1) / 2;
    levels.push(level);
    if (suffixLength === 0) suffixLength = 1;
    if (Math.abs(level) > 3 << (suffixLength - 1) && suffixLength < 6) suffixLength++;
  }
  let zerosLeft =
    totalCoeff < count ? r.code((count === 4 ? CHROMA_DC_TOTAL_ZEROS : TOTAL_ZEROS)[totalCoeff - 1]!) : 0;
  const runs: number[] = [];
  for (let i = 0; i < totalCoeff - 1; i++) {
    const run = zerosLeft > 0 ? r.code(RUN_BEFORE[Math.min(zerosLeft, 7) - 1]!) : 0;
    runs.push(run);
    zerosLeft -= run;
  }
  runs.push(zerosLeft);
  const out = new Array<number>(count).fill(0);
  let position = -1;
  for (let i = totalCoeff - 1; i >= 0; i--) {
    position += runs[i]! + 1;
    out[position] = levels[i]!;
  }
  return out;
}

function written(write: (w: BitWriter) => void): Uint8Array {
  const w = new BitWriter(8);
  write(w);
  w.trailingBits();
  return w.bytes();
}

describe('bit writer', () => {
  it('reads back ue(v), se(v) and u(n) fields in any order', () => {
    const field = fc.oneof(
      fc.record({ kind: fc.constant('ue' as const), value: fc.integer({ min: 0, max: 2 ** 31 - 2 }) }),
      fc.record({ kind: fc.constant('se' as const), value: fc.integer({ min: -(2 ** 30), max: 2 ** 30 }) }),
      fc.integer({ min: 1, max: 32 }).chain((bits) =>
        fc.record({
          kind: fc.constant('u' as const),
          bits: fc.constant(bits),
          value: fc.integer({ min: 0, max: 2 ** bits - 1 }),
        }),
      ),
    );
    fc.assert(
      fc.property(fc.array(field, { maxLength: 40 }), (fields) => {
        const bytes = written((w) => {
          for (const f of fields) {
            if (f.kind === 'ue') w.ue(f.value);
            else if (f.kind === 'se') w.se(f.value);
            else w.u(f.bits, f.value);
          }
        });
        const r = new BitReader(bytes);
        for (const f of fields) {
          const got = f.kind === 'ue' ? r.ue() : f.kind === 'se' ? r.se() : r.u(f.bits);
          expect(got).toBe(f.value);
        }
        expect(r.bit()).toBe(1); // the stop bit, then zeros to the byte's end
        while (r.position % 8 !== 0) expect(r.bit()).toBe(0);
      }),
    );
  });

  it('writes Exp-Golomb codes as the standard spells them (Table 9-2)', () => {
    const bits = (value: number, kind: 'ue' | 'se') => {
      const w = new BitWriter();
      w[kind](value);
      const n = w.bitLength;
      w.trailingBits();
      return [...w.bytes()]
        .map((b) => b.toString(2).padStart(8, '0'))
        .join('')
        .slice(0, n);
    };
    expect([0, 1, 2, 3, 4, 7].map((v) => bits(v, 'ue'))).toEqual([
      '1',
      '010',
      '011',
      '00100',
      '00101',
      '0001000',
    ]);
    expect([0, 1, -1, 2, -2].map((v) => bits(v, 'se'))).toEqual(['1', '010', '011', '00100', '00101']);
  });
});

describe('bits written again (a kept screen after a new slice header)', () => {
  const fields = fc.array(
    fc.record({ bits: fc.integer({ min: 1, max: 32 }), value: fc.integer({ min: 0, max: 2 ** 32 - 1 }) }),
    { maxLength: 40 },
  );
  const write = (w: BitWriter, list: { bits: number; value: number }[]) => {
    for (const f of list) w.u(f.bits, f.value % 2 ** f.bits);
  };

  it('gives back the bits from any position, and writes them after a header of any length as writing them there would', () => {
    fc.assert(
      fc.property(fields, fields, fields, (before, data, header) => {
        const first = new BitWriter(4);
        write(first, before);
        const from = first.bitLength;
        write(first, data);
        const taken = first.bitsFrom(from);
        expect(taken.bits).toBe(first.bitLength - from);
        expect(taken.data).toHaveLength(Math.ceil(taken.bits / 8));

        const again = new BitWriter(4);
        write(again, header);
        again.bits(taken.data, taken.bits);
        again.trailingBits();
        const direct = new BitWriter(4);
        write(direct, header);
        write(direct, data);
        direct.trailingBits();
        expect(Buffer.from(again.bytes())).toEqual(Buffer.from(direct.bytes()));
      }),
    );
  });

  it('pads the last byte with zeros, whatever the writer holds after the bits', () => {
    const w = new BitWriter();
    w.u(3, 0b101);
    w.u(5, 0b11111);
    expect([...w.bitsFrom(1).data]).toEqual([0b01111110]);
    expect(w.bitsFrom(8)).toEqual({ data: new Uint8Array(0), bits: 0 });
    expect(() => w.bitsFrom(9)).toThrow(RangeError);
  });
});

describe('NAL units', () => {
  it('never contain a start code prefix, and dropping the emulation prevention bytes gives back the RBSP', () => {
    // Zeros and small bytes often; the last byte holds the stop bit, as every RBSP's does.
    const rbsp = fc
      .uint8Array({ maxLength: 300 })
      .map((a) => Uint8Array.of(...a.map((b) => (b % 5 === 0 ? 0 : b % 5 === 1 ? b % 4 : b)), 0x80));
    fc.assert(
      fc.property(rbsp, (payload) => {
        const nal = nalUnit(0x65, payload);
        // Inside a NAL unit, two zero bytes are never followed by 0, 1 or 2 (7.4.1)...
        for (let i = 1; i + 2 < nal.length; i++) {
          if (nal[i] === 0 && nal[i + 1] === 0) expect(nal[i + 2]).toBeGreaterThan(2);
        }
        // ... and the decoder's unescaping gives back the RBSP.
        const unescaped: number[] = [];
        for (let i = 1, zeros = 0; i < nal.length; i++) {
          if (zeros >= 2 && nal[i] === 3) {
            zeros = 0;
            continue;
          }
          unescaped.push(nal[i]!);
          zeros = nal[i] === 0 ? zeros + 1 : 0;
        }
        expect(Uint8Array.from(unescaped)).toEqual(payload);
      }),
    );
  });
});

describe('CAVLC', () => {
  function prefixFree(codes: readonly string[]): void {
    const sorted = [...codes].sort();
    for (let i = 1; i < sorted.length; i++)
      expect(sorted[i]!.startsWith(sorted[i - 1]!), `${sorted[i - 1]} / ${sorted[i]}`).toBe(false);
  }

  it('has prefix-free code tables', () => {
    const t = CAVLC_TABLES_FOR_TESTS;
    for (const column of t.coeffToken) prefixFree(column);
    prefixFree(t.chromaDcCoeffToken);
    for (const row of [...t.totalZeros, ...t.chromaDcTotalZeros, ...t.runBefore]) prefixFree(row);
    // Table 9-5 has one code per (TotalCoeff, TrailingOnes) with TrailingOnes <= min(3, TotalCoeff).
    expect(t.coeffToken[0]).toHaveLength(62);
    expect(t.chromaDcCoeffToken).toHaveLength(14);
  });

  it('writes residual blocks that read back to their levels', () => {
    const level = fc.oneof(
      { weight: 6, arbitrary: fc.constant(0) },
      { weight: 3, arbitrary: fc.constantFrom(1, -1) },
      { weight: 2, arbitrary: fc.integer({ min: -20, max: 20 }) },
      { weight: 1, arbitrary: fc.integer({ min: -2047, max: 2047 }) },
    );
    const block = fc.constantFrom(16, 15, 4).chain((count) =>
      fc.record({
        count: fc.constant(count),
        levels: fc.array(level, { minLength: count, maxLength: count }),
        nC: count === 4 ? fc.constant(-1) : fc.integer({ min: 0, max: 16 }),
      }),
    );
    const writer = new ResidualWriter();
    fc.assert(
      fc.property(fc.array(block, { minLength: 1, maxLength: 8 }), (blocks) => {
        const bytes = written((w) => {
          for (const b of blocks) {
            const totalCoeff = writer.write(
              w,
              Int32Array.from(b.levels),
              0,
              [...ZIGZAG.keys()],
              b.count,
              b.nC,
            );
            expect(totalCoeff).toBe(b.levels.filter((v) => v !== 0).length);
          }
        });
        const r = new BitReader(bytes);
        for (const b of blocks) expect(readResidualBlock(r, b.count, b.nC)).toEqual(b.levels);
      }),
      { numRuns: 300 },
    );
  });
});

describe('colour conversion', () => {
  /** Y, U and V planes of a 32x32 picture (2x2 macroblocks, one padded), converted with or without words. */
  function convert(rgba: Uint8Array, width: number, height: number, words: boolean) {
    const planes = { y: new Uint8Array(32 * 32), u: new Uint8Array(16 * 16), v: new Uint8Array(16 * 16) };
    for (let mbY = 0; mbY < 2; mbY++)
      for (let mbX = 0; mbX < 2; mbX++)
        rgbaMacroblockToYuv(
          rgba,
          width,
          height,
          mbX,
          mbY,
          planes.y,
          planes.u,
          planes.v,
          32,
          words ? pixelWords(rgba) : null,
        );
    return planes;
  }

  it('converts a block of one colour as the formula does pixel by pixel, whatever the pixels', () => {
    // Pixels from a few colours, so that one-colour 2x2 blocks (and runs of them) are common,
    // at sizes that pad the second column or row of macroblocks.
    const colours = fc.array(fc.integer({ min: 0, max: 0xffffffff }), { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(
        colours,
        fc.integer({ min: 18, max: 32 }),
        fc.integer({ min: 18, max: 32 }),
        fc.array(fc.nat(), { minLength: 1024, maxLength: 1024 }),
        (palette, w, h, picks) => {
          const width = w & ~1;
          const height = h & ~1;
          const rgba = new Uint8Array(width * height * 4);
          const view = new DataView(rgba.buffer);
          for (let i = 0; i < width * height; i++)
            view.setUint32(i * 4, palette[picks[i]! % palette.length]!);
          const fast = convert(rgba, width, height, true);
          const plain = convert(rgba, width, height, false);
          expect(Buffer.compare(fast.y, plain.y)).toBe(0);
          expect(Buffer.compare(fast.u, plain.u)).toBe(0);
          expect(Buffer.compare(fast.v, plain.v)).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
    // A picture whose bytes do not start at a multiple of 4 is compared byte by byte.
    const odd = new Uint8Array(new ArrayBuffer(32 * 32 * 4 + 1), 1);
    expect(pixelWords(odd)).toBeNull();
  });

  it('gives BT.601 limited-range values: white 235/128/128, black 16/128/128', () => {
    const rgba = new Uint8Array(32 * 32 * 4);
    for (let i = 0; i < 16 * 32; i++) rgba.set([255, 255, 255, 255], i * 4);
    const { y, u, v } = convert(rgba, 32, 32, true);
    expect([y[0], u[0], v[0]]).toEqual([235, 128, 128]);
    expect([y[32 * 31], u[16 * 15], v[16 * 15]]).toEqual([16, 128, 128]);
  });
});
