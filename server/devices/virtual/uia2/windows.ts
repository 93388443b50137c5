/**
 * `POST /appium/list_windows` (Appium's `mobile: listWindows`): the windows the
 * accessibility layer reports on the display (UiAutomation.getWindowsOnAllDisplays()), as
 * the UiAutomator2 server describes each AccessibilityWindowInfo. On the virtual phone
 * those are the window in front (an app's, or the lock screen in SystemUI's notification
 * shade) and, while they are drawn, the status bar and the navigation bar; the soft
 * keyboard is not modeled, so no input-method window is listed.
 */
import { PNG } from 'pngjs';

/** AccessibilityWindowInfo.TYPE_APPLICATION and TYPE_SYSTEM. */
const TYPE_APPLICATION = 1;
const TYPE_SYSTEM = 3;
/** The built-in display's physical id, as SurfaceFlinger names it (dumpsys display). */
export const PHYSICAL_DISPLAY_ID = '4619827259835644672';
const SYSTEM_UI = 'com.android.systemui';

export interface WindowRect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** One window as the server's WindowModel serialises it. */
export interface WindowModel {
  windowId: number;
  displayId: number;
  physicalDisplayId: string;
  virtualDisplayId: null;
  rect: WindowRect;
  packageName: string | null;
  screenshot: string | null;
  type: number;
  title: string | null;
  layer: number;
  isAccessibilityFocused: boolean;
  isActive: boolean;
  isFocused: boolean;
  isInPictureInPictureMode: boolean;
}

/** What the windows are made of: the screen now, and the parts of it the bars take. */
export interface WindowScene {
  width: number;
  height: number;
  /** The package whose window is in front, and its label (the window's title). */
  front: { packageName: string; title: string | null };
  /** The lock screen is showing: SystemUI's notification shade is the window in front. */
  keyguard: boolean;
  statusBarHeight: number;
  navigationBarHeight: number;
  /** The screen's RGBA pixels, cut into each window's screenshot; null with skipScreenshots. */
  rgba: (() => Uint8Array) | null;
}

/**
 * The windows of the scene, top-most first as AccessibilityWindowInfo layers go, kept
 * where every filter given matches (AND; a filter with a null value is ignored; an unknown
 * key excludes nothing), as ListWindows filters them.
 */
export function listWindows(scene: WindowScene, filters: Record<string, unknown> | null): WindowModel[] {
  const { width, height } = scene;
  const nav = scene.navigationBarHeight;
  const full = scene.rgba ? screen(width, height, scene.rgba()) : null;
  const window = (
    windowId: number,
    layer: number,
    rect: WindowRect,
    packageName: string,
    type: number,
    title: string | null,
    active: boolean,
  ): WindowModel => ({
    windowId,
    displayId: 0,
    physicalDisplayId: PHYSICAL_DISPLAY_ID,
    virtualDisplayId: null,
    rect,
    packageName,
    screenshot: full ? cut(full, rect) : null,
    type,
    title,
    layer,
    isAccessibilityFocused: false,
    isActive: active,
    isFocused: active,
    isInPictureInPictureMode: false,
  });
  const windows = [
    window(
      3,
      3,
      { x: 0, y: height - nav, width, height: nav },
      SYSTEM_UI,
      TYPE_SYSTEM,
      'Navigation bar',
      false,
    ),
    window(
      2,
      2,
      { x: 0, y: 0, width, height: scene.statusBarHeight },
      SYSTEM_UI,
      TYPE_SYSTEM,
      'Status bar',
      false,
    ),
    scene.keyguard
      ? window(1, 1, { x: 0, y: 0, width, height }, SYSTEM_UI, TYPE_SYSTEM, 'Notification shade', true)
      : window(
          1,
          1,
          { x: 0, y: 0, width, height },
          scene.front.packageName,
          TYPE_APPLICATION,
          scene.front.title,
          true,
        ),
  ].filter((w) => w.rect.height > 0);
  if (!filters) return windows;
  return windows.filter((w) =>
    Object.entries(filters).every(
      ([key, value]) => value === null || value === undefined || matches(w, key, value),
    ),
  );
}

function matches(w: WindowModel, key: string, value: unknown): boolean {
  switch (key) {
    case 'packageName':
      return glob(w.packageName, value);
    case 'title':
      return glob(w.title, value);
    case 'windowId':
      return integer(w.windowId, value);
    case 'displayId':
      return integer(w.displayId, value);
    case 'type':
      return integer(w.type, value);
    case 'layer':
      return integer(w.layer, value);
    case 'physicalDisplayId':
      return w.physicalDisplayId === String(value);
    case 'isAccessibilityFocused':
    case 'isActive':
    case 'isFocused':
    case 'isInPictureInPictureMode':
      return boolean(w[key], value);
    default:
      return true;
  }
}

/** `*` any run, `?` one character, `\*` and `\?` themselves; the whole name must match. */
function glob(text: string | null, pattern: unknown): boolean {
  if (text === null) return false;
  let source = '';
  const p = String(pattern);
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (c === '\\' && (p[i + 1] === '*' || p[i + 1] === '?')) source += `\\${p[++i]}`;
    else source += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${source}$`).test(text);
}

function integer(actual: number, value: unknown): boolean {
  if (typeof value === 'number') return actual === Math.trunc(value);
  const text = String(value);
  return /^[+-]?\d+$/.test(text) && actual === Number(text);
}

function boolean(actual: boolean, value: unknown): boolean {
  if (typeof value === 'boolean') return actual === value;
  if (typeof value !== 'string') return false;
  const text = value.trim().toLowerCase();
  if (text === 'true' || text === '1') return actual;
  if (text === 'false' || text === '0') return !actual;
  return false;
}

/** The screen's pixels as a PNG to cut windows from (no copy, no decoding). */
function screen(width: number, height: number, rgba: Uint8Array): PNG {
  const png = new PNG();
  png.width = width;
  png.height = height;
  png.data = Buffer.from(rgba.buffer, rgba.byteOffset, rgba.byteLength);
  return png;
}

/** The rect's pixels of the screen as a base64 PNG (what UiAutomation.takeScreenshot(window) gives). */
function cut(full: PNG, rect: WindowRect): string {
  const out = new PNG({ width: rect.width, height: rect.height });
  PNG.bitblt(full, out, rect.x, rect.y, rect.width, rect.height, 0, 0);
  return PNG.sync.write(out, { deflateLevel: 1, filterType: 1 }).toString('base64');
}
