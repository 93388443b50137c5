/**
 * H.264's integer transforms and quantisation for 4x4 blocks (clauses 8.5.10-8.5.12 for the
 * decoder's side). The inverse paths are written exactly as the standard specifies them, so
 * the encoder's reconstruction is bit-for-bit the decoder's picture; the forward paths are
 * the usual encoder approximations, which only decide how good that picture is.
 *
 * A block is 16 values in raster order (index y * 4 + x) at an offset into an Int32Array,
 * so a macroblock's blocks live in one array and nothing is allocated per block.
 */
import { DEQUANT_SCALE, POSITION_CLASS, QUANT_SCALE } from './tables.js';

/** Per QP: the 16 positions' quantisation multipliers. */
const QUANT_MF: readonly Int32Array[] = Array.from({ length: 52 }, (_, qp) =>
  Int32Array.from(POSITION_CLASS, (c) => QUANT_SCALE[qp % 6]![c]!),
);
/** Per QP: the 16 positions' dequantisation factors, LevelScale4x4 / 16 << (QP / 6) (8.5.12.1). */
const DEQUANT_MUL: readonly Int32Array[] = Array.from({ length: 52 }, (_, qp) =>
  Int32Array.from(POSITION_CLASS, (c) => DEQUANT_SCALE[qp % 6]![c]! << Math.floor(qp / 6)),
);

/**
 * The largest level magnitude written. Baseline streams may not use level_prefix above 15
 * (9.2.2.1), which bounds a level at 2063 when its suffix length is 0; the encoder's QP
 * floor keeps real levels far below, this only guarantees a legal stream.
 */
const MAX_LEVEL = 2047;

/** Forward core transform of the 4x4 residual at b[at], in place. */
export function forward4x4(b: Int32Array, at: number): void {
  for (let i = at; i < at + 16; i += 4) {
    const s03 = b[i]! + b[i + 3]!;
    const d03 = b[i]! - b[i + 3]!;
    const s12 = b[i + 1]! + b[i + 2]!;
    const d12 = b[i + 1]! - b[i + 2]!;
    b[i] = s03 + s12;
    b[i + 1] = 2 * d03 + d12;
    b[i + 2] = s03 - s12;
    b[i + 3] = d03 - 2 * d12;
  }
  for (let j = at; j < at + 4; j++) {
    const s03 = b[j]! + b[12 + j]!;
    const d03 = b[j]! - b[12 + j]!;
    const s12 = b[4 + j]! + b[8 + j]!;
    const d12 = b[4 + j]! - b[8 + j]!;
    b[j] = s03 + s12;
    b[4 + j] = 2 * d03 + d12;
    b[8 + j] = s03 - s12;
    b[12 + j] = d03 - 2 * d12;
  }
}

/**
 * Quantises the coefficients at w[wAt] into levels[lAt] (raster order), from raster index
 * `from` (1 leaves out the DC, which is coded apart). Intra blocks round up a third, inter
 * blocks a sixth (the usual dead zones). Returns how many levels are non-zero.
 */
export function quantize4x4(
  w: Int32Array,
  wAt: number,
  levels: Int32Array,
  lAt: number,
  qp: number,
  intra: boolean,
  from = 0,
): number {
  const mf = QUANT_MF[qp]!;
  const shift = 15 + ((qp / 6) | 0);
  const round = ((1 << shift) / (intra ? 3 : 6)) | 0;
  let nonZero = 0;
  if (from > 0) levels[lAt] = 0;
  for (let i = from; i < 16; i++) {
    const v = w[wAt + i]!;
    let q = ((v < 0 ? -v : v) * mf[i]! + round) >> shift;
    if (q !== 0) {
      nonZero++;
      if (q > MAX_LEVEL) q = MAX_LEVEL;
    }
    levels[lAt + i] = v < 0 ? -q : q;
  }
  return nonZero;
}

/** Scaling of the 4x4 levels at levels[lAt] (8.5.12.1, flat matrices) into d[dAt], from raster index `from`. */
export function dequantize4x4(
  levels: Int32Array,
  lAt: number,
  d: Int32Array,
  dAt: number,
  qp: number,
  from = 0,
): void {
  const mul = DEQUANT_MUL[qp]!;
  for (let i = from; i < 16; i++) d[dAt + i] = levels[lAt + i]! * mul[i]!;
}

