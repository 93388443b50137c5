/**
 * The boundary between the virtual phone's system side (ADB, shell, packages, files) and
 * its UI side (the screen model, drawing, input, the UiAutomator2 server). The system side
 * creates one PhoneUi per phone with createPhoneUi() from ./index.ts and drives it from
 * shell commands (`input`, `am`, `screencap`, `uiautomator dump`, ...).
 */
import type { AppException } from '../app-crash.js';
import type { Duplex } from 'node:stream';
import type { BrowserView } from '../browser/browser-app.js';
import type { DisplayList } from './display-list.js';

/** Surface.ROTATION_*: how far the display is turned from its natural (portrait) orientation, in quarter turns. */
export type Rotation = 0 | 1 | 2 | 3;

/** What kind of lock the phone has (locksettings): `none` shows no keyguard at all. */
export type LockKind = 'none' | 'swipe' | 'pin' | 'password' | 'pattern';

/** What the UI needs from the rest of the phone. */
export interface PhoneUiHost {
  /** Installed apps that have a launcher activity, in install order. */
  launcherApps(): LauncherApp[];
  /** Writes one logcat line (shown by `adb logcat`). */
  log(priority: 'V' | 'D' | 'I' | 'W' | 'E', tag: string, message: string): void;
  /** Reads a system setting (`settings get <namespace> <key>`), null when unset. */
  setting(namespace: 'system' | 'secure' | 'global', key: string): string | null;
  /**
   * Optional: writes a system setting (`settings put`), used when the user flips a toggle in
   * the Settings app. Without it the UI keeps toggled values to itself (they then show in
   * the UI but not in `settings get`).
   */
  setSetting?(namespace: 'system' | 'secure' | 'global', key: string, value: string): void;
  /** Optional: the browser app's page (URL, title, latest frame), when the phone has one. */
  browser?(): BrowserView | null;
  /**
   * Optional: an app in front threw an uncaught exception; the phone logs it as the runtime
   * does and ends the app's process (the UI then closes the app's screens itself).
   */
  appCrashed?(pkg: string, exception: AppException): void;
  /** Optional: the phone's lock (locksettings); without it the phone has none. */
  lockKind?(): LockKind;
  /** Optional: checks a credential typed on the lock screen's bouncer. */
  checkCredential?(entered: string): boolean;
  /**
   * Optional: force-stops an app as ActivityManager does (its processes too, and the log
   * line), for the Settings app's Force stop; without it the UI closes the app's screens.
   */
  forceStop?(pkg: string): void;
  /** Optional: the battery's level (of 100) the status bar shows; full without it. */
  batteryLevel?(): number;
  /**
   * Optional: the display as the window manager sizes it (`wm size`, `wm density`), upright;
   * the panel's size and density (the UI's options) without it.
   */
  display?(): DisplaySize;
}

/** A display's upright size in pixels and its density in dpi. */
export interface DisplaySize {
  width: number;
  height: number;
  density: number;
}

export interface LauncherApp {
  package: string;
  label: string;
  /** Fully qualified launcher activity class. */
  activity: string;
}

export interface DeviceIdentity {
  manufacturer: string;
  model: string;
  /** Android release, e.g. "14". */
  release: string;
  sdk: number;
  /** The build's id (ro.build.display.id), Settings' "Build number". */
  buildId: string;
  /** The panel's own density, dpi (its pixels per inch, whatever `wm density` forces). */
  density: number;
}

export interface PhoneUiOptions {
  width: number;
  height: number;
  /** dpi, e.g. 320 (pixel ratio 2). */
  density: number;
  identity: DeviceIdentity;
  /** Clock for the status bar; injected so screenshots are reproducible in tests. */
  now?: () => Date;
}

export interface ForegroundActivity {
  package: string;
  /** Fully qualified activity class. */
  activity: string;
}

/** ViewConfiguration.getLongPressTimeout() on Android 12+: a press held this long is a long press. */
export const LONG_PRESS_MS = 400;

