/**
 * Colours (Material 3 baseline tokens) and screen metrics shared by every screen. Metrics
 * are derived from the display so a phone with another density keeps the same layout in dp.
 */
import type { Color, Rect } from './raster.js';

/** Colour roles the screens paint with; one set per theme. */
export interface Palette {
  primary: Color;
  onPrimary: Color;
  surface: Color;
  surfaceContainer: Color;
  surfaceContainerHighest: Color;
  onSurface: Color;
  onSurfaceVariant: Color;
  outline: Color;
  error: Color;
  success: Color;
}

/** Light theme, and the theme-independent colours (wallpaper, white, black). */
export const COLORS = {
  primary: 0x6750a4,
  onPrimary: 0xffffff,
  surface: 0xfef7ff,
  surfaceContainer: 0xf3edf7,
  surfaceContainerHighest: 0xe6e0e9,
  onSurface: 0x1d1b20,
  onSurfaceVariant: 0x49454f,
  outline: 0x79747e,
  error: 0xb3261e,
  success: 0x1e6b32,
  wallpaperTop: 0x1f3a5f,
  wallpaperBottom: 0x6b4f8f,
  white: 0xffffff,
  black: 0x000000,
} as const satisfies Palette & Record<string, Color>;

/** Dark theme (Settings > Display > Dark theme, secure ui_night_mode = 2). */
export const DARK_COLORS: Palette = {
  primary: 0xd0bcff,
  onPrimary: 0x381e72,
  surface: 0x141218,
  surfaceContainer: 0x211f26,
  surfaceContainerHighest: 0x36343b,
  onSurface: 0xe6e0e9,
  onSurfaceVariant: 0xcac4d0,
  outline: 0x938f99,
  error: 0xf2b8b5,
  success: 0x8fd19e,
};

/** Whether white icons read better than dark ones on this colour (relative luminance). */
export function isDark(c: Color): boolean {
  const r = (c >> 16) & 0xff;
  const g = (c >> 8) & 0xff;
  const b = c & 0xff;
  return 0.2126 * r + 0.7152 * g + 0.0722 * b < 140;
}

/** Icon background colours for apps; a package always maps to the same one. */
const APP_PALETTE: readonly Color[] = [
  0x1a73e8, 0x188038, 0xd93025, 0xe37400, 0x9334e6, 0x12858a, 0xc5221f, 0x3949ab, 0x00897b, 0x6d4c41,
];

export function appColor(pkg: string): Color {
  if (pkg === 'com.android.settings') return 0x3c4a5e;
  if (pkg === 'com.phonelease.login') return 0x6750a4;
  let h = 2166136261;
  for (let i = 0; i < pkg.length; i++) h = Math.imul(h ^ pkg.charCodeAt(i), 16777619);
  return APP_PALETTE[(h >>> 0) % APP_PALETTE.length] ?? 0x1a73e8;
}

export interface Metrics {
  width: number;
  height: number;
  /** dpi. */
  density: number;
  /** Pixels per dp. */
  dp: number;
  statusBar: number;
  navBar: number;
  /** Where app windows draw their content (between the system bars). */
  content: Rect;
  /** Text scales: design cells to pixels. */
  text: { small: number; body: number; title: number; headline: number; display: number };
}

export function metrics(width: number, height: number, density: number): Metrics {
  const dp = density / 160;
  const statusBar = Math.round(24 * dp);
  const navBar = Math.round(48 * dp);
  return {
    width,
    height,
    density,
    dp,
    statusBar,
    navBar,
    content: { left: 0, top: statusBar, right: width, bottom: height - navBar },
    text: { small: 0.8 * dp, body: dp, title: 1.25 * dp, headline: 1.6 * dp, display: 2 * dp },
  };
}
