import { describe, expect, it } from 'vitest';
import { createPhoneUi, KEYCODE, SETTINGS_ACTIVITIES } from '../../server/devices/virtual/ui/index.js';
import type { LauncherApp, PhoneUi, PhoneUiHost, UiNodeInfo } from '../../server/devices/virtual/ui/types.js';
import { DEVICE } from '../../server/devices/virtual/identity.js';

/** The host side of the interface, kept in memory: apps, logcat lines and settings. */
function makeHost(opts: { apps?: LauncherApp[]; writableSettings?: boolean } = {}) {
  const settings = new Map<string, string>();
  const logs: string[] = [];
  let apps: LauncherApp[] = opts.apps ?? [
    { package: 'com.android.settings', label: 'Settings', activity: 'com.android.settings.Settings' },
    { package: 'com.phonelease.login', label: 'Login', activity: 'com.phonelease.login.LoginActivity' },
    { package: 'com.example.notes', label: 'Notes', activity: 'com.example.notes.MainActivity' },
  ];
  const host: PhoneUiHost = {
    launcherApps: () => apps,
    log: (p, tag, msg) => logs.push(`${p} ${tag}: ${msg}`),
    setting: (ns, key) => settings.get(`${ns}/${key}`) ?? null,
  };
  if (opts.writableSettings !== false)
    host.setSetting = (ns, key, value) => void settings.set(`${ns}/${key}`, value);
  return { host, settings, logs, setApps: (a: LauncherApp[]) => (apps = a) };
}

function makeUi(opts: Parameters<typeof makeHost>[0] = {}) {
  const h = makeHost(opts);
  const ui = createPhoneUi(h.host, {
    width: 720,
    height: 1280,
    density: 320,
    identity: DEVICE,
    now: () => new Date(2025, 0, 6, 9, 41),
  });
  return { ui, ...h };
}

function* nodes(n: UiNodeInfo): Generator<UiNodeInfo> {
  yield n;
  for (const c of n.children) yield* nodes(c);
}

function find(ui: PhoneUi, pred: (n: UiNodeInfo) => boolean): UiNodeInfo | undefined {
  const tree = ui.viewTree?.();
  if (!tree) throw new Error('viewTree missing');
  return [...nodes(tree)].find(pred);
}

function tapNode(ui: PhoneUi, pred: (n: UiNodeInfo) => boolean): void {
  const n = find(ui, pred);
  if (!n) throw new Error('node not on screen');
  ui.tap((n.bounds.left + n.bounds.right) / 2, (n.bounds.top + n.bounds.bottom) / 2);
}

const byId = (id: string) => (n: UiNodeInfo) => n.resourceId === id;
const byText = (text: string) => (n: UiNodeInfo) => n.text === text;

/** The text attribute of the node with resource-id `id` in the uiautomator dump. */
function dumpText(ui: PhoneUi, id: string): string | undefined {
  const m = new RegExp(`<node [^>]*text="([^"]*)" resource-id="${id.replace(/[.]/g, '\\.')}"`).exec(
    ui.dumpHierarchy(),
  );
  return m?.[1];
}

