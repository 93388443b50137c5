/**
 * The phone's typeface: a proportional bitmap font authored for this project on a 12-row
 * grid (cap height 9 rows, x-height 7, descenders 3), printable ASCII plus the bullet and
 * ellipsis Android uses for password fields and truncated labels.
 *
 * Glyphs are scaled by a real factor. A plain nearest-neighbour scale looks like a 1990s
 * terminal, so each glyph is first turned into a shape: every lit cell is a square, and an
 * empty cell whose two neighbours on one corner are lit (a staircase, EPX-style) gets the
 * half-cell triangle on that corner filled. Diagonals become straight 45° edges and curves
 * round off. The shape is then sampled 4x4 per output pixel, which anti-aliases it.
 */
import type { Canvas, Surface, TextStyle } from './raster.js';

export type { TextStyle };

/** Rows in the design grid; row 8 sits on the baseline. */
export const GRID_ROWS = 12;
const BASELINE_ROW = 9;

/** [first row, ...rows]; '#' is ink. Width is the row length. */
type GlyphSource = readonly [number, ...string[]];

const GLYPHS: Readonly<Record<string, GlyphSource>> = {
  ' ': [0, '...'],
  '!': [0, '#', '#', '#', '#', '#', '#', '#', '.', '#'],
  '"': [0, '#.#', '#.#', '#.#'],
  '#': [1, '.#..#.', '.#..#.', '######', '.#..#.', '.#..#.', '######', '.#..#.', '.#..#.'],
  $: [0, '..#..', '.####', '#.#..', '#.#..', '.###.', '..#.#', '..#.#', '####.', '..#..'],
  '%': [0, '.#....#', '#.#..#.', '.#...#.', '....#..', '...#...', '..#....', '.#...#.', '.#..#.#', '#....#.'],
  '&': [0, '.##...', '#..#..', '#..#..', '.##...', '#.#..#', '#..#.#', '#...#.', '#...##', '.###.#'],
  "'": [0, '#', '#', '#'],
  '(': [0, '..#', '.#.', '#..', '#..', '#..', '#..', '#..', '#..', '#..', '.#.', '..#'],
  ')': [0, '#..', '.#.', '..#', '..#', '..#', '..#', '..#', '..#', '..#', '.#.', '#..'],
  '*': [1, '..#..', '#.#.#', '.###.', '#.#.#', '..#..'],
  '+': [3, '..#..', '..#..', '#####', '..#..', '..#..'],
  ',': [7, '.#', '.#', '#.'],
  '-': [5, '####'],
  '.': [8, '#'],
  '/': [0, '....#', '....#', '...#.', '...#.', '..#..', '.#...', '.#...', '#....', '#....'],
  '0': [0, '.###.', '#...#', '#...#', '#...#', '#...#', '#...#', '#...#', '#...#', '.###.'],
  '1': [0, '...#.', '..##.', '.#.#.', '...#.', '...#.', '...#.', '...#.', '...#.', '...#.'],
  '2': [0, '.###.', '#...#', '....#', '....#', '...#.', '..#..', '.#...', '#....', '#####'],
  '3': [0, '.###.', '#...#', '....#', '....#', '..##.', '....#', '....#', '#...#', '.###.'],
  '4': [0, '...#.', '..##.', '.#.#.', '#..#.', '#..#.', '#####', '...#.', '...#.', '...#.'],
  '5': [0, '#####', '#....', '#....', '####.', '....#', '....#', '....#', '#...#', '.###.'],
  '6': [0, '.###.', '#...#', '#....', '#.##.', '##..#', '#...#', '#...#', '#...#', '.###.'],
  '7': [0, '#####', '....#', '....#', '...#.', '...#.', '..#..', '..#..', '.#...', '.#...'],
  '8': [0, '.###.', '#...#', '#...#', '#...#', '.###.', '#...#', '#...#', '#...#', '.###.'],
  '9': [0, '.###.', '#...#', '#...#', '#...#', '#..##', '.##.#', '....#', '#...#', '.###.'],
  ':': [3, '#', '.', '.', '.', '.', '#'],
  ';': [3, '.#', '..', '..', '..', '.#', '.#', '#.'],
  '<': [2, '...#', '..#.', '.#..', '#...', '.#..', '..#.', '...#'],
  '=': [4, '#####', '.....', '#####'],
  '>': [2, '#...', '.#..', '..#.', '...#', '..#.', '.#..', '#...'],
  '?': [0, '.###.', '#...#', '....#', '...#.', '..#..', '..#..', '..#..', '.....', '..#..'],
  '@': [0, '.#####.', '#.....#', '#..##.#', '#.#.#.#', '#.#.#.#', '#.#.#.#', '#..####', '#......', '.#####.'],
  A: [0, '..##..', '.#..#.', '#....#', '#....#', '#....#', '######', '#....#', '#....#', '#....#'],
  B: [0, '#####.', '#....#', '#....#', '#....#', '#####.', '#....#', '#....#', '#....#', '#####.'],
  C: [0, '.####.', '#....#', '#.....', '#.....', '#.....', '#.....', '#.....', '#....#', '.####.'],
  D: [0, '####..', '#...#.', '#....#', '#....#', '#....#', '#....#', '#....#', '#...#.', '####..'],
  E: [0, '#####', '#....', '#....', '#....', '####.', '#....', '#....', '#....', '#####'],
  F: [0, '#####', '#....', '#....', '#....', '####.', '#....', '#....', '#....', '#....'],
  G: [0, '.####.', '#....#', '#.....', '#.....', '#..###', '#....#', '#....#', '#....#', '.####.'],
  H: [0, '#....#', '#....#', '#....#', '#....#', '######', '#....#', '#....#', '#....#', '#....#'],
  I: [0, '###', '.#.', '.#.', '.#.', '.#.', '.#.', '.#.', '.#.', '###'],
  J: [0, '....#', '....#', '....#', '....#', '....#', '....#', '#...#', '#...#', '.###.'],
  K: [0, '#....#', '#...#.', '#..#..', '#.#...', '##....', '#.#...', '#..#..', '#...#.', '#....#'],
  L: [0, '#....', '#....', '#....', '#....', '#....', '#....', '#....', '#....', '#####'],
  M: [0, '#.....#', '##...##', '#.#.#.#', '#..#..#', '#.....#', '#.....#', '#.....#', '#.....#', '#.....#'],
  N: [0, '#.....#', '##....#', '#.#...#', '#..#..#', '#...#.#', '#....##', '#.....#', '#.....#', '#.....#'],
  O: [0, '.####.', '#....#', '#....#', '#....#', '#....#', '#....#', '#....#', '#....#', '.####.'],
  P: [0, '#####.', '#....#', '#....#', '#....#', '#####.', '#.....', '#.....', '#.....', '#.....'],
  Q: [0, '.####.', '#....#', '#....#', '#....#', '#....#', '#....#', '#..#.#', '#...#.', '.###.#'],
  R: [0, '#####.', '#....#', '#....#', '#....#', '#####.', '#.#...', '#..#..', '#...#.', '#....#'],
  S: [0, '.####.', '#....#', '#.....', '#.....', '.####.', '.....#', '.....#', '#....#', '.####.'],
  T: [0, '#####', '..#..', '..#..', '..#..', '..#..', '..#..', '..#..', '..#..', '..#..'],
  U: [0, '#....#', '#....#', '#....#', '#....#', '#....#', '#....#', '#....#', '#....#', '.####.'],
  V: [0, '#....#', '#....#', '#....#', '#....#', '.#..#.', '.#..#.', '.#..#.', '..##..', '..##..'],
  W: [0, '#.....#', '#.....#', '#.....#', '#.....#', '#..#..#', '#..#..#', '#.#.#.#', '#.#.#.#', '.#...#.'],
  X: [0, '#....#', '#....#', '.#..#.', '.#..#.', '..##..', '.#..#.', '.#..#.', '#....#', '#....#'],
  Y: [0, '#...#', '#...#', '.#.#.', '.#.#.', '..#..', '..#..', '..#..', '..#..', '..#..'],
  Z: [0, '#####', '....#', '....#', '...#.', '..#..', '.#...', '#....', '#....', '#####'],
  '[': [0, '###', '#..', '#..', '#..', '#..', '#..', '#..', '#..', '#..', '#..', '###'],
  '\\': [0, '#....', '#....', '.#...', '.#...', '..#..', '...#.', '...#.', '....#', '....#'],
  ']': [0, '###', '..#', '..#', '..#', '..#', '..#', '..#', '..#', '..#', '..#', '###'],
  '^': [0, '..#..', '.#.#.', '#...#'],
  _: [10, '######'],
  '`': [0, '#.', '.#'],
  a: [2, '.###.', '....#', '.####', '#...#', '#...#', '#..##', '.##.#'],
  b: [0, '#....', '#....', '#.##.', '##..#', '#...#', '#...#', '#...#', '##..#', '#.##.'],
  c: [2, '.###.', '#...#', '#....', '#....', '#....', '#...#', '.###.'],
  d: [0, '....#', '....#', '.##.#', '#..##', '#...#', '#...#', '#...#', '#..##', '.##.#'],
  e: [2, '.###.', '#...#', '#...#', '#####', '#....', '#...#', '.###.'],
  f: [0, '..##', '.#..', '####', '.#..', '.#..', '.#..', '.#..', '.#..', '.#..'],
  g: [2, '.##.#', '#..##', '#...#', '#...#', '#...#', '#..##', '.##.#', '....#', '#...#', '.###.'],
  h: [0, '#....', '#....', '#.##.', '##..#', '#...#', '#...#', '#...#', '#...#', '#...#'],
  i: [0, '#', '.', '#', '#', '#', '#', '#', '#', '#'],
  j: [0, '..#', '...', '..#', '..#', '..#', '..#', '..#', '..#', '..#', '..#', '..#', '##.'],
  k: [0, '#....', '#....', '#...#', '#..#.', '#.#..', '##...', '#.#..', '#..#.', '#...#'],
  l: [0, '#', '#', '#', '#', '#', '#', '#', '#', '#'],
  m: [2, '###.##.', '#..#..#', '#..#..#', '#..#..#', '#..#..#', '#..#..#', '#..#..#'],
  n: [2, '#.##.', '##..#', '#...#', '#...#', '#...#', '#...#', '#...#'],
  o: [2, '.###.', '#...#', '#...#', '#...#', '#...#', '#...#', '.###.'],
  p: [2, '#.##.', '##..#', '#...#', '#...#', '#...#', '##..#', '#.##.', '#....', '#....', '#....'],
  q: [2, '.##.#', '#..##', '#...#', '#...#', '#...#', '#..##', '.##.#', '....#', '....#', '....#'],
  r: [2, '#.##', '##..', '#...', '#...', '#...', '#...', '#...'],
  s: [2, '.####', '#....', '#....', '.###.', '....#', '....#', '####.'],
  t: [1, '.#..', '####', '.#..', '.#..', '.#..', '.#..', '.#..', '..##'],
  u: [2, '#...#', '#...#', '#...#', '#...#', '#...#', '#..##', '.##.#'],
  v: [2, '#...#', '#...#', '#...#', '.#.#.', '.#.#.', '..#..', '..#..'],
  w: [2, '#...#', '#...#', '#...#', '#.#.#', '#.#.#', '#.#.#', '.#.#.'],
  x: [2, '#...#', '.#.#.', '.#.#.', '..#..', '.#.#.', '.#.#.', '#...#'],
  y: [2, '#...#', '#...#', '#...#', '#...#', '#...#', '#..##', '.##.#', '....#', '#...#', '.###.'],
  z: [2, '#####', '....#', '...#.', '..#..', '.#...', '#....', '#####'],
  '{': [0, '..##', '.#..', '.#..', '.#..', '.#..', '#...', '.#..', '.#..', '.#..', '.#..', '..##'],
  '|': [0, '#', '#', '#', '#', '#', '#', '#', '#', '#', '#', '#', '#'],
  '}': [0, '##..', '..#.', '..#.', '..#.', '..#.', '...#', '..#.', '..#.', '..#.', '..#.', '##..'],
  '~': [4, '.##..#', '#..##.'],
  '\u2022': [3, '.##.', '####', '####', '.##.'],
  '\u2026': [8, '#.#.#'],
};

