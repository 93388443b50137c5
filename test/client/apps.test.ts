/**
 * The app under test through leasePhone({ apps }) against the real server and its virtual
 * phones: installed once per phone and never again on a phone that has the build (a
 * profile phone, a phone the server prepared with --preinstall), every reason it cannot be
 * installed said before or after the phone starts, and an app the virtual phone cannot run
 * refused by phone.launch() at once.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import {
  AppFileError,
  AppInstallError,
  AppNotRunnableError,
  leasePhone,
  type Lease,
} from '../../src/index.js';
import { runServerCommand, UsageError } from '../../server/cli.js';
import { startServer } from '../../server/main.js';
import { uiEngineOf } from '../../src/lease/lease.js';
import { buildTestApk, buildZip } from '../support/apk-builder.js';
import { poolSettled } from '../support/pool.js';
import { serverPerTest } from '../support/server.js';
import { leaseOptions, liveIds, tempDir } from './helpers.js';

const SETTINGS_APK =
  'node_modules/appium-uiautomator2-driver/node_modules/io.appium.settings/apks/settings_apk-debug.apk';
const SETTINGS = 'io.appium.settings';

const server = serverPerTest();

function apkFile(name: string, apk: Buffer): string {
  const file = join(tempDir('phonelease-apps-'), name);
  writeFileSync(file, apk);
  return file;
}

/** The APK paths `pm path` prints: new for every install, so unchanged means not reinstalled. */
async function installedPaths(phone: Lease, pkg: string): Promise<string> {
  return (await phone.shell(`pm path ${pkg}`)).stdout;
}

/** How many times the phone's package manager installed `pkg` (its own log lines). */
async function installs(phone: Lease, pkg: string): Promise<number> {
  const log = (await phone.shell('logcat -d -s PackageManager')).stdout;
  return log.split('\n').filter((l) => l.includes(`Installed ${pkg} `)).length;
}

