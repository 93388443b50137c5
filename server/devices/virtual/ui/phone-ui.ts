/**
 * The phone's UI: tasks and their screen stacks, input routing, drawing to PNG and the
 * hierarchy dump. Every visible change goes through changed(), which bumps the version and
 * tells listeners; the view tree and the PNG are rebuilt lazily, once per version.
 */
import { fatalExceptionLines, type AppException } from '../app-crash.js';
import { PNG } from 'pngjs';
import { TextRenderer } from './font.js';
import { compressedTree, dumpUiAutomator } from './hierarchy.js';
import { DisplayListRecorder, playDisplayList, type DisplayList } from './display-list.js';
import { Canvas, type Surface } from './raster.js';
import { BROWSER_ACTIVITY, BROWSER_PACKAGE_NAME, buildBrowser } from './screens/browser.js';
import { parseUserRotation } from '../settings.js';
import { LAUNCHER_ACTIVITY, LAUNCHER_PACKAGE, buildLauncher } from './screens/launcher.js';
import {
  LOGIN_ACTIVITY,
  LOGIN_PACKAGE,
  buildLogin,
  loginKey,
  loginEditorAction,
  loginText,
  newLoginState,
} from './screens/login.js';
import {
  KEYGUARD_BACKGROUND,
  bouncerPrompt,
  buildKeyguard,
  wrongCredential,
  type KeyguardState,
} from './screens/keyguard.js';
import { buildNotRunnableDialog, type NotRunnableDialog } from './screens/not-runnable.js';
import type { LauncherState, ScreenContext, ScreenState, ScreenView } from './screens/screen.js';
import {
  SETTINGS_ACTIVITY,
  SETTINGS_PACKAGE,
  appInfoPackage,
  SETTINGS_SUB_ACTIVITY,
  airplaneOn,
  buildSettingsHome,
  buildSettingsPage,
  settingsPageForActivity,
  wifiOn,
} from './screens/settings.js';
import { drawNavBar, drawStatusBar, formatClock, navButtonAt } from './system-bars.js';
import { COLORS, DARK_COLORS, metrics, type Metrics } from './theme.js';
import type {
  ForegroundActivity,
  LauncherApp,
  PhoneUi,
  PhoneUiHost,
  LockKind,
  PhoneUiOptions,
  PowerState,
  Rotation,
  TaskActivity,
  TaskInfo,
  TaskList,
  UiNodeInfo,
} from './types.js';
import { KEYCODE, LONG_PRESS_MS, keycodeChar } from './types.js';
import { ViewFactory, findByKey, hitTest, paintTree, type ViewNode } from './views.js';

type Namespace = 'system' | 'secure' | 'global';

interface Task {
  /** The task id the activity manager gave it when the task was created (see newTaskId()). */
  id: number;
  package: string;
  stack: ScreenState[];
}

/** A task as saved: saves made before tasks kept their ids have none. */
type SavedTask = Omit<Task, 'id'> & { id?: number };

/**
 * What saveState() returns; versioned so a later format can still read old profiles. The
 * task fields after `tasks` came later: a save without them is read as the phone kept it then.
 */
interface SavedUi {
  format: 1;
  front: string | null;
  /** The app tasks top to bottom, as the display stacks them. */
  tasks: SavedTask[];
  /** How many of `tasks` are over the home task. */
  aboveHome?: number;
  /** Task ids, the most recently resumed first. */
  recents?: number[];
  /** The id the next new task gets. */
  nextTaskId?: number;
  launcherScroll: number;
  nextId: number;
  settings: Record<string, string>;
}

interface Built {
  version: number;
  view: ScreenView;
  root: ViewNode;
}

/**
 * The home root task, which the window manager creates when the display is (TaskDisplayArea's
 * root home task): the first task id given after boot.
 */
const HOME_ROOT_TASK_ID = 1;
/**
 * The launcher's own task, inside the home root task, created next at boot. (A phone also
 * starts Settings' FallbackHome and SystemUI's split-screen root tasks at boot, which take ids
 * of their own; the virtual phone models neither, so its app tasks count on from 3.)
 */
const HOME_TASK_ID = 2;

/** How long a Toast.LENGTH_SHORT toast stays on screen. */
const TOAST_SHORT_MS = 2_000;

/** Apps that exist on every phone whether or not the host lists them. */
const SYSTEM_APPS: readonly LauncherApp[] = [
  { package: SETTINGS_PACKAGE, label: 'Settings', activity: SETTINGS_ACTIVITY },
];

/**
 * Appium's helper apps: their activities are transparent and finish at once on a real
 * phone (io.appium.settings/.Settings applies a setting and closes), so starting one must
 * not cover the screen.
 */
const HEADLESS_PACKAGES: ReadonlySet<string> = new Set([
  'io.appium.settings',
  'io.appium.uiautomator2.server',
  'io.appium.uiautomator2.server.test',
]);

/** Apps the phone draws itself. */
const DRAWN_PACKAGES: ReadonlySet<string> = new Set([
  LAUNCHER_PACKAGE,
  SETTINGS_PACKAGE,
  LOGIN_PACKAGE,
  BROWSER_PACKAGE_NAME,
]);

/**
 * Whether an app can run on this phone: the apps it draws, and Appium's helpers (whose
 * activities show nothing). Any other app installs and lists, but its code would have to
 * run, which a virtual phone cannot do: starting it is refused, on screen and in the shell.
 */
export function runsOnThisPhone(pkg: string): boolean {
  return DRAWN_PACKAGES.has(pkg) || HEADLESS_PACKAGES.has(pkg);
}

/** Full class name from a possibly short (".Foo") activity. */
function qualify(pkg: string, activity: string): string {
  return activity.startsWith('.') ? pkg + activity : activity;
}

/** The `cmp=` form Android logs: pkg/.Short when the class is inside the package. */
function component(pkg: string, activity: string): string {
  return activity.startsWith(pkg + '.') ? `${pkg}/${activity.slice(pkg.length)}` : `${pkg}/${activity}`;
}

export class VirtualPhoneUi implements PhoneUi {
  /** The display as apps see it now: the natural (portrait) size, turned with the rotation. */
  private m: Metrics;
  private readonly fonts = new TextRenderer();
  private canvas: Canvas;
  /** Surface.ROTATION_* of the display: 0 natural, 1 and 3 landscape, 2 upside down. */
  private turned: Rotation = 0;
  private readonly listeners = new Set<() => void>();
  private readonly ctx: ScreenContext;
  private readonly now: () => Date;

