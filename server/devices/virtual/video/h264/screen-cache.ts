/**
 * Screens coded whole, kept by their pixels, so that a screen shown again is not coded again:
 * later in the same recording, once it has left the reference pictures, or in a later one.
 *
 * A test's screens come back all the time: every test's phone starts on the same home
 * screen, most open the same app, and a test that repeats a flow shows the same few screens
 * in turn. A new screen is the most expensive picture there is (every macroblock intra-coded,
 * 45-130 ms at 720x1280), and with eight references a screen that comes back within a few
 * pictures is copied for almost nothing; one that comes back later would be coded again.
 *
 * A picture whose every macroblock is intra-coded depends on nothing but its pixels, its QP
 * and its kind (IDR or P): its intra predictions and its CAVLC contexts read only macroblocks
 * of the same picture. So its slice data (everything after the slice header, which holds
 * the picture's number and how many references it may use) and the coding state it leaves
 * are the same wherever it appears, and can be written again after a new header. The key is
 * a SHA-256 of the pixels: a few ms for a whole screen, against the tens of ms of coding it.
 *
 * What is kept is bounded by `maxBytes` (about 1.6 MB a 720x1280 screen); the screen used
 * longest ago goes first.
 */
import { createHash } from 'node:crypto';

/** What the encoder's later pictures depend on, as it was after a picture. */
export interface CodingState {
  recY: Uint8Array;
  recU: Uint8Array;
  recV: Uint8Array;
  coded: Uint8Array;
  lumaTotals: Uint8Array;
  chromaTotals: Uint8Array;
  i4Modes: Int8Array;
}

/** A screen coded whole: its slice data after the header, and the state it leaves. */
export interface KeptScreen {
  /** The slice data's bits, from the first byte's most significant bit on. */
  readonly data: Uint8Array;
  readonly bits: number;
  readonly codedMacroblocks: number;
  readonly state: CodingState;
}

export interface ScreenCacheOptions {
  /**
   * The most bytes kept; 32 MiB by default: about twenty 720x1280 screens (a server keeps up
   * to 8 encoder threads, each with its own).
   */
  maxBytes?: number;
}

export class ScreenCache {
  private readonly maxBytes: number;
  /** By key, least recently used first (a Map keeps the order of insertion). */
  private readonly screens = new Map<string, KeptScreen & { bytes: number }>();
  private bytes = 0;

  constructor(options: ScreenCacheOptions = {}) {
    this.maxBytes = options.maxBytes ?? 32 * 1024 * 1024;
  }

  /**
   * The key of a picture coded whole: everything that shapes its slice data (the picture's
   * size, its kind, its QP and its pixels).
   */
  static key(width: number, height: number, idr: boolean, qp: number, pixels: Uint8Array): string {
    const digest = createHash('sha256').update(pixels).digest('base64');
    return `${width}x${height} ${idr ? 'IDR' : 'P'} qp ${qp} ${digest}`;
  }

  /** The screen kept under `key`, if there is one. */
  find(key: string): KeptScreen | null {
    const screen = this.screens.get(key);
    if (!screen) return null;
    // Used again: the last to be forgotten.
    this.screens.delete(key);
    this.screens.set(key, screen);
    return screen;
  }

  /** Keeps a screen just coded (its data and state are copied); false when it does not fit. */
  keep(key: string, screen: KeptScreen): boolean {
    const state: CodingState = {
      recY: screen.state.recY.slice(),
      recU: screen.state.recU.slice(),
      recV: screen.state.recV.slice(),
      coded: screen.state.coded.slice(),
      lumaTotals: screen.state.lumaTotals.slice(),
      chromaTotals: screen.state.chromaTotals.slice(),
      i4Modes: screen.state.i4Modes.slice(),
    };
    const bytes =
      screen.data.length +
      Object.values(state).reduce((sum, array: Uint8Array | Int8Array) => sum + array.length, 0);
    if (bytes > this.maxBytes) return false;
    const earlier = this.screens.get(key);
    if (earlier) {
      this.screens.delete(key);
      this.bytes -= earlier.bytes;
    }
    for (const [oldest, kept] of this.screens) {
      if (this.bytes + bytes <= this.maxBytes) break;
      this.screens.delete(oldest);
      this.bytes -= kept.bytes;
    }
    this.screens.set(key, { ...screen, data: screen.data.slice(), state, bytes });
    this.bytes += bytes;
    return true;
  }

  /** How many screens are kept (tests). */
  get size(): number {
    return this.screens.size;
  }
}
