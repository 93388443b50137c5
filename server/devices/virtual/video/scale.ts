/**
 * Fitting the screen into a video of another size, as `screenrecord --size` does: the
 * screen keeps its aspect ratio, is scaled to the largest area that fits and centred, and
 * the rest of the picture is black (AOSP screenrecord's setDisplayProjection()).
 */

/** Where the screen's picture lies in the video. */
export interface ContentArea {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * The content area for a screen of screenW x screenH in a video of videoW x videoH, computed
 * as screenrecord computes it (in single-precision floats, truncating).
 */
export function contentArea(screenW: number, screenH: number, videoW: number, videoH: number): ContentArea {
  const aspect = Math.fround(screenH / screenW);
  let width: number;
  let height: number;
  if (videoH > Math.floor(Math.fround(videoW * aspect))) {
    // Limited by the narrow width: shorter than the video.
    width = videoW;
    height = Math.floor(Math.fround(videoW * aspect));
  } else {
    // Limited by the short height: narrower than the video.
    height = videoH;
    width = Math.floor(Math.fround(videoH / aspect));
  }
  return { x: Math.floor((videoW - width) / 2), y: Math.floor((videoH - height) / 2), width, height };
}

/** For each output sample: the first input sample it reads, and the 14-bit weights of the ones from there. */
interface Taps {
  first: Int32Array;
  count: Int32Array;
  weights: Int32Array[];
}

const ONE = 1 << 14;

/**
 * Resampling taps from `inLen` samples to `outLen`: the area each output sample covers when
 * shrinking (text stays legible, no aliasing), linear interpolation when growing.
 */
function taps(inLen: number, outLen: number): Taps {
  const first = new Int32Array(outLen);
  const count = new Int32Array(outLen);
  const weights: Int32Array[] = [];
  const scale = inLen / outLen;
  for (let o = 0; o < outLen; o++) {
    let w: number[];
    let start: number;
    if (scale >= 1) {
      const from = o * scale;
      const to = from + scale;
      start = Math.floor(from);
      w = [];
      for (let i = start; i < to && i < inLen; i++) w.push(Math.min(to, i + 1) - Math.max(from, i));
    } else {
      const centre = (o + 0.5) * scale - 0.5;
      const i0 = Math.floor(centre);
      const frac = centre - i0;
      start = Math.min(Math.max(i0, 0), inLen - 1);
      const next = Math.min(Math.max(i0 + 1, 0), inLen - 1);
      w = next === start ? [1] : [1 - frac, frac];
    }
    const total = w.reduce((a, b) => a + b, 0);
    const fixed = Int32Array.from(w, (v) => Math.round((v / total) * ONE));
    // Rounding may leave the sum off by a little; the largest tap absorbs it.
    const sum = fixed.reduce((a, b) => a + b, 0);
    let largest = 0;
    for (let i = 1; i < fixed.length; i++) if (fixed[i]! > fixed[largest]!) largest = i;
    fixed[largest]! += ONE - sum;
    first[o] = start;
    count[o] = fixed.length;
    weights.push(fixed);
  }
  return { first, count, weights };
}

/** Scales RGBA screens of one size into RGBA video frames of another. */
export class ScreenScaler {
  readonly area: ContentArea;
  /** The buffers and taps of a scaling, made at its first frame (a recording at the screen's size has none). */
  #scaling: { out: Uint8Array; rows: Int32Array; xTaps: Taps; yTaps: Taps } | null = null;

  constructor(
    readonly screenWidth: number,
    readonly screenHeight: number,
    readonly videoWidth: number,
    readonly videoHeight: number,
  ) {
    this.area = contentArea(screenWidth, screenHeight, videoWidth, videoHeight);
  }

  /** Whether frames pass through unchanged (the video is the screen's size). */
  get identity(): boolean {
    return this.screenWidth === this.videoWidth && this.screenHeight === this.videoHeight;
  }

  #prepare(): { out: Uint8Array; rows: Int32Array; xTaps: Taps; yTaps: Taps } {
    if (this.#scaling) return this.#scaling;
    const out = new Uint8Array(this.videoWidth * this.videoHeight * 4);
    // Black bars, opaque; only the content area is written per frame.
    for (let i = 3; i < out.length; i += 4) out[i] = 255;
    this.#scaling = {
      out,
      rows: new Int32Array(this.area.width * this.screenHeight * 3),
      xTaps: taps(this.screenWidth, this.area.width),
      yTaps: taps(this.screenHeight, this.area.height),
    };
    return this.#scaling;
  }

  /** The video frame for a screen; the returned array is reused by the next call. */
  scale(screen: Uint8Array): Uint8Array {
    if (this.identity) return screen;
    const { rows, out, xTaps, yTaps } = this.#prepare();
    const area = this.area;
    const sw = this.screenWidth;
    const aw = area.width;
    // Horizontal pass: every screen row to the content width (values scaled by 2^14).
    for (let y = 0; y < this.screenHeight; y++) {
      for (let x = 0; x < aw; x++) {
        const w = xTaps.weights[x]!;
        let at = (y * sw + xTaps.first[x]!) * 4;
        let r = 0;
        let g = 0;
        let b = 0;
        for (let k = 0; k < xTaps.count[x]!; k++, at += 4) {
          r += screen[at]! * w[k]!;
          g += screen[at + 1]! * w[k]!;
          b += screen[at + 2]! * w[k]!;
        }
        const o = (y * aw + x) * 3;
        rows[o] = r;
        rows[o + 1] = g;
        rows[o + 2] = b;
      }
    }
    // Vertical pass into the content area, back to 8 bits with rounding.
    for (let y = 0; y < area.height; y++) {
      const w = yTaps.weights[y]!;
      const first = yTaps.first[y]!;
      const n = yTaps.count[y]!;
      const dst = ((area.y + y) * this.videoWidth + area.x) * 4;
      for (let x = 0; x < aw; x++) {
        let r = 0;
        let g = 0;
        let b = 0;
        for (let k = 0; k < n; k++) {
          const o = ((first + k) * aw + x) * 3;
          // 2^14 * 2^14 * 255 overflows 32 bits: scale one factor down first.
          r += (rows[o]! >> 6) * w[k]!;
          g += (rows[o + 1]! >> 6) * w[k]!;
          b += (rows[o + 2]! >> 6) * w[k]!;
        }
        const d = dst + x * 4;
        out[d] = Math.min(255, (r + (1 << 21)) >> 22);
        out[d + 1] = Math.min(255, (g + (1 << 21)) >> 22);
        out[d + 2] = Math.min(255, (b + (1 << 21)) >> 22);
      }
    }
    return out;
  }
}