describe('launcher and app launching', () => {
  it('starts on the launcher with one icon per launcher app, in order', () => {
    const { ui } = makeUi();
    expect(ui.foreground()).toEqual({
      package: 'com.android.launcher3',
      activity: 'com.android.launcher3.Launcher',
    });
    const dump = ui.dumpHierarchy();
    const labels = [
      ...dump.matchAll(
        /text="([^"]*)" resource-id="" class="android.widget.TextView" package="com.android.launcher3" content-desc="\1" checkable="false" checked="false" clickable="true"/g,
      ),
    ].map((m) => m[1]);
    expect(labels).toEqual(['Settings', 'Login', 'Notes']);
  });

  it('opens an app from its launcher icon and logs the start', () => {
    const { ui, logs } = makeUi();
    tapNode(ui, (n) => n.contentDesc === 'Login');
    expect(ui.foreground()).toEqual({
      package: 'com.phonelease.login',
      activity: 'com.phonelease.login.LoginActivity',
    });
    expect(
      logs.some(
        (l) =>
          l.startsWith('I ActivityTaskManager: START u0') &&
          l.includes('cmp=com.phonelease.login/.LoginActivity'),
      ),
    ).toBe(true);
  });

  it('launch() returns false for an unknown package and changes nothing', () => {
    const { ui } = makeUi();
    const v = ui.version;
    expect(ui.launch('com.nope.app')).toBe(false);
    expect(ui.version).toBe(v);
    expect(ui.foreground().package).toBe('com.android.launcher3');
  });

  it('refuses an app it cannot run with a dialog that OK and BACK close', () => {
    const { ui, logs } = makeUi();
    const title = "Notes can't run on this virtual phone";
    // From the shell's side: nothing comes to the front, the dialog says why.
    expect(ui.launch('com.example.notes')).toBe(false);
    expect(ui.foreground().package).toBe('com.android.launcher3');
    expect(find(ui, byId('android:id/alertTitle'))?.text).toBe(title);
    expect(find(ui, byId('android:id/message'))?.text).toContain('com.example.notes');
    expect(ui.dumpHierarchy()).toContain(`text="Notes can&apos;t run on this virtual phone"`);
    expect(logs.some((l) => l.includes("com.example.notes can't run on this virtual phone"))).toBe(true);
    // It is modal: a tap beside it reaches nothing under it.
    ui.tap(40, 200);
    expect(find(ui, byId('android:id/alertTitle'))).toBeDefined();
    tapNode(ui, byId('android:id/button1'));
    expect(find(ui, byId('android:id/alertTitle'))).toBeUndefined();
    // From the launcher: a tap on its icon shows the same dialog; BACK closes it.
    tapNode(ui, (n) => n.contentDesc === 'Notes' && n.clickable);
    expect(find(ui, byId('android:id/alertTitle'))?.text).toBe(title);
    expect(ui.foreground().package).toBe('com.android.launcher3');
    ui.key(KEYCODE.BACK);
    expect(find(ui, byId('android:id/alertTitle'))).toBeUndefined();
    expect(ui.foreground().package).toBe('com.android.launcher3');
  });

  it("starting Appium's helper app leaves the screen as it was", () => {
    const { ui, logs } = makeUi();
    ui.launch('com.phonelease.login');
    expect(ui.launch('io.appium.settings', '.Settings')).toBe(true);
    expect(ui.foreground().package).toBe('com.phonelease.login');
    expect(logs.some((l) => l.includes('cmp=io.appium.settings/.Settings'))).toBe(true);
  });

  it('starting an activity already on top does not stack a copy', () => {
    const { ui } = makeUi();
    ui.launch('com.android.settings', 'com.android.settings.Settings$DisplaySettingsActivity');
    ui.launch('com.android.settings', 'com.android.settings.Settings$DisplaySettingsActivity');
    ui.key(KEYCODE.BACK);
    expect(ui.foreground().package).toBe('com.android.launcher3');
    // Another page of a running task opens on top of it and BACK returns to the first.
    ui.launch('com.android.settings');
    ui.launch('com.android.settings', 'com.android.settings.Settings$PowerUsageSummaryActivity');
    expect(find(ui, byText('Battery Saver'))).toBeDefined();
    ui.key(KEYCODE.BACK);
    expect(find(ui, byText('Dark theme'))).toBeDefined();
  });

  it('gives App info of another package a page of its own; the same intent again stacks nothing', () => {
    const { ui } = makeUi();
    const details = 'com.android.settings.applications.InstalledAppDetails';
    const appInfoOf = () =>
      find(ui, (n) => n.text === 'com.android.settings' || n.text === 'com.phonelease.login');
    ui.launch('com.android.settings', details, 'package:com.android.settings');
    expect(appInfoOf()?.text).toBe('com.android.settings');
    // Another package's App info is another intent: a new instance on top, showing that package.
    expect(ui.isOnTop('com.android.settings', details, 'package:com.phonelease.login')).toBe(false);
    ui.launch('com.android.settings', details, 'package:com.phonelease.login');
    expect(appInfoOf()?.text).toBe('com.phonelease.login');
    // The same intent again finds it on top and stacks no copy.
    expect(ui.isOnTop('com.android.settings', details, 'package:com.phonelease.login')).toBe(true);
    ui.launch('com.android.settings', details, 'package:com.phonelease.login');
    ui.key(KEYCODE.BACK);
    expect(appInfoOf()?.text).toBe('com.android.settings');
    ui.key(KEYCODE.BACK);
    expect(ui.foreground().package).toBe('com.android.launcher3');
    // Starting the task's root with the intent that made it resumes the task as it was.
    ui.launch('com.android.settings', details, 'package:com.android.settings');
    expect(appInfoOf()?.text).toBe('com.android.settings');
  });

  it('closes a task without stopping its app with removeTask: what was behind it shows', () => {
    const { ui, logs } = makeUi();
    ui.launch('com.android.settings', 'com.android.settings.Settings$DisplaySettingsActivity');
    ui.launch('com.phonelease.login');
    ui.removeTask('com.android.settings');
    expect(ui.foreground().package).toBe('com.phonelease.login');
    // Settings starts afresh: its Display page went with its task.
    ui.launch('com.android.settings');
    expect(ui.foreground().activity).toBe('com.android.settings.Settings');
    ui.removeTask('com.android.settings');
    expect(ui.foreground().package).toBe('com.phonelease.login');
    // After HOME, the launcher is what is behind an app started from it.
    ui.key(KEYCODE.HOME);
    ui.launch('com.android.settings');
    ui.removeTask('com.android.settings');
    expect(ui.foreground().package).toBe('com.android.launcher3');
    expect(logs.filter((l) => l.includes('Force stopping'))).toEqual([]);
  });

  it('goes back from an app at its root to the app started before it, or home when HOME came between', () => {
    const { ui } = makeUi();
    ui.launch('com.android.settings');
    ui.launch('com.phonelease.login');
    ui.key(KEYCODE.BACK);
    expect(ui.foreground().package).toBe('com.android.settings');
    // The app that went back is behind the launcher now: the next BACK goes home.
    ui.key(KEYCODE.BACK);
    expect(ui.foreground().package).toBe('com.android.launcher3');
    ui.launch('com.android.settings');
    ui.key(KEYCODE.HOME);
    ui.launch('com.phonelease.login');
    ui.key(KEYCODE.BACK);
    expect(ui.foreground().package).toBe('com.android.launcher3');
  });

  it('redraws the launcher when apps are installed or removed', () => {
    const { ui, setApps } = makeUi();
    ui.launch('com.example.notes');
    setApps([
      { package: 'com.android.settings', label: 'Settings', activity: 'com.android.settings.Settings' },
    ]);
    const v = ui.version;
    ui.appsChanged();
    expect(ui.version).toBeGreaterThan(v);
    // The uninstalled app's task is gone with it.
    expect(ui.foreground().package).toBe('com.android.launcher3');
    expect(find(ui, (n) => n.contentDesc === 'Notes')).toBeUndefined();
  });
});

