/**
 * The phone's settings and the Settings app agree both ways, and settings pages open by
 * their intent actions, as on a device.
 */
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVirtualAdb, type VirtualAdb } from '../support/virtual-adb.js';

let v: VirtualAdb;
beforeAll(async () => {
  v = await startVirtualAdb();
});
afterAll(() => v?.close());

interface Node {
  text: string;
  resourceId: string;
  checked: boolean;
  bounds: [number, number, number, number];
}

async function dump(): Promise<Node[]> {
  const xml = await v.adbOk(['shell', 'uiautomator dump /sdcard/d.xml >/dev/null && cat /sdcard/d.xml']);
  return [...xml.matchAll(/<node\b[^>]*>/g)].map(([tag]) => {
    const attr = (n: string) => new RegExp(`\\b${n}="([^"]*)"`).exec(tag)?.[1] ?? '';
    const [l = 0, t = 0, r = 0, b = 0] = (attr('bounds').match(/\d+/g) ?? []).map(Number);
    return {
      text: attr('text'),
      resourceId: attr('resource-id'),
      checked: attr('checked') === 'true',
      bounds: [l, t, r, b],
    };
  });
}

/** The switch on the same row as a title (the row's switch is the next switch below the title's top). */
async function switchOf(title: string): Promise<Node> {
  const nodes = await dump();
  const label = nodes.find((n) => n.text === title && n.resourceId === 'android:id/title');
  if (!label) throw new Error(`no "${title}" row on screen`);
  const sw = nodes.find(
    (n) =>
      n.resourceId === 'android:id/switch_widget' &&
      n.bounds[1] <= label.bounds[3] &&
      n.bounds[3] >= label.bounds[1],
  );
  if (!sw) throw new Error(`no switch beside "${title}"`);
  return sw;
}

