/**
 * Intra prediction (clause 8.3) exactly as a decoder computes it: 4x4 luma (nine
 * directions), 16x16 luma and 8x8 chroma (vertical, horizontal, DC, plane). Predictions read
 * the reconstructed neighbours of the block; which of them exist decides which modes may be
 * used.
 */

/** Intra 4x4 prediction modes (Table 8-2). */
export const I4 = {
  VERTICAL: 0,
  HORIZONTAL: 1,
  DC: 2,
  DIAGONAL_DOWN_LEFT: 3,
  DIAGONAL_DOWN_RIGHT: 4,
  VERTICAL_RIGHT: 5,
  HORIZONTAL_DOWN: 6,
  VERTICAL_LEFT: 7,
  HORIZONTAL_UP: 8,
} as const;

/** Intra 16x16 prediction modes (Table 8-4). */
export const I16 = { VERTICAL: 0, HORIZONTAL: 1, DC: 2, PLANE: 3 } as const;

/** Intra chroma prediction modes (Table 8-5): note the order differs from 16x16 luma. */
export const CHROMA = { DC: 0, HORIZONTAL: 1, VERTICAL: 2, PLANE: 3 } as const;

/**
 * The neighbours of a 4x4 block laid out along one edge: left column bottom to top
 * (indices 0-3 for y = 3..0), the top-left corner (4), then the top row and top-right
 * (5-12 for x = 0..7). p(x, -1) is edge[5 + x] and p(-1, y) is edge[3 - y], so p(-1, -1)
 * is edge[4] either way.
 */
export interface Edge4 {
  edge: Int32Array;
  left: boolean;
  top: boolean;
  topLeft: boolean;
}

/** Whether a 4x4 mode can be used with the neighbours that exist (8.3.1.2). */
export function i4Available(mode: number, n: Edge4): boolean {
  switch (mode) {
    case I4.VERTICAL:
    case I4.DIAGONAL_DOWN_LEFT:
    case I4.VERTICAL_LEFT:
      return n.top;
    case I4.HORIZONTAL:
    case I4.HORIZONTAL_UP:
      return n.left;
    case I4.DC:
      return true;
    default:
      return n.top && n.left && n.topLeft;
  }
}

/**
 * The 4x4 prediction of `mode` into out[16] (raster order). With the edge layout of Edge4,
 * p(x, -1) = e[5 + x] and p(-1, y) = e[3 - y], so each directional mode is a two- or
 * three-tap filter along the edge; the comments give the standard's formulas.
 */
