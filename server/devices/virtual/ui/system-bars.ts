/**
 * The status bar and the three-button navigation bar. They belong to SystemUI on a real
 * phone, so they are drawn over the app window but are not part of its view tree (neither
 * `uiautomator dump` nor the UiAutomator2 source lists them).
 */
import type { TextRenderer } from './font.js';
import { drawIcon } from './icons.js';
import type { Color, Surface } from './raster.js';
import type { Metrics } from './theme.js';

export interface StatusInfo {
  /** "HH:MM". */
  time: string;
  wifi: boolean;
  airplane: boolean;
  /** 0..100. */
  battery: number;
  /** Show the level as text beside the icon (Settings > Battery > Battery percentage). */
  batteryPercent: boolean;
}

export interface BarColors {
  background: Color;
  /** Light (white) icons for dark backgrounds. */
  lightIcons: boolean;
}

export function formatClock(d: Date): string {
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
}

export function drawStatusBar(
  c: Surface,
  fonts: TextRenderer,
  m: Metrics,
  colors: BarColors,
  info: StatusInfo,
  transparent: boolean,
): void {
  const h = m.statusBar;
  if (!transparent) c.fillRect(0, 0, m.width, h, colors.background);
  const fg = colors.lightIcons ? 0xffffff : 0x1d1b20;
  const style = { scale: m.text.body, color: fg, bold: true };
  fonts.draw(c, info.time, 16 * m.dp, (h - fonts.capHeight(style)) / 2, style);

  // Right cluster, laid out from the right edge: battery, wifi, then cell or airplane.
  const cy = h / 2;
  const icon = 16 * m.dp;
  let x = m.width - 14 * m.dp;
  const bw = 7 * m.dp;
  const bh = 13 * m.dp;
  const bx = x - bw;
  const by = cy - bh / 2 + 0.5 * m.dp;
  // Battery: a vertical body with a nub, the level filled from the bottom.
  c.fillRoundRect(bx + bw * 0.3, by - 1.5 * m.dp, bw * 0.4, 2 * m.dp, 0.6 * m.dp, fg);
  c.fillRoundRect(bx, by, bw, bh, 1.5 * m.dp, fg, 0.35);
  const level = Math.max(0, Math.min(100, info.battery)) / 100;
  const fillH = bh * level;
  c.pushClip({ left: bx, top: by + bh - fillH, right: bx + bw, bottom: by + bh });
  c.fillRoundRect(bx, by, bw, bh, 1.5 * m.dp, fg);
  c.popClip();
  x = bx - 6 * m.dp;
  if (info.batteryPercent) {
    const pct = `${Math.round(info.battery)}%`;
    const w = fonts.measure(pct, style);
    fonts.draw(c, pct, x - w, (h - fonts.capHeight(style)) / 2, style);
    x -= w + 6 * m.dp;
  }
  if (info.wifi) {
    drawIcon(c, 'wifi', x - icon / 2, cy, icon, fg, colors.background);
    x -= icon + 4 * m.dp;
  }
  if (info.airplane) drawIcon(c, 'airplane', x - icon / 2, cy, icon * 0.9, fg, colors.background);
  else drawIcon(c, 'cell', x - icon / 2, cy, icon * 0.85, fg, colors.background);
}

export type NavButton = 'back' | 'home' | 'recents';

/** Centre x of each button: thirds of the bar, like the stock three-button layout. */
function navCenters(m: Metrics): Record<NavButton, number> {
  return { back: m.width * 0.22, home: m.width * 0.5, recents: m.width * 0.78 };
}

export function drawNavBar(c: Surface, m: Metrics, colors: BarColors, transparent: boolean): void {
  const top = m.height - m.navBar;
  if (!transparent) c.fillRect(0, top, m.width, m.navBar, colors.background);
  const fg = colors.lightIcons ? 0xffffff : 0x1d1b20;
  const cy = top + m.navBar / 2;
  const centers = navCenters(m);
  const s = 8 * m.dp;
  const lw = 1.6 * m.dp;
  // Back: an outlined triangle pointing left.
  const bx = centers.back;
  c.polyline(
    [
      [bx + s * 0.6, cy - s * 0.75],
      [bx - s * 0.7, cy],
      [bx + s * 0.6, cy + s * 0.75],
      [bx + s * 0.6, cy - s * 0.75],
    ],
    lw,
    fg,
  );
  c.strokeCircle(centers.home, cy, s * 0.85, lw, fg);
  c.strokeRoundRect(centers.recents - s * 0.75, cy - s * 0.75, s * 1.5, s * 1.5, 2 * m.dp, lw, fg);
}

/** Which navigation button a tap at (x, y) hits, if any. */
export function navButtonAt(m: Metrics, x: number, y: number): NavButton | null {
  if (y < m.height - m.navBar || y >= m.height) return null;
  const centers = navCenters(m);
  const half = 40 * m.dp;
  for (const b of ['back', 'home', 'recents'] as const) if (Math.abs(x - centers[b]) <= half) return b;
  return null;
}
