/** A booted virtual phone: the DevicePhone the runtime sees, over a Device and its ADB port. */
import type { Socket } from 'node:net';
import type { AppSummary, DeviceLogger, DevicePhone, PhoneInput, ScreenSize } from '../types.js';
import { UIA2_SERVER_PACKAGE, UIA2_TEST_PACKAGE } from './activity.js';
import { AdbServer } from './adb/server.js';
import { createServiceResolver } from './adb/services.js';
import { appOpName } from './app-ops.js';
import { forcedDensity, forcedSize } from './display-overrides.js';
import type { BrowserConfig } from './browser/browser-app.js';
import { Device } from './device.js';
import type { DirNode } from './fs.js';
import { DEVICE, PHONE_LABEL, connectBanner } from './identity.js';
import { DamagedSaveError, restoreDeviceState, saveDeviceState } from './state.js';
import type { StateParts } from './state.js';
import { userRotation } from './settings.js';
import { parseLockSettings, type LockSettings } from './lock-settings.js';
import type { SavedPackage } from './packages.js';
import type { CommandTable } from './shell/command.js';
import { KEYCODE } from './ui/types.js';
import { createUiAutomator2Server } from './uia2/index.js';
import { PhoneBootError } from '../types.js';
import type { AppBundle } from '../../../src/apk/app-files.js';
import { preinstallApps } from './preinstall.js';
import type { EncoderThreads } from './video/frame-encoder.js';

/** System service state kept in profile saves. */
interface SavedSystem {
  appOps: [string, [string, string][]][];
  notificationListeners: string[];
  idleWhitelist: string[];
  wmSize: { w: number; h: number } | null;
  wmDensity: number | null;
  /** The lock (locksettings): its credential hashed, never as typed. */
  lock: LockSettings;
  enabledImes: string[];
  currentIme: string;
  /** Built-in apps the user disabled (pm disable-user); absent in older saves. */
  disabledSystemPackages?: string[];
}

export interface VirtualPhoneOptions {
  systemRoot: DirNode;
  log: DeviceLogger;
  host: string;
  /** The shell's programs (built once per backend). */
  commands: CommandTable;
  /** Profile save to continue from, or null for a temporary phone. */
  restoreFrom: string | null;
  /** Storage quota for the phone's own files (default 2 GiB). */
  storageBytes?: number;
  /** How Chrome runs (a real Chromium), or null for a phone without a browser engine. */
  browser?: BrowserConfig | null;
  /** Apps every phone has before it is handed out (`--preinstall`), read once per backend. */
  preinstall?: readonly AppBundle[];
  /** The screen recorder's encoder threads, the backend's (see Device). */
  encoderThreads?: EncoderThreads;
}

export class VirtualPhone implements DevicePhone {
  readonly label = PHONE_LABEL;
  /** The screen as it is now: sideways while the display is turned (a phone not yet used is upright). */
  get screen(): ScreenSize {
    const device = this.lazyDevice;
    if (device?.hasUi) return { w: device.ui.width, h: device.ui.height };
    const display = device?.display() ?? DEVICE;
    return { w: display.width, h: display.height };
  }
  private lazyDevice: Device | null = null;
  /** The phone's ADB listener, made with its first endpoint request. */
  private server: AdbServer | null = null;
  private readonly lostListeners = new Set<(reason: string) => void>();
  private adbStopped: Promise<void> | null = null;
  private shutdownQueue: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly stoppedListeners = new Set<() => void>();

  constructor(private readonly options: VirtualPhoneOptions) {}

  /**
   * The phone's system state (filesystem, settings, services, UI), made on first use: a
   * session that is created and ended without touching its phone (most of a benchmark's,
   * many API clients') pays for none of it, and a create stays cheap. Nothing in it depends
   * on when it was made.
   */
  get device(): Device {
    return (this.lazyDevice ??= this.createDevice());
  }

