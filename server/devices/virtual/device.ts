/**
 * The system state of one virtual phone: filesystem, properties, settings, logs,
 * processes, packages, device ports and the (lazily created) UI. Shell commands and ADB
 * services work on this object; phone.ts wraps it in the DevicePhone interface.
 */
import { randomBytes } from 'node:crypto';
import { fatalExceptionLines, type AppException } from './app-crash.js';
import { EncoderThreads } from './video/frame-encoder.js';
import type { DeviceLogger } from '../types.js';
import { FsError, VirtualFs, appCredentials } from './fs.js';
import type { DirNode } from './fs.js';
import { DEVICE } from './identity.js';
import type { Size } from './display-overrides.js';
import { LogBuffer, bootLog } from './logcat.js';
import type { LogPriority } from './logcat.js';
import { ProcessTable, uidOfUser } from './processes.js';
import { procDirectory, procNetDirectory } from './procfs.js';
import { credentialMatches, initialLockSettings, lockKind, type LockSettings } from './lock-settings.js';
import { SystemProps } from './props.js';
import { airplaneMode, SettingsStore, wifiSwitch } from './settings.js';
import { ActivityManager } from './activity.js';
import { Battery } from './battery.js';
import { PackageManager, appUserName, formatUid } from './packages.js';
import type { InstallSession } from './packages.js';
import { createPhoneUi } from './ui/index.js';
import { PhoneNetwork } from './network.js';
import { BROWSER_PACKAGE, BrowserApp, pageGeometry } from './browser/browser-app.js';
import type { BrowserConfig } from './browser/browser-app.js';
import { metrics } from './ui/theme.js';
import type { DisplaySize, LauncherApp, PhoneUi, PhoneUiHost } from './ui/types.js';

/** Tags of system_server's services: their lines carry its pid, whatever app is in front. */
const SYSTEM_SERVER_TAGS = new Set([
  'ActivityManager',
  'ActivityTaskManager',
  'PowerManagerService',
  'SettingsProvider',
  'WindowManager',
]);

export interface DeviceOptions {
  systemRoot: DirNode;
  log: DeviceLogger;
  now?: () => number;
  /** Storage quota for the phone's own files (default DEFAULT_STORAGE_BYTES, 2 GiB). */
  storageBytes?: number;
  /** How Chrome runs on this phone (a real Chromium); without it the browser cannot start. */
  browser?: BrowserConfig | null;
  /**
   * The screen recorder's encoder threads, shared with the other phones of its server (the
   * backend's, which ends them); a phone of its own otherwise.
   */
  encoderThreads?: EncoderThreads;
}

/** The mock location Appium Settings' LocationService holds (setGeoLocation). */
export interface MockLocation {
  latitude: number;
  longitude: number;
  altitude: number;
}

/** Small pieces of system service state that `cmd`, `appops`, `wm` and dumpsys report. */
export interface SystemServiceState {
  /** package -> op -> mode (allow, deny, ignore, default). */
  appOps: Map<string, Map<string, string>>;
  notificationListeners: Set<string>;
  idleWhitelist: Set<string>;
  wmSize: { w: number; h: number } | null;
  wmDensity: number | null;
  enabledImes: Set<string>;
  currentIme: string;
  /** Where an `input motionevent DOWN` started, until its UP. */
  motionDown: { x: number; y: number; at: number } | null;
  /** `pm install-create` sessions waiting for their commit. */
  installSessions: Map<number, InstallSession>;
  /**
   * System services published so far, or null once boot is over (all of them). Only a
   * booting guest (the fake SDK emulator) sets it: `service list` then shows these alone.
   */
  publishedServices: ReadonlySet<string> | null;
  /** The lock credential and whether the lock screen is disabled (locksettings). */
  lock: LockSettings;
  /** The clipboard's text (set by the UiAutomator2 server, read by Appium Settings). */
  clipboard: string;
  /** The location Appium Settings' LocationService was given, if any. */
  mockLocation: MockLocation | null;
  /** App standby buckets set with `am set-standby-bucket` / `am set-inactive`, by package. */
  standbyBuckets: Map<string, number>;
}

export const DEFAULT_IME = 'com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME';

