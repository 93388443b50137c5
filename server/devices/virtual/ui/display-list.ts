/**
 * A screen as a list of drawing calls: what the view tree paints, recorded as plain data
 * (numbers, strings, pixel arrays) instead of pixels.
 *
 * The phone's thread builds a screen's list once per version (recording costs a fraction of
 * drawing: no pixel is touched). Playing it onto a Canvas draws the screen; a recording's
 * encoder thread plays it there, so the phone's thread no longer spends 20-100 ms drawing
 * every frame the recorder takes. screencap plays the same list on the phone's thread: one
 * drawing code path, so a video frame and a screenshot of the same version are the same
 * pixels.
 */
import { isDeepStrictEqual } from 'node:util';
import type { TextRenderer, TextStyle } from './font.js';
import type { Canvas, Color, Rect, Surface } from './raster.js';

type Points = ReadonlyArray<readonly [number, number]>;

/** One call: its name, then its arguments as the Surface method takes them (text: no renderer). */
export type DrawCall =
  | readonly ['pushClip', Rect]
  | readonly ['popClip']
  | readonly ['fill', Color]
  | readonly ['fillRect', number, number, number, number, Color, number | undefined]
  | readonly ['fillGradient', number, number, number, number, Color, Color]
  | readonly ['fillPill', Rect, Color]
  | readonly ['fillRoundRect', number, number, number, number, number, Color, number | undefined]
  | readonly ['strokeRoundRect', number, number, number, number, number, number, Color, number | undefined]
  | readonly ['fillCircle', number, number, number, Color, number | undefined]
  | readonly ['strokeCircle', number, number, number, number, Color, number | undefined]
  | readonly ['fillSector', number, number, number, number, number, Color, number | undefined]
  | readonly ['strokeArc', number, number, number, number, number, number, Color, number | undefined]
  | readonly ['line', number, number, number, number, number, Color, number | undefined]
  | readonly ['polyline', Points, number, Color]
  | readonly ['fillPolygon', Points, Color, number | undefined]
  | readonly ['putPixels', Uint8Array, number, number, number, number, number]
  | readonly ['text', string, number, number, TextStyle];

/** A whole screen's drawing; structured-clonable (postMessage copies it to another thread). */
export interface DisplayList {
  readonly width: number;
  readonly height: number;
  readonly calls: readonly DrawCall[];
}

/**
 * A Surface that records. Arguments are kept as given: callers build fresh rectangles and
 * point lists for every drawing, and a recorded list is never changed afterwards.
 */
export class DisplayListRecorder implements Surface {
  private readonly calls: DrawCall[] = [];

  constructor(
    readonly width: number,
    readonly height: number,
  ) {}

  /** The calls recorded so far, as a list. */
  finish(): DisplayList {
    return { width: this.width, height: this.height, calls: this.calls };
  }