  private ver = 0;
  private clock = '';
  /** The status-bar minute as of the last change notification. */
  private notifiedClock = '';
  /**
   * The apps' tasks, top to bottom as the display stacks them; the home (launcher) task sits
   * below the first `aboveHome` of them. Starting an app moves its task to the top; HOME moves
   * the home task to the top, so every app task is then behind it; BACK at an app's root moves
   * its task to the very bottom (Task.moveTaskToBack), below home. Whatever is then on top
   * shows: the task started before it if that one is still over home, else the launcher.
   */
  private tasks: Task[] = [];
  private aboveHome = 0;
  /**
   * Task ids, the most recently resumed first, the home task's included: RecentTasks' list,
   * to which a task moves whenever one of its activities resumes.
   */
  private recents: number[] = [HOME_TASK_ID];
  /**
   * The id the next task gets. As ActivityTaskSupervisor.getNextTaskIdForUser() gives them,
   * ids only go up: a task started later has a higher id, and an id is not given again.
   */
  private nextTaskId = HOME_TASK_ID + 1;
  private launcher: LauncherState;
  private nextId = 1;
  /** Toggled settings kept here when the host cannot store them. */
  private localSettings = new Map<string, string>();
  private built: Built | null = null;
  private png: { version: number; data: Buffer } | null = null;
  /** The "can't run on this virtual phone" dialog, while it is up. */
  private dialog: NotRunnableDialog | null = null;
  /** The version the canvas holds a drawing of. */
  private drawn = -1;
  /** The screen is on (POWER and SLEEP turn it off, POWER and WAKEUP on). */
  private awake = true;
  /** The lock screen, while it shows (from going to sleep with a lock until unlocked). */
  private keyguard: KeyguardState | null = null;
  /** The toast on screen, while it shows; `at` is when it was shown (for the UiAutomator2 server). */
  private toastShown: { pkg: string; text: string; at: number; timer: NodeJS.Timeout } | null = null;
  /** The last toast, kept for the UiAutomator2 server's page source. */
  private lastToast: { pkg: string; text: string; at: number } | null = null;
  /** The current version's drawing calls, recorded once (screencap and the recorder share them). */
  private recorded: { version: number; list: DisplayList } | null = null;

  constructor(
    private readonly host: PhoneUiHost,
    private readonly options: PhoneUiOptions,
  ) {
    const base = host.display?.() ?? options;
    this.m = metrics(base.width, base.height, base.density);
    this.canvas = new Canvas(base.width, base.height);
    this.now = options.now ?? (() => new Date());
    this.launcher = { kind: 'launcher', id: this.newId(), scroll: 0 };
    this.clock = formatClock(this.now());
    this.notifiedClock = this.clock;
    this.ctx = this.makeContext();
  }

  get version(): number {
    this.syncClock();
    return this.ver;
  }

  /** The display's width now (the natural height while it is turned sideways). */
  get width(): number {
    return this.m.width;
  }

  get height(): number {
    return this.m.height;
  }

  /** The display's density now, dpi (`wm density` overrides the panel's). */
  get density(): number {
    return this.m.density;
  }

  /** How far a finger moves before a press becomes a swipe or a drag: ViewConfiguration's 8 dp. */
  private get touchSlop(): number {
    return 8 * this.m.dp;
  }

  get statusBarHeight(): number {
    return this.m.statusBar;
  }

  rotation(): Rotation {
    return this.turned;
  }

  /**
   * The rotation the window manager gives the display (DisplayRotation): the one the user
   * locked (`user_rotation`, while `accelerometer_rotation` is 0), or upright while the
   * sensor decides (the virtual phone's sensor reads upright, as an emulator's does). The launcher and the lock screen
   * of a phone ask for portrait (Launcher3 without home-screen rotation, SystemUI's
   * keyguard), and so the display stays upright while they show; Chrome here draws its
   * page at one size only and keeps portrait too (Appium's setOrientation says so).
   */
  private wantedRotation(): Rotation {
    const locked = this.setting('system', 'accelerometer_rotation') !== '1';
    // The rotation the window manager honours (0 to 3; anything else is upright), read as wm and dumpsys read it.
    const asked: Rotation = locked ? parseUserRotation(this.setting('system', 'user_rotation')) : 0;
    const front = this.current().kind;
    return this.keyguard || front === 'launcher' || front === 'browser' ? 0 : asked;
  }

  /**
   * Sizes the display as the window manager has it: its size and density (`wm size`,
   * `wm density`), turned with the rotation. When that changed, apps lay out again.
   */
  private syncDisplay(): void {
    const next = this.wantedRotation();
    const base = this.host.display?.() ?? this.options;
    const sideways = next % 2 === 1;
    const w = sideways ? base.height : base.width;
    const h = sideways ? base.width : base.height;
    this.turned = next;
    if (w === this.m.width && h === this.m.height && base.density === this.m.density) return;
    this.m = metrics(w, h, base.density);
    if (w !== this.canvas.width || h !== this.canvas.height) this.canvas = new Canvas(w, h);
    this.drawn = -1;
  }

  // ---- state helpers ----

  private newId(): number {
    return this.nextId++;
  }

  // ---- tasks ----

  /** The package whose task is in front, or null when the launcher's (home) is. */
  private get front(): string | null {
    return this.aboveHome > 0 ? (this.tasks[0]?.package ?? null) : null;
  }

  private newTaskId(): number {
    return this.nextTaskId++;
  }

  /** An activity of the task resumed: RecentTasks moves the task to the front of its list. */
  private resumed(id: number): void {
    this.recents = [id, ...this.recents.filter((x) => x !== id)];
  }

  /** The task now on top resumes: the top app task if it is over home, else home. */
  private topResumes(): void {
    this.resumed(this.aboveHome > 0 ? this.tasks[0]!.id : HOME_TASK_ID);
  }

  /** Takes a task out of the display's stack; home keeps its place among the others. */
  private unstack(t: Task): void {
    const i = this.tasks.indexOf(t);
    if (i < 0) return;
    this.tasks.splice(i, 1);
    if (i < this.aboveHome) this.aboveHome--;
  }

