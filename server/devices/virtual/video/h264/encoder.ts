/**
 * An H.264 encoder for screen recordings, in TypeScript.
 *
 * Why phonelease has its own: recording the virtual phone must work on a fresh machine with
 * nothing but npm. Playwright's ffmpeg download and the ffmpeg-static package cannot be
 * installed on many CI machines (no access to their download hosts), the one maintained-
 * looking npm H.264 encoder (h264-mp4-encoder) has had no release since 2020, and Node has
 * no WebCodecs. Phone screens are an easy case for an encoder (large flat areas, text, few
 * changes between frames), so a small one does well: no native code, no download, offline.
 *
 * What it writes: Constrained Baseline profile, 4:2:0, progressive frames, CAVLC, up to 8
 * reference frames, one slice per picture, BT.601 limited range colours.
 * - Every picture after the first IDR is a P picture whose unchanged macroblocks are P_Skip
 *   runs: a frame identical to the one before costs a few bytes.
 * - A changed macroblock that looks exactly as it did in one of the last few pictures (the
 *   screen went back to where it was: an app closed, a dialog went away, the same screen
 *   again) is copied from that reference picture: a few bits, and no search or transform.
 *   A test that goes back and forth between screens costs little more than the first visit.
 * - Changed macroblocks choose between Intra 4x4 (nine directions), Intra 16x16 (four
 *   modes) and inter prediction from the same place in the previous picture, by the
 *   Hadamard-transformed residual each leaves plus an estimate of its header bits.
 * - The deblocking filter is off in every slice, so the reconstruction kept here is exactly
 *   the decoder's picture and P pictures never drift.
 * - A new screen (most macroblocks changed, none as in an earlier picture) is coded whole,
 *   every macroblock intra, as an IDR picture is: then its bits depend on nothing but its
 *   pixels and QP, and a screen coded whole before (in this stream or an earlier one on the
 *   same thread) is written again from a ScreenCache, not coded again (see screen-cache.ts).
 * - An IDR picture every `idrIntervalMs`, so a player can seek and a piece of a recording
 *   plays from its last IDR.
 * All motion vectors are zero, which is also why the reconstruction can be updated in place:
 * a macroblock's inter prediction reads only its own place in the previous picture, and
 * intra prediction only neighbours this picture has already coded.
 */
import { BitWriter, nalUnit } from './bit-writer.js';
import { ResidualWriter } from './cavlc.js';
import { pixelWords, rgbaMacroblockToYuv } from './color.js';
import {
  chromaAvailable,
  clip,
  i16Available,
  i4Available,
  predict16x16,
  predict4x4,
  predictChroma,
  type BlockNeighbours,
  type Edge4,
} from './intra.js';
import {
  BT601_LIMITED,
  LOG2_MAX_FRAME_NUM,
  levelFor,
  maxReferenceFrames,
  pictureParameterSet,
  sequenceParameterSet,
} from './parameter-sets.js';
import { MAX_QP, MIN_QP, RateControl } from './rate-control.js';
import { ScreenCache, type CodingState } from './screen-cache.js';
import { CBP_CODE_NUM_INTER, CBP_CODE_NUM_INTRA, CHROMA_QP, ZIGZAG } from './tables.js';
import {
  dequantize4x4,
  dequantizeChromaDc,
  dequantizeLumaDc,
  forward4x4,
  inverse4x4,
  quantize4x4,
  quantizeChromaDc,
  quantizeLumaDc,
  satd4x4,
} from './transform.js';

/** A picture stopped part way by its `stop` (see H264Encoder.encode). */
export class EncodeStopped extends Error {
  override name = 'EncodeStopped';
  /**
   * @param undone whether the encoder is as it was before the picture (see
   *   H264Encoder.undoable); if not, it is not to be used again.
   */
  constructor(readonly undone: boolean) {
    super('the picture was stopped before it was encoded');
  }
}

export interface H264EncoderOptions {
  /** Picture size in pixels; both even. */
  width: number;
  height: number;
  /** Target bits per second (Android's screenrecord default is 20 Mbit/s). */
  bitRate: number;
  /** The most frames a second the caller will send (sets the stream's level); 30 by default. */
  maxFps?: number;
  /** Longest time between IDR pictures, in ms of the frames' timestamps; 5 s by default. */
  idrIntervalMs?: number;
  /** A fixed QP instead of rate control (tests). */
  qp?: number;
  /**
   * How many earlier pictures a changed macroblock may be copied from: 8 by default (fewer
   * where no level's decoders hold as many at this size; 1: the last picture only). The
   * level is the lowest that holds them.
   */
  references?: number;
  /**
   * Screens coded whole before (see screen-cache.ts): one shown again is written from there,
   * not coded again. Share one between the encoders a thread makes one after another.
   */
  screenCache?: ScreenCache;
  /** Where reference pictures' memory is taken from and left (see SparePictures); the encoder's own by default. */
  spares?: SparePictures;
}

export interface EncodedPicture {
  /** SPS and PPS (with every IDR picture), then the picture's slice. */
  nalUnits: Uint8Array[];
  keyframe: boolean;
  qp: number;
  /** Macroblocks that were coded rather than skipped. */
  codedMacroblocks: number;
  /** Of those, the ones copied from an earlier picture than the last. */
  copiedMacroblocks: number;
}

/** (x, y) of each luma4x4BlkIdx in 4x4-block units (6.4.3). */
const BLK_X = Uint8Array.of(0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2, 3, 2, 3);
const BLK_Y = Uint8Array.of(0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3);
/** luma4x4BlkIdx at (x, y): BLK_INDEX[y * 4 + x]. */
const BLK_INDEX = Uint8Array.from({ length: 16 }, (_, i) => {
  for (let k = 0; k < 16; k++) if (BLK_X[k] === (i & 3) && BLK_Y[k] === i >> 2) return k;
  return 0;
});
const AC_SCAN = ZIGZAG.subarray(1);
const CHROMA_DC_SCAN = Uint8Array.of(0, 1, 2, 3);
const I4_DC = 2;

type MbKind = 'skip' | 'i4' | 'i16' | 'inter';

/** A reference picture's reconstruction. */
interface Planes {
  y: Uint8Array;
  u: Uint8Array;
  v: Uint8Array;
}

/**
 * The most earlier pictures a P picture refers to (fewer where no level's decoders hold as
 * many at the picture's size). A test goes back and forth between a few screens (an app,
 * its next screen, Settings, the launcher): with 4, about half of its whole-screen changes
 * were coded again (75-150 ms of a core each at 720x1280), with 8 a quarter to two fifths
 * (bench/video.ts's login flow). A 720x1280 stream is then level 4.0 (nine frames at that
 * size) instead of 3.1 (five).
 */
const MAX_REFERENCES = 8;

/**
 * Memory of reference pictures no picture refers to any more, for the next ones: an IDR
 * picture empties the references, and an encoder that is done leaves its own to the next
 * encoder on its thread (share one between them). Each new 720x1280 reference would
 * otherwise be 5 MB of new memory, which the kernel hands over page by page (dear in a
 * virtual machine) and the garbage collector later takes back: 40 MB in every recording.
 */
export class SparePictures {
  private readonly pixels: Buffer[] = [];
  private readonly planes: Planes[] = [];

  /** `most`: how many of each are kept (the newest). */
  constructor(private readonly most = MAX_REFERENCES) {}

  takePixels(bytes: number): Buffer {
    const i = this.pixels.findIndex((b) => b.length === bytes);
    return i >= 0 ? this.pixels.splice(i, 1)[0]! : Buffer.allocUnsafe(bytes);
  }