export class Device {
  readonly fs: VirtualFs;
  readonly props = new SystemProps();
  readonly settings: SettingsStore;
  readonly logcat: LogBuffer;
  readonly processes: ProcessTable;
  readonly packages: PackageManager;
  readonly activity: ActivityManager;
  /** BatteryService: the hardware's values, or those a shell forced (`dumpsys battery set`). */
  readonly battery = new Battery();
  readonly system: SystemServiceState = {
    appOps: new Map(),
    notificationListeners: new Set(),
    idleWhitelist: new Set(['com.android.shell', 'com.google.android.inputmethod.latin']),
    wmSize: null,
    wmDensity: null,
    enabledImes: new Set([DEFAULT_IME]),
    currentIme: DEFAULT_IME,
    motionDown: null,
    installSessions: new Map(),
    publishedServices: null,
    lock: initialLockSettings(),
    clipboard: '',
    mockLocation: null,
    standbyBuckets: new Map(),
  };
  readonly log: DeviceLogger;
  readonly now: () => number;
  /** When the phone booted, on `now`'s clock (uptime counts from it). */
  readonly bootMs: number;
  /** The phone's own network: its loopback ports, abstract sockets and the way out. */
  readonly network: PhoneNetwork;
  /** Chrome (`com.android.chrome`), or null when this phone has no browser to run. */
  readonly browser: BrowserApp | null;
  /** The screen recorder's encoder threads, kept between recordings (screenrecord). */
  readonly encoderThreads: EncoderThreads;
  /** Teardown callbacks of long-lived things (instrumentation, listeners). */
  private readonly closers = new Set<() => void>();
  private uiInstance: PhoneUi | null = null;
  private readonly screenListeners = new Set<() => void>();
  /** Aborted by close(): everything running on the phone stops with it. */
  private readonly lifetime = new AbortController();
  /** Shell jobs started with `&` that are still running. */
  private readonly jobs = new Set<Promise<unknown>>();

  constructor(options: DeviceOptions) {
    this.now = options.now ?? (() => Date.now());
    this.bootMs = this.now();
    this.log = options.log;
    this.fs = new VirtualFs(options.systemRoot, { now: this.now }, { storageBytes: options.storageBytes });
    this.settings = new SettingsStore(randomBytes(8).toString('hex'));
    // logd keeps each entry's uid: the writing process's, while the table has it.
    this.logcat = new LogBuffer(this.now, (pid) => {
      const p = this.processes?.byPid(pid);
      return p ? (p.uid ?? uidOfUser(p.user)) : undefined;
    });
    // An app's own process killed by a signal (run-as kill) stops the app.
    this.processes = new ProcessTable(this.now, (name) => this.activity.forceStop(name.split(':')[0]!));
    const processes = this.processes;
    const pidOf = (name: string) => processes.list().find((x) => x.name === name)?.pid ?? 1;
    for (const entry of bootLog(this.bootMs, pidOf)) this.logcat.add({ ...entry, tid: entry.pid });
    this.fs.mount(
      '/proc',
      procDirectory(processes, this.now, (pid) => processes.signalsOf(pid), this.bootMs),
    );
    // Apps with native code install only for an ABI the phone reports it runs.
    this.packages = new PackageManager(this.fs, this.now, () =>
      (this.props.get('ro.product.cpu.abilist') ?? '').split(',').filter(Boolean),
    );
    this.activity = new ActivityManager(this);
    this.network = new PhoneNetwork(
      (target) =>
        this.logcat.add({
          pid: 860,
          tid: 901,
          priority: 'W',
          tag: 'PhoneNetwork',
          message: `connection to ${target} refused: nothing listens there on the phone (use adb reverse to reach the host)`,
        }),
      this.packages.get(BROWSER_PACKAGE)?.uid,
    );
    this.fs.mount('/proc/net', procNetDirectory(this.network, this.now));
    this.browser = options.browser ? this.createBrowser(options.browser) : null;
    if (!this.browser) this.packages.setUnavailable(BROWSER_PACKAGE);
    // A changed app set or setting redraws what shows it, but never creates the UI for that.
    this.packages.onChange(() => this.uiInstance?.appsChanged());
    this.closers.add(this.settings.onChange(() => this.uiInstance?.settingsChanged?.()));
    // Threads shared with other phones are their owner's to end.
    this.encoderThreads = options.encoderThreads ?? new EncoderThreads();
    if (!options.encoderThreads) this.closers.add(() => this.encoderThreads.close());
  }

  private createBrowser(config: BrowserConfig): BrowserApp {
    return new BrowserApp({
      config,
      network: this.network,
      // The page fills the app window below Chrome's toolbar, on the display as it is sized
      // now (Chrome keeps portrait: the display does not turn while it is in front).
      geometry: () => {
        const { width, height, density } = this.display();
        const m = metrics(width, height, density);
        return pageGeometry(m.content, m.dp);
      },
      log: this.log,
      commandLine: {
        globalSetting: (key) => this.settings.get('global', key),
        prop: (key) => this.props.get(key),
        read: (path) => {
          const read = this.readAsChrome(path);
          return 'error' in read ? null : read.toString('utf8');
        },
      },
      readPhoneFile: (path) => this.readAsChrome(path),
      saveDownload: (name, data) => this.saveDownload(name, data),
      logcat: (priority, message, tag = 'chromium') => {
        const pid = this.processes.list().find((p) => p.name === 'com.android.chrome')?.pid ?? 860;
        this.logcat.add({ pid, tid: pid, priority, tag, message });
      },
      changed: () => this.uiInstance?.contentChanged?.(),
    });
  }