  /** Task.moveTaskToFront: the task goes to the top of the display, over home, and resumes. */
  private toFront(t: Task): void {
    this.unstack(t);
    this.tasks.unshift(t);
    this.aboveHome++;
    this.resumed(t.id);
  }

  /** Task.moveTaskToBack: the task goes to the bottom of the display, below home. */
  private toBack(t: Task): void {
    this.unstack(t);
    this.tasks.push(t);
    this.topResumes();
  }

  /** A task is removed (finished, crashed, force-stopped, uninstalled): gone from recents too. */
  private dropTask(t: Task): void {
    const wasInFront = this.aboveHome > 0 && this.tasks[0] === t;
    this.unstack(t);
    this.recents = this.recents.filter((id) => id !== t.id);
    if (wasInFront) this.topResumes();
  }

  /** The clock is part of the picture: a new minute is a new version (no listener call). */
  private syncClock(): void {
    const c = formatClock(this.now());
    if (c !== this.clock) {
      this.clock = c;
      this.ver++;
    }
  }

  private changed(): void {
    this.syncDisplay();
    this.ver++;
    this.notify();
  }

  private notify(): void {
    this.syncClock();
    this.notifiedClock = this.clock;
    for (const l of [...this.listeners]) {
      try {
        l();
      } catch (err) {
        this.host.log('W', 'PhoneUi', `change listener failed: ${String(err)}`);
      }
    }
  }

  private apps(): LauncherApp[] {
    return this.host.launcherApps();
  }

  private findApp(pkg: string): LauncherApp | undefined {
    return this.apps().find((a) => a.package === pkg) ?? SYSTEM_APPS.find((a) => a.package === pkg);
  }

  private task(pkg: string): Task | undefined {
    return this.tasks.find((t) => t.package === pkg);
  }

  private current(): ScreenState {
    const t = this.front ? this.task(this.front) : undefined;
    return t?.stack[t.stack.length - 1] ?? this.launcher;
  }

  private setting(ns: Namespace, key: string): string | null {
    if (!this.host.setSetting) {
      const local = this.localSettings.get(`${ns}/${key}`);
      if (local !== undefined) return local;
    }
    return this.host.setting(ns, key);
  }

  private makeContext(): ScreenContext {
    // Read on every use so flipping Dark theme (here or via `settings put`) restyles at once.
    const theme = () => (this.setting('secure', 'ui_night_mode') === '2' ? DARK_COLORS : COLORS);
    // Read on every use too: turning the display lays the screens out at its new size.
    const metricsNow = () => this.m;
    return {
      get m() {
        return metricsNow();
      },
      get colors() {
        return theme();
      },
      fonts: this.fonts,
      identity: this.options.identity,
      now: () => this.now(),
      apps: () => this.apps(),
      browser: () => this.host.browser?.() ?? null,
      label: (pkg) => this.findApp(pkg)?.label ?? pkg,
      setting: (ns, key) => this.setting(ns, key),
      putSetting: (ns, key, value) => {
        if (this.host.setSetting) this.host.setSetting(ns, key, value);
        else this.localSettings.set(`${ns}/${key}`, value);
      },
      launch: (pkg) => {
        this.open(pkg, undefined, 'launcher');
      },
      // The Settings app's Force stop goes through the phone (its processes too) when it can.
      forceStop: (pkg) => (this.host.forceStop ? this.host.forceStop(pkg) : this.forceStop(pkg)),
      lockKind: () => this.lockKind(),
      toast: (text) => this.showToast(this.foreground().package, text),
      crash: (pkg, exception) => this.crash(pkg, exception),
      showAppInfo: (pkg) => {
        // APPLICATION_DETAILS_SETTINGS: the page opens on top of Settings' task.
        this.open(SETTINGS_PACKAGE, undefined, 'launcher');
        this.ctx.push({
          kind: 'settings-page',
          id: this.newId(),
          activity: SETTINGS_SUB_ACTIVITY,
          page: 'app-info',
          arg: pkg,
          scroll: 0,
          data: `package:${pkg}`,
        });
      },
      push: (state) => {
        const t = this.front ? this.task(this.front) : undefined;
        if (!t) return;
        t.stack.push(state);
        this.logStart(t.package, this.activityOf(state), 'app');
        this.changed();
      },
      pop: () => this.back(),
      log: (p, tag, msg) => this.host.log(p, tag, msg),
      changed: () => this.changed(),
      nextId: () => this.newId(),
    };
  }

  private activityOf(s: ScreenState): string {
    switch (s.kind) {
      case 'launcher':
        return LAUNCHER_ACTIVITY;
      case 'login':
        return LOGIN_ACTIVITY;
      case 'settings-home':
      case 'settings-page':
        return s.activity;
      case 'browser':
        return BROWSER_ACTIVITY;
    }
  }

  private packageOf(s: ScreenState): string {
    switch (s.kind) {
      case 'launcher':
        return LAUNCHER_PACKAGE;
      case 'login':
        return LOGIN_PACKAGE;
      case 'settings-home':
      case 'settings-page':
        return SETTINGS_PACKAGE;
      case 'browser':
        return BROWSER_PACKAGE_NAME;
    }
  }

  /** The first screen of an app the phone draws, or of one of its activities (`data`: the intent's). */
  private rootScreen(app: LauncherApp, activity: string | undefined, data?: string): ScreenState {
    const id = this.newId();
    const intent = data === undefined ? {} : { data };
    if (app.package === SETTINGS_PACKAGE) {
      const page = activity ? settingsPageForActivity(activity) : null;
      const arg = page === 'app-info' ? appInfoPackage(data) : undefined;
      if (page && activity)
        return { kind: 'settings-page', id, activity, page, ...(arg && { arg }), scroll: 0, ...intent };
      return { kind: 'settings-home', id, activity: SETTINGS_ACTIVITY, scroll: 0, ...intent };
    }
    if (app.package === LOGIN_PACKAGE) return { ...newLoginState(id), ...intent };
    return { kind: 'browser', id, ...intent };
  }

  /** Whether `s` is `activity` started with `data` (an intent's data: none is undefined). */
  private startedAs(s: ScreenState | undefined, activity: string, data: string | undefined): boolean {
    return !!s && this.activityOf(s) === activity && (s.kind === 'launcher' ? undefined : s.data) === data;
  }