/** Drawn for characters the font lacks: an outlined box, as Android draws "tofu". */
const MISSING: GlyphSource = [
  0,
  '#####',
  '#...#',
  '#...#',
  '#...#',
  '#...#',
  '#...#',
  '#...#',
  '#...#',
  '#####',
];

interface Glyph {
  width: number;
  /**
   * Row-major shape flags per design cell: INK for a lit cell, or the corner triangles an
   * empty cell contributes (see the header comment).
   */
  shape: Uint8Array;
}

const INK = 1;
const TRI_TL = 2;
const TRI_TR = 4;
const TRI_BL = 8;
const TRI_BR = 16;

function compile(src: GlyphSource): Glyph {
  const [first, ...rows] = src;
  const width = Math.max(1, ...rows.map((r) => r.length));
  const ink = new Uint8Array(width * GRID_ROWS);
  rows.forEach((row, i) => {
    for (let x = 0; x < row.length; x++) if (row[x] === '#') ink[(first + i) * width + x] = 1;
  });
  const at = (x: number, y: number) =>
    x >= 0 && y >= 0 && x < width && y < GRID_ROWS && ink[y * width + x] === 1;
  const shape = new Uint8Array(width * GRID_ROWS);
  for (let y = 0; y < GRID_ROWS; y++) {
    for (let x = 0; x < width; x++) {
      if (at(x, y)) {
        shape[y * width + x] = INK;
        continue;
      }
      const t = at(x, y - 1);
      const b = at(x, y + 1);
      const l = at(x - 1, y);
      const r = at(x + 1, y);
      // A staircase corner: both neighbours towards that corner lit, the diagonal and the
      // opposite neighbours empty (so inner corners of L or E shapes stay square).
      let f = 0;
      if (t && l && !b && !r && !at(x - 1, y - 1)) f |= TRI_TL;
      if (t && r && !b && !l && !at(x + 1, y - 1)) f |= TRI_TR;
      if (b && l && !t && !r && !at(x - 1, y + 1)) f |= TRI_BL;
      if (b && r && !t && !l && !at(x + 1, y + 1)) f |= TRI_BR;
      shape[y * width + x] = f;
    }
  }
  return { width, shape };
}

