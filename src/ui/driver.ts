/**
 * What the locator engine needs from a phone, whichever back end answers: the UI tree as
 * XML, and input (taps, long presses, swipes, keys, text). Two implementations: the
 * UiAutomator2 server over the lease's ADB (./uia2.ts) and `uiautomator dump` + `input`
 * (./dump.ts).
 */
import type { PhoneAdb, ShellResult } from '../adb/phone-adb.js';
import type { PhoneleaseLogger } from '../util/log.js';
import type { UiNode } from './tree.js';

export type UiEngineName = 'uiautomator2' | 'dump';

export interface UiDriver {
  readonly engine: UiEngineName;
  /**
   * Whether source() reads only a settled screen (it waits until nothing has changed for a
   * while), so one read shows stable bounds on its own; otherwise "stable" takes two reads.
   */
  readonly settles: boolean;
  /** The current UI hierarchy as XML. */
  source(): Promise<string>;
  tap(x: number, y: number): Promise<void>;
  longPress(x: number, y: number, durationMs: number): Promise<void>;
  swipe(from: { x: number; y: number }, to: { x: number; y: number }, durationMs: number): Promise<void>;
  key(keycode: number): Promise<void>;
  /** Replaces the text of `node`, which the caller has just tapped (so it has focus). */
  replaceText(node: UiNode, text: string): Promise<void>;
  close(): Promise<void>;
}

/** What a driver may use of its lease. */
export interface PhoneChannel {
  readonly id: string;
  /** Runs a command; the engine notes the ones that are input itself (a dump is a read). */
  shell(command: string): Promise<ShellResult>;
  adb(): Promise<PhoneAdb>;
  readonly logger: PhoneleaseLogger;
}

/** Android key codes for the names phone.press() and locator.press() accept. */
export const KEYS: Readonly<Record<string, number>> = {
  Home: 3,
  Back: 4,
  Call: 5,
  EndCall: 6,
  ArrowUp: 19,
  ArrowDown: 20,
  ArrowLeft: 21,
  ArrowRight: 22,
  VolumeUp: 24,
  VolumeDown: 25,
  Power: 26,
  Camera: 27,
  Tab: 61,
  Space: 62,
  Enter: 66,
  Backspace: 67,
  Menu: 82,
  Search: 84,
  Escape: 111,
  Delete: 112,
  MoveHome: 122,
  MoveEnd: 123,
  AppSwitch: 187,
};

/**
 * Android's KeyEvent constant names whose spelling differs from the names above
 * (KEYCODE_DEL is Backspace); the others are found by the names above or are a letter or
 * a digit.
 */
const ANDROID_KEYCODES: Readonly<Record<string, number>> = {
  DPAD_UP: 19,
  DPAD_DOWN: 20,
  DPAD_LEFT: 21,
  DPAD_RIGHT: 22,
  DPAD_CENTER: 23,
  CLEAR: 28,
  COMMA: 55,
  PERIOD: 56,
  DEL: 67,
  FORWARD_DEL: 112,
  PAGE_UP: 92,
  PAGE_DOWN: 93,
  NUMPAD_ENTER: 160,
  WAKEUP: 224,
  SLEEP: 223,
};

export type KeyName = keyof typeof KEYS | `KEYCODE_${string}` | number;

export function keycodeOf(key: string | number): number {
  if (typeof key === 'number') return key;
  const named = KEYS[key];
  if (named !== undefined) return named;
  if (/^\d+$/.test(key)) return Number(key);
  const constant = /^KEYCODE_(.+)$/.exec(key)?.[1];
  if (constant) {
    const android = ANDROID_KEYCODES[constant];
    if (android !== undefined) return android;
    const byConstant = Object.entries(KEYS).find(([k]) => k.toUpperCase() === constant.replace(/_/g, ''));
    if (byConstant) return byConstant[1];
    if (/^[A-Z]$/.test(constant)) return 29 + constant.charCodeAt(0) - 65;
    if (/^[0-9]$/.test(constant)) return 7 + Number(constant);
  }
  throw new TypeError(
    `Unknown key ${JSON.stringify(key)}: use one of ${Object.keys(KEYS).join(', ')}, a KEYCODE_ name (KEYCODE_DEL, KEYCODE_DPAD_DOWN, KEYCODE_A, ...) or a key code number.`,
  );
}
