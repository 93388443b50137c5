/**
 * The activity manager: starting activities and services, force-stops, and running
 * instrumentations (the UiAutomator2 server among them). The screen itself is the UI side's;
 * this decides what runs and tells the UI what to bring to the front.
 */
import type { DeviceLogger } from '../types.js';
import type { LogBuffer, LogPriority } from './logcat.js';
import type { ProcessTable } from './processes.js';
import type { PackageManager } from './packages.js';
import { BROWSER_PACKAGE, type BrowserApp } from './browser/browser-app.js';
import type { PhoneNetwork, PortHandler } from './network.js';
import type { SettingsStore } from './settings.js';
import { appUserName, formatUid } from './packages.js';
import type { ActivityRecord, IntentFilterRecord, PackageRecord } from './packages.js';
import { runsOnThisPhone } from './ui/phone-ui.js';
import { APP_DETAILS_ACTIVITY, appInfoPackage } from './ui/index.js';
import type { PhoneUi, UiAutomator2Server } from './ui/types.js';

/** Intent.FLAG_ACTIVITY_* that change what a start does to the app's task. */
export const FLAG_CLEAR_TASK = 0x8000;
export const FLAG_CLEAR_TOP = 0x4000000;
export const FLAG_SINGLE_TOP = 0x20000000;

/**
 * What the activity manager uses of its phone. The Device provides it; the interface lives
 * here so that the model's files do not import each other in a circle.
 */
export interface ActivityHost {
  readonly logcat: LogBuffer;
  readonly processes: ProcessTable;
  readonly packages: PackageManager;
  readonly activity: ActivityManager;
  readonly ui: PhoneUi;
  readonly hasUi: boolean;
  readonly now: () => number;
  /** The phone's network: what listens on its ports (`tcp:PORT` streams). */
  readonly network: PhoneNetwork;
  /** Chrome, or null when this phone has no browser to run. */
  readonly browser: BrowserApp | null;
  readonly log: DeviceLogger;
  readonly settings: SettingsStore;
  onClose(closer: () => void): () => void;
  appLog(priority: LogPriority, tag: string, message: string, pid?: number): void;
}

export interface ComponentName {
  pkg: string;
  cls: string;
}

/** `pkg/.Act` when the class is inside the package, else `pkg/full.Class`. */
export function shortComponent(c: ComponentName): string {
  return c.cls.startsWith(`${c.pkg}.`) ? `${c.pkg}/${c.cls.slice(c.pkg.length)}` : `${c.pkg}/${c.cls}`;
}

/** Parses `pkg/.Act` or `pkg/full.Class`. */
export function parseComponent(spec: string): ComponentName | null {
  const slash = spec.indexOf('/');
  if (slash <= 0 || slash === spec.length - 1) return null;
  const pkg = spec.slice(0, slash);
  const cls = spec.slice(slash + 1);
  return { pkg, cls: cls.startsWith('.') ? pkg + cls : cls };
}

export interface RunningService extends ComponentName {
  foreground: boolean;
  startedMs: number;
}

/** Appium Settings' action that starts a media projection recording. */
const APPIUM_RECORDING_START = 'io.appium.settings.recording.ACTION_START';

export interface IntentRequest {
  component: ComponentName | null;
  pkg: string | null;
  action: string | null;
  categories: string[];
  data: string | null;
  flags: number;
}

export type StartResult =
  | {
      ok: true;
      component: ComponentName;
      launchState: 'COLD' | 'WARM' | 'HOT';
      deliveredToTop: boolean;
      totalMs: number;
    }
  | {
      ok: false;
      lines: string[];
      /** The app exists but cannot run on this phone (notRunnableError says so). */
      notRunnable?: true;
      /** The start needs what the phone does not model (the chooser). */
      notModeled?: true;
    };

/**
 * What `am` and `monkey` say when asked to start an app the phone cannot run: the reason,
 * and where the app does run. One line, so `Error: ...` is what tools and people see first.
 */