describe('login app', () => {
  function login(ui: PhoneUi, user: string, pass: string): void {
    tapNode(ui, byId('com.phonelease.login:id/username'));
    ui.text(user);
    tapNode(ui, byId('com.phonelease.login:id/password'));
    ui.text(pass);
    tapNode(ui, byId('com.phonelease.login:id/login'));
  }

  it('welcomes demo/secret and logs the attempt without the password', () => {
    const { ui, logs } = makeUi();
    ui.launch('com.phonelease.login');
    login(ui, 'demo', 'secret');
    expect(dumpText(ui, 'com.phonelease.login:id/result')).toBe('Welcome, demo!');
    expect(logs).toContain('I PhoneleaseLogin: login attempt user=demo result=success');
    expect(logs.join('\n')).not.toContain('secret');
  });

  it('refuses wrong credentials and asks for missing ones', () => {
    const { ui } = makeUi();
    ui.launch('com.phonelease.login');
    tapNode(ui, byId('com.phonelease.login:id/login'));
    expect(dumpText(ui, 'com.phonelease.login:id/result')).toBe('Enter username and password');
    login(ui, 'demo', 'wrong');
    expect(dumpText(ui, 'com.phonelease.login:id/result')).toBe('Wrong username or password');
  });

  it('shows the password as dots, flags it, and keeps the real value', () => {
    const { ui } = makeUi();
    ui.launch('com.phonelease.login');
    tapNode(ui, byId('com.phonelease.login:id/password'));
    ui.text('secret');
    const dump = ui.dumpHierarchy();
    expect(dump).toMatch(
      /<node index="\d+" text="\u2022{6}" resource-id="com.phonelease.login:id\/password" class="android.widget.EditText" package="com.phonelease.login" content-desc="password" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="true" scrollable="false" long-clickable="true" password="true"/,
    );
    expect(dump).not.toContain('secret');
  });

  it('ENTER moves from username to password and then submits; DEL deletes', () => {
    const { ui } = makeUi();
    ui.launch('com.phonelease.login');
    tapNode(ui, byId('com.phonelease.login:id/username'));
    ui.text('demox');
    ui.key(KEYCODE.DEL);
    ui.key(KEYCODE.ENTER);
    expect(find(ui, byId('com.phonelease.login:id/password'))?.focused).toBe(true);
    ui.text('secret');
    ui.key(KEYCODE.ENTER);
    expect(dumpText(ui, 'com.phonelease.login:id/username')).toBe('demo');
    expect(dumpText(ui, 'com.phonelease.login:id/result')).toBe('Welcome, demo!');
  });

  it('ignores text when no field has focus', () => {
    const { ui } = makeUi();
    ui.launch('com.phonelease.login');
    const v = ui.version;
    ui.text('hello');
    expect(ui.version).toBe(v);
    expect(dumpText(ui, 'com.phonelease.login:id/username')).toBe('');
  });

  it('forceStop forgets typed text and clearData starts like a fresh install', () => {
    const { ui } = makeUi();
    ui.launch('com.phonelease.login');
    tapNode(ui, byId('com.phonelease.login:id/username'));
    ui.text('demo');
    ui.key(KEYCODE.HOME);
    ui.launch('com.phonelease.login');
    expect(dumpText(ui, 'com.phonelease.login:id/username')).toBe('demo');
    ui.forceStop('com.phonelease.login');
    expect(ui.foreground().package).toBe('com.android.launcher3');
    ui.launch('com.phonelease.login');
    expect(dumpText(ui, 'com.phonelease.login:id/username')).toBe('');
    tapNode(ui, byId('com.phonelease.login:id/username'));
    ui.text('someone');
    ui.clearData('com.phonelease.login');
    ui.launch('com.phonelease.login');
    expect(dumpText(ui, 'com.phonelease.login:id/username')).toBe('');
  });
});