describe('settings', () => {
  it('opens a settings page by its intent action', async () => {
    const out = await v.adbOk(['shell', 'am start -W -a android.settings.WIFI_SETTINGS']);
    expect(out).toContain('Activity: com.android.settings/.Settings$WifiSettingsActivity');
    expect(await v.adbOk(['shell', 'dumpsys window | grep mCurrentFocus | head -1'])).toContain(
      'com.android.settings.Settings$WifiSettingsActivity',
    );
    const unknown = await v.adb(['shell', 'am start -a android.settings.NO_SUCH_PAGE']);
    expect(unknown.stdout + unknown.stderr).toContain('unable to resolve');
  });

  it('opens App info of a package with APPLICATION_DETAILS_SETTINGS and its package: data', async () => {
    const out = await v.adbOk([
      'shell',
      'am start -W -a android.settings.APPLICATION_DETAILS_SETTINGS -d package:com.phonelease.login',
    ]);
    expect(out).toContain('Activity: com.android.settings/.applications.InstalledAppDetails');
    expect(await v.adbOk(['shell', 'dumpsys window | grep mCurrentFocus | head -1'])).toContain(
      'com.android.settings.applications.InstalledAppDetails',
    );
    const texts = (await dump()).map((n) => n.text);
    expect(texts).toContain('App info');
    expect(texts).toContain('com.phonelease.login');
    expect(texts).toContain('Force stop');
    // Its filter needs the package: data; without it nothing resolves.
    const bare = await v.adb(['shell', 'am start -a android.settings.APPLICATION_DETAILS_SETTINGS']);
    expect(bare.stdout + bare.stderr).toContain('unable to resolve');
    // A package the phone does not have: the page starts and finishes at once.
    await v.adbOk(['shell', 'input keyevent HOME']);
    await v.adbOk([
      'shell',
      'am start -a android.settings.APPLICATION_DETAILS_SETTINGS -d package:com.example.none',
    ]);
    expect(await v.adbOk(['shell', 'dumpsys window | grep mCurrentFocus | head -1'])).toContain(
      'com.android.launcher3',
    );
  });

  it("stops an app with App info's Force stop: its process ends and ActivityManager logs it", async () => {
    await v.adbOk(['shell', 'am start -W -n com.phonelease.login/.LoginActivity; logcat -c']);
    expect((await v.adbOk(['shell', 'pidof com.phonelease.login'])).trim()).toMatch(/^\d+$/);
    await v.adbOk([
      'shell',
      'am start -W -a android.settings.APPLICATION_DETAILS_SETTINGS -d package:com.phonelease.login',
    ]);
    const button = (await dump()).find((n) => n.text === 'Force stop');
    if (!button) throw new Error('no Force stop on App info');
    const [l, t, r, b] = button.bounds;
    await v.adbOk(['shell', `input tap ${Math.round((l + r) / 2)} ${Math.round((t + b) / 2)}`]);
    expect((await v.adb(['shell', 'pidof com.phonelease.login'])).code).toBe(1);
    expect(await v.adbOk(['logcat', '-d', '-s', 'ActivityManager'])).toMatch(
      /Force stopping com\.phonelease\.login appid=10120 user=0: from pid \d+/,
    );
    await v.adbOk(['shell', 'input keyevent HOME']);
  });

  it("shows the phone's own build in About phone", async () => {
    await v.adbOk(['shell', 'am start -a android.settings.DEVICE_INFO_SETTINGS']);
    const nodes = await dump();
    const after = (title: string) => nodes[nodes.findIndex((n) => n.text === title) + 1]?.text;
    expect(after('Build number')).toBe((await v.adbOk(['shell', 'getprop ro.build.display.id'])).trim());
    expect(after('Model')).toBe((await v.adbOk(['shell', 'getprop ro.product.model'])).trim());
    expect(after('Android version')).toBe(
      (await v.adbOk(['shell', 'getprop ro.build.version.release'])).trim(),
    );
  });

  it('turns developer options on after seven taps on Build number, counting down in toasts', async () => {
    // The phone starts with developer options on (as ADB needs): they are on again after, whatever happens.
    try {
      await v.adbOk(['shell', 'settings put global development_settings_enabled 0']);
      await v.adbOk(['shell', 'am start -a android.settings.DEVICE_INFO_SETTINGS']);
      const build = (await dump()).find((n) => n.text === 'Build number')!;
      const [l, t, r, b] = build.bounds;
      const tap = () => v.adbOk(['shell', `input tap ${(l + r) / 2} ${(t + b) / 2}`]);
      const screen = async () => PNG.sync.read((await v.adb(['exec-out', 'screencap -p'])).raw);
      const before = await screen();
      for (let i = 0; i < 6; i++) await tap();
      expect(await v.adbOk(['shell', 'settings get global development_settings_enabled'])).toBe('0\n');
      // The countdown's toast is on screen, over the page, above the navigation bar.
      const during = await screen();
      const row = (png: PNG, y: number) => png.data.subarray(y * png.width * 4, (y + 1) * png.width * 4);
      const toastRow = 1280 - 96 - 48 - 40;
      expect(Buffer.compare(row(before, toastRow), row(during, toastRow))).not.toBe(0);
      await tap();
      expect(await v.adbOk(['shell', 'settings get global development_settings_enabled'])).toBe('1\n');
      await v.adbOk(['shell', "am start -n 'com.android.settings/.Settings$SystemDashboardActivity'"]);
      expect((await dump()).map((n) => n.text)).toContain('Developer options');
      // A toast is a window of its own: uiautomator dump shows the app's window only.
      expect((await dump()).map((n) => n.text)).not.toContain('You are now a developer!');
    } finally {
      await v.adb(['shell', 'settings put global development_settings_enabled 1']);
    }
  });

  it('opens an inner-class activity by name: App notifications lists the apps', async () => {
    // What appium-adb's own tests start on a phone (startApp with an inner class).
    const out = await v.adbOk([
      'shell',
      "am start -W -S -n 'com.android.settings/.Settings$NotificationAppListActivity'",
    ]);
    expect(out).toContain('Activity: com.android.settings/.Settings$NotificationAppListActivity');
    expect(await v.adbOk(['shell', 'dumpsys window | grep mCurrentFocus | head -1'])).toContain(
      'com.android.settings.Settings$NotificationAppListActivity',
    );
    const texts = (await dump()).map((n) => n.text);
    expect(texts).toContain('App notifications');
    expect(texts).toContain('Login');
    expect(texts).toContain('All notifications');
  });

  it('a toggle in the Settings app writes the setting', async () => {
    await v.adbOk(['shell', 'am start -W -a android.settings.WIFI_SETTINGS']);
    expect((await v.adbOk(['shell', 'settings get global wifi_on'])).trim()).toBe('1');
    const wifi = await switchOf('Wi-Fi');
    expect(wifi.checked).toBe(true);
    const [l, t, r, b] = wifi.bounds;
    await v.adbOk(['shell', `input tap ${Math.round((l + r) / 2)} ${Math.round((t + b) / 2)}`]);
    expect((await v.adbOk(['shell', 'settings get global wifi_on'])).trim()).toBe('0');
    expect((await switchOf('Wi-Fi')).checked).toBe(false);
    // The Wi-Fi service agrees, and svc turns it back on for the Settings app too.
    expect(await v.adbOk(['shell', 'cmd wifi status'])).toBe('Wifi is disabled\n');
    await v.adbOk(['shell', 'svc wifi enable']);
    expect((await switchOf('Wi-Fi')).checked).toBe(true);
  });

  it('a setting changed over adb shows in the Settings app', async () => {
    await v.adbOk(['shell', 'am start -W -a android.settings.WIFI_SETTINGS']);
    expect((await switchOf('Airplane mode')).checked).toBe(false);
    await v.adbOk(['shell', 'settings put global airplane_mode_on 1']);
    expect((await switchOf('Airplane mode')).checked).toBe(true);
    await v.adbOk(['shell', 'settings put global airplane_mode_on 0']);
    expect((await switchOf('Airplane mode')).checked).toBe(false);
  });
});