  /**
   * A finished download in the phone's Download folder, named as Chrome names one when the
   * name is taken there (`report (1).pdf`).
   */
  private saveDownload(name: string, data: Buffer): void {
    const dot = name.lastIndexOf('.');
    const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
    let path = `/sdcard/Download/${name}`;
    for (let n = 1; this.fs.exists(path); n++) path = `/sdcard/Download/${stem} (${n})${ext}`;
    try {
      this.fs.writeFile(path, data);
    } catch (error) {
      this.log.warn('virtual browser: a download could not be kept on the phone', { error: String(error) });
    }
  }

  /** A file as Chrome's process reads it: a file the shell made unreadable to apps is not read. */
  private readAsChrome(path: string): Buffer | { error: string } {
    const uid = this.packages.get(BROWSER_PACKAGE)?.uid;
    try {
      return this.fs.readFile(path, uid ? { cred: appCredentials(uid) } : {});
    } catch (error) {
      return { error: error instanceof FsError ? error.reason : String(error) };
    }
  }

  /**
   * Forces the display's size or density (`wm size`, `wm density`; null clears it), as the
   * window manager's rules give them: when the display changed, apps lay out again.
   */
  forceDisplay(change: { size?: Size | null; density?: number | null }): void {
    const before = this.display();
    if (change.size !== undefined) this.system.wmSize = change.size;
    if (change.density !== undefined) this.system.wmDensity = change.density;
    const after = this.display();
    if (after.width === before.width && after.height === before.height && after.density === before.density)
      return;
    this.uiInstance?.settingsChanged?.();
    this.browser?.resize();
  }

  /** The display as the window manager sizes it: the panel's, or what `wm size` and `wm density` force. */
  display(): DisplaySize {
    const { wmSize, wmDensity } = this.system;
    return {
      width: wmSize?.w ?? DEVICE.width,
      height: wmSize?.h ?? DEVICE.height,
      density: wmDensity ?? DEVICE.density,
    };
  }

  launcherApps(): LauncherApp[] {
    return this.packages.launcherApps();
  }

  /** The UI is created on first use so that booting (and idling) allocates no screen. */
  get ui(): PhoneUi {
    if (!this.uiInstance) {
      const host: PhoneUiHost = {
        launcherApps: () => this.launcherApps(),
        log: (priority, tag, message) => this.appLog(priority, tag, message),
        setting: (ns, key) => this.settings.get(ns, key),
        // Toggles in the Settings app write through, so `settings get` sees them.
        // The Settings app's Wi-Fi and airplane toggles go through their services.
        setSetting: (ns, key, value) => {
          if (ns === 'global' && key === 'wifi_on') wifiSwitch.set(this.settings, value !== '0');
          else if (ns === 'global' && key === 'airplane_mode_on')
            airplaneMode.set(this.settings, value === '1');
          else this.settings.put(ns, key, value);
        },
        browser: () => this.browser,
        appCrashed: (pkg, exception) => this.appCrashed(pkg, exception),
        forceStop: (pkg) => this.activity.forceStop(pkg),
        lockKind: () => lockKind(this.system.lock),
        batteryLevel: () => this.battery.values().level,
        checkCredential: (entered) => credentialMatches(this.system.lock, entered),
        display: () => this.display(),
      };
      const ui = createPhoneUi(host, {
        width: DEVICE.width,
        height: DEVICE.height,
        density: DEVICE.density,
        identity: DEVICE,
      });
      this.uiInstance = ui;
      const off = ui.onChange(() => {
        this.followForeground(ui);
        for (const l of this.screenListeners) l();
      });
      this.closers.add(off);
      // The status bar's battery follows what BatteryService broadcasts.
      this.closers.add(this.battery.onChange(() => ui.settingsChanged?.()));
      // The status bar clock: the UI has no timers of its own. Only phones with a screen
      // in use tick, and the timer never keeps the process alive.
      const clock = setInterval(() => ui.clockTick?.(), 15_000);
      clock.unref();
      this.closers.add(() => clearInterval(clock));
    }
    return this.uiInstance;
  }

  /** An app the user opened on screen (launcher tap) now has a process, as on a phone. */
  private followForeground(ui: PhoneUi): void {
    const pkg = this.packages.get(ui.foreground().package);
    if (!pkg || this.processes.isRunning(pkg.name)) return;
    const proc = this.processes.start(pkg.name, appUserName(pkg.uid));
    pkg.stopped = false;
    this.logcat.add({
      pid: 860,
      tid: 874,
      priority: 'I',
      tag: 'ActivityManager',
      message: `Start proc ${proc.pid}:${pkg.name}/${formatUid(pkg.uid)} for next-top-activity`,
    });
  }