  takePlanes(luma: number, chroma: number): Planes {
    const i = this.planes.findIndex((p) => p.y.length === luma && p.u.length === chroma);
    if (i >= 0) return this.planes.splice(i, 1)[0]!;
    return { y: new Uint8Array(luma), u: new Uint8Array(chroma), v: new Uint8Array(chroma) };
  }

  give(pixels: Buffer[], planes: Planes[]): void {
    this.pixels.unshift(...pixels);
    this.planes.unshift(...planes);
    this.pixels.length = Math.min(this.pixels.length, this.most);
    this.planes.length = Math.min(this.planes.length, this.most);
  }

  /** How many pictures' pixels are kept (tests). */
  get size(): number {
    return this.pixels.length;
  }
}

/** The approximate header bits of each choice, weighed against residual cost in decisions. */
const HEADER_BITS = { inter: 3, i16: 7, i4: 4 } as const;

/** λ for SATD-based decisions: doubles every 6 QP, like the quantiser step. */
function lambdaFor(qp: number): number {
  return Math.max(1, Math.round(2 ** ((qp - 12) / 6)));
}

export class H264Encoder {
  readonly width: number;
  readonly height: number;
  readonly sps: Uint8Array;
  readonly pps: Uint8Array;
  /** How many pictures the decoder keeps for reference (max_num_ref_frames). */
  readonly references: number;

  private readonly mbW: number;
  private readonly mbH: number;
  private readonly stride: number;
  private readonly cStride: number;
  private readonly idrIntervalMs: number;
  private readonly fixedQp: number | null;
  private readonly rate: RateControl;
  private readonly residual = new ResidualWriter();

  // Source (this frame) and reconstructed (decoder's) planes, padded to whole macroblocks.
  private readonly srcY: Uint8Array;
  private readonly srcU: Uint8Array;
  private readonly srcV: Uint8Array;
  private readonly recY: Uint8Array;
  private readonly recU: Uint8Array;
  private readonly recV: Uint8Array;

  /**
   * The reference pictures, most recent first, as the decoder holds them: their pixels (to
   * find what changed since the last one, and what looks as it did in an earlier one) and
   * their reconstructions. Index 0 is the last picture, whose reconstruction is also in
   * recY/U/V, where the next picture is built over it.
   */
  private readonly refPixels: Buffer[] = [];
  private readonly refPlanes: Planes[] = [];
  private readonly spares: SparePictures;
  private readonly changed: Uint8Array;
  /** Per changed macroblock: the earlier picture (index into the references) it equals, or 0. */
  private readonly copyFrom: Uint8Array;
  /** Macroblocks whose srcY/U/V are not this frame's yet (copied ones are converted only when needed). */
  private readonly stale: Uint8Array;
  /** num_ref_idx_l0_active of the picture being coded. */
  private activeRefs = 1;

  // Per macroblock and 4x4 block (raster order inside the macroblock), what the syntax of
  // later macroblocks depends on: TotalCoeff for nC, and Intra 4x4 modes (-1: not Intra 4x4).
  /** Whether each macroblock was coded (not skipped) in the last picture. */
  private readonly coded: Uint8Array;
  private readonly lumaTotals: Uint8Array;
  private readonly chromaTotals: Uint8Array;
  private readonly i4Modes: Int8Array;

  private readonly screenCache: ScreenCache | null;

  /** A picture was stopped and could not be undone (see undoable). */
  #spoiled = false;
  /** The reference pictures went to the spares (see release). */
  #released = false;
  private frameNum = 0;
  private idrPicId = 0;
  private lastIdrMs = -Infinity;

  // The macroblock being coded: its choice, levels and reconstruction.
  private kind: MbKind = 'skip';
  /** The reference picture an inter macroblock predicts from. */
  private refIdx = 0;
  private i16Mode = 0;
  private chromaMode = 0;
  private cbpLuma = 0;
  private cbpChroma = 0;
  /** Luma levels, luma4x4BlkIdx * 16 + raster index. */
  private readonly luma = new Int32Array(256);
  /** Intra 16x16 DC levels, raster order of the blocks. */
  private readonly lumaDc = new Int32Array(16);
  /** Chroma DC levels, Cb then Cr. */
  private readonly chromaDc = new Int32Array(8);
  /** Chroma AC levels, component * 64 + block * 16 + raster index. */
  private readonly chromaAc = new Int32Array(128);
  private readonly mbRecY = new Uint8Array(256);
  private readonly mbRecU = new Uint8Array(64);
  private readonly mbRecV = new Uint8Array(64);
  /** Intra 4x4 modes by luma4x4BlkIdx. */
  private readonly mbI4Modes = new Int8Array(16);

  // Scratch.
  private readonly coef = new Int32Array(256);
  private readonly pred16 = new Int32Array(256);
  private readonly best16 = new Int32Array(256);
  private readonly chromaPred = [new Int32Array(64), new Int32Array(64)] as const;
  private readonly chromaTrial = [new Int32Array(64), new Int32Array(64)] as const;
  private readonly dcScratch = new Int32Array(16);
  private readonly pred4 = new Int32Array(16);
  private readonly edge: Edge4 = { edge: new Int32Array(13), left: false, top: false, topLeft: false };
  // Intra 4x4 trial results, kept when Intra 4x4 wins.
  private readonly i4Luma = new Int32Array(256);
  private readonly i4Rec = new Uint8Array(256);
  private readonly i4Trial = new Int8Array(16);

  constructor(options: H264EncoderOptions) {
    const { width, height } = options;
    if (!(Number.isInteger(width) && Number.isInteger(height) && width >= 16 && height >= 16)) {
      throw new RangeError(
        `cannot encode ${width}x${height}: width and height must be whole numbers of at least 16`,
      );
    }
    if (width % 2 !== 0 || height % 2 !== 0) {
      throw new RangeError(`cannot encode ${width}x${height}: 4:2:0 video needs an even width and height`);
    }
    if (width > 4096 || height > 4096)
      throw new RangeError(`cannot encode ${width}x${height}: at most 4096 a side`);
    this.width = width;
    this.height = height;
    this.mbW = Math.ceil(width / 16);
    this.mbH = Math.ceil(height / 16);
    this.stride = this.mbW * 16;
    this.cStride = this.mbW * 8;
    this.idrIntervalMs = options.idrIntervalMs ?? 5000;
    this.fixedQp =
      options.qp === undefined ? null : Math.min(MAX_QP, Math.max(MIN_QP, Math.round(options.qp)));
    this.rate = new RateControl(options.bitRate, width, height);

    const lumaSize = this.stride * this.mbH * 16;
    this.srcY = new Uint8Array(lumaSize);
    this.srcU = new Uint8Array(lumaSize / 4);
    this.srcV = new Uint8Array(lumaSize / 4);
    this.recY = new Uint8Array(lumaSize);
    this.recU = new Uint8Array(lumaSize / 4);
    this.recV = new Uint8Array(lumaSize / 4);
    const mbs = this.mbW * this.mbH;
    this.changed = new Uint8Array(mbs);
    this.copyFrom = new Uint8Array(mbs);
    this.stale = new Uint8Array(mbs);
    this.coded = new Uint8Array(mbs).fill(1);
    this.lumaTotals = new Uint8Array(mbs * 16);
    this.chromaTotals = new Uint8Array(mbs * 8);
    this.i4Modes = new Int8Array(mbs * 16);

    const wanted = options.references ?? MAX_REFERENCES;
    const level = levelFor({
      width,
      height,
      maxFps: options.maxFps ?? 30,
      bitRate: options.bitRate,
      references: wanted,
    });
    this.references = Math.max(1, Math.min(wanted, maxReferenceFrames(level, width, height)));
    this.sps = sequenceParameterSet({
      width,
      height,
      level,
      colour: BT601_LIMITED,
      references: this.references,
    });
    this.pps = pictureParameterSet();
    this.screenCache = options.screenCache ?? null;
    this.spares = options.spares ?? new SparePictures();
  }