  private logStart(pkg: string, activity: string, from: 'launcher' | 'shell' | 'app'): void {
    const cmp = component(pkg, activity);
    const intent =
      from === 'launcher'
        ? `act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] flg=0x10200000 cmp=${cmp}`
        : from === 'shell'
          ? `flg=0x10000000 cmp=${cmp}`
          : `cmp=${cmp}`;
    const uid = from === 'shell' ? 2000 : from === 'launcher' ? 10040 : 1000;
    this.host.log('I', 'ActivityTaskManager', `START u0 {${intent}} from uid ${uid}`);
  }

  /** Brings an app's task to the front, creating it (or a new activity in it) as needed. */
  private open(
    pkg: string,
    activity: string | undefined,
    from: 'launcher' | 'shell',
    data?: string,
  ): boolean {
    if (pkg === LAUNCHER_PACKAGE) {
      this.goHome();
      return true;
    }
    if (HEADLESS_PACKAGES.has(pkg)) {
      this.logStart(pkg, activity ? qualify(pkg, activity) : `${pkg}.Settings`, from);
      return true;
    }
    const app = this.findApp(pkg);
    if (!app) return false;
    this.launcher.menu = undefined;
    if (!runsOnThisPhone(pkg)) {
      // Only the launcher comes here with such an app: the activity manager refuses its own.
      this.showNotRunnable(pkg);
      return false;
    }
    const wanted = activity ? qualify(pkg, activity) : undefined;
    let t = this.task(pkg);
    if (t) {
      const root = t.stack[0];
      if (pkg === BROWSER_PACKAGE_NAME) {
        // Chrome opens every URL in its one window, which then shows that URL.
        if (root?.kind === 'browser' && data !== undefined) root.data = data;
      } else if (wanted && !this.resumes(t, app, wanted, data)) {
        t.stack.push(this.rootScreen(app, wanted, data));
      }
    } else {
      // A new task, with a new id (ActivityStarter creates one for FLAG_ACTIVITY_NEW_TASK).
      t = { id: this.newTaskId(), package: pkg, stack: [this.rootScreen(app, wanted, data)] };
    }
    this.toFront(t);
    const top = t.stack[t.stack.length - 1];
    this.logStart(pkg, top ? this.activityOf(top) : app.activity, from);
    this.changed();
    return true;
  }

  /**
   * Whether starting `wanted` with `data` into its running task starts no new activity: the
   * task's root started by the same intent, or the app's main activity asked for without data
   * (ActivityStarter then brings the task to the front as it was), or that same activity with
   * the same data on top already. Any other start puts a new instance on top, as a standard
   * activity gets one: App info of another package is a new page over the first, and BACK
   * returns to it.
   */
  private resumes(t: Task, app: LauncherApp, wanted: string, data: string | undefined): boolean {
    if (wanted === app.activity && data === undefined) return true;
    return this.startedAs(t.stack[0], wanted, data) || this.startedAs(t.stack.at(-1), wanted, data);
  }

  /**
   * FLAG_ACTIVITY_CLEAR_TOP: the screens above the activity's instance in its app's task
   * close; so does the instance itself unless it is to receive the intent (SINGLE_TOP), as
   * a standard activity is recreated. False when the task has no such instance.
   */
  clearTop(pkg: string, activity: string, singleTop: boolean): boolean {
    const t = this.task(pkg);
    const wanted = qualify(pkg, activity);
    const at = t ? t.stack.findIndex((s) => this.activityOf(s) === wanted) : -1;
    if (!t || at < 0) return false;
    // The root recreated is the task started again.
    if (at === 0 && !singleTop) {
      this.removeTask(pkg);
      return true;
    }
    const keep = singleTop ? at + 1 : at;
    if (keep < t.stack.length) {
      t.stack.splice(keep);
      this.changed();
    }
    return true;
  }

  isOnTop(pkg: string, activity: string, data?: string): boolean {
    const top = this.current();
    return this.packageOf(top) === pkg && this.startedAs(top, qualify(pkg, activity), data);
  }

  /** HOME: the home task moves to the top of the display, over every app task. */
  private goHome(): void {
    if (this.aboveHome === 0) return;
    this.aboveHome = 0;
    this.resumed(HOME_TASK_ID);
    this.changed();
  }

  /**
   * BACK: the previous screen of the app; at its root the task moves to the back, and the
   * task started before it shows (the launcher, when HOME came between).
   */
  private back(): void {
    const t = this.front ? this.task(this.front) : undefined;
    if (!t) return;
    if (t.stack.length > 1) t.stack.pop();
    // Android 12+ keeps a launcher task's root activity alive on BACK (moved to the back),
    // so reopening the app shows it as it was, in the same task.
    else this.toBack(t);
    this.changed();
  }

  // ---- building and drawing ----

  private build(): Built {
    this.syncClock();
    if (this.built && this.built.version === this.ver) return this.built;
    const s = this.current();
    const view = this.buildScreen(s);
    const pkg = this.packageOf(s);
    const f = new ViewFactory(pkg, `decor-${s.kind === 'launcher' ? 'launcher' : s.id}`);
    const full = { left: 0, top: 0, right: this.width, bottom: this.height };
    const root = f.root('decor', 'android.widget.FrameLayout', full, {
      children: [
        f.root('decor/linear', 'android.widget.LinearLayout', full, {
          children: [
            f.root('decor/content', 'android.widget.FrameLayout', view.edgeToEdge ? full : this.m.content, {
              resourceId: 'android:id/content',
              children: view.content,
            }),
          ],
        }),
        // A system dialog is a window over the app's: drawn last, it takes the touches first.
        this.dialog && buildNotRunnableDialog(this.dialog, this.ctx, () => this.dismissDialog()),
        // The keyguard is over everything.
        this.keyguard && this.keyguardView(this.keyguard),
      ],
    });
    this.built = { version: this.ver, view, root };
    return this.built;
  }

  private buildScreen(s: ScreenState): ScreenView {
    switch (s.kind) {
      case 'launcher':
        return buildLauncher(s, this.ctx);
      case 'settings-home':
        return buildSettingsHome(s, this.ctx);
      case 'settings-page':
        return buildSettingsPage(s, this.ctx);
      case 'login':
        return buildLogin(s, this.ctx);
      case 'browser':
        return buildBrowser(s, this.ctx);
    }
  }

