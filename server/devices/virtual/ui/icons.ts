/**
 * Icon glyphs drawn from raster primitives on a 24-unit grid (the Material icon grid), so
 * they scale with density. Icons that need a hole (gear, pin, info) punch it with the
 * background colour they sit on.
 */
import type { Color, Surface } from './raster.js';

export type IconName =
  | 'wifi'
  | 'cell'
  | 'airplane'
  | 'gear'
  | 'back'
  | 'search'
  | 'bluetooth'
  | 'apps'
  | 'bell'
  | 'battery'
  | 'storage'
  | 'volume'
  | 'brightness'
  | 'palette'
  | 'accessibility'
  | 'shield'
  | 'location'
  | 'key'
  | 'info'
  | 'phone'
  | 'lock'
  | 'person'
  | 'moon'
  | 'chevron'
  | 'android';

/**
 * Draws icon `name` centred on (cx, cy), `size` pixels square. bg is the colour under the
 * icon (for cut-outs).
 */
export function drawIcon(
  c: Surface,
  name: IconName,
  cx: number,
  cy: number,
  size: number,
  color: Color,
  bg: Color,
): void {
  const u = size / 24;
  const X = (v: number) => cx - size / 2 + v * u;
  const Y = (v: number) => cy - size / 2 + v * u;
  const P = (x: number, y: number): [number, number] => [X(x), Y(y)];
  const line = (x1: number, y1: number, x2: number, y2: number, w = 2) =>
    c.line(X(x1), Y(y1), X(x2), Y(y2), w * u, color);
  const poly = (pts: Array<[number, number]>, w = 2) =>
    c.polyline(
      pts.map(([x, y]) => P(x, y)),
      w * u,
      color,
    );
  const fillPoly = (pts: Array<[number, number]>, col = color) =>
    c.fillPolygon(
      pts.map(([x, y]) => P(x, y)),
      col,
    );
  const circle = (x: number, y: number, r: number, col = color) => c.fillCircle(X(x), Y(y), r * u, col);
  const ring = (x: number, y: number, r: number, w = 2) => c.strokeCircle(X(x), Y(y), r * u, w * u, color);
  const rrect = (x: number, y: number, w: number, h: number, r: number, col = color) =>
    c.fillRoundRect(X(x), Y(y), w * u, h * u, r * u, col);
  const srect = (x: number, y: number, w: number, h: number, r: number, lw = 2) =>
    c.strokeRoundRect(X(x), Y(y), w * u, h * u, r * u, lw * u, color);
  const deg = Math.PI / 180;

  switch (name) {
    case 'wifi':
      c.fillSector(X(12), Y(20.5), 17 * u, 45 * deg, 135 * deg, color);
      break;
    case 'cell':
      fillPoly([
        [21, 3],
        [21, 21],
        [3, 21],
      ]);
      break;
    case 'airplane':
      fillPoly([
        [12, 2],
        [13.5, 3.5],
        [13.5, 9],
        [22, 14],
        [22, 16],
        [13.5, 13.5],
        [13.5, 19],
        [16, 21],
        [16, 22.5],
        [12, 21.5],
        [8, 22.5],
        [8, 21],
        [10.5, 19],
        [10.5, 13.5],
        [2, 16],
        [2, 14],
        [10.5, 9],
        [10.5, 3.5],
      ]);
      break;
    case 'gear': {
      for (let i = 0; i < 8; i++) {
        const a = (i * Math.PI) / 4;
        line(12, 12, 12 + Math.cos(a) * 9.5, 12 + Math.sin(a) * 9.5, 4.2);
      }
      circle(12, 12, 7.5);
      circle(12, 12, 3.2, bg);
      break;
    }
    case 'back':
      line(5, 12, 20, 12);
      poly([
        [11.5, 5.5],
        [5, 12],
        [11.5, 18.5],
      ]);
      break;
    case 'search':
      ring(10, 10, 6, 2.2);
      line(14.5, 14.5, 20.5, 20.5, 2.6);
      break;
    case 'bluetooth':
      poly([
        [7, 7.5],
        [17, 16.5],
        [12, 21],
        [12, 3],
        [17, 7.5],
        [7, 16.5],
      ]);
      break;
    case 'apps':
      for (const [x, y] of [
        [4, 4],
        [13.5, 4],
        [4, 13.5],
        [13.5, 13.5],
      ] as const)
        rrect(x, y, 6.5, 6.5, 1.5);
      break;
    case 'bell':
      rrect(6, 5, 12, 14, 6);
      rrect(4, 15.5, 16, 2.5, 1);
      circle(12, 20.5, 2);
      circle(12, 4, 1.5);
      break;
    case 'battery':
      srect(7, 4, 10, 17.5, 2);
      rrect(10, 2, 4, 2.5, 1);
      rrect(9.5, 9, 5, 10, 0.8);
      break;
    case 'storage':
      rrect(4, 4, 16, 4.5, 1.2);
      rrect(4, 10, 16, 4.5, 1.2);
      rrect(4, 16, 16, 4.5, 1.2);
      break;
    case 'volume':
      fillPoly([
        [3, 9],
        [7, 9],
        [12, 4],
        [12, 20],
        [7, 15],
        [3, 15],
      ]);
      c.strokeArc(X(12), Y(12), 4 * u, 2 * u, -50 * deg, 50 * deg, color);
      c.strokeArc(X(12), Y(12), 8 * u, 2 * u, -55 * deg, 55 * deg, color);
      break;
    case 'brightness':
      circle(12, 12, 4.5);
      for (let i = 0; i < 8; i++) {
        const a = (i * Math.PI) / 4;
        line(12 + Math.cos(a) * 7.5, 12 + Math.sin(a) * 7.5, 12 + Math.cos(a) * 10, 12 + Math.sin(a) * 10, 2);
      }
      break;
    case 'palette':
      circle(12, 12, 9.5);
      circle(8, 9, 1.6, bg);
      circle(12, 6.8, 1.6, bg);
      circle(16, 9, 1.6, bg);
      circle(14.5, 16, 2.2, bg);
      break;
    case 'accessibility':
      circle(12, 4.5, 2.2);
      line(5, 8.5, 19, 8.5);
      line(12, 8.5, 12, 14.5);
      line(12, 14.5, 8.5, 21);
      line(12, 14.5, 15.5, 21);
      break;
    case 'shield':
      fillPoly([
        [12, 2],
        [20, 5],
        [20, 11],
        [18.5, 16],
        [12, 22],
        [5.5, 16],
        [4, 11],
        [4, 5],
      ]);
      c.polyline(
        [
          [X(8.3), Y(12)],
          [X(11), Y(14.7)],
          [X(15.8), Y(9.5)],
        ],
        2 * u,
        bg,
      );
      break;
    case 'location':
      circle(12, 9, 7);
      fillPoly([
        [6, 12.5],
        [18, 12.5],
        [12, 22],
      ]);
      circle(12, 9, 2.6, bg);
      break;
    case 'key':
      ring(7.5, 12, 4, 2.4);
      line(11.5, 12, 21, 12, 2.4);
      line(18, 12, 18, 16, 2.4);
      line(21, 12, 21, 15, 2.4);
      break;
    case 'info':
      circle(12, 12, 10);
      rrect(10.8, 10.5, 2.4, 7.5, 1, bg);
      circle(12, 7.3, 1.5, bg);
      break;
    case 'phone':
      srect(6.5, 2, 11, 20, 2.5);
      line(10.5, 18.5, 13.5, 18.5, 1.6);
      break;
    case 'lock':
      c.strokeArc(X(12), Y(10), 4.5 * u, 2.4 * u, 0, Math.PI, color);
      line(7.5, 10, 7.5, 11, 2.4);
      line(16.5, 10, 16.5, 11, 2.4);
      rrect(5, 10.5, 14, 11, 2);
      circle(12, 15.5, 1.7, bg);
      break;
    case 'person':
      circle(12, 8, 4.2);
      rrect(4.5, 14, 15, 8, 4);
      break;
    case 'moon':
      circle(12, 12, 9);
      circle(16.5, 8.5, 7.5, bg);
      break;
    case 'chevron':
      poly([
        [9, 5.5],
        [15.5, 12],
        [9, 18.5],
      ]);
      break;
    case 'android':
      // The robot's head: a half disc with eyes and antennae.
      c.fillSector(X(12), Y(18), 11 * u, 0.01, Math.PI - 0.01, color);
      rrect(1, 17, 22, 1.6, 0.4);
      circle(7.8, 13.2, 1.3, bg);
      circle(16.2, 13.2, 1.3, bg);
      line(5.5, 4.5, 7.8, 8.2, 1.5);
      line(18.5, 4.5, 16.2, 8.2, 1.5);
      break;
  }
}
