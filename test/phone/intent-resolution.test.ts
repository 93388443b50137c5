/**
 * Intents as Android 14 resolves and starts them, through stock adb: am start's writers
 * (ActivityManagerShellCommand.runStartActivity), `am start -S`, and the resolver matching an
 * intent's action, data and every category (IntentFilter.match) for the phone's own apps.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVirtualAdb, type VirtualAdb } from '../support/virtual-adb.js';

const SETTINGS_APK =
  'node_modules/appium-uiautomator2-driver/node_modules/io.appium.settings/apks/settings_apk-debug.apk';
const MAIN = 'android.intent.action.MAIN';
const HOME = 'android.intent.category.HOME';
const LAUNCHER = 'android.intent.category.LAUNCHER';

let v: VirtualAdb;
beforeAll(async () => {
  v = await startVirtualAdb();
});
afterAll(() => v?.close());

const shell = (command: string) => v.adb(['shell', command]);

/** The package and activity that has the focus (dumpsys window's mCurrentFocus). */
async function focus(): Promise<string> {
  const out = await v.adbOk(['shell', 'dumpsys window | grep mCurrentFocus | head -1']);
  return /u0 (\S+)\}/.exec(out)?.[1] ?? out;
}

describe('arguments Intent.parseCommandArgs refuses', () => {
  it('fail as the exception the shell command prints, not as an Error: line (adbkit reads Error: as a start that failed)', async () => {
    for (const [command, verb, message] of [
      ['am start -n com.android.settings/.Settings --eza flags true,false', 'start', 'Unknown option: --eza'],
      ['am start-activity -n notacomponent', 'start-activity', 'Bad component name: notacomponent'],
      [
        'am startservice --bogus -n io.appium.settings/.ForegroundService',
        'startservice',
        'Unknown option: --bogus',
      ],
      ['am broadcast -a x.Y --nope', 'broadcast', 'Unknown option: --nope'],
      [
        'pm query-activities --frob -a android.intent.action.MAIN',
        'query-activities',
        'Unknown option: --frob',
      ],
    ] as const)
      expect(await shell(command), command).toMatchObject({
        code: 255,
        stdout: '',
        stderr: `\nException occurred while executing '${verb}':\njava.lang.IllegalArgumentException: ${message}\n`,
      });
    // What the phone does not model still says so as an error line.
    expect(await shell('am start -R 3 -n com.android.settings/.Settings')).toMatchObject({
      code: 255,
      stderr: 'Error: -R 3: repeating the start is not modeled by the virtual phone\n',
    });
  });
});

describe('am start writes its result as runStartActivity does', () => {
  it('puts errors on stderr without -W and on stdout with -W, status 0 either way', async () => {
    const missing = await shell('am start -n com.android.settings/.Nope');
    expect(missing).toMatchObject({
      code: 0,
      stdout: 'Starting: Intent { cmp=com.android.settings/.Nope }\n',
      stderr:
        'Error type 3\nError: Activity class {com.android.settings/com.android.settings.Nope} does not exist.\n',
    });
    const waited = await shell('am start-activity -W -n com.android.settings/.Nope');
    expect(waited).toMatchObject({
      code: 0,
      stdout:
        'Starting: Intent { cmp=com.android.settings/.Nope }\nError type 3\nError: Activity class {com.android.settings/com.android.settings.Nope} does not exist.\n',
      stderr: '',
    });
    const unresolved = await shell('am start-activity -a android.settings.NO_SUCH_PAGE');
    expect(unresolved).toMatchObject({
      code: 0,
      stdout: 'Starting: Intent { act=android.settings.NO_SUCH_PAGE }\n',
      stderr:
        'Error: Activity not started, unable to resolve Intent { act=android.settings.NO_SUCH_PAGE flg=0x10000000 }\n',
    });
    const unresolvedW = await shell('am start -W -a android.settings.NO_SUCH_PAGE');
    expect(unresolvedW.stderr).toBe('');
    expect(unresolvedW.stdout).toContain('Error: Activity not started, unable to resolve');
    expect(unresolvedW.stdout).not.toContain('Status: ok');
  });

  it('puts the delivered-to-top warning on the same writer', async () => {
    await v.adbOk(['shell', 'am start -W -n com.android.settings/.Settings']);
    const again = await shell('am start -n com.android.settings/.Settings');
    expect(again).toMatchObject({
      code: 0,
      stdout: 'Starting: Intent { cmp=com.android.settings/.Settings }\n',
      stderr:
        'Warning: Activity not started, intent has been delivered to currently running top-most instance.\n',
    });
    const againW = await shell('am start -W -n com.android.settings/.Settings');
    expect(againW.stderr).toBe('');
    expect(againW.stdout).toMatch(
      /^Starting: .*\nWarning: Activity not started, intent has been delivered to currently running top-most instance\.\nStatus: ok\n/,
    );
    await v.adbOk(['shell', 'input keyevent HOME']);
  });
});