export function notRunnableError(pkg: PackageRecord): string {
  return `${pkg.name} can't run on this virtual phone: it runs only its built-in apps, not the code of installed apps. Run ${pkg.name} on an Android SDK emulator (phonelease doctor checks this machine).`;
}

/** Creates the UiAutomator2 server while its instrumentation runs. */
export type UiAutomator2Factory = (device: ActivityHost) => UiAutomator2Server;

/** The instrumentation Appium starts; its server listens on device port 6790. */
export const UIA2_TEST_PACKAGE = 'io.appium.uiautomator2.server.test';
export const UIA2_SERVER_PACKAGE = 'io.appium.uiautomator2.server';
export const UIA2_PORT = 6790;

/** How an instrumentation ended: `completed` like a finished test run, else killed. */
export interface InstrumentationEnd {
  reason: string;
  completed: boolean;
}

interface RunningInstrumentation {
  component: ComponentName;
  target: string;
  stop: (reason: string, completed?: boolean) => void;
}

export class ActivityManager {
  readonly services = new Map<string, RunningService>();
  private readonly instrumentations = new Map<string, RunningInstrumentation>();
  /** Set by the phone once the UiAutomator2 server implementation is available. */
  uiAutomator2Factory: UiAutomator2Factory | null = null;

  constructor(private readonly device: ActivityHost) {}

  private log(priority: 'I' | 'W' | 'E', tag: string, message: string, pid = 860): void {
    this.device.logcat.add({ pid, tid: pid + 14, priority, tag, message });
  }

  private startProcess(pkg: PackageRecord, reason: string, component: ComponentName): number {
    const already = this.device.processes.isRunning(pkg.name);
    const proc = this.device.processes.start(pkg.name, appUserName(pkg.uid));
    pkg.stopped = false;
    if (!already)
      this.log(
        'I',
        'ActivityManager',
        `Start proc ${proc.pid}:${pkg.name}/${formatUid(pkg.uid)} for ${reason} {${shortComponent(component)}}`,
      );
    return proc.pid;
  }