  /**
   * The current screen as drawing calls, recorded once per version: what a recording's
   * encoder thread draws, so the phone's thread does not (see display-list.ts).
   */
  displayList(): DisplayList {
    this.syncClock();
    if (this.recorded && this.recorded.version === this.ver) return this.recorded.list;
    const recorder = new DisplayListRecorder(this.width, this.height);
    this.paint(recorder);
    const list = recorder.finish();
    this.recorded = { version: this.ver, list };
    return list;
  }

  /** Draws the current screen into the phone's canvas and returns it. */
  renderCanvas(): Canvas {
    const list = this.displayList();
    this.drawn = this.ver;
    playDisplayList(list, this.canvas, this.fonts);
    return this.canvas;
  }

  private paint(c: Surface): void {
    const { view, root } = this.build();
    // A screen that is off shows nothing (screencap and recordings see black, as on a phone).
    if (!this.awake) {
      c.fill(COLORS.black);
      return;
    }
    if (view.edgeToEdge)
      c.fillGradient(0, 0, this.width, this.height, COLORS.wallpaperTop, COLORS.wallpaperBottom);
    else c.fill(view.background);
    paintTree({ canvas: c, fonts: this.fonts }, root);
    const ctx = this.ctx;
    const lockBars = { background: KEYGUARD_BACKGROUND, lightIcons: true };
    drawStatusBar(
      c,
      this.fonts,
      this.m,
      this.keyguard ? lockBars : view.statusBar,
      {
        time: this.clock,
        wifi: wifiOn(ctx),
        airplane: airplaneOn(ctx),
        battery: this.host.batteryLevel?.() ?? 100,
        batteryPercent: this.setting('system', 'status_bar_show_battery_percent') === '1',
      },
      !!view.edgeToEdge,
    );
    drawNavBar(c, this.m, this.keyguard ? lockBars : view.navBar, !!view.edgeToEdge);
    // An app's toast is not shown over the lock screen: the keyguard occludes the apps'
    // windows, and their toasts with them.
    if (this.toastShown && !this.keyguard) this.paintToast(c, this.toastShown.text);
  }

  /** A text toast as SystemUI draws it: a dark pill above the navigation bar, centred. */
  private paintToast(c: Surface, text: string): void {
    const { dp, text: scales } = this.m;
    const style = { scale: scales.body, color: 0xffffff };
    const width = Math.min(this.fonts.measure(text, style) + 32 * dp, this.width - 48 * dp);
    const height = 40 * dp;
    const left = (this.width - width) / 2;
    const top = this.height - this.m.navBar - 24 * dp - height;
    c.fillRoundRect(left, top, width, height, height / 2, 0x303030, 0.92);
    c.pushClip({ left: left + 16 * dp, top, right: left + width - 16 * dp, bottom: top + height });
    c.text(this.fonts, text, left + 16 * dp, top + (height - this.fonts.capHeight(style)) / 2, style);
    c.popClip();
  }

  /** Toast.LENGTH_SHORT: on screen for two seconds; a new toast replaces the one showing. */
  private showToast(pkg: string, text: string): void {
    if (this.toastShown) clearTimeout(this.toastShown.timer);
    const at = this.now().getTime();
    const timer = setTimeout(() => {
      this.toastShown = null;
      this.changed();
    }, TOAST_SHORT_MS);
    timer.unref();
    this.toastShown = { pkg, text, at, timer };
    this.lastToast = { pkg, text, at };
    this.changed();
  }

  /** The last toast shown, for the UiAutomator2 server (which lists one for 3.5 s after it appeared). */
  recentToast(): { pkg: string; text: string; at: number } | null {
    return this.lastToast;
  }

  currentTimeMs(): number {
    return this.now().getTime();
  }

  renderRgba(): Uint8Array {
    this.syncClock();
    // Drawing costs more than reading: a recorder asking twice for one version draws once.
    if (this.drawn !== this.ver) this.renderCanvas();
    return this.canvas.data;
  }

  renderPng(): Buffer {
    this.syncClock();
    if (this.png && this.png.version === this.ver) return this.png.data;
    const c = this.renderCanvas();
    const png = new PNG({ width: this.width, height: this.height });
    png.data = Buffer.from(c.data.buffer, c.data.byteOffset, c.data.byteLength);
    // Measured on a 720x1280 screen: RGBA with the Sub filter and deflate level 1 encodes
    // in ~20 ms to 40-90 KB. Sub turns flat UI colours into runs of zeros, which the RLE
    // strategy pngjs uses squeezes well; RGB output costs pngjs a slow per-pixel conversion
    // (~55 ms) and unfiltered data does not compress under RLE (~750 KB).
    const data = PNG.sync.write(png, {
      colorType: 6,
      inputColorType: 6,
      inputHasAlpha: true,
      deflateLevel: 1,
      filterType: 1,
    });
    this.png = { version: this.ver, data };
    return data;
  }

  // ---- input ----

  tap(x: number, y: number): void {
    if (!this.awake) return;
    const nav = navButtonAt(this.m, x, y);
    if (nav) {
      this.key(nav === 'back' ? KEYCODE.BACK : nav === 'home' ? KEYCODE.HOME : KEYCODE.APP_SWITCH);
      return;
    }
    if (y < this.m.statusBar) return;
    const { root } = this.build();
    const hit = hitTest(root, x, y, (n) => n.enabled && (!!n.onTapAt || (n.clickable && !!n.onClick)));
    if (hit?.onTapAt) hit.onTapAt(x - hit.frame.left, y - hit.frame.top);
    else hit?.onClick?.();
  }

  longPress(x: number, y: number): void {
    if (!this.awake) return;
    if (navButtonAt(this.m, x, y)) {
      this.tap(x, y);
      return;
    }
    if (y < this.m.statusBar) return;
    const hit = this.pressedView(x, y);
    if (hit?.longClickable && hit.onLongClick) hit.onLongClick();
    else hit?.onClick?.();
  }

  /**
   * The view a press at (x, y) goes to: the innermost one that handles a click or a long
   * click; one without a long-click action gets a click on release, as View does.
   */
  private pressedView(x: number, y: number): ViewNode | undefined {
    return hitTest(
      this.build().root,
      x,
      y,
      (n) => n.enabled && ((n.longClickable && !!n.onLongClick) || (n.clickable && !!n.onClick)),
    );
  }