export function predict4x4(mode: number, n: Edge4, out: Int32Array): void {
  const e = n.edge;
  switch (mode) {
    case I4.VERTICAL:
      for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) out[y * 4 + x] = e[5 + x]!;
      return;
    case I4.HORIZONTAL:
      for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) out[y * 4 + x] = e[3 - y]!;
      return;
    case I4.DC: {
      const sumT = e[5]! + e[6]! + e[7]! + e[8]!;
      const sumL = e[0]! + e[1]! + e[2]! + e[3]!;
      const v =
        n.top && n.left ? (sumT + sumL + 4) >> 3 : n.left ? (sumL + 2) >> 2 : n.top ? (sumT + 2) >> 2 : 128;
      out.fill(v, 0, 16);
      return;
    }
    case I4.DIAGONAL_DOWN_LEFT:
      // (p[x+y,-1] + 2p[x+y+1,-1] + p[x+y+2,-1] + 2) >> 2; the far corner (p[6,-1] + 3p[7,-1] + 2) >> 2.
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++) {
          const k = 5 + x + y;
          out[y * 4 + x] =
            x === 3 && y === 3
              ? (e[11]! + 3 * e[12]! + 2) >> 2
              : (e[k]! + 2 * e[k + 1]! + e[k + 2]! + 2) >> 2;
        }
      }
      return;
    case I4.DIAGONAL_DOWN_RIGHT:
      // Along the edge through the corner: position 4 + x - y, filtered with its neighbours.
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++) {
          const k = 4 + x - y;
          out[y * 4 + x] = (e[k - 1]! + 2 * e[k]! + e[k + 1]! + 2) >> 2;
        }
      }
      return;
    case I4.VERTICAL_RIGHT:
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++) {
          const z = 2 * x - y;
          // k is the edge index of p[x - (y >> 1), -1].
          const k = 5 + x - (y >> 1);
          let v: number;
          if (z >= 0 && (z & 1) === 0) v = (e[k - 1]! + e[k]! + 1) >> 1;
          else if (z > 0) v = (e[k - 2]! + 2 * e[k - 1]! + e[k]! + 2) >> 2;
          else if (z === -1) v = (e[3]! + 2 * e[4]! + e[5]! + 2) >> 2;
          else v = (e[4 - y]! + 2 * e[5 - y]! + e[6 - y]! + 2) >> 2; // p[-1,y-1], p[-1,y-2], p[-1,y-3]
          out[y * 4 + x] = v;
        }
      }
      return;
    case I4.HORIZONTAL_DOWN:
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++) {
          const z = 2 * y - x;
          // k is the edge index of p[-1, y - (x >> 1)].
          const k = 3 - y + (x >> 1);
          let v: number;
          if (z >= 0 && (z & 1) === 0) v = (e[k + 1]! + e[k]! + 1) >> 1;
          else if (z > 0) v = (e[k + 2]! + 2 * e[k + 1]! + e[k]! + 2) >> 2;
          else if (z === -1) v = (e[3]! + 2 * e[4]! + e[5]! + 2) >> 2;
          else v = (e[4 + x]! + 2 * e[3 + x]! + e[2 + x]! + 2) >> 2; // p[x-1,-1], p[x-2,-1], p[x-3,-1]
          out[y * 4 + x] = v;
        }
      }
      return;
    case I4.VERTICAL_LEFT:
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++) {
          const k = 5 + x + (y >> 1);
          out[y * 4 + x] =
            (y & 1) === 0 ? (e[k]! + e[k + 1]! + 1) >> 1 : (e[k]! + 2 * e[k + 1]! + e[k + 2]! + 2) >> 2;
        }
      }
      return;
    default:
      // Horizontal-up, from the left column downwards; past its end, the last sample.
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++) {
          const z = x + 2 * y;
          // k is the edge index of p[-1, y + (x >> 1)].
          const k = 3 - y - (x >> 1);
          let v: number;
          if (z > 5) v = e[0]!;
          else if (z === 5) v = (e[1]! + 3 * e[0]! + 2) >> 2;
          else if ((z & 1) === 0) v = (e[k]! + e[k - 1]! + 1) >> 1;
          else v = (e[k]! + 2 * e[k - 1]! + e[k - 2]! + 2) >> 2;
          out[y * 4 + x] = v;
        }
      }
  }
}

/** What a 16x16 luma or 8x8 chroma block's neighbours are, read from the reconstructed plane. */
export interface BlockNeighbours {
  plane: Uint8Array;
  stride: number;
  /** Top-left sample of the block. */
  x: number;
  y: number;
  left: boolean;
  top: boolean;
  topLeft: boolean;
}

/** Whether a 16x16 luma mode can be used. */
export function i16Available(mode: number, n: BlockNeighbours): boolean {
  if (mode === I16.VERTICAL) return n.top;
  if (mode === I16.HORIZONTAL) return n.left;
  if (mode === I16.DC) return true;
  return n.top && n.left && n.topLeft;
}

/** Whether a chroma mode can be used. */
export function chromaAvailable(mode: number, n: BlockNeighbours): boolean {
  if (mode === CHROMA.VERTICAL) return n.top;
  if (mode === CHROMA.HORIZONTAL) return n.left;
  if (mode === CHROMA.DC) return true;
  return n.top && n.left && n.topLeft;
}

/** 16x16 luma prediction of `mode` into out[256] (8.3.3). */
export function predict16x16(mode: number, n: BlockNeighbours, out: Int32Array): void {
  predictSquare(
    16,
    mode === I16.VERTICAL ? 'v' : mode === I16.HORIZONTAL ? 'h' : mode === I16.DC ? 'dc' : 'plane',
    n,
    out,
  );
}