/**
 * Keys whose long press the system answers (PhoneWindowManager: POWER's menu, HOME's
 * assistant, CAMERA, SEARCH, ASSIST, VOICE_ASSIST), which the virtual phone does not model.
 */
export const SYSTEM_LONG_PRESS: ReadonlySet<number> = new Set([26, 3, 27, 84, 219, 231]);

/**
 * Whether a key acts again while it is held: one that types, deletes or moves the focus
 * (TAB, the D-pad), which acts on every key-down, a repeat included. A long press
 * (`input keyevent --longpress`, UiAutomator2's long_press_keycode) sends a key-down, one
 * repeat and a key-up, so such a key acts twice; others act once.
 */
export function repeatsWhenHeld(code: number): boolean {
  return keycodeChar(code, false) !== null || code === KEYCODE.DEL || code === KEYCODE.TAB || DPAD.has(code);
}

/** KEYCODE_DPAD_UP, DOWN, LEFT and RIGHT. */
const DPAD: ReadonlySet<number> = new Set([19, 20, 21, 22]);

/**
 * The character a key types on the default (US) key map: letters, digits, space and the
 * symbols with keys of their own; null for keys that type nothing.
 */
export function keycodeChar(code: number, shift: boolean): string | null {
  if (code >= 29 && code <= 54) {
    const c = String.fromCharCode(97 + code - 29);
    return shift ? c.toUpperCase() : c;
  }
  if (code >= 7 && code <= 16) return String(code - 7);
  return KEY_SYMBOLS[code] ?? null;
}

const KEY_SYMBOLS: Record<number, string> = {
  17: '*',
  18: '#',
  55: ',',
  56: '.',
  62: ' ',
  68: '`',
  69: '-',
  70: '=',
  71: '[',
  72: ']',
  73: '\\',
  74: ';',
  75: "'",
  76: '/',
  77: '@',
  81: '+',
};

/** EditorInfo's IME_ACTION_* codes: what an input method's action key asks of a field. */
export const IME_ACTION = {
  UNSPECIFIED: 0,
  NONE: 1,
  GO: 2,
  SEARCH: 3,
  SEND: 4,
  NEXT: 5,
  DONE: 6,
  PREVIOUS: 7,
} as const;

/** Android key codes the UI understands (others are logged and ignored). */
export const KEYCODE = {
  HOME: 3,
  BACK: 4,
  ENTER: 66,
  DEL: 67,
  TAB: 61,
  MENU: 82,
  APP_SWITCH: 187,
  WAKEUP: 224,
  SLEEP: 223,
  POWER: 26,
  NUMPAD_ENTER: 160,
  /** KEYCODE_0; KEYCODE_9 is 16. */
  DIGIT_0: 7,
} as const;

/** The screen's power and the lock screen, as dumpsys window and power report them. */
export interface PowerState {
  awake: boolean;
  /** The keyguard is showing (over whatever runs), awake or not. */
  keyguard: boolean;
  /** Its bouncer asks for the PIN, password or pattern. */
  bouncer: boolean;
}

/** One activity of a task, as the activity manager keeps it (an ActivityRecord). */
export interface TaskActivity {
  /** The activity's full class name. */
  readonly activity: string;
  /** The data of the intent that started it, if any. */
  readonly data?: string;
  /** Stable while this instance lives: two instances of one activity differ here. */
  readonly instance: number;
}

/** One task, as `dumpsys activity` and `am stack list` list it. */
export interface TaskInfo {
  /**
   * The task id: given when the task is created, from one counter that only goes up (so a
   * new task gets a higher id than any before it), and never reused while the phone runs.
   */
  readonly id: number;
  /** The root task it sits in: its own id, or for the launcher's task the home root task's. */
  readonly rootId: number;
  readonly type: 'home' | 'standard';
  readonly package: string;
  /** Its activities from the bottom (the root) to the top. */
  readonly activities: readonly TaskActivity[];
  /** Shown on the display now (the task in front, or home when no app is over it). */
  readonly visible: boolean;
}

