/**
 * What `screenrecord --bugreport` adds to a video (AOSP screenrecord's Overlay): an
 * information page as the first frame, and on every frame of the screen a time stamp at the
 * top left, `HH:MM:SS.mmm f=<frame number> (<frames dropped>)`. Both are drawn over the
 * video frame at the video's size, as the phone's overlay draws on the encoder's surface;
 * the screen's own pixels (and the canvas a recording keeps them on) are not touched.
 *
 * Text is the phone's typeface, white with a black outline as screenrecord's font is, sized
 * as screenrecord sizes it: the video's longer side holds 35 lines of the time stamp, and 30
 * of the information page.
 */
import type { Canvas } from '../ui/raster.js';
import type { TextRenderer } from '../ui/font.js';
import { GRID_ROWS } from '../ui/font.js';

/** How long before the recording's start the information page is shown (screenrecord's hold time). */
export const INFO_PAGE_HOLD_MS = 250;

/** Lines of text the video's longer side holds: the time stamp's, the information page's. */
const CAPTION_LINES = 35;
const INFO_PAGE_LINES = 30;
/** The information page's grey frame (4 pixels, so a player's edges show) and its text's margin. */
const FRAME_WIDTH = 4;
const FRAME_COLOR = 0x808080;
const MARGIN = 10;
const WHITE = 0xffffff;
const BLACK = 0x000000;

/** Font scale for `lines` lines of text along the canvas's longer side. */
function scaleFor(canvas: Canvas, lines: number): number {
  return Math.max(canvas.width, canvas.height) / (lines * GRID_ROWS);
}

/** How far the black outline reaches around text at `scale`. */
function outlineWidth(scale: number): number {
  return Math.max(1, Math.round(scale / 2));
}

/** Text in white with a black outline, readable over any screen. */
function outlined(canvas: Canvas, fonts: TextRenderer, text: string, x: number, top: number, scale: number) {
  const r = outlineWidth(scale);
  for (const [dx, dy] of [
    [-r, -r],
    [0, -r],
    [r, -r],
    [-r, 0],
    [r, 0],
    [-r, r],
    [0, r],
    [r, r],
  ] as const) {
    fonts.paint(canvas, text, x + dx, top + dy, { scale, color: BLACK });
  }
  fonts.paint(canvas, text, x, top, { scale, color: WHITE });
}

/** Draws a frame's time stamp at the canvas's top left. */
export function drawCaption(canvas: Canvas, fonts: TextRenderer, caption: string): void {
  const scale = scaleFor(canvas, CAPTION_LINES);
  // Its outline just inside the picture.
  const r = outlineWidth(scale);
  outlined(canvas, fonts, caption, r, r, scale);
}

/**
 * Splits `text` into lines that fit `width` (the first) and `width - indent` (the rest), as
 * screenrecord's text renderer does: at the last space that fits, or in a word that does not.
 */
function wrapLine(fonts: TextRenderer, text: string, scale: number, width: number, indent: number): string[] {
  const lines: string[] = [];
  let rest = text;
  for (let room = width; rest.length > 0; room = width - indent) {
    if (fonts.measure(rest, { scale }) <= room) {
      lines.push(rest);
      break;
    }
    let fits = 1;
    while (fits < rest.length && fonts.measure(rest.slice(0, fits + 1), { scale }) <= room) fits++;
    const space = rest.lastIndexOf(' ', fits);
    const cut = space > 0 ? space : fits;
    lines.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^ /, '');
  }
  return lines;
}

/**
 * Draws the information page: black, a thin grey frame, and `paragraphs` (an empty string
 * is a small gap), each wrapped to the width with its continued lines indented.
 */
export function drawInfoPage(canvas: Canvas, fonts: TextRenderer, paragraphs: readonly string[]): void {
  const { width, height } = canvas;
  canvas.fill(BLACK);
  canvas.fillRect(0, 0, width, FRAME_WIDTH, FRAME_COLOR);
  canvas.fillRect(0, height - FRAME_WIDTH, width, FRAME_WIDTH, FRAME_COLOR);
  canvas.fillRect(0, 0, FRAME_WIDTH, height, FRAME_COLOR);
  canvas.fillRect(width - FRAME_WIDTH, 0, FRAME_WIDTH, height, FRAME_COLOR);
  const scale = scaleFor(canvas, INFO_PAGE_LINES);
  const lineHeight = GRID_ROWS * scale;
  const indent = lineHeight;
  let top = MARGIN;
  for (const paragraph of paragraphs) {
    if (paragraph === '') {
      top += lineHeight / 3;
      continue;
    }
    wrapLine(fonts, paragraph, scale, width - 2 * MARGIN, indent).forEach((line, i) => {
      outlined(canvas, fonts, line, MARGIN + (i > 0 ? indent : 0), top, scale);
      top += lineHeight;
    });
  }
}