  private createDevice(): Device {
    const device = new Device({
      systemRoot: this.options.systemRoot,
      log: this.options.log,
      storageBytes: this.options.storageBytes,
      browser: this.options.browser ?? null,
      encoderThreads: this.options.encoderThreads,
    });
    // The UiAutomator2 server runs while its instrumentation does (am instrument -w).
    device.activity.uiAutomator2Factory = (d) =>
      createUiAutomator2Server(d.ui, {
        rotate: (rotation) => userRotation.freeze(device.settings, rotation),
        clipboard: {
          get: () => device.system.clipboard,
          set: (text) => {
            device.system.clipboard = text;
          },
        },
        identity: DEVICE,
        appLabel: (pkg) => device.packages.get(pkg)?.label ?? null,
        battery: () => device.battery.values(),
        log: (priority, tag, message) => {
          d.appLog(
            priority,
            tag,
            message,
            d.processes.list().find((p) => p.name === UIA2_SERVER_PACKAGE)?.pid,
          );
        },
        // On a device the server's test method returns once its session is deleted, and
        // the driver waits for the process to go (5 s otherwise).
        onSessionDeleted: () => d.activity.completeInstrumentation(UIA2_TEST_PACKAGE, 'session deleted'),
      });
    return device;
  }

  /**
   * The phone's ADB port, opened on the first call (by a gateway in another process once a
   * client unlocked, or by a test connecting straight to it): a create pays no listening socket for a phone
   * whose ADB nobody uses. Refused once the phone has begun to stop.
   */
  async adbEndpoint(): Promise<{ host: string; port: number }> {
    const server = this.adbServer();
    return { host: this.options.host, port: await server.listen(this.options.host) };
  }

  /** ADB on a socket the gateway in this process unlocked: no port of its own, no relay. */
  serveAdb(socket: Socket, early: Buffer): void {
    this.adbServer().serve(socket, early);
  }

  /** The phone's adbd, made on first use. */
  private adbServer(): AdbServer {
    if (this.adbStopped) throw new Error('virtual adb: the phone is stopped');
    this.server ??= new AdbServer({
      banner: connectBanner(),
      resolve: createServiceResolver(this.device, this.options.commands),
      log: this.options.log,
      onFailure: (reason) => {
        for (const l of this.lostListeners) l(reason);
      },
    });
    return this.server;
  }

  async start(): Promise<void> {
    if (this.options.restoreFrom) {
      try {
        await restoreDeviceState(this.device, this.stateParts(), this.options.restoreFrom);
      } catch (error) {
        if (error instanceof DamagedSaveError)
          throw new PhoneBootError(
            'profile_damaged',
            `The saved phone cannot be restored: ${error.message}.`,
          );
        throw error;
      }
    }
    if (this.options.preinstall?.length) {
      const failure = preinstallApps(this.device, this.options.preinstall);
      if (failure)
        throw new PhoneBootError(
          'preinstall_failed',
          `A --preinstall app could not be installed: ${failure}.`,
        );
    }
  }

  /**
   * Writes the phone's whole state into an empty directory while it keeps running (the
   * fake SDK emulator's `avd snapshot save`); restoreFrom on a later phone loads it.
   */
  async saveState(dir: string): Promise<void> {
    await saveDeviceState(this.device, this.stateParts(), dir);
  }

  /** Runs once the phone has stopped (shutdown or failure). */
  onStopped(listener: () => void): void {
    this.stoppedListeners.add(listener);
  }