describe('leasePhone({ apps })', () => {
  it('installs a real APK once per phone and skips it on the phone that has that build', async () => {
    const t = await server();
    const profile = { ...leaseOptions(t), profile: true, apps: [SETTINGS_APK] };
    let first: string;
    {
      await using phone = await leasePhone(profile);
      first = await installedPaths(phone, SETTINGS);
      expect(first).toMatch(/^package:\/data\/app\/.+\/base\.apk\n$/);
      expect(await installs(phone, SETTINGS)).toBe(1);
      // -g by default: its runtime permissions are granted.
      expect((await phone.shell(`dumpsys package ${SETTINGS}`)).stdout).toMatch(
        /android\.permission\.ACCESS_FINE_LOCATION: granted=true/,
      );
      expect(
        profile.logger.lines.some((l) =>
          /installed io\.appium\.settings \(.*settings_apk-debug\.apk, 2\.9 MB\)/.test(l),
        ),
      ).toBe(true);
    }
    // The same phone (the account's profile phone) in its next session: the install stays.
    const again = { ...profile, logger: leaseOptions(t).logger };
    await using phone = await leasePhone(again);
    expect(await installedPaths(phone, SETTINGS)).toBe(first);
    expect(again.logger.lines.some((l) => l.includes(`${SETTINGS} is already on phone`))).toBe(true);
  });

  it('installs again over another build of the same version, and can leave permissions alone', async () => {
    const t = await server();
    const v1 = apkFile(
      'v1.apk',
      buildTestApk({ package: 'com.example.app', signer: 'dev', permissions: ['android.permission.CAMERA'] }),
    );
    const v2 = apkFile(
      'v2.apk',
      buildTestApk({
        package: 'com.example.app',
        signer: 'dev',
        versionName: '2.0',
        permissions: ['android.permission.CAMERA'],
      }),
    );
    const opts = { ...leaseOptions(t), profile: true, grantPermissions: false };
    let path: string;
    {
      await using phone = await leasePhone({ ...opts, apps: [v1] });
      path = await installedPaths(phone, 'com.example.app');
      expect((await phone.shell('dumpsys package com.example.app')).stdout).toMatch(
        /android\.permission\.CAMERA: granted=false/,
      );
    }
    // Same versionCode, other bytes: a new build, so it is installed (-r) over the old one.
    await using phone = await leasePhone({ ...opts, apps: [v2] });
    expect(await installedPaths(phone, 'com.example.app')).not.toBe(path);
    expect((await phone.shell('dumpsys package com.example.app')).stdout).toContain('versionName=2.0');
  });

  it('finds the apps the server preinstalled on its pooled phones, and installs nothing', async () => {
    const t = await server({ preinstall: [SETTINGS_APK], pool: 1, phones: 2, metrics: true });
    await poolSettled(t, 1);
    const prepared = leaseOptions(t, { apps: [SETTINGS_APK] });
    {
      await using phone = await leasePhone(prepared);
      expect(phone.session.startup).toMatchObject({ source: 'pool' });
      expect(await installedPaths(phone, SETTINGS)).toMatch(/^package:\/data\/app\//);
      expect(await installs(phone, SETTINGS)).toBe(0);
      expect(prepared.logger.lines.some((l) => l.includes(`${SETTINGS} is already on phone`))).toBe(true);
    }
    // Without the server's help the same lease installs it on the phone.
    const bare = await server();
    await using phone = await leasePhone(leaseOptions(bare, { apps: [SETTINGS_APK] }));
    expect(await installs(phone, SETTINGS)).toBe(1);
  });

  it('says what is wrong with an app file before starting any phone', async () => {
    const t = await server();
    const fail = (apps: string[]) => leasePhone(leaseOptions(t, { apps }));
    await expect(fail(['./no/such/app-debug.apk'])).rejects.toMatchObject({
      name: 'AppFileError',
      code: 'app_file_invalid',
      path: './no/such/app-debug.apk',
      message: expect.stringMatching(
        /App file \.\/no\/such\/app-debug\.apk not found \(looked at \/.*\): build the app first/,
      ),
    });
    await expect(fail([apkFile('notes.txt', Buffer.from('not an apk'))])).rejects.toThrow(
      /notes\.txt is not an APK \(not an APK: not a zip file.*\): give the \.apk file your build made/,
    );
    const aab = apkFile(
      'app.aab',
      buildZip([{ name: 'base/manifest/AndroidManifest.xml', data: Buffer.from('x') }]),
    );
    await expect(fail([aab])).rejects.toThrow(/is an Android App Bundle \(\.aab\).*bundletool build-apks/);
    const split = apkFile('split.apk', buildTestApk({ package: 'com.example.s', split: 'config.arm64_v8a' }));
    await expect(fail([split])).rejects.toThrow(
      /split\.apk is a split APK of com\.example\.s \(config\.arm64_v8a\) and its base APK is missing/,
    );
    await expect(
      fail([SETTINGS_APK, apkFile('other.apk', buildTestApk({ package: SETTINGS }))]),
    ).rejects.toThrow(/are both the base APK of io\.appium\.settings/);
    expect((await t.api.get('/history')).body).toEqual([]);
  });

  it("turns the package manager's refusals into errors that say what to do, and hands the phone back", async () => {
    const t = await server();
    const refused = async (apps: string[], extra = {}) => {
      const error = await leasePhone(leaseOptions(t, { apps, ...extra })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AppInstallError);
      expect(await liveIds(t)).toEqual([]);
      return error as AppInstallError;
    };
    const x86 = await refused([
      apkFile('x86.apk', buildTestApk({ package: 'com.example.x86', nativeAbis: ['x86_64'] })),
    ]);
    expect(x86).toMatchObject({
      code: 'app_install_failed',
      packageName: 'com.example.x86',
      failure: 'INSTALL_FAILED_NO_MATCHING_ABIS',
    });
    expect(x86.message).toMatch(
      /^session \S+: Installing com\.example\.x86 \(.*x86\.apk\) failed: the package manager says "INSTALL_FAILED_NO_MATCHING_ABIS: Failed to extract native libraries, res=-113"\. .*x86\.apk has native code for x86_64 only, and this phone runs arm64-v8a\./,
    );
    const future = await refused([
      apkFile('future.apk', buildTestApk({ package: 'com.example.future', minSdk: 35 })),
    ]);
    expect(future.failure).toBe('INSTALL_FAILED_OLDER_SDK');
    expect(future.message).toContain('needs Android API 35 or newer and this phone runs API 34');

    // A profile phone with the real app: a build signed by someone else cannot replace it.
    {
      await using phone = await leasePhone(leaseOptions(t, { profile: true, apps: [SETTINGS_APK] }));
      expect(await installs(phone, SETTINGS)).toBe(1);
    }
    const forged = apkFile(
      'forged.apk',
      buildTestApk({ package: SETTINGS, versionCode: 9999, signer: 'someone else' }),
    );
    const incompatible = await refused([forged], { profile: true });
    expect(incompatible.failure).toBe('INSTALL_FAILED_UPDATE_INCOMPATIBLE');
    expect(incompatible.message).toContain(
      `"INSTALL_FAILED_UPDATE_INCOMPATIBLE: Existing package ${SETTINGS} signatures do not match newer version; ignoring!"`,
    );
    expect(incompatible.message).toContain(`Uninstall it first (phone.shell('pm uninstall ${SETTINGS}')`);
  });
});

describe('an app the virtual phone cannot run', () => {
  it('phone.launch() fails with app_not_runnable at once, and the phone shows why', async () => {
    const t = await server();
    const apk = apkFile(
      'notes.apk',
      buildTestApk({
        package: 'com.example.notes',
        label: 'Notes',
        activities: ['.Main'],
        launcher: true,
        signer: 'dev',
      }),
    );
    await using phone = await leasePhone(leaseOptions(t, { apps: [apk] }));
    // It installed and lists like any app.
    expect((await phone.apps()).map((a) => a.package)).toContain('com.example.notes');
    // A minute to come to the front: only a refusal (not a wait) ends this test in time.
    uiEngineOf(phone).configure({ actionTimeout: 60_000 });
    const error = await phone.launch('com.example.notes').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppNotRunnableError);
    expect(error).toMatchObject({ code: 'app_not_runnable', packageName: 'com.example.notes' });
    expect((error as Error).message).toMatch(
      /^com\.example\.notes can't run on this virtual phone: .*phoneleaseServer: \{ device: 'emulator' \}.*phonelease doctor/,
    );
    // The dialog is in the UI tree and on the service's frame.
    const tree = await uiEngineOf(phone).treeXml();
    expect(tree).toContain('text="Notes can&apos;t run on this virtual phone"');
    const card = /resource-id="android:id\/parentPanel"[^>]*bounds="\[(\d+),(\d+)\]\[(\d+),(\d+)\]"/.exec(
      tree,
    );
    expect(card).not.toBeNull();
    const [left, top, right] = card!.slice(1, 4).map(Number) as [number, number, number];
    const frame = PNG.sync.read((await phone.serviceScreenshot()).data);
    const at = (frame.width * (top + 6) + Math.round((left + right) / 2)) * 4;
    // The dialog's surface colour (#e6e0e9), where the launcher shows its wallpaper.
    expect([...frame.data.subarray(at, at + 3)]).toEqual([0xe6, 0xe0, 0xe9]);
  }, 20_000);
});

describe('--preinstall', () => {
  it('stops the server at its start for a file it cannot install, in words that say why', async () => {
    await expect(startServer({ preinstall: ['./build/missing.apk'], log: 'silent' })).rejects.toMatchObject({
      code: 'app_file_invalid',
      message: expect.stringContaining('App file ./build/missing.apk not found'),
    });
    const x86 = apkFile('x86.apk', buildTestApk({ package: 'com.example.x86', nativeAbis: ['x86_64'] }));
    await expect(startServer({ preinstall: [x86], log: 'silent' })).rejects.toThrow(
      "--preinstall: the virtual phone's package manager refuses com.example.x86: INSTALL_FAILED_NO_MATCHING_ABIS: Failed to extract native libraries, res=-113.",
    );
  });

  it('is read by phonelease server and host; --sdk and --avd need --device emulator', async () => {
    await expect(runServerCommand(['--avd', 'pixel'])).rejects.toThrow(
      new UsageError('--avd chooses what the emulators run: add --device emulator'),
    );
    await expect(
      runServerCommand(['--port', '0', '--data', tempDir(), '--preinstall', './nope.apk']),
    ).rejects.toBeInstanceOf(AppFileError);
  });
});