  /** A view that takes the touch where it lands (Chrome's page) under (x, y). */
  private touchedView(x: number, y: number): ViewNode | undefined {
    return hitTest(this.build().root, x, y, (n) => !!n.onSwipeAt);
  }

  drag(x1: number, y1: number, x2: number, y2: number, durationMs: number): string | null {
    if (!this.awake) return null;
    if (Math.hypot(x2 - x1, y2 - y1) < this.touchSlop) {
      this.longPress(x1, y1);
      return null;
    }
    if (!this.keyguard && y1 >= this.m.statusBar && !navButtonAt(this.m, x1, y1)) {
      // The view the held press goes to: one with a long-click action takes the press, and
      // then the drag (Launcher3 lifts the icon), which the virtual phone does not model.
      // Refused before anything happens.
      const held = this.pressedView(x1, y1);
      if (held?.longClickable && held.onLongClick) return held.text || held.contentDesc || held.className;
      // Chrome's page takes a held press as a long press (text selection, a link's menu),
      // and then no scroll: not modeled either.
      const page = this.touchedView(x1, y1);
      if (page) return page.contentDesc || page.className;
    }
    // Nothing took the held press: the move past the touch slop scrolls, as a swipe does.
    this.swipe(x1, y1, x2, y2, durationMs);
    return null;
  }

  swipe(x1: number, y1: number, x2: number, y2: number, durationMs: number): void {
    if (!this.awake) return;
    const dist = Math.hypot(x2 - x1, y2 - y1);
    if (this.keyguard && dist >= this.touchSlop) {
      // Swiping up the lock screen unlocks it, or brings up its bouncer.
      if (!this.keyguard.bouncer && y1 - y2 > 60 * this.m.dp) this.dismissKeyguard();
      return;
    }
    if (dist < this.touchSlop) {
      // A swipe that does not move is a press: long once held past the long-press timeout.
      if (durationMs >= LONG_PRESS_MS) this.longPress(x1, y1);
      else this.tap(x1, y1);
      return;
    }
    // Swiping up from the navigation bar is the home gesture.
    if (y1 >= this.height - this.m.navBar && y1 - y2 > 60 * this.m.dp) {
      this.goHome();
      return;
    }
    if (this.dialog) return;
    // A view that takes the touch where it lands (Chrome's page) takes the whole swipe.
    const page = this.touchedView(x1, y1);
    if (page?.onSwipeAt) {
      const { left, top } = page.frame;
      page.onSwipeAt(x1 - left, y1 - top, x2 - left, y2 - top, durationMs);
      return;
    }
    if (Math.abs(y2 - y1) < Math.abs(x2 - x1)) return;
    const target = hitTest(this.build().root, x1, y1, (n) => !!n.onScroll);
    target?.onScroll?.(y1 - y2);
  }

  text(value: string): void {
    if (!this.awake) return;
    if (this.keyguard) {
      if (this.keyguard.bouncer) for (const ch of value) this.typeOnBouncer(ch);
      return;
    }
    const s = this.current();
    if (s.kind === 'login' && !this.dialog) loginText(s, value, this.ctx);
  }

  editorAction(action: number): void {
    if (!this.awake || this.keyguard || this.dialog) return;
    const s = this.current();
    if (s.kind === 'login') loginEditorAction(s, action, this.ctx);
  }

  key(keycode: number): void {
    if (this.powerKey(keycode)) return;
    if (this.keyguard) {
      this.keyguardKey(keycode, this.keyguard);
      return;
    }
    if (this.dialog && (keycode === KEYCODE.BACK || keycode === KEYCODE.HOME)) {
      // BACK closes the dialog; HOME closes it on the way home.
      this.dismissDialog();
      if (keycode === KEYCODE.BACK) return;
    }
    const s = this.current();
    if (s.kind === 'launcher' && s.menu && (keycode === KEYCODE.BACK || keycode === KEYCODE.HOME)) {
      // An open icon menu takes BACK and HOME first, as Launcher3's floating views do.
      s.menu = undefined;
      this.changed();
      return;
    }
    if (s.kind === 'login' && loginKey(s, keycode, this.ctx)) return;
    switch (keycode) {
      case KEYCODE.HOME:
        this.goHome();
        return;
      case KEYCODE.BACK:
        this.back();
        return;
      case KEYCODE.MENU:
      case KEYCODE.ENTER:
      case KEYCODE.DEL:
      case KEYCODE.TAB:
        // These have nothing to act on here.
        return;
      case KEYCODE.APP_SWITCH:
        this.host.log('D', 'PhoneUi', 'recent apps are not shown on this phone; showing the launcher');
        this.goHome();
        return;
      default: {
        // A key that types a character types it into the field in focus (a hardware
        // keyboard's key, `input keyevent KEYCODE_A`); nothing takes it elsewhere.
        const ch = keycodeChar(keycode, false);
        if (ch !== null) this.text(ch);
        else this.host.log('D', 'PhoneUi', `ignored key event ${keycode}`);
      }
    }
  }

  // ---- power and the lock screen ----

  powerState(): PowerState {
    return { awake: this.awake, keyguard: !!this.keyguard, bouncer: !!this.keyguard?.bouncer };
  }

  private lockKind(): LockKind {
    return this.host.lockKind?.() ?? 'none';
  }

  /** POWER, SLEEP and WAKEUP; true when the key was one of them or the screen is off. */
  private powerKey(keycode: number): boolean {
    if (!this.awake) {
      // A screen that is off takes only the keys that wake it.
      if (keycode === KEYCODE.POWER || keycode === KEYCODE.WAKEUP) {
        this.awake = true;
        this.host.log(
          'I',
          'PowerManagerService',
          'Waking up from Asleep (uid=1000, reason=WAKE_REASON_POWER_BUTTON)...',
        );
        this.changed();
      }
      return true;
    }
    if (keycode === KEYCODE.WAKEUP) return true;
    if (keycode !== KEYCODE.POWER && keycode !== KEYCODE.SLEEP) return false;
    this.awake = false;
    // Going to sleep locks the phone, unless it has no lock screen at all.
    if (this.lockKind() !== 'none' && !this.keyguard)
      this.keyguard = { bouncer: false, entry: '', message: '' };
    this.host.log('I', 'PowerManagerService', 'Going to sleep due to power_button (uid 1000)...');
    this.changed();
    return true;
  }