describe('navigation keys', () => {
  it('BACK leaves a Settings page, then the app; HOME always shows the launcher', () => {
    const { ui } = makeUi();
    ui.launch('com.android.settings');
    expect(ui.foreground()).toEqual({
      package: 'com.android.settings',
      activity: 'com.android.settings.Settings',
    });
    tapNode(ui, byText('Network & internet'));
    expect(ui.foreground()).toEqual({
      package: 'com.android.settings',
      activity: 'com.android.settings.SubSettings',
    });
    expect(find(ui, byText('Airplane mode'))).toBeDefined();
    ui.key(KEYCODE.BACK);
    expect(ui.foreground().activity).toBe('com.android.settings.Settings');
    ui.key(KEYCODE.BACK);
    expect(ui.foreground().package).toBe('com.android.launcher3');
    ui.launch('com.android.settings');
    tapNode(ui, byText('Battery'));
    ui.key(KEYCODE.HOME);
    expect(ui.foreground().package).toBe('com.android.launcher3');
    // Reopening resumes the task where it was, like Android.
    ui.launch('com.android.settings');
    expect(find(ui, byText('Battery Saver'))).toBeDefined();
  });

  it('the toolbar up arrow and the navigation bar buttons act like BACK and HOME', () => {
    const { ui } = makeUi();
    ui.launch('com.android.settings');
    tapNode(ui, byText('Battery'));
    tapNode(ui, (n) => n.contentDesc === 'Navigate up');
    expect(ui.foreground().activity).toBe('com.android.settings.Settings');
    // Home button: centre of the navigation bar.
    ui.tap(360, 1280 - 48);
    expect(ui.foreground().package).toBe('com.android.launcher3');
  });

  it('opens a Settings page directly from its activity name', () => {
    const { ui } = makeUi();
    expect(ui.launch('com.android.settings', 'com.android.settings.Settings$MyDeviceInfoActivity')).toBe(
      true,
    );
    expect(ui.foreground().activity).toBe('com.android.settings.Settings$MyDeviceInfoActivity');
    expect(find(ui, byText('Pixel 8'))).toBeDefined();
    expect(find(ui, byText('Android version'))).toBeDefined();
    expect(find(ui, byText('14'))).toBeDefined();
    ui.key(KEYCODE.BACK);
    expect(ui.foreground().package).toBe('com.android.launcher3');
  });
});