  pushClip(r: Rect): void {
    this.calls.push(['pushClip', r]);
  }
  popClip(): void {
    this.calls.push(['popClip']);
  }
  fill(color: Color): void {
    this.calls.push(['fill', color]);
  }
  fillRect(x: number, y: number, w: number, h: number, color: Color, alpha?: number): void {
    this.calls.push(['fillRect', x, y, w, h, color, alpha]);
  }
  fillGradient(x: number, y: number, w: number, h: number, top: Color, bottom: Color): void {
    this.calls.push(['fillGradient', x, y, w, h, top, bottom]);
  }
  fillPill(r: Rect, color: Color): void {
    this.calls.push(['fillPill', r, color]);
  }
  fillRoundRect(x: number, y: number, w: number, h: number, r: number, color: Color, alpha?: number): void {
    this.calls.push(['fillRoundRect', x, y, w, h, r, color, alpha]);
  }
  strokeRoundRect(
    x: number,
    y: number,
    w: number,
    h: number,
    r: number,
    lw: number,
    color: Color,
    alpha?: number,
  ): void {
    this.calls.push(['strokeRoundRect', x, y, w, h, r, lw, color, alpha]);
  }
  fillCircle(cx: number, cy: number, r: number, color: Color, alpha?: number): void {
    this.calls.push(['fillCircle', cx, cy, r, color, alpha]);
  }
  strokeCircle(cx: number, cy: number, r: number, lw: number, color: Color, alpha?: number): void {
    this.calls.push(['strokeCircle', cx, cy, r, lw, color, alpha]);
  }
  fillSector(cx: number, cy: number, r: number, a0: number, a1: number, color: Color, alpha?: number): void {
    this.calls.push(['fillSector', cx, cy, r, a0, a1, color, alpha]);
  }
  strokeArc(
    cx: number,
    cy: number,
    r: number,
    lw: number,
    a0: number,
    a1: number,
    color: Color,
    alpha?: number,
  ): void {
    this.calls.push(['strokeArc', cx, cy, r, lw, a0, a1, color, alpha]);
  }
  line(x1: number, y1: number, x2: number, y2: number, lw: number, color: Color, alpha?: number): void {
    this.calls.push(['line', x1, y1, x2, y2, lw, color, alpha]);
  }
  polyline(points: Points, lw: number, color: Color): void {
    this.calls.push(['polyline', points, lw, color]);
  }
  fillPolygon(points: Points, color: Color, alpha?: number): void {
    this.calls.push(['fillPolygon', points, color, alpha]);
  }
  putPixels(
    pixels: Uint8Array,
    stride: number,
    left: number,
    top: number,
    rowWidth: number,
    rows: number,
  ): void {
    // The picture is kept, not copied: whoever drew it hands over a new one for a new
    // version of the screen (the browser's frames are each a picture of their own).
    this.calls.push(['putPixels', pixels, stride, left, top, rowWidth, rows]);
  }
  text(_fonts: TextRenderer, text: string, x: number, top: number, style: TextStyle): void {
    this.calls.push(['text', text, x, top, style]);
  }
}

/**
 * Draws `list` onto `canvas` (of the list's size) with `fonts` for its text: the same
 * pixels on any thread, since the canvas, the font and the calls are the same code and data.
 */
export function playDisplayList(list: DisplayList, canvas: Canvas, fonts: TextRenderer): void {
  if (canvas.width !== list.width || canvas.height !== list.height) {
    throw new RangeError(
      `a ${list.width}x${list.height} screen cannot be drawn on a ${canvas.width}x${canvas.height} canvas`,
    );
  }
  for (const call of list.calls) {
    switch (call[0]) {
      case 'pushClip':
        canvas.pushClip(call[1]);
        break;
      case 'popClip':
        canvas.popClip();
        break;
      case 'fill':
        canvas.fill(call[1]);
        break;
      case 'fillRect':
        canvas.fillRect(call[1], call[2], call[3], call[4], call[5], call[6]);
        break;
      case 'fillGradient':
        canvas.fillGradient(call[1], call[2], call[3], call[4], call[5], call[6]);
        break;
      case 'fillPill':
        canvas.fillPill(call[1], call[2]);
        break;
      case 'fillRoundRect':
        canvas.fillRoundRect(call[1], call[2], call[3], call[4], call[5], call[6], call[7]);
        break;
      case 'strokeRoundRect':
        canvas.strokeRoundRect(call[1], call[2], call[3], call[4], call[5], call[6], call[7], call[8]);
        break;
      case 'fillCircle':
        canvas.fillCircle(call[1], call[2], call[3], call[4], call[5]);
        break;
      case 'strokeCircle':
        canvas.strokeCircle(call[1], call[2], call[3], call[4], call[5], call[6]);
        break;
      case 'fillSector':
        canvas.fillSector(call[1], call[2], call[3], call[4], call[5], call[6], call[7]);
        break;
      case 'strokeArc':
        canvas.strokeArc(call[1], call[2], call[3], call[4], call[5], call[6], call[7], call[8]);
        break;
      case 'line':
        canvas.line(call[1], call[2], call[3], call[4], call[5], call[6], call[7]);
        break;
      case 'polyline':
        canvas.polyline(call[1], call[2], call[3]);
        break;
      case 'fillPolygon':
        canvas.fillPolygon(call[1], call[2], call[3]);
        break;
      case 'putPixels':
        canvas.putPixels(call[1], call[2], call[3], call[4], call[5], call[6]);
        break;
      case 'text':
        canvas.text(fonts, call[1], call[2], call[3], call[4]);
        break;
    }
  }
}

