/**
 * A small software rasteriser over an RGBA buffer: solid and gradient fills, anti-aliased
 * rounded rectangles, circles, arcs, thick lines and polygons, all clipped to a clip stack.
 *
 * Shapes with curved edges are drawn from signed distance functions: coverage of a pixel is
 * clamp(0.5 - distance), which gives one-pixel anti-aliasing without supersampling. Large
 * interiors are filled as plain spans so a full-screen card costs no more than a fillRect.
 */

/** 0xRRGGBB. */
export type Color = number;

export interface TextStyle {
  /** Pixels per design cell; 2 is body text at density 320. */
  scale: number;
  color: Color;
  bold?: boolean;
  /** Opacity 0..1 (text shadows). */
  alpha?: number;
}

/** What draws text onto pixels: font.ts's TextRenderer (named by shape, so this file needs no font). */
export interface Glyphs {
  paint(canvas: Canvas, text: string, x: number, top: number, style: TextStyle): void;
}

export interface Rect {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

export function rect(left: number, top: number, width: number, height: number): Rect {
  return { left, top, right: left + width, bottom: top + height };
}

export function intersect(a: Rect, b: Rect): Rect {
  return {
    left: Math.max(a.left, b.left),
    top: Math.max(a.top, b.top),
    right: Math.min(a.right, b.right),
    bottom: Math.min(a.bottom, b.bottom),
  };
}

export function isEmptyRect(r: Rect): boolean {
  return r.right <= r.left || r.bottom <= r.top;
}

/** Linear mix of two colours, t = 0 gives a. */
export function mix(a: Color, b: Color, t: number): Color {
  const ch = (shift: number) => {
    const x = (a >> shift) & 0xff;
    const y = (b >> shift) & 0xff;
    return Math.round(x + (y - x) * t) & 0xff;
  };
  return (ch(16) << 16) | (ch(8) << 8) | ch(0);
}

const clamp01 = (v: number) => (v < 0 ? 0 : v > 1 ? 1 : v);

/**
 * What screens draw on: a Canvas (pixels), or a display list that records the calls so
 * another thread can play them onto a Canvas of its own (see display-list.ts). Every
 * argument is plain data, so a recorded call draws the same pixels wherever it is played.
 */
export interface Surface {
  readonly width: number;
  readonly height: number;
  pushClip(r: Rect): void;
  popClip(): void;
  fill(color: Color): void;
  fillRect(x: number, y: number, w: number, h: number, color: Color, alpha?: number): void;
  fillGradient(x: number, y: number, w: number, h: number, top: Color, bottom: Color): void;
  fillPill(r: Rect, color: Color): void;
  fillRoundRect(x: number, y: number, w: number, h: number, r: number, color: Color, alpha?: number): void;
  strokeRoundRect(
    x: number,
    y: number,
    w: number,
    h: number,
    r: number,
    lw: number,
    color: Color,
    alpha?: number,
  ): void;
  fillCircle(cx: number, cy: number, r: number, color: Color, alpha?: number): void;
  strokeCircle(cx: number, cy: number, r: number, lw: number, color: Color, alpha?: number): void;
  fillSector(cx: number, cy: number, r: number, a0: number, a1: number, color: Color, alpha?: number): void;
  strokeArc(
    cx: number,
    cy: number,
    r: number,
    lw: number,
    a0: number,
    a1: number,
    color: Color,
    alpha?: number,
  ): void;
  line(x1: number, y1: number, x2: number, y2: number, lw: number, color: Color, alpha?: number): void;
  polyline(points: ReadonlyArray<readonly [number, number]>, lw: number, color: Color): void;
  fillPolygon(points: ReadonlyArray<readonly [number, number]>, color: Color, alpha?: number): void;
  /**
   * Copies `rows` rows of `rowWidth` RGBA pixels from `pixels` (`stride` pixels a row) to
   * (left, top), over whatever is there and ignoring the clip (a picture from elsewhere,
   * such as the browser's page).
   */
  putPixels(
    pixels: Uint8Array,
    stride: number,
    left: number,
    top: number,
    rowWidth: number,
    rows: number,
  ): void;
  /** Text in `fonts`' typeface (TextRenderer.draw calls this; screens call that). */
  text(fonts: Glyphs, text: string, x: number, top: number, style: TextStyle): void;
}

export class Canvas implements Surface {
  readonly data: Uint8Array;
  /** Same memory as data, one little-endian word per pixel, for fast opaque fills. */
  private readonly words: Uint32Array;
  private clips: Rect[] = [];
  private clip: Rect;

  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    this.data = new Uint8Array(width * height * 4);
    this.words = new Uint32Array(this.data.buffer, this.data.byteOffset, width * height);
    this.clip = { left: 0, top: 0, right: width, bottom: height };
  }