/** Inverse transform (8.5.12.2) of d[at], rows then columns, in place; leaves the residual. */
export function inverse4x4(d: Int32Array, at: number): void {
  for (let i = at; i < at + 16; i += 4) {
    const e0 = d[i]! + d[i + 2]!;
    const e1 = d[i]! - d[i + 2]!;
    const e2 = (d[i + 1]! >> 1) - d[i + 3]!;
    const e3 = d[i + 1]! + (d[i + 3]! >> 1);
    d[i] = e0 + e3;
    d[i + 1] = e1 + e2;
    d[i + 2] = e1 - e2;
    d[i + 3] = e0 - e3;
  }
  for (let j = at; j < at + 4; j++) {
    const g0 = d[j]! + d[8 + j]!;
    const g1 = d[j]! - d[8 + j]!;
    const g2 = (d[4 + j]! >> 1) - d[12 + j]!;
    const g3 = d[4 + j]! + (d[12 + j]! >> 1);
    d[j] = (g0 + g3 + 32) >> 6;
    d[4 + j] = (g1 + g2 + 32) >> 6;
    d[8 + j] = (g1 - g2 + 32) >> 6;
    d[12 + j] = (g0 - g3 + 32) >> 6;
  }
}

/** The 4x4 Hadamard transform H * c * H of b[0..16), in place (both directions, up to scale). */
function hadamard4x4(b: Int32Array): void {
  for (let i = 0; i < 16; i += 4) {
    const s01 = b[i]! + b[i + 1]!;
    const d01 = b[i]! - b[i + 1]!;
    const s23 = b[i + 2]! + b[i + 3]!;
    const d23 = b[i + 2]! - b[i + 3]!;
    b[i] = s01 + s23;
    b[i + 1] = s01 - s23;
    b[i + 2] = d01 - d23;
    b[i + 3] = d01 + d23;
  }
  for (let j = 0; j < 4; j++) {
    const s01 = b[j]! + b[4 + j]!;
    const d01 = b[j]! - b[4 + j]!;
    const s23 = b[8 + j]! + b[12 + j]!;
    const d23 = b[8 + j]! - b[12 + j]!;
    b[j] = s01 + s23;
    b[4 + j] = s01 - s23;
    b[8 + j] = d01 - d23;
    b[12 + j] = d01 + d23;
  }
}

/**
 * Intra 16x16 luma DC: the 16 blocks' DC coefficients (raster order of the blocks) through
 * the Hadamard transform, halved, and quantised into `levels`. Returns the non-zero count.
 */
export function quantizeLumaDc(dc: Int32Array, levels: Int32Array, qp: number): number {
  hadamard4x4(dc);
  const mf = QUANT_SCALE[qp % 6]![0];
  const shift = 16 + ((qp / 6) | 0);
  const round = ((1 << shift) / 3) | 0;
  let nonZero = 0;
  for (let i = 0; i < 16; i++) {
    const v = (dc[i]! + (dc[i]! > 0 ? 1 : 0)) >> 1;
    let q = ((v < 0 ? -v : v) * mf + round) >> shift;
    if (q !== 0) {
      nonZero++;
      if (q > MAX_LEVEL) q = MAX_LEVEL;
    }
    levels[i] = v < 0 ? -q : q;
  }
  return nonZero;
}

/** Intra 16x16 luma DC levels -> the blocks' DC values dcY (8.5.10), in place. */
export function dequantizeLumaDc(c: Int32Array, qp: number): void {
  hadamard4x4(c);
  const ls = 16 * DEQUANT_SCALE[qp % 6]![0];
  const q6 = (qp / 6) | 0;
  for (let i = 0; i < 16; i++) {
    c[i] = qp >= 36 ? (c[i]! * ls) << (q6 - 6) : (c[i]! * ls + (1 << (5 - q6))) >> (6 - q6);
  }
}