describe('airplane mode', () => {
  const shell = (command: string) => v.adbOk(['shell', command]);

  it('turns Wi-Fi off and back on as WifiSettingsStore does, and the Settings app agrees', async () => {
    expect(await shell('settings get global wifi_on')).toBe('1\n');
    // What appium-adb's setAirplaneMode runs on Android 11 and later.
    await shell('cmd connectivity airplane-mode enable');
    expect(await shell('cmd connectivity airplane-mode')).toBe('enabled\n');
    expect(await shell('settings get global airplane_mode_on')).toBe('1\n');
    // Wi-Fi that was on is off for airplane mode (3), and says so.
    expect(await shell('settings get global wifi_on')).toBe('3\n');
    expect(await shell('cmd wifi status')).toBe('Wifi is disabled\n');
    await shell('am start -W -a android.settings.WIFI_SETTINGS');
    expect((await switchOf('Wi-Fi')).checked).toBe(false);
    expect((await switchOf('Airplane mode')).checked).toBe(true);
    // Turned on in airplane mode it is 2, and stays on when airplane mode goes.
    await shell('svc wifi enable');
    expect(await shell('settings get global wifi_on')).toBe('2\n');
    expect((await switchOf('Wi-Fi')).checked).toBe(true);
    await shell('cmd connectivity airplane-mode disable');
    expect(await shell('settings get global wifi_on')).toBe('1\n');
    // Off for airplane mode, it comes back on when airplane mode goes.
    await shell('cmd connectivity airplane-mode enable');
    await shell('cmd connectivity airplane-mode disable');
    expect(await shell('settings get global wifi_on')).toBe('1\n');
    expect(await shell('cmd wifi status')).toBe('Wifi is enabled\n');
    // The Settings app's airplane toggle is the same switch.
    const [l, t, r, b] = (await switchOf('Airplane mode')).bounds;
    await shell(`input tap ${Math.round((l + r) / 2)} ${Math.round((t + b) / 2)}`);
    expect(await shell('settings get global wifi_on')).toBe('3\n');
    expect((await switchOf('Wi-Fi')).checked).toBe(false);
    await shell('cmd connectivity airplane-mode disable');
    // A bare settings put sends no broadcast: the radios stay as they are.
    await shell('settings put global airplane_mode_on 1');
    expect(await shell('settings get global wifi_on')).toBe('1\n');
    expect(await shell('cmd connectivity airplane-mode')).toBe('enabled\n');
    await shell('settings put global airplane_mode_on 0');
    await shell('input keyevent HOME');
  });
});