  /** Restricts drawing to r (intersected with the current clip) until popClip(). */
  pushClip(r: Rect): void {
    this.clips.push(this.clip);
    const c = intersect(this.clip, {
      left: Math.floor(r.left),
      top: Math.floor(r.top),
      right: Math.ceil(r.right),
      bottom: Math.ceil(r.bottom),
    });
    this.clip = isEmptyRect(c) ? { left: 0, top: 0, right: 0, bottom: 0 } : c;
  }

  popClip(): void {
    const c = this.clips.pop();
    if (c) this.clip = c;
  }

  /** Reads one pixel as 0xRRGGBB (tests and element screenshots). */
  getPixel(x: number, y: number): Color {
    const i = (y * this.width + x) * 4;
    return ((this.data[i] ?? 0) << 16) | ((this.data[i + 1] ?? 0) << 8) | (this.data[i + 2] ?? 0);
  }

  private static word(color: Color): number {
    // Little-endian: the byte order in memory is R, G, B, A.
    return (0xff000000 | ((color & 0xff) << 16) | (color & 0xff00) | ((color >> 16) & 0xff)) >>> 0;
  }

  /** Blends color into pixel (x, y) with coverage a (0..1); the caller has clipped. */
  private blend(x: number, y: number, color: Color, a: number): void {
    if (a <= 0) return;
    const idx = y * this.width + x;
    if (a >= 0.999) {
      this.words[idx] = Canvas.word(color);
      return;
    }
    const i = idx * 4;
    const d = this.data;
    const inv = 1 - a;
    d[i] = ((color >> 16) & 0xff) * a + (d[i] ?? 0) * inv;
    d[i + 1] = ((color >> 8) & 0xff) * a + (d[i + 1] ?? 0) * inv;
    d[i + 2] = (color & 0xff) * a + (d[i + 2] ?? 0) * inv;
    d[i + 3] = 255;
  }

  /** Pixel-aligned span fill, clipped. */
  private span(x0: number, x1: number, y: number, color: Color, alpha: number): void {
    if (y < this.clip.top || y >= this.clip.bottom) return;
    const a = Math.max(x0, this.clip.left);
    const b = Math.min(x1, this.clip.right);
    if (b <= a) return;
    if (alpha >= 0.999) {
      const base = y * this.width;
      this.words.fill(Canvas.word(color), base + a, base + b);
      return;
    }
    for (let x = a; x < b; x++) this.blend(x, y, color, alpha);
  }

  putPixels(
    pixels: Uint8Array,
    stride: number,
    left: number,
    top: number,
    rowWidth: number,
    rows: number,
  ): void {
    const rowBytes = rowWidth * 4;
    for (let y = 0; y < rows; y++) {
      const from = y * stride * 4;
      this.data.set(pixels.subarray(from, from + rowBytes), ((top + y) * this.width + left) * 4);
    }
  }

  text(fonts: Glyphs, text: string, x: number, top: number, style: TextStyle): void {
    fonts.paint(this, text, x, top, style);
  }

  fill(color: Color): void {
    this.fillRect(0, 0, this.width, this.height, color);
  }

  /** Axis-aligned rectangle; coordinates are rounded to whole pixels. */
  fillRect(x: number, y: number, w: number, h: number, color: Color, alpha = 1): void {
    const x0 = Math.round(x);
    const x1 = Math.round(x + w);
    const y0 = Math.max(Math.round(y), this.clip.top);
    const y1 = Math.min(Math.round(y + h), this.clip.bottom);
    for (let yy = y0; yy < y1; yy++) this.span(x0, x1, yy, color, alpha);
  }

  /** Vertical gradient from top colour to bottom colour. */
  fillGradient(x: number, y: number, w: number, h: number, top: Color, bottom: Color): void {
    const y0 = Math.round(y);
    const y1 = Math.round(y + h);
    for (let yy = Math.max(y0, this.clip.top); yy < Math.min(y1, this.clip.bottom); yy++) {
      this.span(
        Math.round(x),
        Math.round(x + w),
        yy,
        mix(top, bottom, (yy - y0) / Math.max(1, y1 - y0 - 1)),
        1,
      );
    }
  }

