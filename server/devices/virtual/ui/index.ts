/**
 * Placeholder UI: a blank screen with the right geometry. Replaced by the real launcher,
 * apps, drawing and hierarchy; kept minimal so the system side can boot phones meanwhile.
 */
import { PNG } from 'pngjs';
import type { ForegroundActivity, PhoneUi, PhoneUiHost, PhoneUiOptions } from './types.js';

export function createPhoneUi(host: PhoneUiHost, options: PhoneUiOptions): PhoneUi {
  const listeners = new Set<() => void>();
  let version = 0;
  let front: ForegroundActivity = { package: 'com.android.launcher3', activity: 'com.android.launcher3.Launcher' };
  const changed = () => {
    version++;
    for (const l of listeners) l();
  };
  return {
    width: options.width,
    height: options.height,
    density: options.density,
    statusBarHeight: 48,
    get version() {
      return version;
    },
    renderPng() {
      const png = new PNG({ width: options.width, height: options.height });
      png.data.fill(0xff);
      return PNG.sync.write(png);
    },
    tap: () => changed(),
    swipe: () => changed(),
    text: () => changed(),
    key: () => changed(),
    launch(pkg, activity) {
      const app = host.launcherApps().find((a) => a.package === pkg);
      if (!app) return false;
      front = { package: pkg, activity: activity ?? app.activity };
      changed();
      return true;
    },
    forceStop(pkg) {
      if (front.package === pkg) front = { package: 'com.android.launcher3', activity: 'com.android.launcher3.Launcher' };
      changed();
    },
    clearData: () => undefined,
    foreground: () => front,
    appsChanged: () => changed(),
    dumpHierarchy: () =>
      `<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"></hierarchy>`,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    saveState: () => ({ front }),
    restoreState(state) {
      const s = state as { front?: ForegroundActivity } | null;
      if (s?.front) front = s.front;
    },
  };
}