  /**
   * An app's uncaught exception, as the phone reports it: AndroidRuntime's lines from the
   * app's main thread, the activity force-finished, and the process gone.
   */
  private appCrashed(pkg: string, exception: AppException): void {
    const proc = this.processes.list().find((p) => p.name === pkg);
    const pid = proc?.pid ?? this.processes.transientPid();
    for (const line of fatalExceptionLines(pkg, pid, exception))
      this.logcat.add({ pid, tid: pid, priority: 'E', tag: 'AndroidRuntime', message: line });
    const activity = this.hasUi ? this.ui.foreground() : null;
    if (activity?.package === pkg) {
      const short = activity.activity.startsWith(`${pkg}.`)
        ? activity.activity.slice(pkg.length)
        : activity.activity;
      this.logcat.add({
        pid: 860,
        tid: 887,
        priority: 'W',
        tag: 'ActivityTaskManager',
        message: `  Force finishing activity ${pkg}/${short}`,
      });
    }
    this.processes.stopPackage(pkg);
    this.logcat.add({
      pid: 860,
      tid: 884,
      priority: 'I',
      tag: 'ActivityManager',
      message: `Process ${pkg} (pid ${pid}) has died: fg  TOP `,
    });
  }

  /** The lock changed (locksettings): what the screen shows of it (Settings' "Screen lock") follows. */
  lockChanged(): void {
    this.uiInstance?.settingsChanged?.();
  }

  get hasUi(): boolean {
    return this.uiInstance !== null;
  }

  onScreenChange(listener: () => void): () => void {
    this.screenListeners.add(listener);
    // Someone watches the screen: the browser's page is screencast only then.
    this.browser?.setViewers(this.screenListeners.size);
    return () => {
      this.screenListeners.delete(listener);
      this.browser?.setViewers(this.screenListeners.size);
    };
  }

  /** A log line from an app (via the UI) or the system; pid of the app when it runs. */
  /** Wi-Fi on or off: the global setting, which the Wi-Fi service's state follows. */
  setWifi(on: boolean): void {
    wifiSwitch.set(this.settings, on);
  }

  /** Mobile data on or off, as telephony keeps it for the one SIM: in `mobile_data`. */
  setMobileData(on: boolean): void {
    this.settings.put('global', 'mobile_data', on ? '1' : '0');
  }

  appLog(priority: LogPriority, tag: string, message: string, pid?: number): void {
    // Without an explicit pid: the process the tag's code runs in (system_server's services,
    // SystemUI's keyguard), else the foreground app's process (or system_server).
    const process = SYSTEM_SERVER_TAGS.has(tag)
      ? 'system_server'
      : tag === 'KeyguardViewMediator'
        ? 'com.android.systemui'
        : this.uiInstance?.foreground().package;
    const p = pid ?? this.processes.list().find((x) => x.name === process)?.pid ?? 860;
    this.logcat.add({ pid: p, tid: p, priority, tag, message });
  }

  /** Aborted when the phone shuts down. */
  get lifetimeSignal(): AbortSignal {
    return this.lifetime.signal;
  }

  /**
   * A signal that aborts with `parent` or when the phone shuts down, whichever comes first.
   * Shell sessions and background jobs run under one, so none outlives the phone.
   */
  scopedSignal(parent: AbortSignal): AbortSignal {
    const controller = new AbortController();
    if (parent.aborted || this.lifetime.signal.aborted) {
      controller.abort();
      return controller.signal;
    }
    const unregister = this.onClose(() => controller.abort());
    parent.addEventListener(
      'abort',
      () => {
        unregister();
        controller.abort();
      },
      { once: true },
    );
    return controller.signal;
  }

  /** Tracks a background job (`cmd &`) until it settles. */
  trackJob(job: Promise<unknown>): void {
    this.jobs.add(job);
    const done = () => this.jobs.delete(job);
    job.then(done, done);
  }

  /** How many background jobs still run. */
  get runningJobs(): number {
    return this.jobs.size;
  }

  /** Registers teardown for something long-lived; returns a function that unregisters it. */
  onClose(closer: () => void): () => void {
    this.closers.add(closer);
    return () => this.closers.delete(closer);
  }

  close(): void {
    this.lifetime.abort();
    this.processes.killAll();
    for (const c of [...this.closers]) {
      try {
        c();
      } catch (error) {
        this.log.debug('virtual phone: teardown step failed', { error: String(error) });
      }
    }
    this.closers.clear();
    this.network.close();
    this.screenListeners.clear();
  }
}
