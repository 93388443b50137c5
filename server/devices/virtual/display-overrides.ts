/**
 * The display size and density the window manager forces (`wm size`, `wm density`), kept as
 * DisplayContent keeps them, for the shell command and for a profile that brings them back.
 */
import { DEVICE } from './identity.js';

/** A size in pixels, width by height. */
export interface Size {
  w: number;
  h: number;
}

/** The window manager's smallest forced density (WindowManagerShellCommand). */
export const MIN_DENSITY = 72;

/**
 * The densest display the virtual phone draws, dpi: a dp of 8 pixels. Android takes any
 * density; the phone's text and views grow with its square, and past this would hang it.
 */
export const MAX_DRAWN_DENSITY = 1280;

/**
 * The size the window manager forces (DisplayContent.setForcedSize): the panel's own clears
 * the override (null); any other is kept between 200 pixels and three times the panel's
 * long side.
 */
export function forcedSize(size: Size): Size | null {
  if (!Number.isInteger(size.w) || !Number.isInteger(size.h)) return null;
  if (size.w === DEVICE.width && size.h === DEVICE.height) return null;
  const max = Math.max(DEVICE.width, DEVICE.height) * 3;
  const bound = (n: number) => Math.min(Math.max(n, 200), max);
  return { w: bound(size.w), h: bound(size.h) };
}

/**
 * A forced density as the phone keeps it: the panel's own clears the override (null), as
 * does one it cannot take (below MIN_DENSITY or above MAX_DRAWN_DENSITY; the shell refuses
 * those before they get here).
 */
export function forcedDensity(density: number): number | null {
  const usable = Number.isInteger(density) && density >= MIN_DENSITY && density <= MAX_DRAWN_DENSITY;
  return usable && density !== DEVICE.density ? density : null;
}