  /** What `am start` does, the task flags (FLAG_CLEAR_TASK, FLAG_CLEAR_TOP) included. */
  startActivity(req: IntentRequest): StartResult {
    const packages = this.device.packages;
    const intentText = describeIntent(req);
    let target = req.component;
    if (!target) {
      // As ActivityTaskSupervisor.resolveIntent resolves: with MATCH_DEFAULT_ONLY.
      const resolved = resolveIntent(packages, req, true);
      if (resolved.kind === 'none')
        return {
          ok: false,
          lines: [`Error: Activity not started, unable to resolve ${describeStarted(req)}`],
        };
      if (resolved.kind === 'chooser') {
        // Android would start ResolverActivity for the user to pick one; starting one of them
        // instead would hide that the intent is ambiguous.
        const names = resolved.matches.map((m) => shortComponent(m.component)).join(', ');
        return {
          ok: false,
          notModeled: true,
          lines: [
            `Error: Activity not started, ${describeStarted(req)} matches ${resolved.matches.length} activities (${names}): Android would show the chooser (${shortComponent(RESOLVER_ACTIVITY)}), which the virtual phone does not model; name the activity with -n or its package with -p`,
          ],
        };
      }
      target = resolved.info.component;
      // The home intent shows the launcher.
      if (target.pkg === HOME_ACTIVITY.pkg && target.cls === HOME_ACTIVITY.cls) {
        this.device.ui.key(3);
        return { ok: true, component: target, launchState: 'HOT', deliveredToTop: false, totalMs: 12 };
      }
    }
    const component = target;
    const pkg = packages.get(component.pkg);
    const activity = pkg?.activities.find((a) => a.name === component.cls);
    if (!pkg || !activity || !pkg.enabled) {
      return {
        ok: false,
        lines: ['Error type 3', `Error: Activity class {${component.pkg}/${component.cls}} does not exist.`],
      };
    }
    const ui = this.device.ui;
    if (!runsOnThisPhone(pkg.name)) {
      // No process starts and the screen stays as it was, but for the dialog that says why.
      ui.showNotRunnable(pkg.name);
      return {
        ok: false,
        notRunnable: true,
        lines: [`Error: Activity not started, ${notRunnableError(pkg)}`],
      };
    }
    // Intent flags that reshape the app's task before the start (Intent.FLAG_ACTIVITY_*).
    // (am start always adds NEW_TASK, which CLEAR_TASK needs.)
    if ((req.flags & FLAG_CLEAR_TASK) !== 0) ui.removeTask(pkg.name);
    else if ((req.flags & FLAG_CLEAR_TOP) !== 0)
      ui.clearTop(pkg.name, component.cls, (req.flags & FLAG_SINGLE_TOP) !== 0);
    if (pkg.name === BROWSER_PACKAGE) this.openBrowser(req.data);
    // The same intent as the one of the activity on top starts nothing; the same activity with
    // other data (App info of another package) is another intent, and a new instance.
    if (ui.isOnTop(component.pkg, component.cls, req.data ?? undefined)) {
      return { ok: true, component, launchState: 'HOT', deliveredToTop: true, totalMs: 0 };
    }
    const wasRunning = this.device.processes.isRunning(pkg.name);
    // The UI logs the START of apps it draws; log the others here.
    if (!pkg.launcherActivity) {
      this.log('I', 'ActivityTaskManager', startLine(intentText));
    }
    const pid = this.startProcess(pkg, 'next-top-activity', component);
    let drawn = true;
    if (pkg.name === 'io.appium.settings' && component.cls === 'io.appium.settings.Settings') {
      // The Appium Settings activity is transparent: it starts its foreground service and
      // finishes at once, leaving the screen as it was.
      this.startService({ pkg: pkg.name, cls: 'io.appium.settings.ForegroundService' }, true);
      this.log('I', 'AppiumSettings', 'Starting the foreground service', pid);
      // Its media projection recording (Appium's mobile: startMediaProjectionRecording, which
      // then waits for the recorder service and points to logcat) would need MediaProjection.
      if (req.action === APPIUM_RECORDING_START)
        this.log(
          'E',
          'AppiumSettings',
          'Media projection recording is not modeled by the virtual phone; record the screen with screenrecord (Appium: startRecordingScreen) instead',
          pid,
        );
    } else if (component.cls === APP_DETAILS_ACTIVITY && !packages.get(appInfoPackage(req.data))) {
      this.finishAppInfo(req, component, pid);
      drawn = false;
    } else {
      ui.launch(component.pkg, component.cls, req.data ?? undefined);
    }
    const totalMs = wasRunning ? 85 : 312;
    if (drawn)
      this.log(
        'I',
        'ActivityTaskManager',
        `Displayed ${shortComponent(component)} for user 0: +${totalMs}ms`,
      );
    return { ok: true, component, launchState: wasRunning ? 'WARM' : 'COLD', deliveredToTop: false, totalMs };
  }

  /**
   * App info of a package the phone does not have: AppInfoDashboardFragment finds no entry
   * for it and ends with finishAndRemoveTask(). The page joined Settings' task, so that task
   * goes with it, and what was in front before shows again (the launcher, if Settings was).
   * It never drew, so no "Displayed" line follows.
   */
  private finishAppInfo(req: IntentRequest, component: ComponentName, pid: number): void {
    this.log('I', 'ActivityTaskManager', startLine(describeStarted(req)));
    this.log('W', 'AppInfoDashboard', 'Missing AppEntry; maybe reinstalling?', pid);
    this.log(
      'W',
      'AppInfoDashboard',
      'Package info not available. Is this package already uninstalled?',
      pid,
    );
    this.device.ui.removeTask(component.pkg);
  }

  /** Chrome shows `url` (an intent's data), starting its Chromium on first use. */
  private openBrowser(url: string | null): void {
    const browser = this.device.browser;
    if (!browser) {
      this.log('E', 'chromium', 'Chrome cannot run on this phone: no browser engine is configured');
      return;
    }
    browser.open(url);
  }