describe('am start -S', () => {
  it('prints Stopping: before Starting: and restarts the app', async () => {
    await v.adbOk(['shell', 'am start -W -n com.phonelease.login/.LoginActivity']);
    const before = (await v.adbOk(['shell', 'pidof com.phonelease.login'])).trim();
    const out = await v.adbOk(['shell', 'am start -W -S -n com.phonelease.login/.LoginActivity']);
    expect(out).toMatch(
      /^Stopping: com\.phonelease\.login\nStarting: Intent \{ cmp=com\.phonelease\.login\/\.LoginActivity \}\nStatus: ok\nLaunchState: COLD\n/,
    );
    const after = (await v.adbOk(['shell', 'pidof com.phonelease.login'])).trim();
    expect(after).toMatch(/^\d+$/);
    expect(after).not.toBe(before);
  });

  it('stops the package an implicit intent names, and refuses an ambiguous or unknown one', async () => {
    const wifi = await shell('am start -S -a android.settings.WIFI_SETTINGS');
    expect(wifi.code).toBe(0);
    expect(wifi.stdout).toBe(
      'Stopping: com.android.settings\nStarting: Intent { act=android.settings.WIFI_SETTINGS }\n',
    );
    expect(await focus()).toBe('com.android.settings/com.android.settings.Settings$WifiSettingsActivity');
    const many = await shell(`am start -S -a ${MAIN} -c ${LAUNCHER}`);
    expect(many).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `Error: Intent matches multiple activities; can't stop: Intent { act=${MAIN} cat=[${LAUNCHER}] }\n`,
    });
    const none = await shell('am start -S -a com.example.NOTHING');
    expect(none).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'Error: Intent does not match any activities: Intent { act=com.example.NOTHING }\n',
    });
    await v.adbOk(['shell', 'am force-stop com.android.settings']);
  });
});

