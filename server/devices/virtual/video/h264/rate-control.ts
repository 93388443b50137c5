/**
 * From a bit rate to a quantiser. A screen recording is mostly still: frames come only when
 * something changed, and unchanged macroblocks cost nothing. So the bit rate mostly says how
 * good a changed region may look, and only a burst of large changes (an app opening every
 * frame) has to be held back to the budget.
 *
 * The base QP comes from the bits each pixel may have per second at a screen's 30 frames a
 * second: 0.5 bits or more (Android's default 20 Mbit/s on a 720x1280 screen is 0.72)
 * gives QP 20, where antialiased text keeps its edges; every halving of that gives 3 QP
 * more. A leaky bucket a second deep raises QP while recent frames spent more than the rate
 * allows, and lets it fall back once they did not.
 */

export const MIN_QP = 12;
export const MAX_QP = 51;
/** QP at 0.5 bits per pixel-second and above. */
const BEST_QP = 20;
/** How far above its base the bucket may push QP. */
const MAX_BOOST = 18;

export function baseQp(bitRate: number, width: number, height: number): number {
  const bitsPerPixelSecond = bitRate / (width * height * 30);
  const qp = BEST_QP + 3 * Math.log2(0.5 / bitsPerPixelSecond);
  return Math.round(Math.min(MAX_QP - MAX_BOOST, Math.max(BEST_QP, qp)));
}

export class RateControl {
  readonly base: number;
  private boost = 0;
  /** Bits spent beyond what the rate allowed so far (never below zero). */
  private debt = 0;
  private lastMs: number | null = null;

  constructor(
    private readonly bitRate: number,
    width: number,
    height: number,
  ) {
    this.base = baseQp(bitRate, width, height);
  }

  /** The QP for the next frame. */
  qp(): number {
    return Math.min(MAX_QP, this.base + this.boost);
  }

  /** Accounts a frame of `bits` encoded at `timeMs`. */
  spent(bits: number, timeMs: number): void {
    const elapsed = this.lastMs === null ? 0 : Math.max(0, timeMs - this.lastMs);
    this.lastMs = timeMs;
    this.debt = Math.max(0, this.debt + bits - (this.bitRate * elapsed) / 1000);
    // Over half a second's budget behind: coarser; caught up: finer again, step by step.
    if (this.debt > this.bitRate / 2) this.boost = Math.min(MAX_BOOST, this.boost + 2);
    else if (this.debt < this.bitRate / 8) this.boost = Math.max(0, this.boost - 1);
  }
}