  startService(c: ComponentName, foreground: boolean): boolean {
    const pkg = this.device.packages.get(c.pkg);
    if (!pkg) return false;
    this.startProcess(pkg, 'service', c);
    const key = `${c.pkg}/${c.cls}`;
    const existing = this.services.get(key);
    this.services.set(key, {
      ...c,
      foreground: foreground || (existing?.foreground ?? false),
      startedMs: existing?.startedMs ?? this.device.now(),
    });
    return true;
  }

  stopService(c: ComponentName): boolean {
    return this.services.delete(`${c.pkg}/${c.cls}`);
  }

  /**
   * `am force-stop`: closes the app's screens, services, processes and instrumentation.
   * `user` is the user it is stopped for as the log says it: -1 (all) for `am force-stop`
   * without --user, else 0.
   */
  /**
   * `am set-debug-app` / `clear-debug-app` (ActivityManagerService.setDebugApp): a persistent
   * debug app is kept in Settings.Global (debug_app, wait_for_debugger), where apps such as
   * Chrome read it. Either way the app is stopped, to start again as the debug app; what a
   * debug app changes beyond that (a debugger attaching) is not modeled.
   */
  setDebugApp(pkg: string | null, persistent: boolean): void {
    const settings = this.device.settings;
    if (persistent) {
      if (pkg === null) settings.delete('global', 'debug_app');
      else settings.put('global', 'debug_app', pkg);
      settings.put('global', 'wait_for_debugger', '0');
    }
    if (pkg !== null) this.forceStop(pkg, -1, 'set debug app');
  }

  /** `reason`: what the log says stopped it (default: the calling pid, as `am force-stop` gives). */
  forceStop(name: string, user = 0, reason?: string): void {
    const pkg = this.device.packages.get(name);
    if (!pkg) return;
    for (const [key, s] of this.services) if (s.pkg === name) this.services.delete(key);
    for (const inst of [...this.instrumentations.values()]) {
      if (inst.component.pkg === name || inst.target === name) inst.stop(`force-stop ${name}`);
    }
    if (this.device.hasUi) this.device.ui.forceStop(name);
    if (name === BROWSER_PACKAGE) void this.device.browser?.stop();
    this.device.processes.stopPackage(name);
    pkg.stopped = true;
    // ActivityManagerService.forceStopPackageLocked logs every stop, running or not, with
    // the app's id (its uid without the user) and the caller's pid.
    this.log(
      'I',
      'ActivityManager',
      `Force stopping ${name} appid=${pkg.uid % 100_000} user=${user}: ${reason ?? `from pid ${this.device.processes.transientPid()}`}`,
    );
  }

  /** `am kill`: ends background processes only. */
  kill(name: string): void {
    const front = this.device.hasUi ? this.device.ui.foreground().package : null;
    if (front !== name) this.device.processes.stopPackage(name);
  }

  /**
   * `am kill-all`: kills the background apps' processes, as killAllBackgroundProcesses
   * does for cached ones. The app in front, apps running a service and an instrumented app
   * (the UiAutomator2 server) are not cached, and stay.
   */
  killBackground(): void {
    const busy = new Set([
      ...[...this.services.values()].map((s) => s.pkg),
      ...this.runningInstrumentations().map((c) => c.pkg),
    ]);
    const packages = new Set(this.device.processes.appNames().map((name) => name.split(':')[0]!));
    for (const pkg of packages) if (!busy.has(pkg)) this.kill(pkg);
  }

  /**
   * Ends a running instrumentation the way its test finishing would (the UiAutomator2
   * server's test returns when its session is deleted).
   */
  completeInstrumentation(pkg: string, reason: string): void {
    for (const inst of [...this.instrumentations.values()])
      if (inst.component.pkg === pkg) inst.stop(reason, true);
  }

  runningInstrumentations(): ComponentName[] {
    return [...this.instrumentations.values()].map((i) => i.component);
  }