describe('location', () => {
  const shell = (command: string) => v.adbOk(['shell', command]);

  it('is one switch: cmd location, settings location_mode and the Settings app agree', async () => {
    expect(await shell('cmd location is-location-enabled')).toBe('true\n');
    // What appium-adb's toggleGPSLocationProvider runs turns the mode off, and the providers.
    await shell('cmd location set-location-enabled false');
    expect(await shell('settings get secure location_mode')).toBe('0\n');
    expect(await shell('settings get secure location_providers_allowed')).toBe('\n');
    await shell('am start -W -a android.settings.LOCATION_SOURCE_SETTINGS');
    expect((await switchOf('Use location')).checked).toBe(false);
    // The settings idiom turns it on again for the location service.
    await shell('settings put secure location_mode 3');
    expect(await shell('cmd location is-location-enabled')).toBe('true\n');
    expect(await shell('settings get secure location_providers_allowed')).toBe('gps,network\n');
    expect((await switchOf('Use location')).checked).toBe(true);
    expect(await shell('dumpsys location')).toContain('Location Enabled: true');
    await shell('settings put secure location_mode 0');
    expect(await shell('cmd location is-location-enabled')).toBe('false\n');
    await shell('cmd location set-location-enabled true');
    expect(await shell('settings get secure location_mode')).toBe('3\n');
    await shell('input keyevent HOME');
  });
});

describe('user_rotation', () => {
  const shell = (command: string) => v.adbOk(['shell', command]);

  it('turns the display by user_rotation 0 to 3, and refuses other values as SettingsProvider does', async () => {
    await shell('am start -W -n com.phonelease.login/.LoginActivity');
    try {
      // A rotation the window manager honours turns the app's display.
      await shell('settings put system user_rotation 1');
      expect(await shell('dumpsys window displays')).toContain('mRotation=1 ');
      for (const value of ['7', '4', '-1', 'sideways', '1.0', '0x1']) {
        // SystemSettingsValidators: USER_ROTATION is an integer from 0 to 3 (the value was
        // stored, and read back, as any text).
        const r = await v.adb(['shell', `settings put system user_rotation ${value}`]);
        expect(r, value).toMatchObject({
          code: 255,
          stderr: `\nException occurred while executing 'put':\njava.lang.IllegalArgumentException: Invalid value: ${value} for setting: user_rotation\n`,
        });
        expect(await shell('settings get system user_rotation'), value).toBe('1\n');
        expect(await shell('dumpsys window displays'), value).toContain('mRotation=1 ');
      }
      expect((await v.adb(['shell', 'settings put system accelerometer_rotation yes'])).code).toBe(255);
      expect((await v.adb(['shell', 'settings put system screen_off_timeout -5'])).code).toBe(255);
      // content's insert meets the same validation, and reports it as content does.
      const insert = await v.adb([
        'shell',
        'content insert --uri content://settings/system --bind name:s:user_rotation --bind value:s:9',
      ]);
      expect(insert).toMatchObject({ code: 0 });
      expect(insert.stderr).toContain(
        'java.lang.IllegalArgumentException: Invalid value: 9 for setting: user_rotation',
      );
      expect(await shell('settings get system user_rotation')).toBe('1\n');
      // Settings without a validator store any text.
      await shell('settings put system phonelease_any_text sideways');
      expect(await shell('settings get system phonelease_any_text')).toBe('sideways\n');
    } finally {
      await shell('settings put system user_rotation 0; input keyevent HOME');
    }
  });

  it("keeps the natural size in dumpsys display's base info, the rotation in its override", async () => {
    await shell('am start -W -n com.phonelease.login/.LoginActivity');
    try {
      await shell('settings put system user_rotation 1');
      const display = await shell('dumpsys display');
      const base = /mBaseDisplayInfo=(.*)/.exec(display)?.[1] ?? '';
      const override = /mOverrideDisplayInfo=(.*)/.exec(display)?.[1] ?? '';
      expect(base).toMatch(/, real 720 x 1280, largest app 720 x 1280, smallest app 720 x 1280,/);
      expect(base).toMatch(/, rotation 0, density 320 \(/);
      expect(override).toMatch(/, real 1280 x 720, /);
      expect(override).toMatch(/, rotation 1, density 320 \(/);
      expect(display).toContain('orientation=1, logicalFrame=Rect(0, 0 - 1280, 720)');
      // wm density is the window manager's: the override has it, the base keeps the panel's.
      await shell('wm density 480');
      const dense = await shell('dumpsys display');
      expect(/mBaseDisplayInfo=.*, density 320 \(/.test(dense)).toBe(true);
      expect(/mOverrideDisplayInfo=.*, density 480 \(/.test(dense)).toBe(true);
    } finally {
      await shell('wm density reset; settings put system user_rotation 0; input keyevent HOME');
    }
  });
});