/** 8x8 chroma prediction (4:2:0) of `mode` into out[64] (8.3.4). */
export function predictChroma(mode: number, n: BlockNeighbours, out: Int32Array): void {
  predictSquare(
    8,
    mode === CHROMA.VERTICAL ? 'v' : mode === CHROMA.HORIZONTAL ? 'h' : mode === CHROMA.DC ? 'dc' : 'plane',
    n,
    out,
  );
}

/** Vertical, horizontal, DC and plane prediction of a 16x16 luma or 8x8 chroma block. */
function predictSquare(
  size: 8 | 16,
  kind: 'v' | 'h' | 'dc' | 'plane',
  n: BlockNeighbours,
  out: Int32Array,
): void {
  const { plane, stride } = n;
  const topAt = (n.y - 1) * stride + n.x;
  const leftAt = n.y * stride + n.x - 1;
  if (kind === 'v') {
    for (let y = 0; y < size; y++) for (let x = 0; x < size; x++) out[y * size + x] = plane[topAt + x]!;
  } else if (kind === 'h') {
    for (let y = 0; y < size; y++) out.fill(plane[leftAt + y * stride]!, y * size, y * size + size);
  } else if (kind === 'dc' && size === 16) {
    let sumT = 0;
    let sumL = 0;
    for (let i = 0; i < 16; i++) {
      if (n.top) sumT += plane[topAt + i]!;
      if (n.left) sumL += plane[leftAt + i * stride]!;
    }
    const v =
      n.top && n.left ? (sumT + sumL + 16) >> 5 : n.left ? (sumL + 8) >> 4 : n.top ? (sumT + 8) >> 4 : 128;
    out.fill(v, 0, 256);
  } else if (kind === 'dc') {
    // Each chroma 4x4 block has its own DC, from the neighbours nearest to it (8.3.4.1-3).
    for (let by = 0; by < 2; by++) {
      for (let bx = 0; bx < 2; bx++) {
        let sumT = 0;
        let sumL = 0;
        for (let i = 0; i < 4; i++) {
          if (n.top) sumT += plane[topAt + bx * 4 + i]!;
          if (n.left) sumL += plane[leftAt + (by * 4 + i) * stride]!;
        }
        let v: number;
        if (bx === by) {
          v =
            n.top && n.left
              ? (sumT + sumL + 4) >> 3
              : n.left
                ? (sumL + 2) >> 2
                : n.top
                  ? (sumT + 2) >> 2
                  : 128;
        } else if (bx === 1) {
          v = n.top ? (sumT + 2) >> 2 : n.left ? (sumL + 2) >> 2 : 128;
        } else {
          v = n.left ? (sumL + 2) >> 2 : n.top ? (sumT + 2) >> 2 : 128;
        }
        for (let y = 0; y < 4; y++) out.fill(v, (by * 4 + y) * 8 + bx * 4, (by * 4 + y) * 8 + bx * 4 + 4);
      }
    }
  } else {
    // Plane: a gradient fitted to the top row and left column through the corner.
    const half = size >> 1;
    const corner = plane[topAt - 1]!;
    let h = 0;
    let v = 0;
    for (let i = 0; i < half; i++) {
      const before = half - 2 - i;
      h += (i + 1) * (plane[topAt + half + i]! - (before >= 0 ? plane[topAt + before]! : corner));
      v +=
        (i + 1) *
        (plane[leftAt + (half + i) * stride]! - (before >= 0 ? plane[leftAt + before * stride]! : corner));
    }
    const a = 16 * (plane[leftAt + (size - 1) * stride]! + plane[topAt + size - 1]!);
    // 16x16: b = (5H + 32) >> 6; 8x8 chroma (4:2:0): b = (34H + 32) >> 6; likewise c.
    const m = size === 16 ? 5 : 34;
    const b = (m * h + 32) >> 6;
    const c = (m * v + 32) >> 6;
    const mid = half - 1;
    for (let y = 0; y < size; y++) {
      for (let x = 0; x < size; x++) out[y * size + x] = clip((a + b * (x - mid) + c * (y - mid) + 16) >> 5);
    }
  }
}

export function clip(v: number): number {
  return v < 0 ? 0 : v > 255 ? 255 : v;
}