  /**
   * Starts an instrumentation. Returns a promise that settles when it finishes (for -w) and a
   * stop function; null when it does not exist.
   */
  startInstrumentation(
    component: ComponentName,
  ):
    | { kind: 'server'; done: Promise<InstrumentationEnd>; stop: (reason: string) => void }
    | { kind: 'missing' }
    | { kind: 'crashed'; reason: string }
    | { kind: 'not-runnable'; reason: string } {
    const owner = this.device.packages.get(component.pkg);
    const info = owner?.instrumentations.find((i) => i.name === component.cls);
    if (!owner || !info) return { kind: 'missing' };
    // An instrumentation is the test APK's code running: the phone runs Appium's alone.
    if (owner.name !== UIA2_TEST_PACKAGE) return { kind: 'not-runnable', reason: notRunnableError(owner) };
    const target = this.device.packages.get(info.targetPackage);
    if (!target) return { kind: 'crashed', reason: `Unable to find target package ${info.targetPackage}` };
    const key = `${component.pkg}/${component.cls}`;
    this.instrumentations.get(key)?.stop('restarted');
    this.startProcess(target, 'added application', component);
    const factory = this.uiAutomator2Factory;
    if (!factory) {
      this.device.processes.stopPackage(target.name);
      return { kind: 'crashed', reason: 'UiAutomator2 server is not available on this phone' };
    }
    if (this.device.network.isListening(UIA2_PORT)) {
      // Its server cannot bind (something else listens there: an `adb reverse`, `nc -l`).
      this.device.processes.stopPackage(target.name);
      return {
        kind: 'crashed',
        reason: `java.net.BindException: bind failed: EADDRINUSE (Address already in use)`,
      };
    }
    const server = factory(this.device);
    const handler: PortHandler = (socket) => server.handleConnection(socket);
    // A Java server: it listens on the IPv6 wildcard, as the app it runs in.
    const unlisten = this.device.network.listen(UIA2_PORT, handler, { uid: target.uid, bind: 'any' });
    this.log('I', 'AppiumUiAutomator2Server', `Starting Server on port ${UIA2_PORT}`);
    let finish: (end: InstrumentationEnd) => void = () => undefined;
    const done = new Promise<InstrumentationEnd>((resolve) => (finish = resolve));
    let stopped = false;
    const stop = (reason: string, completed = false) => {
      if (stopped) return;
      stopped = true;
      this.instrumentations.delete(key);
      unlisten();
      try {
        server.close();
      } catch (error) {
        this.device.log.debug('virtual phone: UiAutomator2 server close failed', { error: String(error) });
      }
      this.device.processes.stopPackage(target.name);
      this.device.processes.stopPackage(component.pkg);
      this.log('I', 'AppiumUiAutomator2Server', `Stopping server: ${reason}`);
      unregister();
      finish({ reason, completed });
    };
    const unregister = this.device.onClose(() => stop('phone shut down'));
    this.instrumentations.set(key, { component, target: target.name, stop });
    return { kind: 'server', done, stop };
  }
}

/** Intent.FLAG_ACTIVITY_NEW_TASK, which `am start` adds to every intent it starts. */
const FLAG_ACTIVITY_NEW_TASK = 0x10000000;

/** The intent as am started it: with the FLAG_ACTIVITY_NEW_TASK it adds after printing "Starting:". */
function describeStarted(req: IntentRequest): string {
  return describeIntent({ ...req, flags: req.flags | FLAG_ACTIVITY_NEW_TASK });
}

/** ActivityTaskManager's log line for a start from the shell (uid 2000), given describeIntent()'s text. */
function startLine(intent: string): string {
  return `START u0 {${intent.slice('Intent { '.length, -2)}} from uid 2000`;
}
const CATEGORY_DEFAULT = 'android.intent.category.DEFAULT';
/** IntentFilter.MATCH_ADJUSTMENT_NORMAL, MATCH_CATEGORY_EMPTY and MATCH_CATEGORY_SCHEME. */
const MATCH_ADJUSTMENT_NORMAL = 0x8000;
const MATCH_CATEGORY_EMPTY = 0x100000;
const MATCH_CATEGORY_SCHEME = 0x200000;

