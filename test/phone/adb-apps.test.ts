/**
 * Apps and screen through adb: am/monkey, dumpsys (window, power, activity, deviceidle),
 * input, screencap, uiautomator dump and the app events logcat shows.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { connect } from 'node:net';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApk } from '../support/apk-builder.js';
import { freePort } from '../../src/util/ports.js';
import { ADB } from '../support/adb.js';
import { startVirtualAdb } from '../support/virtual-adb.js';
import type { VirtualAdb } from '../support/virtual-adb.js';

const APPIUM = 'node_modules/appium-uiautomator2-driver/node_modules';
const SETTINGS_APK = `${APPIUM}/io.appium.settings/apks/settings_apk-debug.apk`;
const SERVER_APK = `${APPIUM}/appium-uiautomator2-server/apks/appium-uiautomator2-server-v10.6.6.apk`;
const TEST_APK = `${APPIUM}/appium-uiautomator2-server/apks/appium-uiautomator2-server-debug-androidTest.apk`;
const UIA2_INSTRUMENT =
  'am instrument -w -e disableAnalytics true io.appium.uiautomator2.server.test/androidx.test.runner.AndroidJUnitRunner';

/** GET through a local port; resolves with status and body, or null when refused/closed. */
function httpGet(port: number, path: string): Promise<{ status: number; body: string } | null> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve(null));
    });
    req.on('error', () => resolve(null));
    req.end();
  });
}