  /**
   * Runs coverage(px, py) for every pixel centre in the box (clipped) and blends color by
   * its result. The building block for every anti-aliased shape below.
   */
  shade(box: Rect, color: Color, coverage: (px: number, py: number) => number, alpha = 1): void {
    const x0 = Math.max(Math.floor(box.left), this.clip.left);
    const x1 = Math.min(Math.ceil(box.right), this.clip.right);
    const y0 = Math.max(Math.floor(box.top), this.clip.top);
    const y1 = Math.min(Math.ceil(box.bottom), this.clip.bottom);
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const c = coverage(x + 0.5, y + 0.5);
        if (c > 0) this.blend(x, y, color, c * alpha);
      }
    }
  }

  /** A rectangle with fully rounded ends (buttons, search bars). */
  fillPill(r: Rect, color: Color): void {
    const h = r.bottom - r.top;
    this.fillRoundRect(r.left, r.top, r.right - r.left, h, h / 2, color);
  }

  /** Rounded rectangle with anti-aliased corners; r is clamped to half the shorter side. */
  fillRoundRect(x: number, y: number, w: number, h: number, r: number, color: Color, alpha = 1): void {
    if (w <= 0 || h <= 0) return;
    r = Math.max(0, Math.min(r, w / 2, h / 2));
    if (r < 0.5) {
      this.fillRect(x, y, w, h, color, alpha);
      return;
    }
    // Straight middle band as spans, the two corner bands via the distance function.
    const bandTop = Math.ceil(y + r);
    const bandBottom = Math.floor(y + h - r);
    if (bandBottom > bandTop) this.fillRect(x, bandTop, w, bandBottom - bandTop, color, alpha);
    const sd = roundRectSdf(x, y, w, h, r);
    const cov = (px: number, py: number) => clamp01(0.5 - sd(px, py));
    this.shade({ left: x, top: y, right: x + w, bottom: bandTop }, color, cov, alpha);
    this.shade(
      { left: x, top: Math.max(bandBottom, bandTop), right: x + w, bottom: y + h },
      color,
      cov,
      alpha,
    );
  }

  /** Outline of a rounded rectangle drawn inside its bounds, `lw` pixels wide. */
  strokeRoundRect(
    x: number,
    y: number,
    w: number,
    h: number,
    r: number,
    lw: number,
    color: Color,
    alpha = 1,
  ): void {
    r = Math.max(0, Math.min(r, w / 2, h / 2));
    const sd = roundRectSdf(x, y, w, h, r);
    const cov = (px: number, py: number) => {
      const d = sd(px, py);
      return clamp01(0.5 - d) * clamp01(d + lw + 0.5);
    };
    const edge = Math.ceil(Math.max(r, lw) + 1);
    // Only the border region is shaded; the interior is left untouched.
    this.shade({ left: x, top: y, right: x + w, bottom: y + edge }, color, cov, alpha);
    this.shade({ left: x, top: y + h - edge, right: x + w, bottom: y + h }, color, cov, alpha);
    this.shade({ left: x, top: y + edge, right: x + edge, bottom: y + h - edge }, color, cov, alpha);
    this.shade({ left: x + w - edge, top: y + edge, right: x + w, bottom: y + h - edge }, color, cov, alpha);
  }

  fillCircle(cx: number, cy: number, r: number, color: Color, alpha = 1): void {
    const box = { left: cx - r - 1, top: cy - r - 1, right: cx + r + 1, bottom: cy + r + 1 };
    const inner = r * 0.7;
    // The inscribed square is opaque: fill it as spans, shade only the ring around it.
    this.shade(
      box,
      color,
      (px, py) => {
        const dx = px - cx;
        const dy = py - cy;
        if (Math.abs(dx) < inner && Math.abs(dy) < inner) return 1;
        return clamp01(r + 0.5 - Math.hypot(dx, dy));
      },
      alpha,
    );
  }

  /** Ring of width lw centred on radius r. */
  strokeCircle(cx: number, cy: number, r: number, lw: number, color: Color, alpha = 1): void {
    const box = { left: cx - r - lw, top: cy - r - lw, right: cx + r + lw, bottom: cy + r + lw };
    this.shade(
      box,
      color,
      (px, py) => clamp01(lw / 2 + 0.5 - Math.abs(Math.hypot(px - cx, py - cy) - r)),
      alpha,
    );
  }

  /**
   * Filled circular sector between angles a0..a1 (radians, 0 = +x, counter-clockwise on
   * screen, i.e. towards -y), a1 - a0 below pi — the wifi glyph is built from these.
   */
  fillSector(cx: number, cy: number, r: number, a0: number, a1: number, color: Color, alpha = 1): void {
    const box = { left: cx - r - 1, top: cy - r - 1, right: cx + r + 1, bottom: cy + r + 1 };
    const n0 = { x: Math.cos(a0), y: -Math.sin(a0) };
    const n1 = { x: Math.cos(a1), y: -Math.sin(a1) };
    this.shade(
      box,
      color,
      (px, py) => {
        const dx = px - cx;
        const dy = py - cy;
        const disc = clamp01(r + 0.5 - Math.hypot(dx, dy));
        if (disc <= 0) return 0;
        // Signed distances to the two bounding rays (positive inside the wedge).
        const s0 = dx * n0.y - dy * n0.x;
        const s1 = dy * n1.x - dx * n1.y;
        return disc * clamp01(s0 + 0.5) * clamp01(s1 + 0.5);
      },
      alpha,
    );
  }

  /** Part of a ring (radius r, width lw) between angles a0..a1, same conventions as fillSector. */
  strokeArc(
    cx: number,
    cy: number,
    r: number,
    lw: number,
    a0: number,
    a1: number,
    color: Color,
    alpha = 1,
  ): void {
    const box = { left: cx - r - lw, top: cy - r - lw, right: cx + r + lw, bottom: cy + r + lw };
    const n0 = { x: Math.cos(a0), y: -Math.sin(a0) };
    const n1 = { x: Math.cos(a1), y: -Math.sin(a1) };
    const wide = a1 - a0 > Math.PI;
    this.shade(
      box,
      color,
      (px, py) => {
        const dx = px - cx;
        const dy = py - cy;
        const ring = clamp01(lw / 2 + 0.5 - Math.abs(Math.hypot(dx, dy) - r));
        if (ring <= 0) return 0;
        const s0 = clamp01(dx * n0.y - dy * n0.x + 0.5);
        const s1 = clamp01(dy * n1.x - dx * n1.y + 0.5);
        // Past a half turn the wedge is the union of the two half-planes, not their overlap.
        return ring * (wide ? Math.max(s0, s1) : s0 * s1);
      },
      alpha,
    );
  }

  /** Thick line with round caps. */
  line(x1: number, y1: number, x2: number, y2: number, lw: number, color: Color, alpha = 1): void {
    const h = lw / 2;
    const box = {
      left: Math.min(x1, x2) - h - 1,
      top: Math.min(y1, y2) - h - 1,
      right: Math.max(x1, x2) + h + 1,
      bottom: Math.max(y1, y2) + h + 1,
    };
    const dx = x2 - x1;
    const dy = y2 - y1;
    const len2 = dx * dx + dy * dy || 1;
    this.shade(
      box,
      color,
      (px, py) => {
        const t = clamp01(((px - x1) * dx + (py - y1) * dy) / len2);
        return clamp01(h + 0.5 - Math.hypot(px - (x1 + t * dx), py - (y1 + t * dy)));
      },
      alpha,
    );
  }

  /** Connected thick segments (round joins). */
  polyline(points: ReadonlyArray<readonly [number, number]>, lw: number, color: Color): void {
    for (let i = 1; i < points.length; i++) {
      const a = points[i - 1];
      const b = points[i];
      if (a && b) this.line(a[0], a[1], b[0], b[1], lw, color);
    }
  }

  /** Filled simple polygon (any winding), anti-aliased edges. */
  fillPolygon(points: ReadonlyArray<readonly [number, number]>, color: Color, alpha = 1): void {
    if (points.length < 3) return;
    const xs = points.map((p) => p[0]);
    const ys = points.map((p) => p[1]);
    const box = {
      left: Math.min(...xs) - 1,
      top: Math.min(...ys) - 1,
      right: Math.max(...xs) + 1,
      bottom: Math.max(...ys) + 1,
    };
    this.shade(box, color, (px, py) => clamp01(0.5 - polygonSdf(points, px, py)), alpha);
  }
}

