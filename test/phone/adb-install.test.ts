/**
 * Installing apps the ways adb and Appium do (streamed abb_exec, push + pm install, session
 * installs, stdin -S installs), reading what pm and dumpsys then report, and uninstalling.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApk } from '../support/apk-builder.js';
import { startVirtualAdb } from '../support/virtual-adb.js';
import type { VirtualAdb } from '../support/virtual-adb.js';

const APPIUM = 'node_modules/appium-uiautomator2-driver/node_modules';
const SETTINGS_APK = `${APPIUM}/io.appium.settings/apks/settings_apk-debug.apk`;
const SERVER_APK = `${APPIUM}/appium-uiautomator2-server/apks/appium-uiautomator2-server-v10.6.6.apk`;
const TEST_APK = `${APPIUM}/appium-uiautomator2-server/apks/appium-uiautomator2-server-debug-androidTest.apk`;

let v: VirtualAdb;
let dir: string;

beforeAll(async () => {
  v = await startVirtualAdb();
  dir = mkdtempSync(join(tmpdir(), 'phonelease-install-'));
});

afterAll(async () => {
  await v?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function apkFile(name: string, apk: Buffer): string {
  const file = join(dir, name);
  writeFileSync(file, apk);
  return file;
}

describe('built-in packages', () => {
  it('lists the system packages like pm does', async () => {
    const out = await v.adbOk(['shell', 'pm', 'list', 'packages']);
    for (const p of [
      'android',
      'com.android.shell',
      'com.android.systemui',
      'com.android.settings',
      'com.phonelease.login',
      'com.android.launcher3',
    ]) {
      expect(out).toContain(`package:${p}\n`);
    }
    expect(await v.adbOk(['shell', 'pm', 'list', 'packages', '-3'])).toBe('');
    expect(await v.adbOk(['shell', 'pm path com.android.settings'])).toMatch(/^package:\/.+\.apk\n$/);
  });

  it('offers Settings, Chrome and Login on the home screen, not the launcher itself', async () => {
    expect(await v.phone.apps()).toEqual([
      { package: 'com.android.settings', label: 'Settings' },
      { package: 'com.android.chrome', label: 'Chrome' },
      { package: 'com.phonelease.login', label: 'Login' },
    ]);
  });
});

describe('installing the Appium APKs', () => {
  it('installs io.appium.settings with a streamed install and grants runtime permissions with -g', async () => {
    const out = await v.adbOk(['install', '-g', SETTINGS_APK]);
    expect(out).toContain('Performing Streamed Install\nSuccess\n');
    expect(await v.adbOk(['shell', 'cmd', 'package', 'list', 'packages', '--show-versioncode'])).toContain(
      'package:io.appium.settings versionCode:191\n',
    );
    const dump = await v.adbOk(['shell', 'dumpsys', 'package', 'io.appium.settings']);
    expect(dump).toMatch(/^\s*Package \[io\.appium\.settings\] \([0-9a-f]+\):$/m);
    expect(dump).toMatch(/^\s+versionCode=191 minSdk=26 targetSdk=35$/m);
    expect(dump).toMatch(/^\s+versionName=8\.0\.9$/m);
    expect(dump).toMatch(/android\.permission\.ACCESS_FINE_LOCATION: granted=true/);
    expect(await v.adbOk(['shell', 'cmd package resolve-activity --brief io.appium.settings'])).toMatch(
      /\nio\.appium\.settings\/\.Settings\n$/,
    );
  });

  it('installs the UiAutomator2 server and test APKs and lists the instrumentation', async () => {
    expect(await v.adbOk(['install', '-r', SERVER_APK])).toContain('Success');
    expect(await v.adbOk(['install', '-r', TEST_APK])).toContain('Success');
    expect(await v.adbOk(['shell', 'pm', 'list', 'instrumentation'])).toBe(
      'instrumentation:io.appium.uiautomator2.server.test/androidx.test.runner.AndroidJUnitRunner (target=io.appium.uiautomator2.server)\n',
    );
    const listed = await v.adbOk(['shell', 'pm list packages -3 --show-versioncode']);
    expect(listed.split('\n').filter(Boolean).sort()).toEqual([
      'package:io.appium.settings versionCode:191',
      'package:io.appium.uiautomator2.server versionCode:278',
      'package:io.appium.uiautomator2.server.test versionCode:0',
    ]);
    const path = (await v.adbOk(['shell', 'pm', 'path', 'io.appium.uiautomator2.server']))
      .trim()
      .replace(/^package:/, '');
    expect(await v.adbOk(['shell', 'md5sum', path])).toMatch(/^[0-9a-f]{32} /);
    await v.adbOk(['pull', path, join(dir, 'pulled.apk')]);
    expect(readFileSync(join(dir, 'pulled.apk')).equals(readFileSync(SERVER_APK))).toBe(true);
  });
});

describe('other install paths', () => {
  it('installs a pushed file with pm install', async () => {
    const file = apkFile(
      'pushed.apk',
      buildTestApk({ package: 'com.example.pushed', versionName: '3.0', versionCode: 30 }),
    );
    await v.adbOk(['push', file, '/data/local/tmp/pushed.apk']);
    expect(await v.adbOk(['shell', 'pm', 'install', '-r', '/data/local/tmp/pushed.apk'])).toBe('Success\n');
    expect(await v.adbOk(['shell', 'dumpsys package com.example.pushed | grep versionName'])).toBe(
      '    versionName=3.0\n',
    );
    expect(await v.adbOk(['shell', 'pm list packages -f com.example.pushed'])).toMatch(
      /^package:\/data\/app\/~~[^/]+\/com\.example\.pushed-[^/]+\/base\.apk=com\.example\.pushed\n$/,
    );
  });

  it('installs from stdin with cmd package install -S', async () => {
    const apk = buildTestApk({ package: 'com.example.stdin' });
    const r = await v.adb(['shell', `cmd package install -S ${apk.length}`], { input: apk });
    expect(r).toMatchObject({ code: 0, stdout: 'Success\n' });
    expect(await v.adbOk(['shell', 'pm path com.example.stdin'])).toMatch(
      /^package:\/data\/app\/.*\/base\.apk\n$/,
    );
  });

  it('installs through an install session (adb install-multiple)', async () => {
    const file = apkFile('multi.apk', buildTestApk({ package: 'com.example.multi', versionCode: 5 }));
    const out = await v.adbOk(['install-multiple', file]);
    expect(out).toContain('Success');
    expect(await v.adbOk(['shell', 'pm list packages --show-versioncode com.example.multi'])).toBe(
      'package:com.example.multi versionCode:5\n',
    );
  });

  it('refuses files that are not APKs and version downgrades', async () => {
    const junk = apkFile('junk.apk', Buffer.from('this is not a zip file'));
    const bad = await v.adb(['install', junk]);
    expect(bad.code).not.toBe(0);
    expect(bad.stdout + bad.stderr).toContain('Failure [INSTALL_PARSE_FAILED_NOT_APK');
    const newer = apkFile('v2.apk', buildTestApk({ package: 'com.example.versions', versionCode: 2 }));
    const older = apkFile('v1.apk', buildTestApk({ package: 'com.example.versions', versionCode: 1 }));
    await v.adbOk(['install', newer]);
    const down = await v.adb(['install', older]);
    expect(down.stdout + down.stderr).toContain('Failure [INSTALL_FAILED_VERSION_DOWNGRADE');
    expect(await v.adbOk(['install', '-d', older])).toContain('Success');
  });
});

describe("the package manager's refusals, in its own words", () => {
  const failure = async (...args: string[]) => {
    const r = await v.adb(args);
    expect(r.code).not.toBe(0);
    return /Failure \[([^\]]*)\]/.exec(r.stdout + r.stderr)?.[1];
  };

  it('refuses an update signed by someone else, and takes one from the same signer', async () => {
    await v.adbOk(['install', SETTINGS_APK]);
    const forged = apkFile(
      'forged.apk',
      buildTestApk({ package: 'io.appium.settings', versionCode: 9999, signer: 'someone else' }),
    );
    expect(await failure('install', '-r', forged)).toBe(
      'INSTALL_FAILED_UPDATE_INCOMPATIBLE: Existing package io.appium.settings signatures do not match newer version; ignoring!',
    );
    const path = await v.adbOk(['shell', 'pm path io.appium.settings']);
    expect(await v.adbOk(['install', '-r', SETTINGS_APK])).toContain('Success');
    expect(await v.adbOk(['shell', 'pm path io.appium.settings'])).not.toBe(path);
    // Two test builds of one signer update each other; another signer cannot.
    await v.adbOk([
      'install',
      apkFile('a1.apk', buildTestApk({ package: 'com.example.signed', signer: 'a' })),
    ]);
    expect(
      await v.adbOk([
        'install',
        apkFile('a2.apk', buildTestApk({ package: 'com.example.signed', versionCode: 2, signer: 'a' })),
      ]),
    ).toContain('Success');
    expect(
      await failure(
        'install',
        apkFile('b.apk', buildTestApk({ package: 'com.example.signed', signer: 'b' })),
      ),
    ).toMatch(/^INSTALL_FAILED_UPDATE_INCOMPATIBLE: /);
  });

  it('refuses native code for an ABI the phone does not run, and a minSdkVersion above its own', async () => {
    expect(await v.adbOk(['shell', 'getprop ro.product.cpu.abilist'])).toBe('arm64-v8a\n');
    const x86 = apkFile(
      'x86.apk',
      buildTestApk({ package: 'com.example.x86', nativeAbis: ['x86_64', 'x86'] }),
    );
    expect(await failure('install', x86)).toBe(
      'INSTALL_FAILED_NO_MATCHING_ABIS: Failed to extract native libraries, res=-113',
    );
    const both = apkFile(
      'fat.apk',
      buildTestApk({ package: 'com.example.fat', nativeAbis: ['arm64-v8a', 'x86_64'] }),
    );
    expect(await v.adbOk(['install', both])).toContain('Success');
    const future = apkFile('future.apk', buildTestApk({ package: 'com.example.future', minSdk: 35 }));
    expect(await failure('install', future)).toMatch(
      /^INSTALL_FAILED_OLDER_SDK: .*Requires newer sdk version #35 \(current version is #34\)$/,
    );
    // Android 14 blocks an app that targets an SDK below 23, unless told to install it anyway.
    const old = apkFile('old.apk', buildTestApk({ package: 'com.example.old', minSdk: 21, targetSdk: 22 }));
    expect(await failure('install', old)).toBe(
      'INSTALL_FAILED_DEPRECATED_SDK_VERSION: App package must target at least SDK version 23, but found 22',
    );
    expect(await v.adbOk(['install', '--bypass-low-target-sdk-block', old])).toContain('Success');
    await v.adbOk(['uninstall', 'com.example.old']);
    expect(await v.adbOk(['shell', 'pm list packages com.example.x86 com.example.future'])).toBe('');
  });

  it('replaces an installed app with or without -r, and refuses to with -R', async () => {
    const file = apkFile('again.apk', buildTestApk({ package: 'com.example.again' }));
    await v.adbOk(['push', file, '/data/local/tmp/again.apk']);
    expect(await v.adbOk(['shell', 'pm install /data/local/tmp/again.apk'])).toBe('Success\n');
    expect(await v.adbOk(['shell', 'pm install /data/local/tmp/again.apk'])).toBe('Success\n');
    expect(await failure('shell', 'pm install -R /data/local/tmp/again.apk')).toBe(
      'INSTALL_FAILED_ALREADY_EXISTS: Attempt to re-install com.example.again without first uninstalling.',
    );
  });

  it('installs split APKs of one app together, and refuses splits without their base', async () => {
    const base = apkFile('base.apk', buildTestApk({ package: 'com.example.split', signer: 'a' }));
    const arm = apkFile(
      'split_config.arm64_v8a.apk',
      buildTestApk({
        package: 'com.example.split',
        split: 'config.arm64_v8a',
        nativeAbis: ['arm64-v8a'],
        signer: 'a',
      }),
    );
    expect(await v.adbOk(['install-multiple', base, arm])).toContain('Success');
    expect(await v.adbOk(['shell', 'pm path com.example.split'])).toMatch(
      /^package:\/data\/app\/.*\/base\.apk\npackage:\/data\/app\/.*\/split_config\.arm64_v8a\.apk\n$/,
    );
    expect(await v.adbOk(['shell', 'dumpsys package com.example.split'])).toContain(
      'splits=[base, config.arm64_v8a]',
    );
    expect(await failure('install-multiple', arm)).toBe(
      'INSTALL_FAILED_INVALID_APK: Full install must include a base package',
    );
    const stray = apkFile(
      'stray.apk',
      buildTestApk({ package: 'com.example.other', split: 'config.xxhdpi' }),
    );
    expect(await failure('install-multiple', base, stray)).toMatch(
      /^INSTALL_FAILED_INVALID_APK: Inconsistent package com\.example\.other /,
    );
    // pm install takes an app's files in one command too (what the lease's installs use).
    await v.adbOk(['push', base, '/data/local/tmp/base.apk']);
    await v.adbOk(['push', arm, '/data/local/tmp/split.apk']);
    expect(await v.adbOk(['shell', 'pm install -r /data/local/tmp/base.apk /data/local/tmp/split.apk'])).toBe(
      'Success\n',
    );
  });
});

describe('apps on the phone', () => {
  it('shows installed launcher apps on the home screen and removes them on uninstall', async () => {
    const file = apkFile(
      'notes.apk',
      buildTestApk({ package: 'com.example.notes', label: 'Notes', activities: ['.Main'], launcher: true }),
    );
    await v.adbOk(['install', file]);
    const apps = await v.phone.apps();
    expect(apps.map((a) => a.package)).toEqual([
      'com.android.settings',
      'com.android.chrome',
      'com.phonelease.login',
      'io.appium.settings',
      'com.example.notes',
    ]);
    expect(apps[4]).toEqual({ package: 'com.example.notes', label: 'Notes' });
    expect(await v.adbOk(['uninstall', 'com.example.notes'])).toBe('Success\n');
    expect((await v.phone.apps()).map((a) => a.package)).not.toContain('com.example.notes');
    expect(await v.adbOk(['shell', 'pm list packages com.example.notes'])).toBe('');
  });

  it('grants, revokes and clears with pm, and sets app ops', async () => {
    const file = apkFile(
      'cam.apk',
      buildTestApk({
        package: 'com.example.cam',
        permissions: ['android.permission.CAMERA', 'android.permission.INTERNET'],
      }),
    );
    await v.adbOk(['install', file]);
    const granted = (await v.adbOk(['shell', 'dumpsys package com.example.cam'])).match(
      /android\.permission\.CAMERA: granted=(\w+)/,
    );
    expect(granted?.[1]).toBe('false');
    await v.adbOk(['shell', 'pm grant com.example.cam android.permission.CAMERA']);
    expect(await v.adbOk(['shell', 'dumpsys package com.example.cam'])).toMatch(
      /android\.permission\.CAMERA: granted=true/,
    );
    expect(await v.adbOk(['shell', 'dumpsys package com.example.cam'])).toMatch(
      /android\.permission\.INTERNET: granted=true/,
    );
    await v.adbOk(['shell', 'pm revoke com.example.cam android.permission.CAMERA']);
    expect(await v.adbOk(['shell', 'dumpsys package com.example.cam'])).toMatch(
      /android\.permission\.CAMERA: granted=false/,
    );
    // Chrome asks for what web pages use: a test grants it the camera and microphone before
    // a WebRTC page asks, as on a phone; a permission it does not request is refused.
    await v.adbOk([
      'shell',
      'pm grant com.android.chrome android.permission.CAMERA; pm grant com.android.chrome android.permission.RECORD_AUDIO',
    ]);
    const chrome = await v.adbOk(['shell', 'dumpsys package com.android.chrome']);
    expect(chrome).toMatch(/android\.permission\.CAMERA: granted=true/);
    expect(chrome).toMatch(/android\.permission\.RECORD_AUDIO: granted=true/);
    expect(chrome).toMatch(/android\.permission\.ACCESS_FINE_LOCATION: granted=false/);
    expect(chrome).toMatch(/android\.permission\.INTERNET: granted=true/);
    await v.adbOk(['shell', 'pm revoke com.android.chrome android.permission.CAMERA']);
    expect((await v.adb(['shell', 'pm grant com.android.chrome android.permission.READ_SMS'])).code).toBe(
      255,
    );
    const notRequested = await v.adb(['shell', 'pm grant com.example.cam android.permission.RECORD_AUDIO']);
    expect(notRequested.code).toBe(255);
    expect(notRequested.stderr).toContain('has not requested permission android.permission.RECORD_AUDIO');
    expect(await v.adbOk(['shell', 'pm clear com.example.cam'])).toBe('Success\n');
    expect(
      await v.adbOk([
        'shell',
        'appops set com.example.cam android:mock_location allow; appops get com.example.cam',
      ]),
    ).toBe('MOCK_LOCATION: allow\n');
    const unknown = await v.adb(['shell', 'appops set no.such.app android:mock_location allow']);
    expect(unknown).toMatchObject({ code: 255, stderr: 'Error: No UID for no.such.app in user 0\n' });
    // An op by its public name, its code or its debug name, each as written; appops prints
    // the debug name, which is not always the public one's.
    await v.adbOk([
      'shell',
      'appops set com.example.cam 26 ignore; appops set com.example.cam android:monitor_location_high_power deny',
    ]);
    expect(await v.adbOk(['shell', 'appops get com.example.cam'])).toBe(
      'MOCK_LOCATION: allow\nCAMERA: ignore\nMONITOR_HIGH_POWER_LOCATION: deny\n',
    );
    expect(await v.adbOk(['shell', 'appops get com.example.cam android:camera'])).toBe('CAMERA: ignore\n');
    // What names no op is refused before the package is looked up, and nothing changes; an
    // op code past Android 14's table fails as AppOpsService does, a negative one silently.
    for (const op of ['BOGUS', 'camera', 'android:CAMERA', 'MONITOR_LOCATION_HIGH_POWER']) {
      expect(await v.adb(['shell', `appops set no.such.app ${op} allow`]), op).toMatchObject({
        code: 255,
        stderr: `Error: Unknown operation string: ${op}\n`,
      });
    }
    expect(await v.adb(['shell', 'appops get com.example.cam BOGUS'])).toMatchObject({
      code: 255,
      stderr: 'Error: Unknown operation string: BOGUS\n',
    });
    expect(await v.adb(['shell', 'appops set com.example.cam 136 allow'])).toMatchObject({
      code: 255,
      stderr:
        "\nException occurred while executing 'set':\njava.lang.IllegalArgumentException: Bad operation #136\n",
    });
    expect(await v.adb(['shell', 'appops set com.example.cam -1 allow'])).toMatchObject({
      code: 255,
      stderr: '',
    });
    expect(await v.adbOk(['shell', 'appops get com.example.cam'])).toBe(
      'MOCK_LOCATION: allow\nCAMERA: ignore\nMONITOR_HIGH_POWER_LOCATION: deny\n',
    );
  });

  it('runs as a debuggable app in its private directory with run-as, and only for debuggable apps', async () => {
    const apk = buildTestApk({ package: 'com.example.runas', debuggable: true });
    await v.adbOk(['install', apkFile('runas.apk', apk)]);
    const uid = (await v.adbOk(['shell', 'run-as com.example.runas id -u'])).trim();
    expect(Number(uid)).toBeGreaterThanOrEqual(10000);
    expect(await v.adbOk(['shell', 'run-as com.example.runas sh -c "pwd; echo mine > f; cat f"'])).toBe(
      '/data/data/com.example.runas\nmine\n',
    );
    // The app's directory is its own: the shell user can neither list nor read it.
    expect(await v.adb(['shell', 'ls /data/data/com.example.runas'])).toMatchObject({
      code: 1,
      stderr: 'ls: /data/data/com.example.runas: Permission denied\n',
    });
    expect(await v.adb(['shell', 'run-as com.android.settings id'])).toMatchObject({
      code: 1,
      stderr: 'run-as: package not debuggable: com.android.settings\n',
    });
    expect(await v.adb(['shell', 'run-as com.example.nope id'])).toMatchObject({
      code: 1,
      stderr: 'run-as: unknown package: com.example.nope\n',
    });
  });

  it('uninstalls with pm and reports unknown packages', async () => {
    expect(await v.adbOk(['shell', 'pm uninstall com.example.cam'])).toBe('Success\n');
    const again = await v.adb(['shell', 'pm uninstall com.example.cam']);
    expect(again).toMatchObject({ code: 1, stdout: 'Failure [DELETE_FAILED_INTERNAL_ERROR]\n' });
    const system = await v.adb(['uninstall', 'com.android.settings']);
    expect(system.stdout + system.stderr).toContain('Failure [DELETE_FAILED_INTERNAL_ERROR]');
  });
});
