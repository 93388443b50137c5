/** A booted virtual phone: the DevicePhone the runtime sees, over a Device and its ADB port. */
import type { AppSummary, DeviceLogger, DevicePhone, PhoneInput, ScreenSize } from '../types.js';
import { AdbServer } from './adb/server.js';
import { createServiceResolver } from './adb/services.js';
import { Device } from './device.js';
import type { DirNode } from './fs.js';
import { DEVICE, PHONE_LABEL, connectBanner } from './identity.js';
import { DamagedSaveError, restoreDeviceState, saveDeviceState } from './state.js';
import type { StateParts } from './state.js';
import { KEYCODE } from './ui/types.js';
import { PhoneBootError } from '../types.js';
import type { LauncherApp } from './ui/types.js';

export interface VirtualPhoneOptions {
  systemRoot: DirNode;
  log: DeviceLogger;
  host: string;
  /** Profile save to continue from, or null for a temporary phone. */
  restoreFrom: string | null;
}

const BUILT_IN_LAUNCHER_APPS: readonly LauncherApp[] = [
  { package: 'com.android.settings', label: 'Settings', activity: 'com.android.settings.Settings' },
  { package: 'com.phonelease.login', label: 'Login', activity: 'com.phonelease.login.LoginActivity' },
];

export class VirtualPhone implements DevicePhone {
  readonly label = PHONE_LABEL;
  readonly screen: ScreenSize = { w: DEVICE.width, h: DEVICE.height };
  readonly device: Device;
  private readonly server: AdbServer;
  private port = 0;
  private readonly lostListeners = new Set<(reason: string) => void>();
  private stopped: Promise<void> | null = null;
  private readonly stoppedListeners = new Set<() => void>();
  private capturedVersion = -1;
  private captured: Buffer | null = null;

  constructor(private readonly options: VirtualPhoneOptions) {
    this.device = new Device({
      systemRoot: options.systemRoot,
      log: options.log,
      launcherApps: () => [...BUILT_IN_LAUNCHER_APPS],
    });
    this.server = new AdbServer({ banner: connectBanner(), resolve: createServiceResolver(this.device), log: options.log });
  }

  get adb(): { host: string; port: number } {
    return { host: this.options.host, port: this.port };
  }

  async start(): Promise<void> {
    if (this.options.restoreFrom) {
      try {
        await restoreDeviceState(this.device, this.stateParts(), this.options.restoreFrom);
      } catch (error) {
        if (error instanceof DamagedSaveError) throw new PhoneBootError('profile_damaged', `The saved phone cannot be restored: ${error.message}.`);
        throw error;
      }
    }
    this.port = await this.server.listen(this.options.host);
  }

  /** Runs once the phone has stopped (shutdown or failure). */
  onStopped(listener: () => void): void {
    this.stoppedListeners.add(listener);
  }

  private stateParts(): StateParts {
    return {
      savePackages: () => null,
      restorePackages: () => undefined,
      saveSystem: () => null,
      restoreSystem: () => undefined,
    };
  }

  async capture(): Promise<Buffer> {
    const ui = this.device.ui;
    // Viewers poll; re-encode only when the screen actually changed.
    if (!this.captured || this.capturedVersion !== ui.version) {
      this.capturedVersion = ui.version;
      this.captured = ui.renderPng();
    }
    return this.captured;
  }

  async apps(): Promise<AppSummary[]> {
    return [...BUILT_IN_LAUNCHER_APPS].map((a) => ({ package: a.package, label: a.label }));
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
        const codes = { home: KEYCODE.HOME, back: KEYCODE.BACK, enter: KEYCODE.ENTER, del: KEYCODE.DEL } as const;
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

  async shutdown(options: { saveTo: string | null }): Promise<void> {
    if (!this.stopped) this.stopped = this.stop(options.saveTo);
    await this.stopped;
  }

  private async stop(saveTo: string | null): Promise<void> {
    try {
      // Stop ADB first so nothing changes the phone while it is being written out.
      await this.server.close();
      if (saveTo) await saveDeviceState(this.device, this.stateParts(), saveTo);
    } finally {
      this.device.close();
      this.lostListeners.clear();
      this.captured = null;
      for (const l of this.stoppedListeners) l();
      this.stoppedListeners.clear();
    }
  }
}