/** The phone's tasks: how the display stacks them and how recently each was in front. */
export interface TaskList {
  /** Every task, top to bottom as the display stacks them; the launcher's (home) task is one. */
  readonly stack: readonly TaskInfo[];
  /** Task ids, the most recently resumed first (RecentTasks' order). */
  readonly recents: readonly number[];
}

export interface PhoneUi {
  /** The display's size as apps see it now: sideways while it is turned a quarter. */
  readonly width: number;
  readonly height: number;
  readonly density: number;
  /** Height of the status bar in pixels. */
  readonly statusBarHeight: number;
  /** Increments on every visible change; lets callers cache renders. */
  readonly version: number;

  /** PNG of the current screen. */
  renderPng(): Buffer;
  /**
   * The current screen as RGBA pixels, width x height, 4 bytes a pixel (what a video
   * recorder encodes; no PNG round trip). The array is the phone's own drawing surface:
   * read it before the screen is drawn again.
   */
  renderRgba(): Uint8Array;
  /**
   * Optional: the current screen as drawing calls (plain data), which playDisplayList()
   * draws into the pixels renderRgba() returns, on any thread.
   */
  displayList?(): DisplayList;

  tap(x: number, y: number): void;
  /** Touches and holds (a long press); a view without a long-click action gets a tap on release. */
  longPress(x: number, y: number): void;
  /** A swipe that does not move is a tap, or a long press when held LONG_PRESS_MS or more. */
  swipe(x1: number, y1: number, x2: number, y2: number, durationMs: number): void;
  /**
   * A drag (`input draganddrop`, UiObject2.drag): a press held past the long-press timeout,
   * then a move. Without a move it is a long press; where no view takes the held press, the
   * move scrolls as a swipe. A view with a long-click action would be lifted and dragged,
   * which is not modeled: returns that view's text or description, and nothing happens;
   * null when done.
   */
  drag(x1: number, y1: number, x2: number, y2: number, durationMs: number): string | null;
  /** Types into the focused text field (ignored when none has focus). */
  text(value: string): void;
  /**
   * An input method's editor action on the focused field (IME_ACTION), as
   * InputConnection.performEditorAction delivers it; ignored when no field has focus.
   */
  editorAction(action: number): void;
  key(keycode: number): void;

  /**
   * Brings an app to the front. Returns false when no such app is known to the UI, or when
   * it is one the phone cannot run (the launcher then shows the dialog that says so).
   */
  launch(pkg: string, activity?: string, data?: string): boolean;
  /**
   * Whether the activity on top is `activity` of `pkg`, started with the same intent data:
   * starting it again then starts no new instance (am says the intent was delivered to it).
   * Another data (App info of another package) is another intent, which gets a new instance.
   */
  isOnTop(pkg: string, activity: string, data?: string): boolean;
  /**
   * Closes an app's task without stopping the app (what Activity.finishAndRemoveTask() of
   * its activity does): the task behind it, or the launcher, shows.
   */
  removeTask(pkg: string): void;
  /**
   * FLAG_ACTIVITY_CLEAR_TOP: closes the screens above the activity in its app's task (and
   * the activity itself unless singleTop); false when the task has no such activity.
   */
  clearTop(pkg: string, activity: string, singleTop: boolean): boolean;
  /** Shows the system dialog "<label> can't run on this virtual phone" over the screen. */
  showNotRunnable(pkg: string): void;
  /** Closes an app's screens and forgets their state; shows the launcher if it was in front. */
  forceStop(pkg: string): void;
  /** Forgets an app's data (what `pm clear` does), e.g. the login app's typed fields. */
  clearData(pkg: string): void;
  foreground(): ForegroundActivity;
  /** The tasks, with the ids the activity manager gave them (dumpsys activity, am stack list). */
  taskList(): TaskList;
  /** Call after the set of launcher apps changed (install, uninstall) to redraw. */
  appsChanged(): void;

  /**
   * The `uiautomator dump` XML of the current screen (`--compressed`: without the views
   * unimportant for accessibility).
   */
  dumpHierarchy(compressed?: boolean): string;