  /** A key while the lock screen shows: the bouncer takes digits, DEL and ENTER; BACK leaves it. */
  private keyguardKey(keycode: number, kg: KeyguardState): void {
    if (keycode === KEYCODE.MENU && !kg.bouncer) this.dismissKeyguard();
    else if (keycode === KEYCODE.BACK && kg.bouncer) {
      this.keyguard = { bouncer: false, entry: '', message: '' };
      this.changed();
    } else if (kg.bouncer && keycode >= KEYCODE.DIGIT_0 && keycode <= KEYCODE.DIGIT_0 + 9)
      this.typeOnBouncer(String(keycode - KEYCODE.DIGIT_0));
    else if (kg.bouncer && keycode === KEYCODE.DEL) this.eraseOnBouncer();
    else if (kg.bouncer && (keycode === KEYCODE.ENTER || keycode === KEYCODE.NUMPAD_ENTER))
      this.submitBouncer();
    else this.host.log('D', 'KeyguardViewMediator', `key event ${keycode} ignored: the device is locked`);
  }

  dismissKeyguard(): void {
    const kg = this.keyguard;
    if (!kg) return;
    const kind = this.lockKind();
    if (kind === 'none' || kind === 'swipe') this.unlock();
    else if (!kg.bouncer) {
      this.keyguard = { bouncer: true, entry: '', message: bouncerPrompt(kind) };
      this.changed();
    }
  }

  private unlock(): void {
    this.keyguard = null;
    this.host.log('I', 'KeyguardViewMediator', 'keyguardDone: unlocked');
    this.changed();
  }

  private typeOnBouncer(ch: string): void {
    const kg = this.keyguard;
    const kind = this.lockKind();
    if (!kg?.bouncer || kind === 'pattern') return;
    if (kind === 'pin' && !/^\d$/.test(ch)) return;
    kg.entry += ch;
    // A PIN unlocks as soon as it is right (what Appium's PIN unlock relies on).
    if (kind === 'pin' && this.host.checkCredential?.(kg.entry)) this.unlock();
    else this.changed();
  }

  private eraseOnBouncer(): void {
    const kg = this.keyguard;
    if (!kg?.bouncer || kg.entry === '') return;
    kg.entry = kg.entry.slice(0, -1);
    this.changed();
  }

  private submitBouncer(): void {
    const kg = this.keyguard;
    const kind = this.lockKind();
    if (!kg?.bouncer || kind === 'none' || kind === 'swipe') return;
    if (this.host.checkCredential?.(kg.entry)) {
      this.unlock();
      return;
    }
    this.keyguard = { bouncer: true, entry: '', message: wrongCredential(kind) };
    this.changed();
  }

  private keyguardView(kg: KeyguardState) {
    const kind = this.lockKind();
    return buildKeyguard(kg, kind === 'none' ? 'swipe' : kind, this.clock, this.ctx, {
      digit: (d) => this.typeOnBouncer(d),
      erase: () => this.eraseOnBouncer(),
      submit: () => this.submitBouncer(),
    });
  }

  // ---- apps ----

  launch(pkg: string, activity?: string, data?: string): boolean {
    return this.open(pkg, activity, 'shell', data);
  }

  /** An app threw: as on a phone, the runtime logs it, the process dies and its task is gone. */
  private crash(pkg: string, exception: AppException): void {
    if (this.host.appCrashed) this.host.appCrashed(pkg, exception);
    else
      for (const line of fatalExceptionLines(pkg, 0, exception)) this.host.log('E', 'AndroidRuntime', line);
    const t = this.task(pkg);
    if (t) this.dropTask(t);
    this.changed();
  }

  showNotRunnable(pkg: string): void {
    const label = this.findApp(pkg)?.label ?? pkg;
    this.dialog = { package: pkg, label };
    this.host.log(
      'W',
      'ActivityTaskManager',
      `${pkg} can't run on this virtual phone: it has no model of the app's code`,
    );
    this.changed();
  }

  private dismissDialog(): void {
    if (!this.dialog) return;
    this.dialog = null;
    this.changed();
  }

  /** Closes the app's screens (the phone's ActivityManager logs the stop and ends its processes). */
  forceStop(pkg: string): void {
    this.removeTask(pkg);
  }

  removeTask(pkg: string): void {
    const t = this.task(pkg);
    if (!t) return;
    this.dropTask(t);
    this.changed();
  }

  clearData(pkg: string): void {
    // App data here is the in-memory screen state, so clearing it is a force stop.
    this.forceStop(pkg);
    this.host.log('I', 'ActivityManager', `Cleared data of ${pkg}`);
  }

  foreground(): ForegroundActivity {
    const s = this.current();
    return { package: this.packageOf(s), activity: this.activityOf(s) };
  }

  taskList(): TaskList {
    const activities = (stack: readonly ScreenState[]): TaskActivity[] =>
      stack.map((s) => {
        const data = s.kind === 'launcher' ? undefined : s.data;
        return { activity: this.activityOf(s), instance: s.id, ...(data !== undefined && { data }) };
      });
    const inFront = this.aboveHome > 0 ? this.tasks[0] : undefined;
    const apps = this.tasks.map((t): TaskInfo => ({
      id: t.id,
      rootId: t.id,
      type: 'standard',
      package: t.package,
      activities: activities(t.stack),
      visible: t === inFront,
    }));
    // The launcher's task is a leaf task inside the home root task, as on a phone.
    const home: TaskInfo = {
      id: HOME_TASK_ID,
      rootId: HOME_ROOT_TASK_ID,
      type: 'home',
      package: LAUNCHER_PACKAGE,
      activities: activities([this.launcher]),
      visible: !inFront,
    };
    return {
      stack: [...apps.slice(0, this.aboveHome), home, ...apps.slice(this.aboveHome)],
      recents: [...this.recents],
    };
  }

  appsChanged(): void {
    // An uninstalled app takes its task with it.
    const installed = new Set([...this.apps().map((a) => a.package), ...SYSTEM_APPS.map((a) => a.package)]);
    for (const t of [...this.tasks]) if (!installed.has(t.package)) this.dropTask(t);
    if (this.dialog && !installed.has(this.dialog.package)) this.dialog = null;
    this.changed();
  }