  private stateParts(): StateParts {
    const device = this.device;
    return {
      savePackages: (blobs) => device.packages.save(blobs),
      restorePackages: (state, data) => {
        if (Array.isArray(state)) device.packages.restore(state as SavedPackage[], data);
      },
      saveSystem: (): SavedSystem => {
        const sys = device.system;
        return {
          appOps: [...sys.appOps].map(([pkg, ops]) => [pkg, [...ops]]),
          notificationListeners: [...sys.notificationListeners],
          idleWhitelist: [...sys.idleWhitelist],
          wmSize: sys.wmSize,
          wmDensity: sys.wmDensity,
          lock: sys.lock,
          enabledImes: [...sys.enabledImes],
          currentIme: sys.currentIme,
          // The user's choices only: Chrome turned off for want of a Chromium on this
          // machine is the machine's, and must not follow the profile to one that has it.
          disabledSystemPackages: device.packages.userDisabledSystem(),
        };
      },
      restoreSystem: (state) => {
        const saved = state as Partial<SavedSystem> | null;
        if (!saved) return;
        const sys = device.system;
        // By the names appops reads now: a profile saved before may hold any upper-cased text.
        for (const [pkg, ops] of saved.appOps ?? []) {
          const named = ops.map(
            ([op, mode]) => [appOpName(op) ?? appOpName(`android:${op.toLowerCase()}`), mode] as const,
          );
          sys.appOps.set(pkg, new Map(named.filter((e): e is [string, string] => e[0] !== null)));
        }
        for (const l of saved.notificationListeners ?? []) sys.notificationListeners.add(l);
        for (const w of saved.idleWhitelist ?? []) sys.idleWhitelist.add(w);
        // As `wm` would force them: a profile saved before the display followed them may
        // hold values the window manager keeps otherwise, or the phone cannot draw.
        sys.wmSize = saved.wmSize ? forcedSize(saved.wmSize) : null;
        sys.wmDensity = typeof saved.wmDensity === 'number' ? forcedDensity(saved.wmDensity) : null;
        // A profile phone keeps its lock; it is handed out awake and unlocked, as it was saved.
        const lock = parseLockSettings(saved.lock);
        if (lock) sys.lock = lock;
        if (saved.enabledImes) sys.enabledImes = new Set(saved.enabledImes);
        if (saved.currentIme) sys.currentIme = saved.currentIme;
        for (const name of saved.disabledSystemPackages ?? []) device.packages.setEnabled(name, false);
      },
    };
  }

  async capture(): Promise<Buffer> {
    // The browser's page as it is now, not its last frame from before nobody watched.
    await this.device.browser?.refreshFrame();
    // Viewers poll; the UI re-encodes only when the screen changed (renderPng caches).
    return this.device.ui.renderPng();
  }

  async apps(): Promise<AppSummary[]> {
    return this.device.launcherApps().map((a) => ({ package: a.package, label: a.label }));
  }

  async input(event: PhoneInput): Promise<void> {
    const ui = this.device.ui;
    switch (event.type) {
      case 'tap':
        ui.tap(event.x, event.y);
        return;
      case 'swipe':
        ui.swipe(event.x1, event.y1, event.x2, event.y2, event.durationMs ?? 300);
        return;
      case 'text':
        ui.text(event.text);
        return;
      case 'key': {
        const codes = {
          home: KEYCODE.HOME,
          back: KEYCODE.BACK,
          enter: KEYCODE.ENTER,
          del: KEYCODE.DEL,
        } as const;
        ui.key(codes[event.key]);
        return;
      }
    }
  }

  onScreenChange(listener: () => void): () => void {
    return this.device.onScreenChange(listener);
  }

  onLost(listener: (reason: string) => void): void {
    this.lostListeners.add(listener);
  }

  /**
   * Stops ADB (once), saves when asked, then frees the phone. A save that fails leaves the
   * phone as it was, so a later call can save it again (to a fresh directory) or discard it
   * with saveTo null; calls run one after another.
   */
  shutdown(options: { saveTo: string | null }): Promise<void> {
    const run = this.shutdownQueue.then(() => this.stop(options.saveTo));
    this.shutdownQueue = run.catch(() => undefined);
    return run;
  }

  private async stop(saveTo: string | null): Promise<void> {
    if (this.closed) return;
    // Stop ADB first so nothing changes the phone while it is being written out.
    this.adbStopped ??= (this.server?.close() ?? Promise.resolve()).catch((error: unknown) => {
      this.adbStopped = null;
      throw error;
    });
    await this.adbStopped;
    if (saveTo) await saveDeviceState(this.device, this.stateParts(), saveTo);
    // The browser is a real process: it and its profile are gone before the phone says stopped.
    await this.lazyDevice?.browser?.stop();
    this.closed = true;
    this.lazyDevice?.close();
    this.lostListeners.clear();
    for (const l of this.stoppedListeners) l();
    this.stoppedListeners.clear();
  }
}