async function waitFor<T>(probe: () => Promise<T | null>, attempts = 100): Promise<T | null> {
  for (let i = 0; i < attempts; i++) {
    const r = await probe();
    if (r !== null) return r;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return null;
}

let v: VirtualAdb;

beforeAll(async () => {
  v = await startVirtualAdb();
});

afterAll(async () => {
  await v?.close();
});

async function focus(): Promise<{ current: string; app: string }> {
  const out = await v.adbOk(['shell', 'dumpsys', 'window', 'displays']);
  return {
    current: /^\s*mCurrentFocus=Window\{\S+ u0 (\S+)\}$/m.exec(out)?.[1] ?? '',
    app: /^\s*mFocusedApp=ActivityRecord\{\S+ u0 (\S+) t\d+\}$/m.exec(out)?.[1] ?? '',
  };
}

/**
 * The centre of the node whose resource id ends in `resourceIdSuffix`, or with `{ desc }`,
 * whose content-desc is `desc`.
 */
function boundsOf(xml: string, resourceIdSuffix: string | { desc: string }): { x: number; y: number } {
  const attribute =
    typeof resourceIdSuffix === 'string'
      ? `resource-id="[^"]*${resourceIdSuffix}"`
      : `content-desc="${resourceIdSuffix.desc}"`;
  const node = new RegExp(`<node [^>]*${attribute}[^>]*bounds="\\[(\\d+),(\\d+)\\]\\[(\\d+),(\\d+)\\]"`).exec(
    xml,
  );
  if (!node) throw new Error(`no node ${JSON.stringify(resourceIdSuffix)} in ${xml.slice(0, 400)}`);
  const [x1, y1, x2, y2] = node.slice(1, 5).map(Number) as [number, number, number, number];
  return { x: Math.round((x1 + x2) / 2), y: Math.round((y1 + y2) / 2) };
}

describe('starting and stopping apps', () => {
  it('starts an activity with am start -W and reports the focus in dumpsys window', async () => {
    const out = await v.adbOk(['shell', 'am', 'start', '-W', '-n', 'com.android.settings/.Settings']);
    expect(out).toMatch(
      /^Starting: Intent \{ cmp=com\.android\.settings\/\.Settings \}\nStatus: ok\nLaunchState: COLD\nActivity: com\.android\.settings\/\.Settings\nTotalTime: \d+\nWaitTime: \d+\nComplete\n$/,
    );
    expect(await focus()).toEqual({
      current: 'com.android.settings/com.android.settings.Settings',
      app: 'com.android.settings/.Settings',
    });
    expect((await v.adbOk(['shell', 'pidof', 'com.android.settings'])).trim()).toMatch(/^\d+$/);
  });

  it('reports unknown activities like Android', async () => {
    // Without -W the result goes to stderr (ActivityManagerShellCommand's getErrPrintWriter),
    // and the status is 0 all the same.
    expect(await v.adb(['shell', 'am start -n com.android.settings/.Nope'])).toMatchObject({
      code: 0,
      stdout: 'Starting: Intent { cmp=com.android.settings/.Nope }\n',
      stderr:
        'Error type 3\nError: Activity class {com.android.settings/com.android.settings.Nope} does not exist.\n',
    });
  });

  it('starts launcher intents with start-activity and monkey, and force-stops', async () => {
    await v.adbOk([
      'shell',
      'am start-activity -a android.intent.action.MAIN -c android.intent.category.LAUNCHER -f 0x10200000 -n com.phonelease.login/.LoginActivity',
    ]);
    expect((await focus()).app).toBe('com.phonelease.login/.LoginActivity');
    await v.adbOk(['shell', 'am force-stop com.phonelease.login']);
    expect((await focus()).app).not.toBe('com.phonelease.login/.LoginActivity');
    expect((await v.adb(['shell', 'pidof com.phonelease.login'])).code).toBe(1);
    const monkey = await v.adbOk([
      'shell',
      'monkey -p com.android.settings -c android.intent.category.LAUNCHER 1',
    ]);
    expect(monkey).toContain('Events injected: 1');
    expect((await focus()).app).toBe('com.android.settings/.Settings');
    const missing = await v.adb(['shell', 'monkey -p no.such.app -c android.intent.category.LAUNCHER 1']);
    expect(missing.stdout).toContain('** No activities found to run, monkey aborted.');
  });

  it('refuses to start an installed app it cannot run, and says why', async () => {
    const apk = buildTestApk({
      package: 'com.example.hello',
      label: 'Hello',
      activities: ['.Main'],
      launcher: true,
    });
    const r = await v.adb(['shell', `pm install -S ${apk.length}`], { input: apk });
    expect(r.stdout).toBe('Success\n');
    // It installs, lists and shows on the launcher like any app...
    expect(await v.adbOk(['shell', 'pm list packages -3'])).toContain('package:com.example.hello');
    await v.adbOk(['shell', 'input keyevent KEYCODE_HOME']);
    expect(await v.adbOk(['exec-out', 'uiautomator dump /dev/tty'])).toContain('content-desc="Hello"');
    // ...but starting it fails, with the reason, as am's errors do.
    const started = await v.adb(['shell', 'am start -W -n com.example.hello/.Main']);
    expect(started.code).not.toBe(0);
    expect(started.stdout).toContain('Starting: Intent { cmp=com.example.hello/.Main }');
    expect(started.stderr).toMatch(
      /^Error: Activity not started, com\.example\.hello can't run on this virtual phone: .*emulator/m,
    );
    expect((await focus()).app).toBe('com.android.launcher3/.Launcher');
    expect(await v.adbOk(['shell', 'pidof com.example.hello']).catch(() => '')).toBe('');
    // The screen says it too, until the dialog is closed.
    const dump = await v.adbOk(['exec-out', 'uiautomator dump /dev/tty']);
    expect(dump).toContain('text="Hello can&apos;t run on this virtual phone"');
    await v.adbOk(['shell', 'input keyevent KEYCODE_BACK']);
    expect(await v.adbOk(['exec-out', 'uiautomator dump /dev/tty'])).not.toContain('alertTitle');
    // monkey (what phone.launch() and appium-adb use) and the start-activity spelling alike.
    const monkey = await v.adb([
      'shell',
      'monkey -p com.example.hello -c android.intent.category.LAUNCHER 1',
    ]);
    expect(monkey.code).not.toBe(0);
    expect(monkey.stderr).toContain("** Error: com.example.hello can't run on this virtual phone");
    const activity = await v.adb([
      'shell',
      'am start-activity -a android.intent.action.MAIN -c android.intent.category.LAUNCHER -n com.example.hello/.Main',
    ]);
    expect(activity.code).not.toBe(0);
    await v.adbOk(['shell', 'input keyevent KEYCODE_BACK']);
  });

  it('opens App info of each package asked for: another package is a new page over the first', async () => {
    const appInfo = 'am start -a android.settings.APPLICATION_DETAILS_SETTINGS -d package:';
    const packages = ['com.android.chrome', 'com.phonelease.login'];
    /** Which of the two packages the screen's App info shows. */
    const shown = async () => {
      const xml = await v.adbOk(['exec-out', 'uiautomator dump /dev/tty']);
      return packages.filter((p) => xml.includes(`text="${p}"`));
    };
    await v.adbOk(['shell', `${appInfo}com.android.chrome`]);
    expect(await shown()).toEqual(['com.android.chrome']);
    // The same activity with other data is another intent: am starts it without a warning.
    const other = await v.adb(['shell', `${appInfo}com.phonelease.login`]);
    expect(other.stdout + other.stderr).toBe(
      'Starting: Intent { act=android.settings.APPLICATION_DETAILS_SETTINGS dat=package: }\n',
    );
    expect(await shown()).toEqual(['com.phonelease.login']);
    // The same intent again goes to the page on top.
    const same = await v.adb(['shell', `${appInfo}com.phonelease.login`]);
    expect(same.stdout + same.stderr).toContain(
      'Warning: Activity not started, intent has been delivered to currently running top-most instance.\n',
    );
    expect(await shown()).toEqual(['com.phonelease.login']);
    await v.adbOk(['shell', 'input keyevent KEYCODE_BACK']);
    expect(await shown()).toEqual(['com.android.chrome']);
    await v.adbOk(['shell', 'input keyevent KEYCODE_HOME']);
  });

  it('resolves an intent only to a filter that takes its data, and says so as Android does', async () => {
    // Settings' filter for its action names no data scheme: it takes no intent with data.
    const withData = await v.adb(['shell', 'am start -a android.settings.SETTINGS -d package:foo']);
    expect(withData.stdout + withData.stderr).toBe(
      'Starting: Intent { act=android.settings.SETTINGS dat=package: }\n' +
        'Error: Activity not started, unable to resolve Intent { act=android.settings.SETTINGS dat=package: flg=0x10000000 }\n',
    );
    // Chrome's VIEW filter takes web schemes only.
    const view = await v.adb(['shell', 'am start -a android.intent.action.VIEW -d foo:bar']);
    expect(view.stdout + view.stderr).toContain(
      'Error: Activity not started, unable to resolve Intent { act=android.intent.action.VIEW dat=foo: flg=0x10000000 }\n',
    );
    // An intent's data is printed as Uri.toSafeString gives it: no path, query or number.
    const web = await v.adb([
      'shell',
      "am start -a android.intent.action.EDIT -d 'https://example.com:8443/a/b?token=s3cret'",
    ]);
    expect(web.stdout + web.stderr).toBe(
      'Starting: Intent { act=android.intent.action.EDIT dat=https://example.com:8443/... }\n' +
        'Error: Activity not started, unable to resolve Intent { act=android.intent.action.EDIT dat=https://example.com:8443/... flg=0x10000000 }\n',
    );
    const dial = await v.adb(['shell', 'am start -a android.intent.action.EDIT -d tel:+1-555-0100']);
    expect(dial.stdout.split('\n')[0]).toBe(
      'Starting: Intent { act=android.intent.action.EDIT dat=tel:xx-xxx-xxxx }',
    );
    expect((await focus()).app).toBe('com.android.launcher3/.Launcher');
    // Without data the action resolves.
    expect(await v.adbOk(['shell', 'am start -W -a android.settings.SETTINGS'])).toContain(
      'Activity: com.android.settings/.Settings\n',
    );
    await v.adbOk(['shell', 'input keyevent KEYCODE_HOME']);
  });

  it('finishes App info of a package the phone does not have, and Settings’ task with it', async () => {
    await v.adbOk(['shell', 'am start -W -a android.settings.WIFI_SETTINGS']);
    await v.adbOk(['shell', 'am start -W -n com.phonelease.login/.LoginActivity']);
    const out = await v.adb([
      'shell',
      'am start -a android.settings.APPLICATION_DETAILS_SETTINGS -d package:com.example.none',
    ]);
    expect(out.stdout + out.stderr).toBe(
      'Starting: Intent { act=android.settings.APPLICATION_DETAILS_SETTINGS dat=package: }\n',
    );
    // The page finished at once: the app that was in front is again.
    expect(await focus()).toEqual({
      current: 'com.phonelease.login/com.phonelease.login.LoginActivity',
      app: 'com.phonelease.login/.LoginActivity',
    });
    const log = await v.adbOk(['logcat', '-d', '-v', 'brief']);
    expect(log).toMatch(
      /^W\/AppInfoDashboard\(\s*\d+\): Package info not available\. Is this package already uninstalled\?$/m,
    );
    // It ended with finishAndRemoveTask(): Settings' task (its Wi-Fi page) went with it.
    await v.adbOk(['shell', 'monkey -p com.android.settings -c android.intent.category.LAUNCHER 1']);
    expect((await focus()).app).toBe('com.android.settings/.Settings');
    await v.adbOk(['shell', 'input keyevent KEYCODE_HOME; am force-stop com.phonelease.login']);
  });
});

describe('what Appium checks before a session', () => {
  it('shows no lock screen and an awake phone', async () => {
    const window = await v.adbOk(['shell', 'dumpsys', 'window']);
    expect(window).not.toMatch(
      /mShowingLockscreen=true|mDreamingLockscreen=true|screenState=SCREEN_STATE_OFF/,
    );
    expect(window).not.toMatch(/mCurrentFocus.+Keyguard/);
    expect(window).toContain('mScreenOnFully=true');
    expect(window).toMatch(/KeyguardStateMonitor\n\s+mIsShowing=false/);
    const power = await v.adbOk(['shell', 'dumpsys', 'power']);
    expect(power).toMatch(/^\s*mWakefulness=Awake$/m);
    expect(power).not.toMatch(/Dozing/);
  });

  it('starts the Appium Settings service in the foreground like the real app', async () => {
    await v.adbOk(['install', '-g', SETTINGS_APK]);
    expect(await v.adbOk(['shell', 'dumpsys activity services io.appium.settings'])).toBe(
      'ACTIVITY MANAGER SERVICES (dumpsys activity services)\n  (nothing)\n',
    );
    const before = await focus();
    await v.adbOk([
      'shell',
      'am start-activity -n io.appium.settings/.Settings -a android.intent.action.MAIN -c android.intent.category.LAUNCHER',
    ]);
    const services = await v.adbOk(['shell', 'dumpsys activity services io.appium.settings']);
    expect(services).toContain('ServiceRecord{');
    expect(services).toContain('io.appium.settings/.ForegroundService');
    expect(services).toContain('isForeground=true');
    // The settings activity is transparent and finishes at once.
    expect(await focus()).toEqual(before);
    const recorder = 'dumpsys activity services io.appium.settings/.recorder.RecorderService';
    expect(await v.adbOk(['shell', recorder])).toContain('(nothing)');
    // Its media projection recording (mobile: startMediaProjectionRecording) does not start,
    // and logcat, where Appium's error points, says why.
    const notModeled = /E AppiumSettings: Media projection recording is not modeled by the virtual phone/;
    expect(await v.adbOk(['logcat', '-d'])).not.toMatch(notModeled);
    await v.adbOk([
      'shell',
      'am start -n io.appium.settings/io.appium.settings.Settings -a io.appium.settings.recording.ACTION_START',
    ]);
    expect(await v.adbOk(['logcat', '-d'])).toMatch(notModeled);
    expect(await v.adbOk(['shell', recorder])).toContain('(nothing)');
    expect(await focus()).toEqual(before);
  });

  it("lists the debuggable apps' processes on adb jdwp, as a user build's adbd does", async () => {
    await v.adbOk(['install', '-g', SETTINGS_APK]);
    const pidOf = async (pkg: string) => (await v.adbOk(['shell', `pidof ${pkg}`])).trim();
    const jdwp = async () => (await v.adbOk(['jdwp'])).split('\n').filter(Boolean);
    await v.adbOk(['shell', 'am force-stop io.appium.settings']);
    await v.adbOk(['shell', 'am start -W -n com.android.settings/.Settings']);
    const system = await pidOf('com.android.settings');
    expect(system).toMatch(/^\d+$/);
    // Settings runs, but a user build's system apps are not debuggable; the closed stream
    // ("error: closed") said nothing at all.
    expect(await jdwp()).not.toContain(system);
    await v.adbOk(['shell', 'am start-activity -n io.appium.settings/.Settings']);
    const debuggable = await pidOf('io.appium.settings');
    expect(debuggable).toMatch(/^\d+$/);
    expect(await jdwp()).toContain(debuggable);
    await v.adbOk(['shell', 'am force-stop io.appium.settings']);
    expect(await jdwp()).not.toContain(debuggable);
  });

  it('tracks the debuggable processes on track-jdwp: the list now, and again at each change', async () => {
    await v.adbOk(['install', '-g', SETTINGS_APK]);
    await v.adbOk(['shell', 'am force-stop io.appium.settings']);
    const child = spawn(ADB, ['-P', String(v.adbServerPort), '-s', v.serial, 'track-jdwp']);
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    try {
      // Each message is the pid list with adb's 4-hex-digit length before it.
      await expect.poll(() => out, { timeout: 10_000 }).toBe('0000');
      await v.adbOk(['shell', 'am start-activity -n io.appium.settings/.Settings']);
      const pid = (await v.adbOk(['shell', 'pidof io.appium.settings'])).trim();
      const listed = `${pid}\n`;
      const message = `${listed.length.toString(16).padStart(4, '0')}${listed}`;
      await expect.poll(() => out, { timeout: 10_000 }).toBe(`0000${message}`);
      await v.adbOk(['shell', 'am force-stop io.appium.settings']);
      await expect.poll(() => out, { timeout: 10_000 }).toBe(`0000${message}0000`);
    } finally {
      child.kill();
    }
  });

  it('keeps app standby as AppStandbyController does: set-inactive, standby buckets, the whitelist', async () => {
    await v.adbOk(['install', '-g', SETTINGS_APK]);
    const out = (command: string) => v.adbOk(['shell', command]);
    const pkg = 'io.appium.settings';
    const state = async () => [
      await out(`am get-standby-bucket ${pkg}`),
      await out(`am get-inactive ${pkg}`),
    ];
    expect(await state()).toEqual(['10\n', 'Idle=false\n']);
    expect(await out(`am set-inactive ${pkg} true`)).toBe('');
    expect(await state()).toEqual(['40\n', 'Idle=true\n']);
    await out(`am set-standby-bucket ${pkg} frequent`);
    expect(await state()).toEqual(['30\n', 'Idle=false\n']);
    await out(`am set-standby-bucket --user 0 ${pkg} restricted`);
    expect(await state()).toEqual(['45\n', 'Idle=true\n']);
    // The idle whitelist exempts an app from standby.
    await out(`dumpsys deviceidle whitelist +${pkg}`);
    expect(await out(`am get-inactive ${pkg}`)).toBe('Idle=false\n');
    await out(`dumpsys deviceidle whitelist -${pkg}`);
    await out(`am set-inactive ${pkg} false`);
    expect(await state()).toEqual(['10\n', 'Idle=false\n']);
    // System apps are exempted; the list names every package.
    const all = await out('am get-standby-bucket');
    expect(all).toContain(`\n${pkg}: 10\n`);
    expect(all).toMatch(/^com\.android\.settings: 5$/m);
    expect(await v.adb(['shell', `am set-standby-bucket ${pkg} sometimes`])).toMatchObject({
      code: 255,
      stderr:
        "\nException occurred while executing 'set-standby-bucket':\njava.lang.IllegalArgumentException: Cannot set the standby bucket to -1\n",
    });
    expect(await v.adb(['shell', 'am set-standby-bucket com.example.nope rare'])).toMatchObject({
      code: 255,
      stderr: expect.stringContaining(
        'Cannot set standby bucket for non existent package (com.example.nope)',
      ),
    });
    expect(await state()).toEqual(['10\n', 'Idle=false\n']);
  });

  it('resolves and queries intents with pm as the activity manager starts them', async () => {
    const out = (command: string) => v.adbOk(['shell', command]);
    // A link resolves to Chrome (it said "No activity found": only package names were read).
    expect(
      await out(
        'cmd package resolve-activity --brief -a android.intent.action.VIEW -d https://example.com/a?b=c',
      ),
    ).toBe(
      'priority=0 preferredOrder=0 match=0x208000 specificIndex=-1 isDefault=true\ncom.android.chrome/com.google.android.apps.chrome.Main\n',
    );
    // A package alone is its launcher activity, as appium-adb asks for it.
    expect(await out('cmd package resolve-activity --brief com.phonelease.login')).toBe(
      'priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=true\ncom.phonelease.login/.LoginActivity\n',
    );
    expect(await out('pm resolve-activity --brief -n com.phonelease.login/.Nope')).toBe(
      'No activity found\n',
    );
    const launchers = await out(
      'cmd package query-activities --components -a android.intent.action.MAIN -c android.intent.category.LAUNCHER',
    );
    expect(launchers.split('\n')).toEqual(
      expect.arrayContaining(['com.android.settings/.Settings', 'com.phonelease.login/.LoginActivity']),
    );
    expect(
      await out('pm query-activities --brief -a android.intent.action.VIEW -d https://example.com'),
    ).toBe(
      '1 activities found:\n  Activity #0:\n    priority=0 preferredOrder=0 match=0x208000 specificIndex=-1 isDefault=true\n    com.android.chrome/com.google.android.apps.chrome.Main\n',
    );
    expect(await out('pm query-activities -a com.example.NOTHING')).toBe('No activities found\n');
    // No APEX modules are modeled: --apex-only listed every package.
    expect(await out('pm list packages --apex-only')).toBe('');
    expect(await out('pm list packages --factory-only')).toContain('package:com.android.settings\n');
  });

  it('sends trim-memory to a running process, and refuses an unknown level or process', async () => {
    await v.adbOk(['shell', 'am start -W -n com.android.settings/.Settings']);
    expect(await v.adb(['shell', 'am send-trim-memory com.android.settings RUNNING_LOW'])).toMatchObject({
      code: 0,
      stdout: '',
      stderr: '',
    });
    expect(await v.adb(['shell', 'am send-trim-memory com.android.settings SOMETIMES'])).toMatchObject({
      code: 255,
      stderr: 'Error: Unknown level option: SOMETIMES\n',
    });
    await v.adbOk(['shell', 'am force-stop com.android.settings']);
    expect(await v.adb(['shell', 'am send-trim-memory com.android.settings RUNNING_LOW'])).toMatchObject({
      code: 255,
      stderr:
        "\nException occurred while executing 'send-trim-memory':\njava.lang.IllegalArgumentException: Unknown process: com.android.settings\n",
    });
  });

  it("says which of Android 14's am, pm and services it does not model; an unknown command is unknown", async () => {
    const sh = (command: string) => v.adb(['shell', command]);
    for (const [command, stderr] of [
      [
        'am set-debug-app -w io.appium.settings',
        'am: set-debug-app -w: waiting for a debugger is not modeled by the virtual phone\n',
      ],
      [
        'am dumpheap com.android.settings /data/local/tmp/h',
        'am: dumpheap: not modeled by the virtual phone\n',
      ],
      ['am task lock 1', 'am: task lock: not modeled by the virtual phone\n'],
      ['pm hide com.phonelease.login', 'pm: hide: not modeled by the virtual phone\n'],
      ['pm reset-permissions', 'pm: reset-permissions: not modeled by the virtual phone\n'],
      ['am frobnicate', 'Unknown command: frobnicate\n'],
      ['pm frobnicate', 'Unknown command: frobnicate\n'],
    ] as const)
      expect(await sh(command), command).toMatchObject({ code: 255, stdout: '', stderr });
    // Services every phone has say they are not modeled, not that they do not exist.
    expect((await sh('dumpsys jobscheduler')).stdout + (await sh('dumpsys jobscheduler')).stderr).toContain(
      "the virtual phone does not model 'dumpsys jobscheduler'",
    );
    expect(await sh('cmd jobscheduler run -f io.appium.settings 1')).toMatchObject({ code: 255 });
    expect((await sh('dumpsys accessibility')).stderr).toContain("does not model 'dumpsys accessibility'");
    for (const service of ['procstats', 'gfxinfo', 'diskstats', 'webviewupdate', 'overlay'])
      expect((await sh(`dumpsys ${service}`)).stderr).toBe(
        `dumpsys: the virtual phone does not model 'dumpsys ${service}'\n`,
      );
    // Published with its interface, as Android 14's service manager lists it ("Can't find
    // service: procstats" said a phone had none).
    expect((await sh('service list')).stdout).toMatch(
      /^\d+\tprocstats: \[com\.android\.internal\.app\.procstats\.IProcessStats\]$/m,
    );
    expect(await sh('cmd overlay enable com.android.internal.systemui.navbar.gestural')).toMatchObject({
      code: 255,
    });
    // SurfaceFlinger's --latency is the vsync period; a layer's frame times are not kept.
    expect(await sh('dumpsys SurfaceFlinger --latency')).toMatchObject({ code: 0, stdout: '16666666\n' });
    expect(await sh("dumpsys SurfaceFlinger --latency 'SurfaceView[com.phonelease.login]'")).toMatchObject({
      code: 1,
      stdout: '16666666\n',
      stderr:
        "dumpsys: the virtual phone does not keep frame times of layer 'SurfaceView[com.phonelease.login]'\n",
    });
    expect(await sh('dumpsys SurfaceFlinger --latency-clear')).toMatchObject({ code: 0, stdout: '' });
    expect((await sh('dumpsys SurfaceFlinger --list')).code).toBe(1);
    // uiautomator events ended at once with status 0, as if no event had happened.
    expect(await sh('uiautomator events')).toMatchObject({
      code: 1,
      stderr: 'uiautomator events: following accessibility events is not modeled by the virtual phone\n',
    });
    expect((await sh('uiautomator runtest Tests.jar')).stderr).toMatch(
      /^uiautomator runtest: .* not modeled/,
    );
    // A section of ActivityManagerService's dump it does not keep says so (the whole dump
    // stood in for it).
    expect(await sh('dumpsys activity exit-info com.phonelease.login')).toMatchObject({
      code: 1,
      stdout: '',
      stderr: "dumpsys: the virtual phone does not model 'activity exit-info'\n",
    });
    // has-feature answers from the phone's features, with its status.
    expect(await sh('pm has-feature android.hardware.wifi')).toMatchObject({ code: 0, stdout: 'true\n' });
    expect(await sh('pm has-feature android.hardware.nfc')).toMatchObject({ code: 1, stdout: 'false\n' });
    // A versionless feature is there at version 0 only, as hasSystemFeature(name, version) reads it.
    expect(await sh('pm has-feature android.hardware.wifi 1')).toMatchObject({ code: 1, stdout: 'false\n' });
    expect(await sh('pm has-feature android.hardware.wifi x')).toMatchObject({
      code: 1,
      stderr: 'Error: illegal version number x\n',
    });
    // list features as runListFeatures prints them: the GL ES version first, then by name.
    const features = (await sh('pm list features')).stdout.trim().split('\n');
    expect(features[0]).toBe('feature:reqGlEsVersion=0x30002');
    const names = features.slice(1);
    expect(names).toEqual([...names].sort());
    expect(names).toContain('feature:android.hardware.touchscreen');
    expect(names).toContain('feature:android.hardware.location.gps');
    expect(names.every((f) => f.startsWith('feature:android.'))).toBe(true);
    expect(await sh('am idle-maintenance')).toMatchObject({
      code: 0,
      stdout: 'Performing idle maintenance...\n',
    });
  });

  it("enables and selects Appium Settings' input methods with ime, as InputMethodManagerService answers", async () => {
    await v.adbOk(['install', '-g', SETTINGS_APK]);
    const ime = 'io.appium.settings/.UnicodeIME';
    const sh = (command: string) => v.adb(['shell', command]);
    expect(await sh(`ime enable ${ime}`)).toMatchObject({
      code: 0,
      stdout: `Input method ${ime}: now enabled for user #0\n`,
    });
    expect((await sh(`ime enable ${ime}`)).stdout).toBe(`Input method ${ime}: already enabled for user #0\n`);
    expect((await sh('ime list -s')).stdout.split('\n')).toContain(ime);
    expect(await sh('ime enable com.example/.NoIme')).toMatchObject({
      code: 0,
      stdout: '',
      stderr: 'Unknown input method com.example/.NoIme cannot be enabled for user #0\n',
    });
    expect((await sh(`ime disable ${ime}`)).stdout).toBe(`Input method ${ime}: now disabled for user #0\n`);
    expect((await sh(`ime disable ${ime}`)).stdout).toBe(
      `Input method ${ime}: already disabled for user #0\n`,
    );
    expect((await sh('ime list -s')).stdout.split('\n')).not.toContain(ime);
  });

  it("reads typed text as Appium Settings' IMEs do: AppiumIME's editor actions, UnicodeIME's UTF-7", async () => {
    await v.adbOk(['install', '-g', SETTINGS_APK]);
    await v.adbOk([
      'shell',
      'am force-stop com.phonelease.login; am start -W -n com.phonelease.login/.LoginActivity',
    ]);
    const field = boundsOf(await v.adbOk(['exec-out', 'uiautomator dump /dev/tty']), 'username');
    await v.adbOk(['shell', `input tap ${field.x} ${field.y}`]);
    // What appium-adb's typeUnicode and performEditorAction run.
    const inIme = (ime: string, command: string) =>
      v.adbOk([
        'shell',
        `ime enable ${ime} >/dev/null; ime set ${ime} >/dev/null; ${command}; ime set com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME`,
      ]);
    await inIme('io.appium.settings/.UnicodeIME', "input text 'd&AOk-mo'");
    await inIme('io.appium.settings/.AppiumIME', 'input text /next/');
    const dump = await v.adbOk(['exec-out', 'uiautomator dump /dev/tty']);
    expect(dump).toMatch(/<node [^>]*text="démo"[^>]*resource-id="[^"]*username"/);
    expect(dump).toMatch(/<node [^>]*resource-id="[^"]*password"[^>]*focused="true"/);
    // With the phone's own keyboard the same text is typed as it is (six bullets in the password).
    await v.adbOk(['shell', 'input text /next/']);
    expect(await v.adbOk(['exec-out', 'uiautomator dump /dev/tty'])).toMatch(
      /text="•{6}"[^>]*resource-id="[^"]*password"/,
    );
    await v.adbOk(['shell', 'am force-stop com.phonelease.login']);
  });

  it('accepts notification listeners, app ops and the idle whitelist', async () => {
    expect(await v.adbOk(['shell', 'cmd notification allow_listener io.appium.settings/.NLService'])).toBe(
      '',
    );
    expect(await v.adbOk(['shell', 'dumpsys notification'])).toContain(
      'io.appium.settings/io.appium.settings.NLService',
    );
    expect(await v.adbOk(['shell', 'appops set io.appium.settings PROJECT_MEDIA allow'])).toBe('');
    expect(await v.adbOk(['shell', 'dumpsys deviceidle whitelist +io.appium.settings'])).toBe(
      'Added: io.appium.settings\n',
    );
    expect(await v.adbOk(['shell', 'dumpsys deviceidle whitelist'])).toMatch(
      /^user,io\.appium\.settings,\d+$/m,
    );
  });

  it('starts and stops services and sends broadcasts', async () => {
    const start = await v.adbOk([
      'shell',
      'am start-foreground-service -n io.appium.settings/.LocationService',
    ]);
    expect(start).toBe('Starting service: Intent { cmp=io.appium.settings/.LocationService }\n');
    expect(
      await v.adbOk(['shell', 'dumpsys activity services io.appium.settings/.LocationService']),
    ).toContain('isForeground=true');
    expect(await v.adbOk(['shell', 'am stopservice -n io.appium.settings/.LocationService'])).toBe(
      'Stopping service: Intent { cmp=io.appium.settings/.LocationService }\nService stopped\n',
    );
    // Appium Settings' receiver answers RESULT_OK (-1) and switches Wi-Fi.
    await v.adbOk(['shell', 'svc wifi disable']);
    expect(await v.adbOk(['shell', 'am broadcast -a io.appium.settings.wifi --es setstatus enable'])).toBe(
      'Broadcasting: Intent { act=io.appium.settings.wifi flg=0x400000 (has extras) }\nBroadcast completed: result=-1\n',
    );
    expect(await v.adbOk(['shell', 'settings get global wifi_on'])).toBe('1\n');
    // A broadcast nobody on the phone receives completes with result 0.
    expect(await v.adbOk(['shell', 'am broadcast -a com.example.NOBODY'])).toBe(
      'Broadcasting: Intent { act=com.example.NOBODY flg=0x400000 }\nBroadcast completed: result=0\n',
    );
  });
});