/** Chroma DC (4:2:0): the 2x2 Hadamard of the four blocks' DCs, quantised. Returns the non-zero count. */
export function quantizeChromaDc(
  dc: Int32Array,
  levels: Int32Array,
  lAt: number,
  qp: number,
  intra: boolean,
): number {
  const a = dc[0]! + dc[1]!;
  const b = dc[0]! - dc[1]!;
  const c = dc[2]! + dc[3]!;
  const d = dc[2]! - dc[3]!;
  dc[0] = a + c;
  dc[1] = b + d;
  dc[2] = a - c;
  dc[3] = b - d;
  const mf = QUANT_SCALE[qp % 6]![0];
  const shift = 16 + ((qp / 6) | 0);
  const round = ((1 << shift) / (intra ? 3 : 6)) | 0;
  let nonZero = 0;
  for (let i = 0; i < 4; i++) {
    const v = dc[i]!;
    let q = ((v < 0 ? -v : v) * mf + round) >> shift;
    if (q !== 0) {
      nonZero++;
      if (q > MAX_LEVEL) q = MAX_LEVEL;
    }
    levels[lAt + i] = v < 0 ? -q : q;
  }
  return nonZero;
}

/** Chroma DC levels -> the four blocks' DC values dcC (8.5.11.2), in place. */
export function dequantizeChromaDc(c: Int32Array, qp: number): void {
  const a = c[0]! + c[1]!;
  const b = c[0]! - c[1]!;
  const e = c[2]! + c[3]!;
  const d = c[2]! - c[3]!;
  const scale = (16 * DEQUANT_SCALE[qp % 6]![0]) << ((qp / 6) | 0);
  c[0] = ((a + e) * scale) >> 5;
  c[1] = ((b + d) * scale) >> 5;
  c[2] = ((a - e) * scale) >> 5;
  c[3] = ((b - d) * scale) >> 5;
}

/**
 * Sum of absolute Hadamard-transformed differences of a 4x4 block: how many bits a
 * residual will cost, estimated without quantising it (the usual mode-decision measure).
 */
export function satd4x4(
  src: Uint8Array,
  srcAt: number,
  srcStride: number,
  pred: Int32Array | Uint8Array,
  predAt: number,
  predStride: number,
): number {
  // Horizontal butterflies of each row's differences, then vertical ones per column; written
  // out row by row because this is where the encoder spends most of its time.
  let s = srcAt;
  let p = predAt;
  let a = src[s]! - pred[p]!;
  let b = src[s + 1]! - pred[p + 1]!;
  let c = src[s + 2]! - pred[p + 2]!;
  let d = src[s + 3]! - pred[p + 3]!;
  const r00 = a + b + c + d;
  const r01 = a + b - c - d;
  const r02 = a - b - c + d;
  const r03 = a - b + c - d;
  s += srcStride;
  p += predStride;
  a = src[s]! - pred[p]!;
  b = src[s + 1]! - pred[p + 1]!;
  c = src[s + 2]! - pred[p + 2]!;
  d = src[s + 3]! - pred[p + 3]!;
  const r10 = a + b + c + d;
  const r11 = a + b - c - d;
  const r12 = a - b - c + d;
  const r13 = a - b + c - d;
  s += srcStride;
  p += predStride;
  a = src[s]! - pred[p]!;
  b = src[s + 1]! - pred[p + 1]!;
  c = src[s + 2]! - pred[p + 2]!;
  d = src[s + 3]! - pred[p + 3]!;
  const r20 = a + b + c + d;
  const r21 = a + b - c - d;
  const r22 = a - b - c + d;
  const r23 = a - b + c - d;
  s += srcStride;
  p += predStride;
  a = src[s]! - pred[p]!;
  b = src[s + 1]! - pred[p + 1]!;
  c = src[s + 2]! - pred[p + 2]!;
  d = src[s + 3]! - pred[p + 3]!;
  const r30 = a + b + c + d;
  const r31 = a + b - c - d;
  const r32 = a - b - c + d;
  const r33 = a - b + c - d;
  return (
    (column(r00, r10, r20, r30) +
      column(r01, r11, r21, r31) +
      column(r02, r12, r22, r32) +
      column(r03, r13, r23, r33)) >>
    1
  );
}

/** The sum of absolute values of a column's Hadamard transform. */
function column(a: number, b: number, c: number, d: number): number {
  const s01 = a + b;
  const d01 = a - b;
  const s23 = c + d;
  const d23 = c - d;
  const x = s01 + s23;
  const y = s01 - s23;
  const z = d01 - d23;
  const w = d01 + d23;
  return (x < 0 ? -x : x) + (y < 0 ? -y : y) + (z < 0 ? -z : z) + (w < 0 ? -w : w);
}