  settingsChanged(): void {
    this.changed();
  }

  contentChanged(): void {
    this.changed();
  }

  clockTick(): boolean {
    // Reading the version may already have moved to the new minute without telling
    // anyone, so compare with the minute listeners last heard about.
    this.syncClock();
    if (this.clock === this.notifiedClock) return false;
    this.notify();
    return true;
  }

  // ---- hierarchy ----

  dumpHierarchy(compressed = false): string {
    const root = this.build().root;
    return dumpUiAutomator(compressed ? compressedTree(root) : root, this.turned);
  }

  viewTree(): UiNodeInfo {
    return this.build().root;
  }

  setNodeText(key: string, text: string, mode: 'replace' | 'append'): boolean {
    const node = findByKey(this.build().root, key);
    const edit = node?.edit;
    if (!node || !edit) return false;
    if (!node.focused) node.onClick?.();
    edit.set(mode === 'append' ? edit.value() + text : text);
    return true;
  }

  onChange(listener: () => void): () => void {
    // Wrapped so the same function subscribed twice gets two independent subscriptions.
    const entry = () => listener();
    this.listeners.add(entry);
    return () => {
      this.listeners.delete(entry);
    };
  }

  // ---- profiles ----

  saveState(): SavedUi {
    return {
      format: 1,
      front: this.front,
      // Passwords never leave the phone's memory: a restored login screen starts empty there.
      tasks: this.tasks.map((t) => ({
        id: t.id,
        package: t.package,
        stack: t.stack.map((s) => (s.kind === 'login' ? { ...s, password: '', focus: s.focus } : { ...s })),
      })),
      aboveHome: this.aboveHome,
      recents: [...this.recents],
      nextTaskId: this.nextTaskId,
      launcherScroll: this.launcher.scroll,
      nextId: this.nextId,
      settings: Object.fromEntries(this.localSettings),
    };
  }

  restoreState(state: unknown): void {
    const s = parseSaved(state);
    if (!s) {
      this.host.log('W', 'PhoneUi', 'ignored saved UI state in an unknown format');
      return;
    }
    this.nextId = Math.max(this.nextId, s.nextId);
    this.restoreTasks(s);
    this.launcher = { kind: 'launcher', id: this.newId(), scroll: s.launcherScroll };
    this.localSettings = new Map(Object.entries(s.settings));
    this.changed();
  }

  /**
   * The tasks of a save, with their ids, stacking and recents order. A task whose id is
   * missing (a save from before tasks kept ids) or taken gets a new one; ids given later stay
   * above every restored one.
   */
  private restoreTasks(s: SavedUi): void {
    const taken = new Set([HOME_ROOT_TASK_ID, HOME_TASK_ID]);
    let next = Math.max(this.nextTaskId, s.nextTaskId ?? 0, ...s.tasks.map((t) => (t.id ?? 0) + 1));
    let tasks: Task[] = [];
    let aboveHome = 0;
    s.tasks.forEach((t, i) => {
      if (!this.findApp(t.package)) return;
      const id = t.id !== undefined && !taken.has(t.id) ? t.id : next++;
      taken.add(id);
      tasks.push({ id, package: t.package, stack: t.stack });
      if (s.aboveHome !== undefined && i < s.aboveHome) aboveHome++;
    });
    if (s.aboveHome === undefined) {
      // An older save names only the app in front: its task is over home, the others behind.
      const front = tasks.find((t) => t.package === s.front);
      if (front) tasks = [front, ...tasks.filter((t) => t !== front)];
      aboveHome = front ? 1 : 0;
    }
    this.tasks = tasks;
    this.aboveHome = aboveHome;
    this.nextTaskId = next;
    // Recents as saved; tasks it does not name follow in the display's order.
    const stacked = [
      ...tasks.slice(0, aboveHome).map((t) => t.id),
      HOME_TASK_ID,
      ...tasks.slice(aboveHome).map((t) => t.id),
    ];
    const recents: number[] = [];
    for (const id of [...(s.recents ?? []), ...stacked])
      if (stacked.includes(id) && !recents.includes(id)) recents.push(id);
    this.recents = recents;
  }
}

// Saves made before the phone refused apps it cannot run may hold 'generic' screens: those
// tasks are dropped on restore.
const KINDS = new Set(['settings-home', 'settings-page', 'login', 'browser']);

/** Accepts a saveState() result (after a JSON round trip); null for anything else. */
function parseSaved(v: unknown): SavedUi | null {
  if (!v || typeof v !== 'object') return null;
  const o = v as Partial<SavedUi>;
  if (o.format !== 1 || !Array.isArray(o.tasks)) return null;
  const tasks: SavedTask[] = [];
  for (const t of o.tasks as unknown[]) {
    const task = t as Partial<SavedTask> | null;
    if (!task || typeof task.package !== 'string' || !Array.isArray(task.stack)) continue;
    const stack = task.stack.filter(
      (s): s is ScreenState =>
        !!s &&
        typeof s === 'object' &&
        KINDS.has((s as ScreenState).kind) &&
        typeof (s as ScreenState).id === 'number',
    );
    const id = isTaskId(task.id) ? { id: task.id } : {};
    if (stack.length) tasks.push({ ...id, package: task.package, stack: stack.map((s) => ({ ...s })) });
  }
  const settings: Record<string, string> = {};
  if (o.settings && typeof o.settings === 'object')
    for (const [k, val] of Object.entries(o.settings)) if (typeof val === 'string') settings[k] = val;
  return {
    format: 1,
    front: typeof o.front === 'string' ? o.front : null,
    tasks,
    ...(Number.isInteger(o.aboveHome) && o.aboveHome! >= 0 && { aboveHome: o.aboveHome }),
    ...(Array.isArray(o.recents) && { recents: o.recents.filter(isTaskId) }),
    ...(isTaskId(o.nextTaskId) && { nextTaskId: o.nextTaskId }),
    launcherScroll: typeof o.launcherScroll === 'number' ? o.launcherScroll : 0,
    nextId: typeof o.nextId === 'number' ? o.nextId : 1,
    settings,
  };
}

/** Whether a saved value is a task id: a positive whole number. */
function isTaskId(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0;
}
