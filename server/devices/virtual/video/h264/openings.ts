/**
 * The opening pictures of recent streams, so that a recording that begins as an earlier one
 * did reuses what was encoded then instead of encoding it again.
 *
 * The tests of a suite begin alike: each leases a fresh phone, its recording's first frame
 * is the same home screen (a whole-screen IDR picture, the most expensive picture there is),
 * and most launch the same app next (another whole screen). An encoder is deterministic:
 * from the same state, the same pixels at the same QP give the same bytes and the same
 * reconstruction. So the encoder thread keeps, for its last streams, each opening picture's
 * pixels, QP and kind (the key), its slice and the coding state after it (the value), as a
 * tree: a stream that has matched every picture so far looks among the children of the
 * last one. A picture found there costs one comparison of its pixels; the stream's bytes
 * are the same as if it had been encoded (tests compare them with a fresh encoder's).
 *
 * What is kept is bounded: pictures up to `depth` into a stream, and `maxBytes` in all
 * (the oldest openings go first).
 */

/** What the encoder's later pictures depend on, as it was after an opening picture. */
export interface CodingState {
  recY: Uint8Array;
  recU: Uint8Array;
  recV: Uint8Array;
  coded: Uint8Array;
  lumaTotals: Uint8Array;
  chromaTotals: Uint8Array;
  i4Modes: Int8Array;
}

/** One kept picture: its key, what was written and the state after it. */
export interface OpeningPicture {
  /** The frame's RGBA pixels, compared exactly. */
  readonly pixels: Buffer;
  readonly qp: number;
  readonly idr: boolean;
  /** The picture's slice NAL unit. */
  readonly slice: Uint8Array;
  readonly codedMacroblocks: number;
  readonly copiedMacroblocks: number;
  readonly state: CodingState;
  /** The pictures kept after this one, in streams that went on from it. */
  readonly next: OpeningPicture[];
  readonly bytes: number;
}

/** Where a stream stands in the tree: the pictures that may come next, and how deep it is. */
export interface OpeningPath {
  candidates: OpeningPicture[];
  depth: number;
  /** The stream's first picture (null before it). */
  root: OpeningPicture | null;
}

export interface OpeningCacheOptions {
  /** How many pictures into a stream are kept; 3 by default (a home screen, an app, and back). */
  depth?: number;
  /**
   * The most bytes kept; 32 MiB by default: six 720x1280 pictures, the openings of two
   * kinds of test (a server keeps up to 8 encoder threads, each with its own).
   */
  maxBytes?: number;
}

/** At most this many different pictures are kept after any one picture. */
const MAX_BRANCHES = 4;

export class OpeningCache {
  private readonly depth: number;
  private readonly maxBytes: number;
  /** The encoder settings the kept pictures were made with: others start a new tree. */
  private settings: string | null = null;
  /** The streams' first pictures, least recently used first. */
  private readonly roots: OpeningPicture[] = [];
  private bytes = 0;

  constructor(options: OpeningCacheOptions = {}) {
    this.depth = options.depth ?? 3;
    this.maxBytes = options.maxBytes ?? 32 * 1024 * 1024;
  }

  /** Where a new stream of an encoder with these `settings` (everything but QP that shapes its bytes) starts. */
  begin(settings: string): OpeningPath | null {
    if (this.depth < 1) return null;
    if (settings !== this.settings) {
      this.settings = settings;
      this.roots.length = 0;
      this.bytes = 0;
    }
    return { candidates: this.roots, depth: 0, root: null };
  }

  /** The kept picture for these pixels, QP and kind at `path`, if there is one. */
  find(path: OpeningPath, pixels: Buffer, qp: number, idr: boolean): OpeningPicture | null {
    const index = path.candidates.findIndex(
      (picture) => picture.qp === qp && picture.idr === idr && picture.pixels.equals(pixels),
    );
    if (index < 0) return null;
    const picture = path.candidates[index]!;
    // A stream's first picture used again is the last to be forgotten.
    if (path.depth === 0) this.roots.push(...this.roots.splice(index, 1));
    return picture;
  }

  /** Where a stream stands after `picture`, found at `path`. */
  after(path: OpeningPath, picture: OpeningPicture): OpeningPath {
    return { candidates: picture.next, depth: path.depth + 1, root: path.root ?? picture };
  }

  /**
   * Keeps a picture just encoded at `path` (its pixels and state are copied) and returns
   * where the stream stands after it; null when it is kept no further (too deep, too many
   * branches, or no room).
   */
  keep(
    path: OpeningPath,
    picture: Omit<OpeningPicture, 'next' | 'bytes' | 'pixels' | 'state'>,
    pixels: Uint8Array,
    state: CodingState,
  ): OpeningPath | null {
    if (path.depth >= this.depth || path.candidates.length >= MAX_BRANCHES) return null;
    const copy: CodingState = {
      recY: state.recY.slice(),
      recU: state.recU.slice(),
      recV: state.recV.slice(),
      coded: state.coded.slice(),
      lumaTotals: state.lumaTotals.slice(),
      chromaTotals: state.chromaTotals.slice(),
      i4Modes: state.i4Modes.slice(),
    };
    const bytes =
      pixels.length +
      picture.slice.length +
      Object.values(copy).reduce((sum, array: Uint8Array | Int8Array) => sum + array.length, 0);
    if (bytes > this.maxBytes) return null;
    // Room is made by forgetting the least recently used streams' openings, never this one's.
    for (let i = 0; i < this.roots.length && this.bytes + bytes > this.maxBytes;) {
      if (this.roots[i] === path.root) i++;
      else this.bytes -= treeBytes(this.roots.splice(i, 1)[0]!);
    }
    if (this.bytes + bytes > this.maxBytes) return null;
    const kept: OpeningPicture = {
      ...picture,
      pixels: Buffer.from(pixels),
      state: copy,
      next: [],
      bytes,
    };
    path.candidates.push(kept);
    this.bytes += bytes;
    return this.after(path, kept);
  }
}

function treeBytes(picture: OpeningPicture): number {
  return picture.next.reduce((sum, next) => sum + treeBytes(next), picture.bytes);
}