  /** The colour description the stream's VUI carries (for the MP4's colr box). */
  get colour() {
    return BT601_LIMITED;
  }

  /**
   * Encodes one frame of RGBA pixels (width x height, 4 bytes a pixel; alpha ignored) shown
   * at `timeMs`. The first frame, and any frame `idrIntervalMs` after the last IDR or with
   * `keyframe` set, is an IDR picture.
   */
  encode(
    rgba: Uint8Array,
    timeMs: number,
    options: {
      keyframe?: boolean;
      /**
       * Asked once per row of macroblocks: true stops the picture (EncodeStopped), for a
       * recording given up or a picture a newer one replaces. Where the encoder is
       * `undoable`, the picture is undone and the next one is coded as if it had never
       * been begun; elsewhere the encoder is not to be used after a stopped picture.
       */
      stop?: () => boolean;
    } = {},
  ): EncodedPicture {
    if (this.#released) throw new Error('the encoder was released: its reference pictures are gone');
    if (this.#spoiled) throw new Error('the encoder cannot go on after a picture it could not undo');
    const expected = this.width * this.height * 4;
    if (rgba.length !== expected) {
      throw new RangeError(
        `expected ${this.width}x${this.height} RGBA pixels (${expected} bytes), got ${rgba.length} bytes`,
      );
    }
    const idr =
      this.refPixels.length === 0 ||
      options.keyframe === true ||
      timeMs - this.lastIdrMs >= this.idrIntervalMs;
    const current = Buffer.from(rgba.buffer, rgba.byteOffset, rgba.length);
    const qp = this.fixedQp ?? this.rate.qp();
    // The frame's pixels as words, for comparisons and the colour conversion (null when they
    // do not start on a word).
    const words = pixelWords(rgba);
    this.takeChanges(current, words);
    this.activeRefs = this.findInReferences(current, words, idr) + 1;
    const whole = idr || this.isNewScreen();
    const key = whole && this.screenCache ? ScreenCache.key(this.width, this.height, idr, qp, rgba) : null;
    const kept = key === null ? null : this.screenCache!.find(key);
    if (whole) this.activeRefs = 1;
    const w = new BitWriter(whole ? 64 * 1024 : 4096);
    this.sliceHeader(w, idr, qp);
    if (kept) {
      w.bits(kept.data, kept.bits);
      w.trailingBits();
      this.restore(kept.state);
      const slice = nalUnit(idr ? 0x65 : 0x41, w.bytes());
      return this.finish(current, timeMs, idr, qp, slice, kept.codedMacroblocks, 0);
    }
    const dataStart = w.bitLength;
    this.convertChanged(rgba, words);
    if (whole) {
      // Every macroblock is coded, and coded intra (unchanged ones converted as they come).
      this.changed.fill(1);
      this.copyFrom.fill(0);
    }

    let coded = 0;
    let copied = 0;
    let skipRun = 0;
    for (let mbY = 0; mbY < this.mbH; mbY++) {
      if (options.stop?.()) {
        const undone = this.undoable;
        if (undone) this.undo(mbY);
        else this.#spoiled = true;
        throw new EncodeStopped(undone);
      }
      // A row of macroblocks copied whole from one reference (the screen went back to an
      // earlier one) is copied as one block of memory, not macroblock by macroblock.
      const rowFrom = this.rowCopiedFrom(mbY);
      if (rowFrom > 0) this.copyRowFromReference(mbY, rowFrom);
      for (let mbX = 0; mbX < this.mbW; mbX++) {
        const mbAddr = mbY * this.mbW + mbX;
        const from = this.copyFrom[mbAddr]!;
        if (from > 0) {
          if (rowFrom === 0) this.copyReference(mbX, mbY, from);
          this.kind = 'inter';
          this.refIdx = from;
          this.cbpLuma = 0;
          this.cbpChroma = 0;
          copied++;
        } else if (idr || this.changed[mbAddr] !== 0) {
          if (this.stale[mbAddr] !== 0) this.convert(rgba, words, mbX, mbY);
          this.decide(mbX, mbY, whole, qp);
        } else {
          this.kind = 'skip';
        }
        if (this.kind === 'skip') {
          // A skipped macroblock has no coefficients and is not Intra 4x4; one skipped in
          // the last picture too already says so.
          if (this.coded[mbAddr] !== 0) {
            this.coded[mbAddr] = 0;
            this.lumaTotals.fill(0, mbAddr * 16, mbAddr * 16 + 16);
            this.chromaTotals.fill(0, mbAddr * 8, mbAddr * 8 + 8);
            this.i4Modes.fill(-1, mbAddr * 16, mbAddr * 16 + 16);
          }
          skipRun++;
          continue;
        }
        this.coded[mbAddr] = 1;
        if (!idr) w.ue(skipRun);
        skipRun = 0;
        this.writeMacroblock(w, mbX, mbY, idr);
        // A copy is in the reconstruction already.
        if (from === 0) this.commit(mbX, mbY);
        coded++;
      }
    }
    if (skipRun > 0) w.ue(skipRun);
    if (key !== null) {
      const data = w.bitsFrom(dataStart);
      this.screenCache!.keep(key, { ...data, codedMacroblocks: coded, state: this.codingState() });
    }
    w.trailingBits();
    const slice = nalUnit(idr ? 0x65 : 0x41, w.bytes());
    return this.finish(current, timeMs, idr, qp, slice, coded, copied);
  }

  /**
   * Whether a picture stopped part way can be undone: the reconstruction it coded over is
   * put back from the last picture's copy, which is kept when later pictures may refer to
   * earlier ones (more than one reference), or there is no picture before it.
   */
  get undoable(): boolean {
    return this.refPixels.length === 0 || this.refPlanes.length > 0;
  }

  /**
   * Undoes a picture stopped before row `rows` of macroblocks (see undoable). The rest of
   * what it changed needs nothing: which macroblocks changed and which are copied are found
   * again for the next picture, and the syntax kept per macroblock (coded, totals, Intra 4x4
   * modes) is what a skipped or coded macroblock of the next picture sets before anything
   * after it reads it.
   */
  private undo(rows: number): void {
    const last = this.refPlanes[0];
    if (last) {
      this.recY.set(last.y.subarray(0, rows * 16 * this.stride));
      this.recU.set(last.u.subarray(0, rows * 8 * this.cStride));
      this.recV.set(last.v.subarray(0, rows * 8 * this.cStride));
    }
    // Their source planes hold the stopped picture's pixels: converted again when coded.
    for (let mbAddr = 0; mbAddr < this.changed.length; mbAddr++) {
      if (this.changed[mbAddr] !== 0) this.stale[mbAddr] = 1;
    }
  }

  /** What every picture does once its slice is made, encoded or kept: the decoder's bookkeeping. */
  private finish(
    current: Buffer,
    timeMs: number,
    idr: boolean,
    qp: number,
    slice: Uint8Array,
    coded: number,
    copied: number,
  ): EncodedPicture {
    if (idr) {
      this.lastIdrMs = timeMs;
      this.idrPicId = (this.idrPicId + 1) % 65536;
      this.frameNum = 1;
    } else {
      this.frameNum = (this.frameNum + 1) % 2 ** LOG2_MAX_FRAME_NUM;
    }
    this.remember(current, idr);
    this.rate.spent(slice.length * 8, timeMs);
    return {
      nalUnits: idr ? [this.sps, this.pps, slice] : [slice],
      keyframe: idr,
      qp,
      codedMacroblocks: coded,
      copiedMacroblocks: copied,
    };
  }

  /** The state later pictures depend on (the views, not copies). */
  private codingState(): CodingState {
    return {
      recY: this.recY,
      recU: this.recU,
      recV: this.recV,
      coded: this.coded,
      lumaTotals: this.lumaTotals,
      chromaTotals: this.chromaTotals,
      i4Modes: this.i4Modes,
    };
  }

  /** Takes the state a kept picture left, as if it had been encoded here. */
  private restore(state: CodingState): void {
    const mine = this.codingState();
    for (const key of Object.keys(mine) as Array<keyof CodingState>) mine[key].set(state[key]);
    // This stream's source planes were not filled from the kept picture's pixels: a
    // macroblock coded from them later (an unchanged one in a periodic IDR) converts first.
    this.stale.fill(1);
  }

  /**
   * The picture just coded becomes the most recent reference, as in the decoder's sliding
   * window (8.2.5.3): an IDR picture empties the window, and past `references` pictures the
   * oldest leaves it. Its buffers are reused for the newest.
   */
  private remember(current: Buffer, idr: boolean): void {
    const keep = idr ? 0 : this.references - 1;
    this.spares.give(this.refPixels.splice(keep), this.refPlanes.splice(keep));
    const pixels = this.spares.takePixels(current.length);
    pixels.set(current);
    this.refPixels.unshift(pixels);
    // The last picture's planes are recY/U/V; a copy is kept only when a later picture may
    // refer to it as an earlier one (recY is coded over in place).
    if (this.references === 1) return;
    const planes = this.spares.takePlanes(this.recY.length, this.recU.length);
    planes.y.set(this.recY);
    planes.u.set(this.recU);
    planes.v.set(this.recV);
    this.refPlanes.unshift(planes);
  }

  /**
   * Leaves the reference pictures' memory to the spares, for the next encoder on the thread;
   * this encoder is not to be used after.
   */
  release(): void {
    this.#released = true;
    this.spares.give(this.refPixels.splice(0), this.refPlanes.splice(0));
  }

  /** The decoder's picture of the last frame, as Y, Cb and Cr planes cropped to the frame (tests). */
  reconstruction(): { y: Uint8Array; u: Uint8Array; v: Uint8Array } {
    const crop = (plane: Uint8Array, stride: number, w: number, h: number) => {
      const out = new Uint8Array(w * h);
      for (let y = 0; y < h; y++) out.set(plane.subarray(y * stride, y * stride + w), y * w);
      return out;
    };
    return {
      y: crop(this.recY, this.stride, this.width, this.height),
      u: crop(this.recU, this.cStride, this.width / 2, this.height / 2),
      v: crop(this.recV, this.cStride, this.width / 2, this.height / 2),
    };
  }

  /** Marks the macroblocks whose pixels differ from the last frame's. */
  private takeChanges(current: Buffer, words: Uint32Array | null): void {
    const previous = this.refPixels[0];
    const rowBytes = this.width * 4;
    if (!previous) {
      this.changed.fill(1);
    } else {
      this.changed.fill(0);
      const a = words && pixelWords(previous);
      // Whole rows first (native comparisons, no copies): on a phone screen most rows are
      // the same as before; only a changed row is looked at macroblock by macroblock.
      for (let y = 0; y < this.height; y++) {
        const start = y * rowBytes;
        if (previous.compare(current, start, start + rowBytes, start, start + rowBytes) === 0) continue;
        const mbRow = (y >> 4) * this.mbW;
        for (let mbX = 0; mbX < this.mbW; mbX++) {
          if (this.changed[mbRow + mbX] !== 0) continue;
          const same =
            a && words
              ? sameSpan(a, words, y * this.width + mbX * 16, Math.min(16, this.width - mbX * 16))
              : sameBytes(
                  previous,
                  current,
                  start + mbX * 64,
                  Math.min(start + rowBytes, start + mbX * 64 + 64),
                );
          if (!same) this.changed[mbRow + mbX] = 1;
        }
      }
    }
  }

  /**
   * Finds the changed macroblocks that are exactly as they were in an earlier reference
   * picture (the nearest one), for copyFrom. Returns the farthest reference used (0: none),
   * which is how many the slice makes active beyond the first.
   */
  private findInReferences(current: Buffer, words: Uint32Array | null, idr: boolean): number {
    this.copyFrom.fill(0);
    const refs = this.refPixels.length;
    if (idr || refs < 2) return 0;
    const rowBytes = this.width * 4;
    // Each reference with the frame, as words, when both have them (see sameMacroblock).
    const pairs = this.refPixels.map((earlier) => {
      const b = words && pixelWords(earlier);
      return words && b ? { a: words, b } : null;
    });
    let farthest = 0;
    for (let mbY = 0; mbY < this.mbH; mbY++) {
      const mbRow = mbY * this.mbW;
      const top = mbY * 16;
      const bottom = Math.min(this.height, top + 16);
      let waiting = 0;
      for (let mbX = 0; mbX < this.mbW; mbX++) waiting += this.changed[mbRow + mbX]!;
      for (let k = 1; k < refs && waiting > 0; k++) {
        const earlier = this.refPixels[k]!;
        // A whole row of macroblocks as it was (the screen went back to an earlier one):
        // whole pixel rows compare at native speed.
        let rowsSame = true;
        for (let y = top; y < bottom && rowsSame; y++) {
          const start = y * rowBytes;
          rowsSame = earlier.compare(current, start, start + rowBytes, start, start + rowBytes) === 0;
        }
        for (let mbX = 0; mbX < this.mbW; mbX++) {
          const mbAddr = mbRow + mbX;
          if (this.changed[mbAddr] === 0 || this.copyFrom[mbAddr] !== 0) continue;
          if (!rowsSame && !sameMacroblock(current, earlier, pairs[k] ?? null, this.width, mbX, top, bottom))
            continue;
          this.copyFrom[mbAddr] = k;
          if (k > farthest) farthest = k;
          waiting--;
        }
      }
    }
    return farthest;
  }

  /**
   * Whether the picture is a new screen: at least three quarters of its macroblocks changed,
   * and none of them is as it was in an earlier picture (findInReferences found no copy).
   */
  private isNewScreen(): boolean {
    if (this.activeRefs > 1) return false;
    let changed = 0;
    for (let mbAddr = 0; mbAddr < this.changed.length; mbAddr++) changed += this.changed[mbAddr]!;
    return changed * 4 >= this.changed.length * 3;
  }

  /** Converts the changed macroblocks to Y'CbCr, except those copied from a reference. */
  private convertChanged(rgba: Uint8Array, words: Uint32Array | null): void {
    for (let mbY = 0; mbY < this.mbH; mbY++) {
      for (let mbX = 0; mbX < this.mbW; mbX++) {
        const mbAddr = mbY * this.mbW + mbX;
        if (this.changed[mbAddr] === 0) continue;
        // A copied macroblock is not coded from its pixels: converted only if it ever is.
        if (this.copyFrom[mbAddr] !== 0) this.stale[mbAddr] = 1;
        else this.convert(rgba, words, mbX, mbY);
      }
    }
  }

  /** Converts one macroblock of the frame (`words`: see pixelWords) into the source planes. */
  private convert(rgba: Uint8Array, words: Uint32Array | null, mbX: number, mbY: number): void {
    rgbaMacroblockToYuv(
      rgba,
      this.width,
      this.height,
      mbX,
      mbY,
      this.srcY,
      this.srcU,
      this.srcV,
      this.stride,
      words,
    );
    this.stale[mbY * this.mbW + mbX] = 0;
  }

  /**
   * An inter macroblock with no residual, from the same place in reference picture `k`: its
   * pixels go straight into the reconstruction (nothing else reads them first).
   */
  private copyReference(mbX: number, mbY: number, k: number): void {
    const { y: refY, u: refU, v: refV } = this.refPlanes[k]!;
    const s = this.stride;
    const cs = this.cStride;
    for (let y = 0; y < 16; y++) {
      const row = (mbY * 16 + y) * s + mbX * 16;
      for (let x = row; x < row + 16; x++) this.recY[x] = refY[x]!;
    }
    for (let y = 0; y < 8; y++) {
      const row = (mbY * 8 + y) * cs + mbX * 8;
      for (let x = row; x < row + 8; x++) {
        this.recU[x] = refU[x]!;
        this.recV[x] = refV[x]!;
      }
    }
  }

  /** The reference every macroblock of row mbY is copied from, or 0 when they are not all copied from one. */
  private rowCopiedFrom(mbY: number): number {
    const first = mbY * this.mbW;
    const k = this.copyFrom[first]!;
    if (k === 0) return 0;
    for (let mbAddr = first + 1; mbAddr < first + this.mbW; mbAddr++) {
      if (this.copyFrom[mbAddr] !== k) return 0;
    }
    return k;
  }

  /** Copies row mbY of macroblocks from reference picture `k` into the reconstruction. */
  private copyRowFromReference(mbY: number, k: number): void {
    const { y, u, v } = this.refPlanes[k]!;
    const luma = this.stride * 16;
    const chroma = this.cStride * 8;
    this.recY.set(y.subarray(mbY * luma, (mbY + 1) * luma), mbY * luma);
    this.recU.set(u.subarray(mbY * chroma, (mbY + 1) * chroma), mbY * chroma);
    this.recV.set(v.subarray(mbY * chroma, (mbY + 1) * chroma), mbY * chroma);
  }

  private sliceHeader(w: BitWriter, idr: boolean, qp: number): void {
    w.ue(0); // first_mb_in_slice
    w.ue(idr ? 7 : 5); // slice_type: I or P, and every slice of the picture alike
    w.ue(0); // pic_parameter_set_id
    w.u(LOG2_MAX_FRAME_NUM, idr ? 0 : this.frameNum);
    if (idr) {
      w.ue(this.idrPicId);
      w.flag(false); // no_output_of_prior_pics_flag
      w.flag(false); // long_term_reference_flag
    } else {
      // The PPS says one reference; a picture that copies from earlier ones says how many.
      w.flag(this.activeRefs > 1); // num_ref_idx_active_override_flag
      if (this.activeRefs > 1) w.ue(this.activeRefs - 1); // num_ref_idx_l0_active_minus1
      w.flag(false); // ref_pic_list_modification_flag_l0
      w.flag(false); // adaptive_ref_pic_marking_mode_flag: sliding window
    }
    w.se(qp - 26); // slice_qp_delta (pic_init_qp is 26)
    w.ue(1); // disable_deblocking_filter_idc: off, see the file's comment
  }

  private neighbours(
    plane: Uint8Array,
    stride: number,
    size: number,
    mbX: number,
    mbY: number,
  ): BlockNeighbours {
    return {
      plane,
      stride,
      x: mbX * size,
      y: mbY * size,
      left: mbX > 0,
      top: mbY > 0,
      topLeft: mbX > 0 && mbY > 0,
    };
  }

  /**
   * Chooses how to code a changed macroblock and computes its levels and reconstruction;
   * `intraOnly` (an IDR picture, a new screen) does not try the previous picture.
   */
  private decide(mbX: number, mbY: number, intraOnly: boolean, qp: number): void {
    const lambda = lambdaFor(qp);
    const s = this.stride;
    const at = mbY * 16 * s + mbX * 16;
    this.refIdx = 0;

    // Inter: the same place in the previous picture (still in recY: see the file's comment).
    let bestCost = Infinity;
    let kind: MbKind = 'i16';
    // Whether the chosen prediction is the source exactly (a zero residual needs no transform).
    let exact = false;
    if (!intraOnly) {
      const satd = this.satd16(at, this.recY, at, s);
      if (satd === 0 && this.chromaMatchesReference(mbX, mbY)) {
        // The decoder already shows exactly this: nothing to code.
        this.kind = 'skip';
        return;
      }
      bestCost = satd + lambda * HEADER_BITS.inter;
      kind = 'inter';
      exact = satd === 0;
    }

    // Intra 16x16: the best of the four predictions from the neighbours. Flat areas (most
    // of a phone's screen) match one exactly, and then nothing else needs trying.
    const n16 = this.neighbours(this.recY, s, 16, mbX, mbY);
    for (let mode = 0; mode < 4 && !exact; mode++) {
      if (!i16Available(mode, n16)) continue;
      predict16x16(mode, n16, this.pred16);
      // Counted only as far as it could still win: the choice is the same, sooner.
      const satd = this.satd16(at, this.pred16, 0, 16, bestCost - lambda * HEADER_BITS.i16);
      const cost = satd + lambda * HEADER_BITS.i16;
      if (cost < bestCost) {
        bestCost = cost;
        kind = 'i16';
        exact = satd === 0;
        this.i16Mode = mode;
        this.best16.set(this.pred16);
      }
    }

    // Intra 4x4 pays where edges run through the macroblock (text, icons); a macroblock one
    // of the cheaper predictions already matches well does not need the trial.
    if (!exact && bestCost > lambda * 24 && this.tryIntra4x4(mbX, mbY, qp, lambda, bestCost)) kind = 'i4';

    this.kind = kind;
    if (kind === 'i4') {
      this.luma.set(this.i4Luma);
      this.mbRecY.set(this.i4Rec);
      this.mbI4Modes.set(this.i4Trial);
      this.cbpLuma = cbpOf(this.luma);
    } else if (exact) {
      this.luma.fill(0);
      this.lumaDc.fill(0);
      this.cbpLuma = 0;
      if (kind === 'i16') {
        for (let i = 0; i < 256; i++) this.mbRecY[i] = this.best16[i]!;
      } else {
        for (let y = 0; y < 16; y++)
          for (let x = 0; x < 16; x++) this.mbRecY[y * 16 + x] = this.recY[at + y * s + x]!;
      }
    } else if (kind === 'i16') {
      this.codeIntra16x16(at, qp);
    } else {
      this.codeInterLuma(at, qp);
    }
    this.codeChroma(mbX, mbY, kind, qp);
    // An inter macroblock with nothing to add to its prediction is exactly a P_Skip one:
    // every motion vector here is zero, so the skip's predicted vector is zero too.
    if (kind === 'inter' && this.cbpLuma === 0 && this.cbpChroma === 0) this.kind = 'skip';
  }

  private chromaMatchesReference(mbX: number, mbY: number): boolean {
    const cs = this.cStride;
    for (let y = 0; y < 8; y++) {
      const row = (mbY * 8 + y) * cs + mbX * 8;
      for (let x = row; x < row + 8; x++) {
        if (this.srcU[x] !== this.recU[x] || this.srcV[x] !== this.recV[x]) return false;
      }
    }
    return true;
  }

  /**
   * SATD of the source macroblock at srcAt against a 16x16 prediction at pred[predAt]
   * (stride predStride); once the sum reaches `limit`, that sum (the rest is not counted).
   */
  private satd16(
    srcAt: number,
    pred: Uint8Array | Int32Array,
    predAt: number,
    predStride: number,
    limit = Infinity,
  ): number {
    const s = this.stride;
    // Most of a phone's screen is flat, where some prediction is exact: finding that out by
    // comparing costs far less than transforming a residual of zeros.
    if (same(this.srcY, srcAt, s, pred, predAt, predStride, 16)) return 0;
    let sum = 0;
    for (let by = 0; by < 16; by += 4) {
      for (let bx = 0; bx < 16; bx += 4) {
        sum += satd4x4(this.srcY, srcAt + by * s + bx, s, pred, predAt + by * predStride + bx, predStride);
        if (sum >= limit) return sum;
      }
    }
    return sum;
  }

  /**
   * Codes the luma as Intra 4x4, block by block (each predicts from those before it), into
   * the trial buffers. Gives up as soon as it costs `limit` or more; true when it did not.
   */
  private tryIntra4x4(mbX: number, mbY: number, qp: number, lambda: number, limit: number): boolean {
    const s = this.stride;
    const e = this.edge;
    const coef = this.coef;
    const pred = this.pred4;
    let total = lambda * HEADER_BITS.i4;
    for (let blk = 0; blk < 16; blk++) {
      const bx = BLK_X[blk]!;
      const by = BLK_Y[blk]!;
      const srcAt = (mbY * 16 + by * 4) * s + mbX * 16 + bx * 4;
      this.gatherEdge(mbX, mbY, bx, by);
      const predicted = this.predictedI4Mode(mbX, mbY, blk, this.i4Trial);

      let bestMode = I4_DC;
      let bestCost = Infinity;
      for (let mode = 0; mode < 9; mode++) {
        if (!i4Available(mode, e)) continue;
        predict4x4(mode, e, pred);
        const cost = satd4x4(this.srcY, srcAt, s, pred, 0, 4) + lambda * (mode === predicted ? 1 : 4);
        if (cost < bestCost) {
          bestCost = cost;
          bestMode = mode;
          if (cost === lambda) break;
        }
      }
      total += bestCost;
      if (total >= limit) return false;
      this.i4Trial[blk] = bestMode;
      predict4x4(bestMode, e, pred);

      const b = blk * 16;
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++) coef[b + y * 4 + x] = this.srcY[srcAt + y * s + x]! - pred[y * 4 + x]!;
      }
      forward4x4(coef, b);
      quantize4x4(coef, b, this.i4Luma, b, qp, true);
      dequantize4x4(this.i4Luma, b, coef, b, qp);
      inverse4x4(coef, b);
      const recAt = by * 64 + bx * 4;
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++)
          this.i4Rec[recAt + y * 16 + x] = clip(pred[y * 4 + x]! + coef[b + y * 4 + x]!);
      }
    }
    return true;
  }

  /**
   * The 13 neighbours of 4x4 block (bx, by) of the macroblock (see Edge4), from the trial
   * reconstruction inside the macroblock and the picture outside it. A neighbour exists
   * when it is in the picture and decoded already (6.4.11.4); a missing top-right repeats
   * the last top sample (8.3.1.2).
   */
  private gatherEdge(mbX: number, mbY: number, bx: number, by: number): void {
    const e = this.edge;
    const edge = e.edge;
    const s = this.stride;
    const rec = this.i4Rec;
    e.left = mbX > 0 || bx > 0;
    e.top = mbY > 0 || by > 0;
    e.topLeft = e.left && e.top;
    let topRight: boolean;
    if (by === 0) topRight = bx < 3 ? mbY > 0 : mbY > 0 && mbX < this.mbW - 1;
    else topRight = bx < 3 && BLK_INDEX[(by - 1) * 4 + bx + 1]! < BLK_INDEX[by * 4 + bx]!;

    const px = mbX * 16 + bx * 4;
    const py = mbY * 16 + by * 4;
    if (e.left) {
      for (let y = 0; y < 4; y++)
        edge[3 - y] = bx > 0 ? rec[(by * 4 + y) * 16 + bx * 4 - 1]! : this.recY[(py + y) * s + px - 1]!;
    }
    if (e.topLeft) {
      // Inside the macroblock only when the block is past both of its edges.
      edge[4] = bx > 0 && by > 0 ? rec[(by * 4 - 1) * 16 + bx * 4 - 1]! : this.recY[(py - 1) * s + px - 1]!;
    }
    if (e.top) {
      for (let x = 0; x < 8; x++) {
        if (x >= 4 && !topRight) {
          edge[5 + x] = edge[8]!;
        } else if (by > 0 && bx * 4 + x < 16) {
          edge[5 + x] = rec[(by * 4 - 1) * 16 + bx * 4 + x]!;
        } else {
          edge[5 + x] = this.recY[(py - 1) * s + px + x]!;
        }
      }
    }
  }

  private predictedI4Mode(mbX: number, mbY: number, blk: number, inMacroblock: Int8Array): number {
    // The smaller of the left and upper blocks' modes (8.3.1.1); DC (2) when either block
    // is outside the picture, and 2 for a neighbour that is not Intra 4x4.
    const bx = BLK_X[blk]!;
    const by = BLK_Y[blk]!;
    const mbAddr = mbY * this.mbW + mbX;
    let left: number;
    let top: number;
    if (bx > 0) left = inMacroblock[BLK_INDEX[by * 4 + bx - 1]!]!;
    else if (mbX > 0) left = this.i4Modes[(mbAddr - 1) * 16 + by * 4 + 3]!;
    else return I4_DC;
    if (by > 0) top = inMacroblock[BLK_INDEX[(by - 1) * 4 + bx]!]!;
    else if (mbY > 0) top = this.i4Modes[(mbAddr - this.mbW) * 16 + 12 + bx]!;
    else return I4_DC;
    return Math.min(left < 0 ? I4_DC : left, top < 0 ? I4_DC : top);
  }

  private codeIntra16x16(at: number, qp: number): void {
    const s = this.stride;
    const coef = this.coef;
    const dc = this.dcScratch;
    // Transform every block's residual; DCs go to the Hadamard, ACs are quantised here.
    for (let blk = 0; blk < 16; blk++) {
      const bx = BLK_X[blk]! * 4;
      const by = BLK_Y[blk]! * 4;
      const b = blk * 16;
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++)
          coef[b + y * 4 + x] = this.srcY[at + (by + y) * s + bx + x]! - this.best16[(by + y) * 16 + bx + x]!;
      }
      forward4x4(coef, b);
      dc[by + (bx >> 2)] = coef[b]!;
      quantize4x4(coef, b, this.luma, b, qp, true, 1);
    }
    quantizeLumaDc(dc, this.lumaDc, qp);
    this.cbpLuma = cbpOf(this.luma) !== 0 ? 15 : 0;
    if (this.cbpLuma === 0) this.luma.fill(0);

    dc.set(this.lumaDc);
    dequantizeLumaDc(dc, qp);
    for (let blk = 0; blk < 16; blk++) {
      const bx = BLK_X[blk]! * 4;
      const by = BLK_Y[blk]! * 4;
      const b = blk * 16;
      dequantize4x4(this.luma, b, coef, b, qp, 1);
      coef[b] = dc[by + (bx >> 2)]!;
      inverse4x4(coef, b);
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++) {
          const i = (by + y) * 16 + bx + x;
          this.mbRecY[i] = clip(this.best16[i]! + coef[b + y * 4 + x]!);
        }
      }
    }
  }

  private codeInterLuma(at: number, qp: number): void {
    const s = this.stride;
    const coef = this.coef;
    for (let blk = 0; blk < 16; blk++) {
      const base = at + BLK_Y[blk]! * 4 * s + BLK_X[blk]! * 4;
      const b = blk * 16;
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++)
          coef[b + y * 4 + x] = this.srcY[base + y * s + x]! - this.recY[base + y * s + x]!;
      }
      forward4x4(coef, b);
      quantize4x4(coef, b, this.luma, b, qp, false);
      dequantize4x4(this.luma, b, coef, b, qp);
      inverse4x4(coef, b);
      const recAt = BLK_Y[blk]! * 64 + BLK_X[blk]! * 4;
      for (let y = 0; y < 4; y++) {
        for (let x = 0; x < 4; x++)
          this.mbRecY[recAt + y * 16 + x] = clip(this.recY[base + y * s + x]! + coef[b + y * 4 + x]!);
      }
    }
    this.cbpLuma = cbpOf(this.luma);
  }

  /** Chroma prediction (intra: the cheapest mode; inter: the previous picture) and residual. */
  private codeChroma(mbX: number, mbY: number, kind: MbKind, qp: number): void {
    const cs = this.cStride;
    const at = mbY * 8 * cs + mbX * 8;
    const qpc = CHROMA_QP[qp]!;
    const intra = kind !== 'inter';
    const [predU, predV] = this.chromaPred;
    let exact = false;
    if (intra) {
      const nU = this.neighbours(this.recU, cs, 8, mbX, mbY);
      const nV = this.neighbours(this.recV, cs, 8, mbX, mbY);
      const [tryU, tryV] = this.chromaTrial;
      let best = Infinity;
      for (let mode = 0; mode < 4 && best > 0; mode++) {
        if (!chromaAvailable(mode, nU)) continue;
        predictChroma(mode, nU, tryU);
        predictChroma(mode, nV, tryV);
        // As for luma: counted only as far as it could still win.
        const u = this.satd8(this.srcU, at, tryU, best);
        const cost = u < best ? u + this.satd8(this.srcV, at, tryV, best - u) : u;
        if (cost < best) {
          best = cost;
          this.chromaMode = mode;
          predU.set(tryU);
          predV.set(tryV);
        }
      }
      exact = best === 0;
    } else {
      for (let y = 0; y < 8; y++) {
        for (let x = 0; x < 8; x++) {
          predU[y * 8 + x] = this.recU[at + y * cs + x]!;
          predV[y * 8 + x] = this.recV[at + y * cs + x]!;
        }
      }
      exact = this.satd8(this.srcU, at, predU) + this.satd8(this.srcV, at, predV) === 0;
    }
    if (exact) {
      this.chromaDc.fill(0);
      this.chromaAc.fill(0);
      this.cbpChroma = 0;
      for (let i = 0; i < 64; i++) {
        this.mbRecU[i] = predU[i]!;
        this.mbRecV[i] = predV[i]!;
      }
      return;
    }

    // Transform both components; quantise the DCs (through the 2x2 Hadamard) and the ACs.
    let anyDc = false;
    let anyAc = false;
    const coef = this.coef;
    const dc = this.dcScratch;
    for (let comp = 0; comp < 2; comp++) {
      const src = comp === 0 ? this.srcU : this.srcV;
      const pred = this.chromaPred[comp]!;
      for (let blk = 0; blk < 4; blk++) {
        const bx = (blk & 1) * 4;
        const by = (blk >> 1) * 4;
        const b = comp * 64 + blk * 16;
        for (let y = 0; y < 4; y++) {
          for (let x = 0; x < 4; x++)
            coef[b + y * 4 + x] = src[at + (by + y) * cs + bx + x]! - pred[(by + y) * 8 + bx + x]!;
        }
        forward4x4(coef, b);
        dc[blk] = coef[b]!;
        if (quantize4x4(coef, b, this.chromaAc, b, qpc, intra, 1) > 0) anyAc = true;
      }
      if (quantizeChromaDc(dc, this.chromaDc, comp * 4, qpc, intra) > 0) anyDc = true;
    }
    this.cbpChroma = anyAc ? 2 : anyDc ? 1 : 0;
    if (!anyAc) this.chromaAc.fill(0);

    // Reconstruct from what will be written.
    for (let comp = 0; comp < 2; comp++) {
      const pred = this.chromaPred[comp]!;
      const rec = comp === 0 ? this.mbRecU : this.mbRecV;
      for (let i = 0; i < 4; i++) dc[i] = this.chromaDc[comp * 4 + i]!;
      dequantizeChromaDc(dc, qpc);
      for (let blk = 0; blk < 4; blk++) {
        const bx = (blk & 1) * 4;
        const by = (blk >> 1) * 4;
        const b = comp * 64 + blk * 16;
        dequantize4x4(this.chromaAc, b, coef, b, qpc, 1);
        coef[b] = dc[blk]!;
        inverse4x4(coef, b);
        for (let y = 0; y < 4; y++) {
          for (let x = 0; x < 4; x++)
            rec[(by + y) * 8 + bx + x] = clip(pred[(by + y) * 8 + bx + x]! + coef[b + y * 4 + x]!);
        }
      }
    }
  }

  /**
   * SATD of the 8x8 chroma block at `at` (of `src`) against a prediction; once the sum
   * reaches `limit`, that sum.
   */
  private satd8(src: Uint8Array, at: number, pred: Int32Array, limit = Infinity): number {
    const cs = this.cStride;
    if (same(src, at, cs, pred, 0, 8, 8)) return 0;
    let sum = 0;
    for (let i = 0; i < 4 && sum < limit; i++) {
      const x = (i & 1) * 4;
      const y = (i >> 1) * 4;
      sum += satd4x4(src, at + y * cs + x, cs, pred, y * 8 + x, 8);
    }
    return sum;
  }

  /** macroblock_layer() (7.3.5) for the decided macroblock, updating the neighbour state. */
  private writeMacroblock(w: BitWriter, mbX: number, mbY: number, idr: boolean): void {
    const mbAddr = mbY * this.mbW + mbX;
    // In P slices the intra macroblock types follow the five inter ones (Table 7-13).
    const intraOffset = idr ? 0 : 5;
    if (this.kind === 'i16') {
      w.ue(intraOffset + 1 + this.i16Mode + this.cbpChroma * 4 + (this.cbpLuma ? 12 : 0));
      w.ue(this.chromaMode);
    } else if (this.kind === 'i4') {
      w.ue(intraOffset); // I_NxN
      for (let blk = 0; blk < 16; blk++) {
        const mode = this.mbI4Modes[blk]!;
        const predicted = this.predictedI4Mode(mbX, mbY, blk, this.mbI4Modes);
        if (mode === predicted) {
          w.flag(true); // prev_intra4x4_pred_mode_flag
        } else {
          w.flag(false);
          w.u(3, mode < predicted ? mode : mode - 1); // rem_intra4x4_pred_mode
        }
      }
      w.ue(this.chromaMode);
    } else {
      w.ue(0); // P_L0_16x16
      // ref_idx_l0 is te(v): absent with one reference, one inverted bit with two.
      if (this.activeRefs === 2) w.flag(this.refIdx === 0);
      else if (this.activeRefs > 2) w.ue(this.refIdx);
      // Every vector is zero, so every prediction is too (8.4.1.3), whichever the reference.
      w.se(0); // mvd_l0 x: the vector equals its prediction, zero
      w.se(0); // mvd_l0 y
    }
    for (let blk = 0; blk < 16; blk++) {
      this.i4Modes[mbAddr * 16 + BLK_Y[blk]! * 4 + BLK_X[blk]!] =
        this.kind === 'i4' ? this.mbI4Modes[blk]! : -1;
    }

    const cbp = this.cbpLuma | (this.cbpChroma << 4);
    if (this.kind !== 'i16') w.ue((this.kind === 'i4' ? CBP_CODE_NUM_INTRA : CBP_CODE_NUM_INTER)[cbp]!);
    if (cbp === 0 && this.kind !== 'i16') {
      this.lumaTotals.fill(0, mbAddr * 16, mbAddr * 16 + 16);
      this.chromaTotals.fill(0, mbAddr * 8, mbAddr * 8 + 8);
      return;
    }
    w.se(0); // mb_qp_delta: one QP for the whole picture

    if (this.kind === 'i16') this.residual.write(w, this.lumaDc, 0, ZIGZAG, 16, this.lumaNc(mbX, mbY, 0, 0));
    for (let blk = 0; blk < 16; blk++) {
      const bx = BLK_X[blk]!;
      const by = BLK_Y[blk]!;
      let total = 0;
      if (this.cbpLuma & (1 << (blk >> 2))) {
        const nC = this.lumaNc(mbX, mbY, bx, by);
        total =
          this.kind === 'i16'
            ? this.residual.write(w, this.luma, blk * 16, AC_SCAN, 15, nC)
            : this.residual.write(w, this.luma, blk * 16, ZIGZAG, 16, nC);
      }
      this.lumaTotals[mbAddr * 16 + by * 4 + bx] = total;
    }

    // Chroma: both DCs, then both components' ACs.
    if (this.cbpChroma > 0) {
      for (let comp = 0; comp < 2; comp++)
        this.residual.write(w, this.chromaDc, comp * 4, CHROMA_DC_SCAN, 4, -1);
    }
    for (let comp = 0; comp < 2; comp++) {
      for (let blk = 0; blk < 4; blk++) {
        let total = 0;
        if (this.cbpChroma === 2) {
          const nC = this.chromaNc(mbX, mbY, comp, blk & 1, blk >> 1);
          total = this.residual.write(w, this.chromaAc, comp * 64 + blk * 16, AC_SCAN, 15, nC);
        }
        this.chromaTotals[mbAddr * 8 + comp * 4 + blk] = total;
      }
    }
  }

  /** nC of a luma 4x4 block (9.2.1): the rounded mean of the left and upper blocks' TotalCoeff. */
  private lumaNc(mbX: number, mbY: number, bx: number, by: number): number {
    const mbAddr = mbY * this.mbW + mbX;
    const hasLeft = bx > 0 || mbX > 0;
    const hasTop = by > 0 || mbY > 0;
    const left =
      bx > 0
        ? this.lumaTotals[mbAddr * 16 + by * 4 + bx - 1]!
        : hasLeft
          ? this.lumaTotals[(mbAddr - 1) * 16 + by * 4 + 3]!
          : 0;
    const top =
      by > 0
        ? this.lumaTotals[mbAddr * 16 + (by - 1) * 4 + bx]!
        : hasTop
          ? this.lumaTotals[(mbAddr - this.mbW) * 16 + 12 + bx]!
          : 0;
    return hasLeft && hasTop ? (left + top + 1) >> 1 : left + top;
  }

  /** nC of a chroma AC block, from the same component's neighbouring blocks. */
  private chromaNc(mbX: number, mbY: number, comp: number, bx: number, by: number): number {
    const mbAddr = mbY * this.mbW + mbX;
    const base = comp * 4;
    const hasLeft = bx > 0 || mbX > 0;
    const hasTop = by > 0 || mbY > 0;
    const left =
      bx > 0
        ? this.chromaTotals[mbAddr * 8 + base + by * 2]!
        : hasLeft
          ? this.chromaTotals[(mbAddr - 1) * 8 + base + by * 2 + 1]!
          : 0;
    const top =
      by > 0
        ? this.chromaTotals[mbAddr * 8 + base + bx]!
        : hasTop
          ? this.chromaTotals[(mbAddr - this.mbW) * 8 + base + 2 + bx]!
          : 0;
    return hasLeft && hasTop ? (left + top + 1) >> 1 : left + top;
  }

  /** Writes the macroblock's reconstruction into the picture. */
  private commit(mbX: number, mbY: number): void {
    const s = this.stride;
    const cs = this.cStride;
    for (let y = 0; y < 16; y++) {
      const row = (mbY * 16 + y) * s + mbX * 16;
      for (let x = 0; x < 16; x++) this.recY[row + x] = this.mbRecY[y * 16 + x]!;
    }
    for (let y = 0; y < 8; y++) {
      const row = (mbY * 8 + y) * cs + mbX * 8;
      for (let x = 0; x < 8; x++) {
        this.recU[row + x] = this.mbRecU[y * 8 + x]!;
        this.recV[row + x] = this.mbRecV[y * 8 + x]!;
      }
    }
  }
}