/** What the package manager answers for an intent (android.content.pm.ResolveInfo). */
export interface ResolvedActivity {
  component: ComponentName;
  priority: number;
  /** IntentFilter.match's result (0 for a component named explicitly). */
  match: number;
  /** The filter has CATEGORY_DEFAULT. */
  isDefault: boolean;
  system: boolean;
}

/** The resolver activity (the chooser) PackageManager answers when no one match is best. */
export const RESOLVER_ACTIVITY: ComponentName = {
  pkg: 'android',
  cls: 'com.android.internal.app.ResolverActivity',
};

/** The launcher's home activity (what the home intent resolves to). */
export const HOME_ACTIVITY: ComponentName = {
  pkg: 'com.android.launcher3',
  cls: 'com.android.launcher3.Launcher',
};

/** Uri.getScheme() of an intent's data: null for none (or data without a scheme). */
function schemeOf(data: string | null): string | null {
  if (data === null) return null;
  const colon = data.indexOf(':');
  return colon > 0 ? data.slice(0, colon) : null;
}

/**
 * An activity's filters. An installed app's activity is one filter of all the actions and
 * categories its manifest's filters name (the APK reader joins them), its data not read.
 */
function filtersOf(activity: ActivityRecord): readonly IntentFilterRecord[] {
  if (activity.filters) return activity.filters;
  if (activity.actions.length === 0 && activity.categories.length === 0) return [];
  return [{ actions: activity.actions, categories: activity.categories, priority: 0 }];
}

/**
 * IntentFilter.match for a filter without MIME types: the match constant, or -1 for none.
 * An intent's action must be one of the filter's (an intent without one passes this test,
 * as IntentFilter.match skips matchAction for a null action in Android 14); its data must
 * have one of the filter's schemes, or be absent when the filter names none; and every one
 * of its categories must be in the filter.
 */
function filterMatch(f: IntentFilterRecord, req: IntentRequest): number {
  if (req.action !== null && !f.actions.includes(req.action)) return -1;
  let match = MATCH_CATEGORY_EMPTY;
  if (req.data !== null) {
    // An installed app's <data> is not read: it takes any data (matched by action alone).
    if (f.schemes !== undefined && !f.schemes.includes(schemeOf(req.data) ?? '')) return -1;
    match = MATCH_CATEGORY_SCHEME;
  } else if (f.schemes !== undefined && f.schemes.length > 0) return -1;
  if (!req.categories.every((c) => f.categories.includes(c))) return -1;
  return match + MATCH_ADJUSTMENT_NORMAL;
}

/**
 * Whether IntentResolver looks at the filter at all: an intent with a data scheme is matched
 * against the filters that name that scheme, one without data against the filters of its
 * action; an intent with neither an action nor data is matched against no filter.
 */
function isCandidate(f: IntentFilterRecord, req: IntentRequest): boolean {
  const scheme = schemeOf(req.data);
  if (scheme !== null) return f.schemes === undefined ? req.action !== null : f.schemes.includes(scheme);
  return req.action !== null;
}

/** PackageManagerService's RESOLVE_PRIORITY_SORTER (preferredOrder is 0 for every app here). */
function byPriority(a: ResolvedActivity, b: ResolvedActivity): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.isDefault !== b.isDefault) return a.isDefault ? -1 : 1;
  if (a.match !== b.match) return b.match - a.match;
  if (a.system !== b.system) return a.system ? -1 : 1;
  return a.component.pkg < b.component.pkg ? -1 : a.component.pkg > b.component.pkg ? 1 : 0;
}

/**
 * Every activity an intent matches (PackageManager.queryIntentActivities), best first: the
 * named component if it exists, else one answer per matching filter of the enabled packages
 * (of the named package only, with -p). `defaultOnly` is MATCH_DEFAULT_ONLY, which
 * startActivity uses: only filters with CATEGORY_DEFAULT count.
 */