/** Compiled once: the table is constant, so this is not mutable module state. */
const COMPILED: ReadonlyMap<string, Glyph> = new Map(
  Object.entries(GLYPHS).map(([ch, src]) => [ch, compile(src)]),
);
const COMPILED_MISSING = compile(MISSING);

function glyphFor(ch: string): Glyph {
  return COMPILED.get(ch) ?? COMPILED_MISSING;
}

/** Whether the vectorised glyph covers design-grid point (u, v). */
function inside(g: Glyph, u: number, v: number): boolean {
  if (u < 0 || v < 0 || u >= g.width || v >= GRID_ROWS) return false;
  const cx = Math.floor(u);
  const cy = Math.floor(v);
  const f = g.shape[cy * g.width + cx] ?? 0;
  if (f === 0) return false;
  if (f & INK) return true;
  const fu = u - cx;
  const fv = v - cy;
  return (
    ((f & TRI_TL) !== 0 && fu + fv < 1) ||
    ((f & TRI_TR) !== 0 && fv < fu) ||
    ((f & TRI_BL) !== 0 && fu < fv) ||
    ((f & TRI_BR) !== 0 && fu + fv > 1)
  );
}

interface Mask {
  width: number;
  height: number;
  alpha: Float32Array;
}

/** Extra ink width of bold glyphs, in cells. */
const BOLD_SHIFT = 0.5;