/**
 * The pixels a call may change (a rectangle at least as large as what it draws; text
 * needs `fonts` to measure it), or null for calls that draw nothing themselves.
 */
function reach(call: DrawCall, list: DisplayList, fonts: TextRenderer): Rect | null {
  // One pixel more on every side: shapes are anti-aliased and coordinates rounded.
  const box = (left: number, top: number, right: number, bottom: number): Rect => ({
    left: Math.floor(left) - 1,
    top: Math.floor(top) - 1,
    right: Math.ceil(right) + 1,
    bottom: Math.ceil(bottom) + 1,
  });
  const around = (points: Points, pad: number): Rect =>
    box(
      Math.min(...points.map((p) => p[0])) - pad,
      Math.min(...points.map((p) => p[1])) - pad,
      Math.max(...points.map((p) => p[0])) + pad,
      Math.max(...points.map((p) => p[1])) + pad,
    );
  switch (call[0]) {
    case 'popClip':
      return null;
    case 'pushClip':
    case 'fillPill':
      return box(call[1].left, call[1].top, call[1].right, call[1].bottom);
    case 'fill':
      return box(0, 0, list.width, list.height);
    case 'fillRect':
    case 'fillGradient':
    case 'fillRoundRect':
    case 'strokeRoundRect':
      return box(call[1], call[2], call[1] + call[3], call[2] + call[4]);
    case 'fillCircle':
    case 'fillSector':
      return box(call[1] - call[3], call[2] - call[3], call[1] + call[3], call[2] + call[3]);
    case 'strokeCircle':
    case 'strokeArc': {
      const r = call[3] + call[4];
      return box(call[1] - r, call[2] - r, call[1] + r, call[2] + r);
    }
    case 'line':
      return around(
        [
          [call[1], call[2]],
          [call[3], call[4]],
        ],
        call[5] / 2,
      );
    case 'polyline':
      return call[1].length ? around(call[1], call[2] / 2) : null;
    case 'fillPolygon':
      return call[1].length ? around(call[1], 0) : null;
    case 'putPixels':
      return box(call[3], call[4], call[3] + call[5], call[4] + call[6]);
    case 'text': {
      // A glyph's mask is at most its advance wide (plus rounding); bold adds half a cell.
      const style = call[4];
      const width = fonts.measure(call[1], style) + 2 * style.scale;
      return box(call[2], call[3], call[2] + width, call[3] + fonts.lineHeight(style));
    }
  }
}

/**
 * Draws successive screens onto one canvas, each by redrawing only where it differs from
 * the one before. Two lists are compared call by call from both ends; the calls between the
 * common start and the common end are what changed, and every pixel they may reach (in the
 * old screen or the new) is drawn again by playing the whole new list clipped to that area.
 * Any other pixel is reached by the same calls, in the same order, in both lists, so it
 * already holds what a full drawing would give: the result is the same pixels as drawing
 * the whole screen. A typed character costs a few hundred pixels instead of the screen.
 */
export class DisplayListPlayer {
  readonly canvas: Canvas;
  private last: DisplayList | null = null;
  /** Screens drawn whole (or mostly), most recently used last: their lists and pixels. */
  private readonly screens: Array<{ list: DisplayList; pixels: Uint8Array }> = [];