describe('settings', () => {
  it('opens a page with a title and rows for every activity it declares', () => {
    for (const { activity } of SETTINGS_ACTIVITIES) {
      const { ui } = makeUi();
      expect(ui.launch('com.android.settings', activity), activity).toBe(true);
      expect(ui.foreground(), activity).toEqual({
        package: 'com.android.settings',
        activity: activity.endsWith('.SubSettings') ? 'com.android.settings.Settings' : activity,
      });
      const title = find(ui, (n) => n.key.endsWith('toolbar/title'));
      expect(title?.text, activity).toBeTruthy();
      expect(
        find(ui, (n) => n.resourceId === 'android:id/title'),
        activity,
      ).toBeDefined();
    }
  });

  it('scrolls the list with a swipe, changing the hierarchy', () => {
    const { ui } = makeUi();
    ui.launch('com.android.settings');
    expect(find(ui, byText('About phone'))).toBeUndefined();
    expect(find(ui, byText('Network & internet'))).toBeDefined();
    const list = find(ui, (n) => n.scrollable);
    expect(list?.className).toBe('androidx.recyclerview.widget.RecyclerView');
    for (let i = 0; i < 5; i++) ui.swipe(360, 1100, 360, 300, 300);
    expect(find(ui, byText('About phone'))).toBeDefined();
    expect(find(ui, byText('Network & internet'))).toBeUndefined();
    ui.swipe(360, 400, 360, 1100, 300);
    ui.swipe(360, 400, 360, 1100, 300);
    ui.swipe(360, 400, 360, 1100, 300);
    ui.swipe(360, 400, 360, 1100, 300);
    ui.swipe(360, 400, 360, 1100, 300);
    expect(find(ui, byText('Network & internet'))).toBeDefined();
  });

  it('lists at least 8 categories, each opening its own page', () => {
    const { ui } = makeUi();
    const titles = [
      'Network & internet',
      'Connected devices',
      'Apps',
      'Notifications',
      'Battery',
      'Storage',
      'Sound & vibration',
      'Display',
    ];
    ui.launch('com.android.settings');
    for (const t of titles) {
      tapNode(ui, byText(t));
      expect(
        find(ui, (n) => n.resourceId === 'com.android.settings:id/toolbar')?.children.some(
          (c) => c.text === t,
        ),
      ).toBe(true);
      ui.key(KEYCODE.BACK);
      ui.swipe(360, 900, 360, 760, 200);
    }
  });

  it('toggles Wi-Fi and airplane mode through host settings', () => {
    const { ui, settings } = makeUi();
    ui.launch('com.android.settings', 'com.android.settings.Settings$NetworkDashboardActivity');
    const wifiSwitch = () =>
      find(ui, (n) => n.className === 'android.widget.Switch' && n.key.includes('row/wifi'));
    expect(wifiSwitch()?.checked).toBe(true);
    tapNode(ui, byText('Wi-Fi'));
    expect(settings.get('global/wifi_on')).toBe('0');
    expect(wifiSwitch()?.checked).toBe(false);
    tapNode(ui, byText('Airplane mode'));
    expect(settings.get('global/airplane_mode_on')).toBe('1');
    // A change made behind the UI's back (settings put) shows after settingsChanged().
    settings.set('global/airplane_mode_on', '0');
    const v = ui.version;
    ui.settingsChanged?.();
    expect(ui.version).toBeGreaterThan(v);
    expect(
      find(ui, (n) => n.className === 'android.widget.Switch' && n.key.includes('row/airplane'))?.checked,
    ).toBe(false);
  });

  it('keeps toggles to itself when the host cannot store settings', () => {
    const { ui, settings } = makeUi({ writableSettings: false });
    ui.launch('com.android.settings', 'com.android.settings.Settings$NetworkDashboardActivity');
    tapNode(ui, byText('Wi-Fi'));
    expect(settings.size).toBe(0);
    expect(
      find(ui, (n) => n.className === 'android.widget.Switch' && n.key.includes('row/wifi'))?.checked,
    ).toBe(false);
  });
});

