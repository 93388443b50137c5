/**
 * What a screen is: plain JSON state (so a profile save can keep it) plus build and input
 * functions in the screen's module. The phone keeps a stack of states per app task.
 */
import type { AppException } from '../../app-crash.js';
import type { BrowserView } from '../../browser/browser-app.js';
import type { TextRenderer } from '../font.js';
import type { Color } from '../raster.js';
import type { Metrics, Palette } from '../theme.js';
import type { DeviceIdentity, LauncherApp, LockKind } from '../types.js';
import type { ViewNode } from '../views.js';

export interface LauncherState {
  kind: 'launcher';
  id: number;
  scroll: number;
  /** The app whose icon menu (long press) is open, if any. */
  menu?: string;
}

/** An activity's screen: what the intent that started it carried, as the activity keeps it. */
interface StartedByIntent {
  /**
   * The intent's data (`package:NAME` for App info, a URL for Chrome), when it had any. The
   * same activity started with other data is another intent, and gets a screen of its own.
   */
  data?: string;
}

export interface SettingsHomeState extends StartedByIntent {
  kind: 'settings-home';
  id: number;
  activity: string;
  scroll: number;
}

export interface SettingsPageState extends StartedByIntent {
  kind: 'settings-page';
  id: number;
  activity: string;
  page: string;
  /** For pages about one app (App info). */
  arg?: string;
  scroll: number;
  /** About phone: taps on Build number still to go before developer options turn on. */
  devTapsLeft?: number;
}

export type LoginField = 'username' | 'password';

export interface LoginState extends StartedByIntent {
  kind: 'login';
  id: number;
  username: string;
  password: string;
  focus: LoginField | null;
  result: string;
  /** True while a slow sign-in is under way (the button is disabled). */
  pending?: boolean;
}

/** Chrome's window: the toolbar and the page the phone's browser shows. */
export interface BrowserState extends StartedByIntent {
  kind: 'browser';
  id: number;
}

export type ScreenState = LauncherState | SettingsHomeState | SettingsPageState | LoginState | BrowserState;

/** Everything a screen may use while building its views or handling input. */
export interface ScreenContext {
  m: Metrics;
  /** The current theme's colours (light or dark, from the Dark theme setting). */
  readonly colors: Palette;
  fonts: TextRenderer;
  identity: DeviceIdentity;
  now(): Date;
  apps(): LauncherApp[];
  /** The label of a package, from the launcher list, or the package name. */
  label(pkg: string): string;
  setting(namespace: 'system' | 'secure' | 'global', key: string): string | null;
  putSetting(namespace: 'system' | 'secure' | 'global', key: string, value: string): void;
  /** The phone's lock (locksettings), as Settings' "Screen lock" names it. */
  lockKind(): LockKind;
  /** Shows a toast of the app in front (Toast.LENGTH_SHORT), replacing one it shows. */
  toast(text: string): void;
  /** The browser app's page, when the phone runs one. */
  browser(): BrowserView | null;
  /** Opens an app the way the launcher does. */
  launch(pkg: string): void;
  forceStop(pkg: string): void;
  /** The app in front crashes: the exception is logged, its process dies, its screens close. */
  crash(pkg: string, exception: AppException): void;
  /** Opens Settings' App info page for a package (what a launcher's "App info" does). */
  showAppInfo(pkg: string): void;
  /** Opens a screen on top of the current one in the same task. */
  push(state: ScreenState): void;
  /** Leaves the current screen (like BACK). */
  pop(): void;
  log(priority: 'V' | 'D' | 'I' | 'W' | 'E', tag: string, message: string): void;
  /** Call after mutating screen state: bumps the version and notifies listeners. */
  changed(): void;
  nextId(): number;
}

/** A built screen: the app's views plus how the system bars look over it. */
export interface ScreenView {
  /** Children of the window's content frame (android:id/content). */
  content: ViewNode[];
  background: Color;
  statusBar: { background: Color; lightIcons: boolean };
  navBar: { background: Color; lightIcons: boolean };
  /** Draws under the system bars (the launcher's wallpaper). */
  edgeToEdge?: boolean;
}