  /** Subscribe to visible changes. Returns unsubscribe. */
  onChange(listener: () => void): () => void;

  /** Serialisable state (foreground app, typed text, scroll positions) for profile saves. */
  saveState(): unknown;
  restoreState(state: unknown): void;

  /**
   * Optional: call after something the UI reads through the host changed on its own (e.g.
   * `settings put global airplane_mode_on 1`), so the status bar and Settings redraw.
   */
  settingsChanged?(): void;
  /** Optional: call when what an app draws changed on its own (a browser page repainted). */
  contentChanged?(): void;
  /**
   * Optional: call periodically (e.g. every 15 s from a timer the phone owns). When the
   * status-bar clock shows a new minute it bumps the version and fires change listeners,
   * so a live viewer's clock advances; otherwise it does nothing. Returns whether it did.
   */
  clockTick?(): boolean;
  /** Optional: the current window's view tree (what dumpHierarchy serialises). */
  viewTree?(): UiNodeInfo;
  /**
   * Optional: focuses an editable node and replaces or appends to its text, like
   * AccessibilityNodeInfo ACTION_SET_TEXT. False when the node is gone or not editable.
   */
  setNodeText?(key: string, text: string, mode: 'replace' | 'append'): boolean;
  /** Optional: the screen's power and the keyguard. */
  powerState?(): PowerState;
  /** Optional: `wm dismiss-keyguard`: an insecure keyguard goes, a secure one asks for its credential. */
  dismissKeyguard?(): void;
  /** Optional: the last toast an app showed (its text, and when, on currentTimeMs()'s clock). */
  recentToast?(): { pkg: string; text: string; at: number } | null;
  /**
   * Optional: the time now on the UI's clock (ms since the epoch), the one its status bar
   * and toasts go by; injected in tests (PhoneUiOptions.now), so a toast's age is read on it.
   */
  currentTimeMs?(): number;
  /**
   * Optional: the display's rotation now. It follows the system settings
   * `accelerometer_rotation` and `user_rotation` (what `wm user-rotation` and Appium's
   * setOrientation write) and what the app in front allows.
   */
  rotation?(): Rotation;
}

/** One view of the current window, as the accessibility layer sees it. */
export interface UiNodeInfo {
  /** Stable while this view exists; a new screen instance gets new keys. */
  readonly key: string;
  readonly className: string;
  readonly packageName: string;
  readonly resourceId: string;
  /** What accessibility reports: password fields show one bullet per character. */
  readonly text: string;
  readonly contentDesc: string;
  readonly hint: string;
  /** Visible bounds in screen pixels, right/bottom exclusive. */
  readonly bounds: {
    readonly left: number;
    readonly top: number;
    readonly right: number;
    readonly bottom: number;
  };
  readonly checkable: boolean;
  readonly checked: boolean;
  readonly clickable: boolean;
  readonly enabled: boolean;
  readonly focusable: boolean;
  readonly focused: boolean;
  readonly scrollable: boolean;
  readonly longClickable: boolean;
  readonly password: boolean;
  readonly selected: boolean;
  readonly children: readonly UiNodeInfo[];
}

/** What a plain Android view reports before anything sets it: no text, not interactive, enabled. */
export const PLAIN_VIEW = {
  resourceId: '',
  text: '',
  contentDesc: '',
  hint: '',
  checkable: false,
  checked: false,
  clickable: false,
  enabled: true,
  focusable: false,
  focused: false,
  scrollable: false,
  longClickable: false,
  password: false,
  selected: false,
} as const satisfies Partial<UiNodeInfo>;

/**
 * The UiAutomator2 server of the phone: an HTTP server on device port 6790 while
 * `am instrument` of io.appium.uiautomator2.server.test runs. The system side hands it
 * every connection opened to that port (through `adb forward`).
 */
export interface UiAutomator2Server {
  /** Serves one connection (a Duplex) until it closes. */
  handleConnection(socket: Duplex): void;
  /** Closes sessions and open connections (instrumentation stopped). */
  close(): void;
}