/** Whether macroblock column mbX, pixel rows top..bottom, is the same in two RGBA frames. */
function sameMacroblock(
  a: Buffer,
  b: Buffer,
  /** Their words (see pixelWords), when both have them. */
  words: { a: Uint32Array; b: Uint32Array } | null,
  width: number,
  mbX: number,
  top: number,
  bottom: number,
): boolean {
  const pixels = Math.min(16, width - mbX * 16);
  for (let y = top; y < bottom; y++) {
    const at = y * width + mbX * 16;
    if (words ? !sameSpan(words.a, words.b, at, pixels) : !sameBytes(a, b, at * 4, at * 4 + pixels * 4))
      return false;
  }
  return true;
}

/**
 * Whether `count` pixels from pixel `at` are the same in a and b. A macroblock's row of 16
 * pixels is compared in a loop over its words: a native comparison costs more to call than
 * that (a new screen against eight references made hundreds of thousands of calls).
 */
function sameSpan(a: Uint32Array, b: Uint32Array, at: number, count: number): boolean {
  for (let i = at; i < at + count; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameBytes(a: Buffer, b: Buffer, from: number, to: number): boolean {
  return a.compare(b, from, to, from, to) === 0;
}

/** coded_block_pattern luma bits of 16 blocks' levels: bit n when 8x8 block n has a level. */
function cbpOf(luma: Int32Array): number {
  let cbp = 0;
  for (let blk = 0; blk < 16; blk++) {
    for (let i = blk * 16; i < blk * 16 + 16; i++) {
      if (luma[i] !== 0) {
        cbp |= 1 << (blk >> 2);
        break;
      }
    }
  }
  return cbp;
}

/** Whether a size x size block of `src` equals the one of `pred` (stopping at the first difference). */
function same(
  src: Uint8Array,
  srcAt: number,
  srcStride: number,
  pred: Uint8Array | Int32Array,
  predAt: number,
  predStride: number,
  size: number,
): boolean {
  for (let y = 0; y < size; y++) {
    const a = srcAt + y * srcStride;
    const b = predAt + y * predStride;
    for (let x = 0; x < size; x++) if (src[a + x] !== pred[b + x]) return false;
  }
  return true;
}