/**
 * Measures and draws text. Holds the rendered glyph masks for the sizes in use, so one
 * instance belongs to one phone (no shared mutable cache).
 */
export class TextRenderer {
  private readonly masks = new Map<string, Mask>();

  /** Horizontal advance of one character in pixels. */
  advance(ch: string, style: Pick<TextStyle, 'scale' | 'bold'>): number {
    return (glyphFor(ch).width + 1 + (style.bold ? BOLD_SHIFT : 0)) * style.scale;
  }

  measure(text: string, style: Pick<TextStyle, 'scale' | 'bold'>): number {
    let w = 0;
    for (const ch of text) w += this.advance(ch, style);
    // The last glyph has no trailing gap.
    return text.length ? w - style.scale : 0;
  }

  /** Height of a line of text (full grid), and its ascent to the baseline. */
  lineHeight(style: Pick<TextStyle, 'scale'>): number {
    return GRID_ROWS * style.scale;
  }

  /** Cap height in pixels, for centring a label on a line. */
  capHeight(style: Pick<TextStyle, 'scale'>): number {
    return BASELINE_ROW * style.scale;
  }

  /** Shortens text with an ellipsis so it fits maxWidth. */
  ellipsize(text: string, style: Pick<TextStyle, 'scale' | 'bold'>, maxWidth: number): string {
    if (this.measure(text, style) <= maxWidth) return text;
    const chars = [...text];
    while (chars.length > 0 && this.measure(chars.join('') + '\u2026', style) > maxWidth) chars.pop();
    return chars.join('').trimEnd() + '\u2026';
  }