/**
 * Opens a device service through the adb server as its host protocol does: `host:transport:SERIAL`,
 * then the service, each answered OKAY; returns what the service sent until it closed.
 */
async function adbService(port: number, serial: string, service: string): Promise<Buffer> {
  const socket = connect(port, '127.0.0.1');
  const request = (text: string) => socket.write(text.length.toString(16).padStart(4, '0') + text);
  let buffered = Buffer.alloc(0);
  let wake: (() => void) | null = null;
  let ended = false;
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    wake?.();
  });
  socket.on('close', () => {
    ended = true;
    wake?.();
  });
  const take = async (n: number): Promise<Buffer> => {
    while (buffered.length < n && !ended) await new Promise<void>((resolve) => (wake = resolve));
    const head = buffered.subarray(0, n);
    buffered = buffered.subarray(n);
    return head;
  };
  await once(socket, 'connect');
  for (const step of [`host:transport:${serial}`, service]) {
    request(step);
    const status = (await take(4)).toString();
    if (status !== 'OKAY') throw new Error(`${step}: ${status}${buffered.toString()}`);
  }
  while (!ended) await new Promise<void>((resolve) => (wake = resolve));
  return buffered;
}

describe('screen', () => {
  it('captures PNG screenshots to stdout and to files', async () => {
    const r = await v.adb(['exec-out', 'screencap', '-p']);
    const png = PNG.sync.read(r.raw);
    expect([png.width, png.height]).toEqual([720, 1280]);
    expect(await v.adbOk(['shell', 'screencap -p /sdcard/shot.png'])).toBe('');
    const file = await v.adb(['exec-out', 'cat /sdcard/shot.png']);
    expect(PNG.sync.read(file.raw).width).toBe(720);
  });

  it('gives the screen raw, from screencap and from adbd’s framebuffer service, the same pixels as the PNG', async () => {
    const png = PNG.sync.read((await v.adb(['exec-out', 'screencap -p'])).raw);
    // screencap without -p: width, height, format 1 (RGBA_8888), colour space, then the pixels.
    const raw = (await v.adb(['exec-out', 'screencap'])).raw;
    expect([0, 4, 8, 12].map((at) => raw.readUInt32LE(at))).toEqual([720, 1280, 1, 0]);
    expect(raw.length).toBe(16 + 720 * 1280 * 4);
    // The status bar's clock may turn to the next minute between two grabs (the phone keeps
    // real time): the pixels compared are those below it.
    const belowBar = (pixels: Buffer) => pixels.subarray(720 * 48 * 4);
    expect(belowBar(raw.subarray(16)).equals(belowBar(png.data))).toBe(true);
    // framebuffer: through the adb server (host:transport, then the service), as ddmlib asks.
    const fb = await adbService(v.adbServerPort, v.serial, 'framebuffer:');
    const header = Array.from({ length: 14 }, (_, i) => fb.readUInt32LE(i * 4));
    // version 2, 32 bpp, colour space, size, width, height; red, blue, green, alpha offset/length.
    expect(header).toEqual([2, 32, 0, 720 * 1280 * 4, 720, 1280, 0, 8, 16, 8, 8, 8, 24, 8]);
    expect(fb.length).toBe(56 + 720 * 1280 * 4);
    expect(belowBar(fb.subarray(56)).equals(belowBar(png.data))).toBe(true);
  });

  it('dumps the UI hierarchy like the real uiautomator', async () => {
    expect(await v.adbOk(['shell', 'uiautomator', 'dump'])).toBe(
      'UI hierchary dumped to: /sdcard/window_dump.xml\n',
    );
    expect(await v.adbOk(['shell', 'head -c 38 /sdcard/window_dump.xml'])).toBe(
      "<?xml version='1.0' encoding='UTF-8' s",
    );
    expect(await v.adbOk(['shell', 'uiautomator dump /data/local/tmp/ui.xml'])).toBe(
      'UI hierchary dumped to: /data/local/tmp/ui.xml\n',
    );
  });

  it('dumps only a settled screen: it waits for a quiet second, and says when there is none', async () => {
    await v.adbOk(['shell', 'am start -n com.phonelease.login/.LoginActivity']);
    const field = boundsOf(await v.adbOk(['exec-out', 'uiautomator dump /dev/tty']), 'username');
    await v.adbOk(['shell', `input tap ${field.x} ${field.y}`]);
    // Typing starts after the dump did and goes on for over a second: the dump shows it all.
    const settled = v.adbOk(['exec-out', 'uiautomator dump /dev/tty']);
    await v.adbOk(['shell', 'for c in a b c d e; do input text $c; sleep 0.3; done']);
    expect(await settled).toMatch(/<node [^>]*text="abcde"[^>]*resource-id="[^"]*username"/);
    // A screen that changes more often than once a second for ten seconds cannot be dumped:
    // the message goes to stderr, the exit code is 0 (as AOSP's DumpCommand), and no file.
    // The typing runs on the phone (no adb round trip per letter), so a busy host does not
    // leave the screen quiet for a second, until the dump has answered.
    await v.adbOk(['shell', 'rm -f /sdcard/window_dump.xml /data/local/tmp/stop-typing']);
    const typing = v.adb([
      'shell',
      'while [ ! -e /data/local/tmp/stop-typing ]; do input text g; sleep 0.25; done',
    ]);
    const r = await v.adb(['shell', 'uiautomator dump']);
    await v.adbOk(['shell', 'touch /data/local/tmp/stop-typing']);
    await typing;
    expect([r.code, r.stderr + r.stdout]).toEqual([0, 'ERROR: could not get idle state.\n']);
    expect((await v.adb(['shell', 'ls /sdcard/window_dump.xml'])).code).not.toBe(0);
    await v.adbOk(['shell', 'am force-stop com.phonelease.login']);
  }, 30_000);

  it('types into the login form with input tap and input text', async () => {
    await v.adbOk(['shell', 'am force-stop com.phonelease.login']);
    await v.adbOk(['shell', 'am start -n com.phonelease.login/.LoginActivity']);
    const before = await v.adbOk(['exec-out', 'uiautomator dump /dev/tty']);
    const field = boundsOf(before, 'username');
    await v.adbOk(['shell', `input tap ${field.x} ${field.y}`]);
    await v.adbOk(['shell', 'input text hello%sworld']);
    const after = await v.adbOk(['exec-out', 'uiautomator dump /dev/tty']);
    expect(after).toMatch(/<node [^>]*text="hello world"[^>]*resource-id="[^"]*username"/);
    // As on a phone, only the first argument is typed: the shell split the words.
    await v.adbOk(['shell', 'input text again and more']);
    expect(await v.adbOk(['exec-out', 'uiautomator dump /dev/tty'])).toMatch(
      /<node [^>]*text="hello worldagain"[^>]*resource-id="[^"]*username"/,
    );
    await v.adbOk(['shell', 'input keyevent DEL DEL DEL DEL DEL']);
    expect(await v.adbOk(['exec-out', 'uiautomator dump /dev/tty'])).toBe(after);
    // CTRL+A is a chord, not CTRL then "a": it says it is not modeled and types nothing.
    for (const command of ['input keycombination 113 29', 'input keycombination -t 100 CTRL_LEFT A'])
      expect(await v.adb(['shell', command])).toMatchObject({
        code: 1,
        stderr:
          'input: keycombination: keys held down together are not modeled by the virtual phone (press them one by one with input keyevent)\n',
      });
    expect(await v.adb(['shell', 'input keycombination 29'])).toMatchObject({
      code: 1,
      stderr: 'Error: keycombination requires at least 2 keycodes\n',
    });
    expect(await v.adb(['shell', 'input keycombination 113 NOPE'])).toMatchObject({
      code: 1,
      stderr: 'Error: Unknown keycode: NOPE\n',
    });
    // Every KeyEvent name is a key, as it is to Android's input: CTRL alone types nothing.
    expect(await v.adb(['shell', 'input keyevent KEYCODE_CTRL_LEFT CTRL_RIGHT'])).toMatchObject({
      code: 0,
      stderr: '',
    });
    expect(await v.adbOk(['exec-out', 'uiautomator dump /dev/tty'])).toBe(after);
    await v.adbOk(['shell', 'input keyevent 4']);
  });

  it('long-presses with input swipe held in place and with input motionevent; a quick one taps', async () => {
    await v.adbOk(['shell', 'input keyevent 3']);
    const home = await v.adbOk(['exec-out', 'uiautomator dump /dev/tty']);
    const { x, y } = boundsOf(home, { desc: 'Login' });
    const menu = async () => /text="App info"/.test(await v.adbOk(['exec-out', 'uiautomator dump /dev/tty']));
    await v.adbOk(['shell', `input swipe ${x} ${y} ${x} ${y} 1000`]);
    expect(await menu()).toBe(true);
    await v.adbOk(['shell', 'input keyevent 4']);
    expect(await menu()).toBe(false);
    await v.adbOk(['shell', `input motionevent DOWN ${x} ${y}; sleep 0.6; input motionevent UP ${x} ${y}`]);
    expect(await menu()).toBe(true);
    await v.adbOk(['shell', 'input keyevent 4']);
    await v.adbOk(['shell', `input motionevent DOWN ${x} ${y}; input motionevent UP ${x} ${y}`]);
    expect((await focus()).app).toBe('com.phonelease.login/.LoginActivity');
    await v.adbOk(['shell', 'input keyevent 4']);
  });

  it('drags with input draganddrop as a press held past the long-press timeout, then a move', async () => {
    await v.adbOk(['shell', 'input keyevent 3']);
    const dump = () => v.adbOk(['exec-out', 'uiautomator dump /dev/tty']);
    const home = await dump();
    const { x, y } = boundsOf(home, { desc: 'Login' });
    // Held in place: the icon's long press, its menu.
    await v.adbOk(['shell', `input draganddrop ${x} ${y} ${x} ${y} 100`]);
    expect(await dump()).toMatch(/text="App info"/);
    await v.adbOk(['shell', 'input keyevent 4']);
    // Moved: Launcher3 would lift the icon and move it, which the phone does not model; it
    // says so and changes nothing, where a swipe across the icons is no error.
    expect(await v.adb(['shell', `input draganddrop ${x} ${y} ${x} ${y - 300} 200`])).toMatchObject({
      code: 1,
      stderr:
        'input: dragging "Login" is not modeled by the virtual phone (held in place, it is a long press)\n',
    });
    expect(await dump()).toBe(home);
    expect(await v.adb(['shell', `input swipe ${x} ${y} ${x} ${y - 300} 200`])).toMatchObject({ code: 0 });
    // Where nothing takes the held press (Settings' list), the move scrolls as a swipe does.
    await v.adbOk(['shell', 'am start -W -n com.android.settings/.Settings']);
    const top = await dump();
    expect(top).not.toMatch(/text="Display"/);
    await v.adbOk(['shell', 'input draganddrop 360 1100 360 300 300']);
    const scrolled = await dump();
    expect(scrolled).toMatch(/text="Display"/);
    await v.adbOk(['shell', 'input keyevent 3']);
  });

  it('logs app events that logcat shows', async () => {
    const log = await v.adbOk(['logcat', '-d', '-v', 'threadtime']);
    expect(log).toMatch(/ I ActivityTaskManager: START u0 \{.*cmp=com\.phonelease\.login\/\.LoginActivity/);
    // A system uid as its number (UserHandle.formatUid), an app's as u0aN.
    expect(log).toMatch(/ I ActivityManager: Start proc \d+:com\.android\.settings\/1000 /);
    expect(await v.adbOk(['shell', 'dumpsys activity processes'])).toMatch(/ \d+:system\/1000\}/);
    expect(log).toMatch(/ I PackageManager: Installed io\.appium\.settings versionCode=191/);
    // system_server's lines carry its pid, whatever app is in front.
    await v.adbOk(['shell', 'logcat -c; am start -W -n com.phonelease.login/.LoginActivity']);
    await v.adbOk(['shell', 'am force-stop com.phonelease.login; am force-stop com.phonelease.login']);
    const server = (await v.adbOk(['shell', 'pidof system_server'])).trim();
    const own = await v.adbOk(['shell', `logcat -d -v brief --pid=${server}`]);
    expect(own).toMatch(
      /I\/ActivityTaskManager\(\s*\d+\): START u0 \{.*cmp=com\.phonelease\.login\/\.LoginActivity/,
    );
    // Every am force-stop is logged, running or not, for all users, with the app's id.
    expect(
      own.match(/Force stopping com\.phonelease\.login appid=10120 user=-1: from pid \d+/g),
    ).toHaveLength(2);
  });

  it('crashes the Login app for the user "crash" as an app crashes: AndroidRuntime logs it, the process dies, the launcher shows', async () => {
    // A fresh start: no text left in the fields by earlier tests.
    await v.adbOk(['shell', 'am force-stop com.phonelease.login; logcat -c']);
    await v.adbOk(['shell', 'am start -W -n com.phonelease.login/.LoginActivity']);
    const pid = Number((await v.adbOk(['shell', 'pidof com.phonelease.login'])).trim());
    expect(pid).toBeGreaterThan(0);
    const field = boundsOf(await v.adbOk(['exec-out', 'uiautomator dump /dev/tty']), 'username');
    await v.adbOk(['shell', `input tap ${field.x} ${field.y}`]);
    // Enter moves to the password field, and signs in from there.
    await v.adbOk(['shell', 'input text crash; input keyevent 66; input text anything; input keyevent 66']);
    expect((await v.adb(['shell', 'pidof com.phonelease.login'])).code).toBe(1);
    expect((await focus()).app).toMatch(/^com\.android\.launcher3\//);
    const log = await v.adbOk(['logcat', '-d', '-v', 'threadtime', '-b', 'all']);
    // threadtime: date time pid tid priority tag: message, each line of the trace its own entry.
    const crash = log.split('\n').filter((line) => / E AndroidRuntime: /.test(line));
    const prefix = new RegExp(
      `^\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\.\\d{3}\\s+${pid}\\s+${pid} E AndroidRuntime: `,
    );
    expect(crash.length).toBeGreaterThan(5);
    for (const line of crash) expect(line).toMatch(prefix);
    const messages = crash.map((line) => line.replace(prefix, ''));
    expect(messages.slice(0, 3)).toEqual([
      'FATAL EXCEPTION: main',
      `Process: com.phonelease.login, PID: ${pid}`,
      'java.lang.IllegalStateException: Login crashed on purpose: the test account "crash" always crashes the app',
    ]);
    expect(messages[3]).toMatch(/^\tat com\.phonelease\.login\.LoginActivity\./);
    expect(messages.at(-1)).toBe('\tat com.android.internal.os.ZygoteInit.main(ZygoteInit.java:971)');
    expect(log).toContain(`I ActivityManager: Process com.phonelease.login (pid ${pid}) has died`);
  });
});

describe('instrumentation', () => {
  it('reports instrumentations that are not installed', async () => {
    const r = await v.adb([
      'shell',
      'am instrument -w com.example.none/androidx.test.runner.AndroidJUnitRunner',
    ]);
    expect(r.stdout).toContain(
      'INSTRUMENTATION_STATUS: Error=Unable to find instrumentation info for: ComponentInfo{com.example.none/androidx.test.runner.AndroidJUnitRunner}',
    );
    expect(r.code).toBe(1);
  });

  it('refuses to run the instrumentation of a test APK, whose code it cannot run', async () => {
    const apk = buildTestApk({
      package: 'com.example.hello.test',
      instrumentation: {
        name: 'androidx.test.runner.AndroidJUnitRunner',
        targetPackage: 'com.example.hello',
      },
    });
    await v.adbOk(['shell', `pm install -S ${apk.length}`], { input: apk });
    const out = await v.adb([
      'shell',
      'am instrument -w -r com.example.hello.test/androidx.test.runner.AndroidJUnitRunner',
    ]);
    expect(out.code).not.toBe(0);
    expect(out.stdout).toContain(
      "INSTRUMENTATION_STATUS: Error=com.example.hello.test can't run on this virtual phone",
    );
    expect(out.stderr).toContain(
      'INSTRUMENTATION_FAILED: com.example.hello.test/androidx.test.runner.AndroidJUnitRunner',
    );
  });

  it('serves UiAutomator2 on device port 6790 while am instrument -w runs', async () => {
    await v.adbOk(['install', '-r', SERVER_APK]);
    await v.adbOk(['install', '-r', TEST_APK]);
    const local = await freePort();
    await v.adbOk(['forward', `tcp:${local}`, 'tcp:6790']);
    expect(await httpGet(local, '/status')).toBeNull();
    const run = () =>
      spawn(ADB, ['-P', String(v.adbServerPort), '-s', v.serial, 'shell', UIA2_INSTRUMENT], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    const first = run();
    const firstExit = new Promise<number | null>((resolve) => first.once('exit', (code) => resolve(code)));
    try {
      const status = await waitFor(() => httpGet(local, '/status'));
      expect(status?.status).toBe(200);
      expect(JSON.parse(status!.body).value.ready).toBe(true);
      expect(await v.adbOk(['shell', 'pidof io.appium.uiautomator2.server'])).toMatch(/^\d+\n$/);
      // Closing the instrumentation stream stops the server.
      first.kill('SIGTERM');
      await firstExit;
      expect(await waitFor(async () => ((await httpGet(local, '/status')) === null ? true : null))).toBe(
        true,
      );
      // force-stop stops a running server too, and ends the instrumentation command.
      const second = run();
      const secondExit = new Promise<number | null>((resolve) =>
        second.once('exit', (code) => resolve(code)),
      );
      expect((await waitFor(() => httpGet(local, '/status')))?.status).toBe(200);
      await v.adbOk(['shell', 'am force-stop io.appium.uiautomator2.server']);
      expect(await secondExit).toBe(0);
      expect(await httpGet(local, '/status')).toBeNull();
    } finally {
      first.kill();
      await v.adbOk(['forward', '--remove', `tcp:${local}`]);
    }
  });
});