describe('change notification and state', () => {
  it('fires listeners on every visible change and bumps the version', () => {
    const { ui } = makeUi();
    let calls = 0;
    const off = ui.onChange(() => calls++);
    const v0 = ui.version;
    ui.launch('com.phonelease.login');
    tapNode(ui, byId('com.phonelease.login:id/username'));
    ui.text('a');
    expect(calls).toBe(3);
    expect(ui.version).toBe(v0 + 3);
    off();
    ui.key(KEYCODE.HOME);
    expect(calls).toBe(3);
  });

  it('a tap on nothing clickable changes nothing', () => {
    const { ui } = makeUi();
    const v = ui.version;
    ui.tap(360, 1000);
    expect(ui.version).toBe(v);
  });

  it('saves and restores the screen stack and typed username, never the password', () => {
    const a = makeUi();
    a.ui.launch('com.android.settings');
    a.ui.swipe(360, 1100, 360, 1000, 300);
    a.ui.launch('com.phonelease.login');
    tapNode(a.ui, byId('com.phonelease.login:id/username'));
    a.ui.text('demo');
    tapNode(a.ui, byId('com.phonelease.login:id/password'));
    a.ui.text('secret');
    const saved = JSON.parse(JSON.stringify(a.ui.saveState())) as unknown;
    expect(JSON.stringify(saved)).not.toContain('secret');

    const b = makeUi();
    b.ui.restoreState(saved);
    expect(b.ui.foreground()).toEqual({
      package: 'com.phonelease.login',
      activity: 'com.phonelease.login.LoginActivity',
    });
    expect(dumpText(b.ui, 'com.phonelease.login:id/username')).toBe('demo');
    expect(dumpText(b.ui, 'com.phonelease.login:id/password')).toBe('');
    b.ui.key(KEYCODE.HOME);
    b.ui.launch('com.android.settings');
    const scrolled = find(b.ui, byText('Network & internet'))?.bounds.top;
    const fresh = makeUi();
    fresh.ui.launch('com.android.settings');
    expect(scrolled).toBeLessThan(find(fresh.ui, byText('Network & internet'))?.bounds.top ?? 0);
  });

  it('ignores saved state it does not understand', () => {
    const { ui, logs } = makeUi();
    ui.restoreState({ something: 'else' });
    ui.restoreState(null);
    expect(ui.foreground().package).toBe('com.android.launcher3');
    expect(logs.filter((l) => l.includes('unknown format'))).toHaveLength(2);
  });
});