describe('intent resolution matches the action and every category', () => {
  it('resolves the home intent to the launcher, and no action to nothing', async () => {
    expect(await v.adbOk(['shell', `cmd package resolve-activity --brief -a ${MAIN} -c ${HOME}`])).toBe(
      'priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=true\ncom.android.launcher3/.Launcher\n',
    );
    expect(await v.adbOk(['shell', `cmd package query-activities --components -a ${MAIN} -c ${HOME}`])).toBe(
      'com.android.launcher3/.Launcher\n',
    );
    // Without an action or data, IntentResolver has no filters to look at.
    expect(await v.adbOk(['shell', `cmd package resolve-activity --brief -c ${HOME}`])).toBe(
      'No activity found\n',
    );
    expect(await v.adbOk(['shell', `pm query-activities -c ${HOME}`])).toBe('No activities found\n');
  });

  it('refuses an action whose filter lacks a category of the intent', async () => {
    const r = await shell(`am start -a android.settings.SETTINGS -c ${HOME}`);
    expect(r).toMatchObject({
      code: 0,
      stdout: `Starting: Intent { act=android.settings.SETTINGS cat=[${HOME}] }\n`,
      stderr: `Error: Activity not started, unable to resolve Intent { act=android.settings.SETTINGS cat=[${HOME}] flg=0x10000000 }\n`,
    });
    expect(
      await v.adbOk([
        'shell',
        `cmd package resolve-activity --brief -a android.settings.SETTINGS -c ${HOME}`,
      ]),
    ).toBe('No activity found\n');
    expect(
      await v.adbOk([
        'shell',
        `cmd package resolve-activity --brief -a android.settings.SETTINGS -c android.intent.category.DEFAULT`,
      ]),
    ).toContain('\ncom.android.settings/.Settings\n');
    // Chrome's VIEW filter is BROWSABLE, not HOME.
    expect(
      await v.adbOk([
        'shell',
        'cmd package resolve-activity --brief -a android.intent.action.VIEW -d https://example.com -c android.intent.category.BROWSABLE',
      ]),
    ).toBe(
      'priority=0 preferredOrder=0 match=0x208000 specificIndex=-1 isDefault=true\ncom.android.chrome/com.google.android.apps.chrome.Main\n',
    );
    expect(
      await v.adbOk([
        'shell',
        `cmd package resolve-activity --brief -a android.intent.action.VIEW -d https://example.com -c ${HOME}`,
      ]),
    ).toBe('No activity found\n');
  });

  it('starts the launcher for the home intent', async () => {
    await v.adbOk(['shell', 'am start -W -n com.android.settings/.Settings']);
    expect(await focus()).toMatch(/^com\.android\.settings\//);
    const out = await v.adbOk(['shell', `am start -W -a ${MAIN} -c ${HOME}`]);
    expect(out).toContain('Activity: com.android.launcher3/.Launcher');
    expect(await focus()).toMatch(/^com\.android\.launcher3\//);
  });

  it('lists the launcher apps, Appium Settings among them once installed, and the chooser for several', async () => {
    const query = `cmd package query-activities --components -a ${MAIN} -c ${LAUNCHER}`;
    expect(await v.adbOk(['shell', query])).toBe(
      'com.android.chrome/com.google.android.apps.chrome.Main\ncom.android.settings/.Settings\ncom.phonelease.login/.LoginActivity\n',
    );
    const apk = readFileSync(SETTINGS_APK);
    expect((await v.adb(['shell', `pm install -S ${apk.length}`], { input: apk })).stdout).toBe('Success\n');
    // Its filter has no DEFAULT: it sorts after the ones that have.
    expect(await v.adbOk(['shell', query])).toBe(
      'com.android.chrome/com.google.android.apps.chrome.Main\ncom.android.settings/.Settings\ncom.phonelease.login/.LoginActivity\nio.appium.settings/.Settings\n',
    );
    expect(await v.adbOk(['shell', `cmd package query-activities --components -a ${MAIN} -c ${HOME}`])).toBe(
      'com.android.launcher3/.Launcher\n',
    );
    expect(await v.adbOk(['shell', `cmd package resolve-activity --brief -a ${MAIN} -c ${LAUNCHER}`])).toBe(
      'priority=0 preferredOrder=0 match=0x0 specificIndex=-1 isDefault=false\nandroid/com.android.internal.app.ResolverActivity\n',
    );
  });

  it('refuses to start the chooser rather than pick an app', async () => {
    await v.adbOk(['shell', 'input keyevent HOME']);
    const r = await shell(`am start -a ${MAIN} -c ${LAUNCHER}`);
    expect(r.code).toBe(255);
    expect(r.stdout).toBe(`Starting: Intent { act=${MAIN} cat=[${LAUNCHER}] }\n`);
    // Appium Settings' launcher filter has no DEFAULT: startActivity does not count it.
    expect(r.stderr).toBe(
      `Error: Activity not started, Intent { act=${MAIN} cat=[${LAUNCHER}] flg=0x10000000 } matches 3 activities (com.android.chrome/com.google.android.apps.chrome.Main, com.android.settings/.Settings, com.phonelease.login/.LoginActivity): Android would show the chooser (android/com.android.internal.app.ResolverActivity), which the virtual phone does not model; name the activity with -n or its package with -p\n`,
    );
    expect(await focus()).toMatch(/^com\.android\.launcher3\//);
  });

  it('starts only through a filter with CATEGORY_DEFAULT, as startActivity resolves', async () => {
    const login = await shell(`am start -W -a ${MAIN} -c ${LAUNCHER} -p com.phonelease.login`);
    expect(login.stdout).toContain('Activity: com.phonelease.login/.LoginActivity');
    expect(await focus()).toMatch(/^com\.phonelease\.login\//);
    // Appium Settings' launcher filter (MAIN and LAUNCHER only): pm finds it, am start does not.
    expect(await v.adbOk(['shell', 'cmd package resolve-activity --brief io.appium.settings'])).toBe(
      'priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=false\nio.appium.settings/.Settings\n',
    );
    const appium = await shell(`am start -a ${MAIN} -c ${LAUNCHER} -p io.appium.settings`);
    expect(appium).toMatchObject({
      code: 0,
      stderr: `Error: Activity not started, unable to resolve Intent { act=${MAIN} cat=[${LAUNCHER}] flg=0x10000000 pkg=io.appium.settings }\n`,
    });
    expect(await focus()).toMatch(/^com\.phonelease\.login\//);
    await v.adbOk(['shell', 'input keyevent HOME']);
  });

  it('reads a bare package or URI argument as Intent.parseCommandArgs does', async () => {
    const r = await shell('am start com.android.settings');
    expect(r.stdout).toBe(`Starting: Intent { act=${MAIN} cat=[${LAUNCHER}] pkg=com.android.settings }\n`);
    expect(await focus()).toMatch(/^com\.android\.settings\//);
    // A URI is VIEW of that data; data without an action is matched by its scheme.
    expect(await v.adbOk(['shell', 'cmd package resolve-activity --components https://example.com/x'])).toBe(
      'com.android.chrome/com.google.android.apps.chrome.Main\n',
    );
    expect(
      await v.adbOk(['shell', 'cmd package resolve-activity --components -d package:com.phonelease.login']),
    ).toBe('com.android.settings/.applications.InstalledAppDetails\n');
    await v.adbOk(['shell', 'input keyevent HOME']);
  });
});