  /**
   * `remember`: how many screens that changed whole (an app opened, the home screen again)
   * are kept as pixels, so that showing one of them again is a copy, not a drawing. A test
   * goes back and forth between a few screens; each kept one holds the canvas's bytes.
   */
  constructor(
    canvas: Canvas,
    private readonly fonts: TextRenderer,
    private readonly remember = 0,
  ) {
    this.canvas = canvas;
  }

  /** Draws `list` onto the canvas; returns the area drawn again (null: nothing changed). */
  draw(list: DisplayList): Rect | null {
    const changed = this.last ? changedArea(this.last, list, this.fonts) : 'all';
    const whole = { left: 0, top: 0, right: list.width, bottom: list.height };
    const large = changed === 'all' || (changed !== null && isMostOf(changed, list));
    if (large && this.recall(list)) {
      this.last = list;
      return whole;
    }
    // Until the list is drawn, the canvas is not the last list's (a drawing that throws
    // leaves the next one to draw everything).
    this.last = null;
    if (changed === 'all') {
      playDisplayList(list, this.canvas, this.fonts);
    } else if (changed) {
      this.canvas.pushClip(changed);
      try {
        playDisplayList(list, this.canvas, this.fonts);
      } finally {
        this.canvas.popClip();
      }
    }
    this.last = list;
    if (large) this.keepScreen(list);
    return changed === 'all' ? whole : changed;
  }

  /** Shows a kept screen equal to `list`, if there is one. */
  private recall(list: DisplayList): boolean {
    const index = this.screens.findIndex(
      (s) =>
        s.list.calls.length === list.calls.length &&
        s.pixels.length === this.canvas.data.length &&
        isDeepStrictEqual(s.list, list),
    );
    if (index < 0) return false;
    const [screen] = this.screens.splice(index, 1);
    this.screens.push(screen!);
    this.canvas.data.set(screen!.pixels);
    return true;
  }

  private keepScreen(list: DisplayList): void {
    if (this.remember <= 0) return;
    // The oldest kept screen's bytes are reused for the newest.
    const reused = this.screens.length >= this.remember ? this.screens.shift()!.pixels : null;
    const pixels =
      reused && reused.length === this.canvas.data.length ? reused : new Uint8Array(this.canvas.data.length);
    pixels.set(this.canvas.data);
    this.screens.push({ list, pixels });
  }
}

/** Whether `area` covers at least half of the screen. */
function isMostOf(area: Rect, list: DisplayList): boolean {
  return (area.right - area.left) * (area.bottom - area.top) * 2 >= list.width * list.height;
}

/** Where `after` may differ from `before` as pixels: a rectangle, nothing (null), or all. */
function changedArea(before: DisplayList, after: DisplayList, fonts: TextRenderer): Rect | null | 'all' {
  if (before.width !== after.width || before.height !== after.height) return 'all';
  const a = before.calls;
  const b = after.calls;
  let start = 0;
  while (start < a.length && start < b.length && isDeepStrictEqual(a[start], b[start])) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && isDeepStrictEqual(a[endA - 1], b[endB - 1])) {
    endA--;
    endB--;
  }
  let area: Rect | null = null;
  for (const [list, from, to] of [
    [before, start, endA],
    [after, start, endB],
  ] as const) {
    for (let i = from; i < to; i++) {
      const call = list.calls[i]!;
      // A picture from elsewhere is copied over whatever the clip says: draw it all again.
      if (call[0] === 'putPixels') return 'all';
      const r = reach(call, list, fonts);
      if (!r) continue;
      area = area
        ? {
            left: Math.min(area.left, r.left),
            top: Math.min(area.top, r.top),
            right: Math.max(area.right, r.right),
            bottom: Math.max(area.bottom, r.bottom),
          }
        : r;
    }
  }
  return area;
}