export function queryIntent(
  packages: PackageManager,
  req: IntentRequest,
  defaultOnly: boolean,
): ResolvedActivity[] {
  if (req.component) {
    const c = req.component;
    const p = packages.get(c.pkg);
    return p?.activities.some((a) => a.name === c.cls)
      ? [{ component: c, priority: 0, match: 0, isDefault: false, system: p.system }]
      : [];
  }
  const candidates = req.pkg ? [packages.get(req.pkg)].filter((p) => p !== undefined) : packages.all();
  const found: ResolvedActivity[] = [];
  for (const p of candidates) {
    if (!p.enabled) continue;
    for (const a of p.activities) {
      for (const f of filtersOf(a)) {
        if (!isCandidate(f, req)) continue;
        const isDefault = f.categories.includes(CATEGORY_DEFAULT);
        if (defaultOnly && !isDefault) continue;
        const match = filterMatch(f, req);
        if (match < 0) continue;
        found.push({
          component: { pkg: p.name, cls: a.name },
          priority: f.priority,
          match,
          isDefault,
          system: p.system,
        });
      }
    }
  }
  return found.sort(byPriority);
}

/**
 * What PackageManager.resolveIntent answers (chooseBestActivity): the sole match, or the
 * first when it has a higher priority or is the only default one; when the best matches tie,
 * the chooser (ResolverActivity), since the phone keeps no preferred activities.
 */
export type Resolution =
  | { kind: 'none' }
  | { kind: 'one'; info: ResolvedActivity }
  | { kind: 'chooser'; matches: ResolvedActivity[] };

export function resolveIntent(
  packages: PackageManager,
  req: IntentRequest,
  defaultOnly: boolean,
): Resolution {
  const found = queryIntent(packages, req, defaultOnly);
  const [r0, r1] = found;
  if (!r0) return { kind: 'none' };
  if (!r1 || r0.priority !== r1.priority || r0.isDefault !== r1.isDefault) return { kind: 'one', info: r0 };
  return { kind: 'chooser', matches: found };
}

/**
 * A URI as Android prints it in an intent (Uri.toSafeString): a phone number or an address
 * masked, any other URI cut to its scheme, host and port (`https://example.com/...`,
 * `package:`), since paths and queries often hold what logs should not.
 */
export function safeUri(uri: string): string {
  const colon = uri.indexOf(':');
  if (colon < 0) return '';
  const scheme = uri.slice(0, colon);
  const rest = uri.slice(colon + 1);
  if (/^(tel|sip|sms|smsto|mailto|nfc)$/i.test(scheme)) {
    const ssp = rest.split('#')[0]!;
    return `${scheme}:${ssp.replace(/[^-@.]/g, 'x')}`;
  }
  if (!rest.startsWith('/')) return `${scheme}:`;
  const authority = rest.startsWith('//') ? /^\/\/([^/?#]*)/.exec(rest)![1]! : null;
  if (authority === null) return `${scheme}:/...`;
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const port = /:(\d+)$/.exec(hostPort);
  const host = port ? hostPort.slice(0, port.index) : hostPort;
  return `${scheme}://${host}${port ? `:${Number(port[1])}` : ''}/...`;
}

/** Intent.toShortString(): what am prints of an intent ("(has extras)" when it carries any). */
export function describeIntent(req: IntentRequest & { extras?: ReadonlyMap<string, string> }): string {
  const parts: string[] = [];
  if (req.action) parts.push(`act=${req.action}`);
  if (req.categories.length > 0) parts.push(`cat=[${req.categories.join(',')}]`);
  if (req.data) parts.push(`dat=${safeUri(req.data)}`);
  if (req.flags) parts.push(`flg=0x${req.flags.toString(16)}`);
  if (req.pkg && !req.component) parts.push(`pkg=${req.pkg}`);
  if (req.component) parts.push(`cmp=${shortComponent(req.component)}`);
  if (req.extras && req.extras.size > 0) parts.push('(has extras)');
  return `Intent { ${parts.join(' ')} }`;
}