/** Signed distance to a rounded rectangle (negative inside). */
function roundRectSdf(
  x: number,
  y: number,
  w: number,
  h: number,
  r: number,
): (px: number, py: number) => number {
  const cx = x + w / 2;
  const cy = y + h / 2;
  const hx = w / 2 - r;
  const hy = h / 2 - r;
  return (px, py) => {
    const qx = Math.abs(px - cx) - hx;
    const qy = Math.abs(py - cy) - hy;
    const ox = Math.max(qx, 0);
    const oy = Math.max(qy, 0);
    return Math.hypot(ox, oy) + Math.min(Math.max(qx, qy), 0) - r;
  };
}

/** Signed distance to a polygon: exact edge distance, sign from the even-odd rule. */
function polygonSdf(points: ReadonlyArray<readonly [number, number]>, px: number, py: number): number {
  let d = Infinity;
  let inside = false;
  for (let i = 0, j = points.length - 1; i < points.length; j = i++) {
    const a = points[i];
    const b = points[j];
    if (!a || !b) continue;
    const ex = b[0] - a[0];
    const ey = b[1] - a[1];
    const wx = px - a[0];
    const wy = py - a[1];
    const t = clamp01((wx * ex + wy * ey) / (ex * ex + ey * ey || 1));
    d = Math.min(d, Math.hypot(wx - ex * t, wy - ey * t));
    if (a[1] > py !== b[1] > py && px < ((b[0] - a[0]) * (py - a[1])) / (b[1] - a[1]) + a[0])
      inside = !inside;
  }
  return inside ? -d : d;
}
