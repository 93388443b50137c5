/**
 * The fake emulator guest's lock screen. A real emulator comes out of a cold boot with the
 * keyguard showing (an AVD has no PIN, so it is the swipe keyguard); CI runners dismiss it
 * with `input keyevent 82` once `sys.boot_completed` is 1 (reference, "Boot detection"). A
 * snapshot keeps whatever was on screen, lock included. The virtual phone has no keyguard
 * of its own, so the fake puts one in front of its UI: while it shows, the screen and
 * `uiautomator dump` are the keyguard's, touches and typing go nowhere, and MENU (82) or a
 * swipe up dismisses it.
 */
import { PNG } from 'pngjs';
import { dumpUiAutomator } from '../../../server/devices/virtual/ui/hierarchy.js';
import {
  KEYCODE,
  PLAIN_VIEW,
  type PhoneUi,
  type UiNodeInfo,
} from '../../../server/devices/virtual/ui/types.js';

export const KEYGUARD_PACKAGE = 'com.android.systemui';

function node(
  fields: Pick<UiNodeInfo, 'key' | 'className' | 'resourceId' | 'bounds'> & Partial<UiNodeInfo>,
): UiNodeInfo {
  return {
    ...PLAIN_VIEW,
    packageName: KEYGUARD_PACKAGE,
    children: [],
    ...fields,
  };
}

export class Keyguard {
  private png: Buffer | null = null;

  private constructor(
    private readonly ui: PhoneUi,
    private shown: boolean,
  ) {}

  get showing(): boolean {
    return this.shown;
  }

  /** Puts the keyguard in front of `ui` (showing or not, as `showing` says). */
  static install(ui: PhoneUi, showing: boolean): Keyguard {
    const k = new Keyguard(ui, showing);
    const real = {
      tap: ui.tap.bind(ui),
      longPress: ui.longPress.bind(ui),
      swipe: ui.swipe.bind(ui),
      text: ui.text.bind(ui),
      key: ui.key.bind(ui),
      renderPng: ui.renderPng.bind(ui),
      dumpHierarchy: ui.dumpHierarchy.bind(ui),
      viewTree: ui.viewTree?.bind(ui),
    };
    ui.tap = (x, y) => (k.shown ? undefined : real.tap(x, y));
    ui.longPress = (x, y) => (k.shown ? undefined : real.longPress(x, y));
    ui.swipe = (x1, y1, x2, y2, ms) => {
      if (!k.shown) return real.swipe(x1, y1, x2, y2, ms);
      if (y1 - y2 > ui.height / 4) k.dismiss();
    };
    ui.text = (value) => (k.shown ? undefined : real.text(value));
    ui.key = (code) => {
      if (!k.shown) return real.key(code);
      if (code === KEYCODE.MENU) k.dismiss();
    };
    ui.renderPng = () => (k.shown ? k.picture() : real.renderPng());
    ui.dumpHierarchy = () => (k.shown ? dumpUiAutomator(k.tree()) : real.dumpHierarchy());
    if (real.viewTree) {
      const viewTree = real.viewTree;
      ui.viewTree = () => (k.shown ? k.tree() : viewTree());
    }
    return k;
  }

  private dismiss(): void {
    this.shown = false;
    // Tells the UI's listeners that the screen changed (it now draws the phone again).
    this.ui.settingsChanged?.();
  }

  private tree(): UiNodeInfo {
    const { width: w, height: h } = this.ui;
    return node({
      key: 'keyguard',
      className: 'android.widget.FrameLayout',
      resourceId: `${KEYGUARD_PACKAGE}:id/keyguard_root_view`,
      bounds: { left: 0, top: 0, right: w, bottom: h },
      children: [
        node({
          key: 'keyguard-clock',
          className: 'android.widget.TextView',
          resourceId: `${KEYGUARD_PACKAGE}:id/lockscreen_clock_view`,
          text: '12:00',
          bounds: { left: 0, top: Math.round(h * 0.15), right: w, bottom: Math.round(h * 0.3) },
        }),
        node({
          key: 'keyguard-hint',
          className: 'android.widget.TextView',
          resourceId: `${KEYGUARD_PACKAGE}:id/keyguard_indication_text`,
          text: 'Swipe up to open',
          bounds: { left: 0, top: Math.round(h * 0.85), right: w, bottom: Math.round(h * 0.9) },
        }),
      ],
    });
  }

  /** A dark screen, as the keyguard over a black wallpaper. */
  private picture(): Buffer {
    if (!this.png) {
      const image = new PNG({ width: this.ui.width, height: this.ui.height });
      for (let i = 0; i < image.data.length; i += 4) {
        image.data[i] = 16;
        image.data[i + 1] = 20;
        image.data[i + 2] = 28;
        image.data[i + 3] = 255;
      }
      this.png = PNG.sync.write(image);
    }
    return this.png;
  }
}