  /** Splits text into lines that fit maxWidth, breaking at spaces where possible. */
  wrap(text: string, style: Pick<TextStyle, 'scale' | 'bold'>, maxWidth: number): string[] {
    const lines: string[] = [];
    let line = '';
    for (const word of text.split(' ')) {
      const candidate = line ? `${line} ${word}` : word;
      if (this.measure(candidate, style) <= maxWidth || !line) line = candidate;
      else {
        lines.push(line);
        line = word;
      }
    }
    lines.push(line);
    return lines.map((l) => this.ellipsize(l, style, maxWidth));
  }

  /**
   * Draws text with its top-left design-grid corner at (x, top). Returns the width drawn.
   * Positions snap to whole pixels so glyph masks can be reused.
   */
  draw(surface: Surface, text: string, x: number, top: number, style: TextStyle): number {
    surface.text(this, text, x, top, style);
    let pen = x;
    for (const ch of text) pen += this.advance(ch, style);
    return pen - x;
  }

  /** Draws the glyphs of draw() onto pixels (Canvas.text, which draw() reaches). */
  paint(canvas: Canvas, text: string, x: number, top: number, style: TextStyle): void {
    let pen = x;
    for (const ch of text) {
      if (ch !== ' ') {
        const m = this.mask(ch, style);
        const ox = Math.round(pen);
        const oy = Math.round(top);
        canvas.shade(
          { left: ox, top: oy, right: ox + m.width, bottom: oy + m.height },
          style.color,
          (px, py) => {
            const mx = Math.floor(px) - ox;
            const my = Math.floor(py) - oy;
            return m.alpha[my * m.width + mx] ?? 0;
          },
          style.alpha ?? 1,
        );
      }
      pen += this.advance(ch, style);
    }
  }

  private mask(ch: string, style: Pick<TextStyle, 'scale' | 'bold'>): Mask {
    const key = `${ch}\u0000${style.scale}\u0000${style.bold ? 1 : 0}`;
    const cached = this.masks.get(key);
    if (cached) return cached;
    const g = glyphFor(ch);
    const s = style.scale;
    const shift = style.bold ? BOLD_SHIFT : 0;
    const width = Math.ceil((g.width + shift) * s);
    const height = Math.ceil(GRID_ROWS * s);
    const alpha = new Float32Array(width * height);
    const N = 4;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        let hits = 0;
        for (let sy = 0; sy < N; sy++) {
          for (let sx = 0; sx < N; sx++) {
            const u = (x + (sx + 0.5) / N) / s;
            const v = (y + (sy + 0.5) / N) / s;
            if (inside(g, u, v) || (shift > 0 && inside(g, u - shift, v))) hits++;
          }
        }
        alpha[y * width + x] = hits / (N * N);
      }
    }
    const m = { width, height, alpha };
    this.masks.set(key, m);
    return m;
  }
}

/** Characters the font draws (tests check the whole printable ASCII range is present). */
export function hasGlyph(ch: string): boolean {
  return COMPILED.has(ch);
}
