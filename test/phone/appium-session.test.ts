/**
 * WebdriverIO -> Appium 3 -> appium-uiautomator2-driver 8.7 -> stock adb -> the virtual phone:
 * a session with the skip capabilities on a prepared phone, and one on a fresh phone where
 * the driver installs its APKs and starts Appium Settings itself.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { remote } from 'webdriverio';
import { buildTestApk } from '../support/apk-builder.js';
import { startAppium } from '../support/appium.js';
import type { AppiumServer } from '../support/appium.js';
import { freePort } from '../../src/util/ports.js';
import { decodeErrors, probe } from '../support/video.js';
import { startVirtualAdb } from '../support/virtual-adb.js';
import { ELEMENT_KEY } from '../../server/devices/virtual/uia2/index.js';
import type { VirtualAdb } from '../support/virtual-adb.js';

const APPIUM = 'node_modules/appium-uiautomator2-driver/node_modules';
const SERVER_APK = `${APPIUM}/appium-uiautomator2-server/apks/appium-uiautomator2-server-v10.6.6.apk`;
const TEST_APK = `${APPIUM}/appium-uiautomator2-server/apks/appium-uiautomator2-server-debug-androidTest.apk`;
const ID = 'com.phonelease.login:id';

let prepared: VirtualAdb;
let fresh: VirtualAdb;
let appium: AppiumServer;

beforeAll(async () => {
  prepared = await startVirtualAdb();
  // Both phones share one adb server, as a test machine would.
  fresh = await startVirtualAdb({ on: prepared.host! });
  appium = await startAppium(prepared.adbServerPort);
}, 120_000);

afterAll(async () => {
  await appium?.close();
  await fresh?.close();
  await prepared?.close();
}, 60_000);

/** The capabilities of a session on the prepared phone, whose driver APKs are installed. */
const PREPARED = {
  'appium:skipServerInstallation': true,
  'appium:skipDeviceInitialization': true,
  'appium:noReset': true,
};

async function session(v: VirtualAdb, extra: Record<string, unknown>) {
  return remote({
    hostname: '127.0.0.1',
    port: appium.port,
    path: '/',
    logLevel: 'warn',
    connectionRetryCount: 0,
    connectionRetryTimeout: 120_000,
    capabilities: {
      platformName: 'Android',
      'appium:automationName': 'UiAutomator2',
      'appium:udid': v.serial,
      // appium-adb passes -P explicitly (5037 unless told), so name the private adb server.
      'appium:adbPort': v.adbServerPort,
      'appium:systemPort': await freePort(),
      'appium:newCommandTimeout': 120,
      ...extra,
    },
  });
}

describe('Appium UiAutomator2 on a virtual phone', () => {
  it('creates a session with the skip capabilities and drives the login app', async () => {
    await prepared.adbOk(['install', '-r', SERVER_APK]);
    await prepared.adbOk(['install', '-r', TEST_APK]);
    await prepared.adbOk(['shell', 'am start -n com.phonelease.login/.LoginActivity']);
    const driver = await session(prepared, PREPARED).catch((error: unknown) => {
      throw new Error(`${String(error)}\n--- appium log ---\n${appium.logs().slice(-6000)}`);
    });
    try {
      expect(await driver.getWindowSize()).toEqual({ width: 720, height: 1280 });
      // find by id, send keys, get text
      const username = driver.$(await driver.findElement('id', `${ID}/username`));
      await username.click();
      await username.setValue('demo');
      expect(await username.getText()).toBe('demo');
      // find by accessibility id
      const password = driver.$('~password');
      await password.click();
      await password.setValue('secret');
      // find by xpath and click
      const button = driver.$(`//android.widget.Button[@resource-id="${ID}/login"]`);
      await button.click();
      // find by UiSelector text
      const welcome = driver.$('android=new UiSelector().text("Welcome, demo!")');
      expect(await welcome.isExisting()).toBe(true);
      expect(await welcome.getText()).toBe('Welcome, demo!');
      expect(await driver.$('~no-such-thing').isExisting()).toBe(false);
      const source = await driver.getPageSource();
      expect(source).toContain('Welcome, demo!');
      expect(source).toContain(`${ID}/username`);
      const png = PNG.sync.read(Buffer.from(await driver.takeScreenshot(), 'base64'));
      expect([png.width, png.height]).toEqual([720, 1280]);
    } finally {
      await driver.deleteSession();
    }
    // The driver closes the instrumentation stream: the server is gone afterwards.
    expect((await prepared.adb(['shell', 'pidof io.appium.uiautomator2.server'])).code).toBe(1);
  }, 180_000);

  it('creates a session on a fresh phone, installing the driver APKs itself', async () => {
    expect(await fresh.adbOk(['shell', 'pm list packages -3'])).toBe('');
    const driver = await session(fresh, {}).catch((error: unknown) => {
      throw new Error(`${String(error)}\n--- appium log ---\n${appium.logs().slice(-8000)}`);
    });
    try {
      const installed = await fresh.adbOk(['shell', 'pm list packages -3']);
      expect(installed.split('\n').filter(Boolean).sort()).toEqual([
        'package:io.appium.settings',
        'package:io.appium.uiautomator2.server',
        'package:io.appium.uiautomator2.server.test',
      ]);
      expect(await fresh.adbOk(['shell', 'dumpsys activity services io.appium.settings'])).toContain(
        'isForeground=true',
      );
      await fresh.adbOk(['shell', 'am start -n com.android.settings/.Settings']);
      const source = await driver.getPageSource();
      expect(source).toContain('com.android.settings');
      const title = driver.$('android=new UiSelector().text("Settings")');
      expect(await title.isExisting()).toBe(true);
      // What the driver asks of Appium Settings: its receivers answer as the app's do.
      await driver.setClipboard(Buffer.from('copied on the phone').toString('base64'), 'plaintext');
      expect(Buffer.from(await driver.getClipboard('plaintext'), 'base64').toString()).toBe(
        'copied on the phone',
      );
      await driver.setGeoLocation({ latitude: 52.52, longitude: 13.405, altitude: 34 });
      expect(await driver.getGeoLocation()).toEqual({ latitude: 52.52, longitude: 13.405, altitude: 34 });
      await driver.execute('mobile: refreshGpsCache', { timeoutMs: 10_000 });
      expect(await driver.execute('mobile: listSms', {})).toEqual({ items: [], total: 0 });
      expect(await driver.execute('mobile: getNotifications', {})).toEqual({ statusBarNotifications: [] });
      // An action of the app the phone does not model says so.
      const locale = await fresh.adb(['shell', 'am broadcast -a io.appium.settings.locale --es lang fr']);
      expect(locale.stderr).toContain(
        "am: the virtual phone does not model Appium Settings' receiver for io.appium.settings.locale",
      );
    } finally {
      await driver.deleteSession();
    }
  }, 180_000);

  it('manages apps and files through the driver (activate, current activity, terminate, push, pull)', async () => {
    // From the home screen: a stopped app in front gives way to the task behind it.
    await prepared.adbOk(['shell', 'input keyevent KEYCODE_HOME']);
    const driver = await session(prepared, PREPARED);
    try {
      await driver.activateApp('com.android.settings');
      expect(await driver.getCurrentPackage()).toBe('com.android.settings');
      expect(await driver.getCurrentActivity()).toBe('.Settings');
      expect(await driver.isAppInstalled('com.phonelease.login')).toBe(true);
      expect(await driver.isAppInstalled('com.example.absent')).toBe(false);
      expect(await driver.terminateApp('com.android.settings')).toBe(true);
      expect(await driver.getCurrentPackage()).toBe('com.android.launcher3');
      await driver.pushFile(
        '/sdcard/Download/from-appium.txt',
        Buffer.from('pushed by appium').toString('base64'),
      );
      expect(await prepared.adbOk(['shell', 'cat /sdcard/Download/from-appium.txt'])).toBe(
        'pushed by appium',
      );
      const pulled = await driver.pullFile('/sdcard/Download/from-appium.txt');
      expect(Buffer.from(pulled, 'base64').toString()).toBe('pushed by appium');
      // Appium 3 serves the device time as a mobile: command (adb shell date +%Y-%m-%dT%T%z).
      expect(await driver.execute('mobile: getDeviceTime', {})).toMatch(
        /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/,
      );
      // An installed app the phone cannot run: both ways of starting it fail, saying why.
      const apk = buildTestApk({
        package: 'com.example.notes',
        label: 'Notes',
        activities: ['.Main'],
        launcher: true,
      });
      await prepared.adbOk(['shell', `pm install -S ${apk.length}`], { input: apk });
      expect(await driver.isAppInstalled('com.example.notes')).toBe(true);
      await expect(driver.activateApp('com.example.notes')).rejects.toThrow(
        /com\.example\.notes can't run on this virtual phone/,
      );
      await expect(
        driver.execute('mobile: startActivity', { component: 'com.example.notes/.Main' }),
      ).rejects.toThrow(/com\.example\.notes can't run on this virtual phone/);
      expect(await driver.getCurrentPackage()).toBe('com.android.launcher3');
      await prepared.adbOk(['shell', 'input keyevent KEYCODE_BACK']);
    } catch (error) {
      throw new Error(`${String(error)}\n--- appium log ---\n${appium.logs().slice(-6000)}`);
    } finally {
      await driver.deleteSession();
    }
  }, 180_000);

  it("reports the system bars, an app's performance data and Bluetooth as Appium reads them (dumpsys, cmd)", async () => {
    const driver = await session(prepared, PREPARED);
    try {
      expect(await driver.getSystemBars()).toEqual({
        statusBar: { visible: true, x: 0, y: 0, width: 720, height: 48 },
        navigationBar: { visible: true, x: 0, y: 1184, width: 720, height: 96 },
      });
      await driver.execute('mobile: startActivity', { component: 'com.android.settings/.Settings' });
      const [memoryKeys, memory] = (await driver.getPerformanceData(
        'com.android.settings',
        'memoryinfo',
        2,
      )) as unknown as [string[], string[]];
      expect(Number(memory[memoryKeys.indexOf('totalPss')])).toBeGreaterThan(0);
      expect(await driver.getPerformanceData('com.android.settings', 'cpuinfo', 2)).toEqual([
        ['user', 'kernel'],
        ['0', '0'],
      ]);
      // The battery as a test forced it: the UiAutomator2 server's battery info and dumpsys agree.
      await prepared.adbOk(['shell', 'dumpsys battery set level 40; dumpsys battery set status 3']);
      expect(await driver.execute('mobile: batteryInfo')).toMatchObject({ level: 0.4, state: 3 });
      expect(await driver.getPerformanceData('com.android.settings', 'batteryinfo', 2)).toEqual([
        ['power'],
        ['40'],
      ]);
      await prepared.adbOk(['shell', 'dumpsys battery reset']);
      expect(await driver.execute('mobile: batteryInfo')).toMatchObject({ level: 1 });
      await driver.execute('mobile: bluetooth', { action: 'enable' });
      expect(await prepared.adbOk(['shell', 'settings get global bluetooth_on'])).toBe('1\n');
      await driver.execute('mobile: bluetooth', { action: 'disable' });
      expect(await prepared.adbOk(['shell', 'settings get global bluetooth_on'])).toBe('0\n');
    } finally {
      await driver.deleteSession();
    }
  });

  it('turns the display with setOrientation and setRotation, and the launcher refuses as a phone’s does', async () => {
    const driver = await session(prepared, PREPARED);
    // The rotation endpoints of Appium's protocol, which WebdriverIO has no command for.
    const rotation = async (body?: { x: number; y: number; z: number }) => {
      const r = await fetch(`http://127.0.0.1:${appium.port}/session/${driver.sessionId}/rotation`, {
        method: body ? 'POST' : 'GET',
        headers: { 'content-type': 'application/json' },
        ...(body && { body: JSON.stringify(body) }),
      });
      return { status: r.status, value: ((await r.json()) as { value: unknown }).value };
    };
    try {
      await prepared.adbOk(['shell', 'am start -n com.phonelease.login/.LoginActivity']);
      expect(await driver.getOrientation()).toBe('PORTRAIT');
      await driver.setOrientation('LANDSCAPE');
      expect(await driver.getOrientation()).toBe('LANDSCAPE');
      // Appium's LANDSCAPE is ROTATION_270, kept in the rotation lock's settings.
      expect(await rotation()).toEqual({ status: 200, value: { x: 0, y: 0, z: 270 } });
      expect(await prepared.adbOk(['shell', 'wm user-rotation'])).toBe('lock 3\n');
      expect(await driver.getWindowSize()).toEqual({ width: 1280, height: 720 });
      expect(await driver.getPageSource()).toMatch(/<hierarchy [^>]*rotation="3" width="1280" height="720"/);
      const shot = PNG.sync.read(Buffer.from(await driver.takeScreenshot(), 'base64'));
      expect({ width: shot.width, height: shot.height }).toEqual({ width: 1280, height: 720 });
      // The form is usable sideways: found, typed into, submitted.
      await driver.$(`id=${ID}/username`).setValue('demo');
      await driver.$(`id=${ID}/password`).setValue('secret');
      await driver.$(`id=${ID}/login`).click();
      expect(await driver.$(`id=${ID}/result`).getText()).toBe('Welcome, demo!');
      expect((await rotation({ x: 0, y: 0, z: 90 })).status).toBe(200);
      expect((await rotation()).value).toEqual({ x: 0, y: 0, z: 90 });
      const bad = await rotation({ x: 0, y: 0, z: 45 });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.value)).toContain('Rotation value of 45 degrees is not supported');
      expect((await rotation()).value).toEqual({ x: 0, y: 0, z: 90 });
      // The launcher keeps portrait: asked to turn, the display does not, and Appium says so.
      await driver.setOrientation('PORTRAIT');
      await prepared.adbOk(['shell', 'input keyevent HOME']);
      const refused = await driver.setOrientation('LANDSCAPE').catch((e: unknown) => e);
      expect(String(refused)).toContain('Screen rotation cannot be changed to ROTATION_270');
      expect(await driver.getOrientation()).toBe('PORTRAIT');
    } finally {
      await prepared.adb(['shell', 'wm user-rotation lock 0; am force-stop com.phonelease.login']);
      await driver.deleteSession();
    }
  });

  it('lists windows and displays, pinches, and says what it does not model, as the driver asks', async () => {
    const driver = await session(prepared, PREPARED);
    try {
      await prepared.adbOk(['shell', 'am start -n com.android.settings/.Settings']);
      const windows = (await driver.execute('mobile: listWindows', { skipScreenshots: true })) as {
        packageName: string;
        title: string;
        type: number;
        isActive: boolean;
      }[];
      expect(windows.map((w) => [w.packageName, w.title, w.type, w.isActive])).toEqual([
        ['com.android.systemui', 'Navigation bar', 3, false],
        ['com.android.systemui', 'Status bar', 3, false],
        ['com.android.settings', 'Settings', 1, true],
      ]);
      const front = (await driver.execute('mobile: listWindows', {
        filters: { packageName: 'com.android.*', isActive: true },
      })) as { screenshot: string }[];
      expect(front).toHaveLength(1);
      const shot = PNG.sync.read(Buffer.from(front[0]!.screenshot, 'base64'));
      expect([shot.width, shot.height]).toEqual([720, 1280]);
      expect(await driver.execute('mobile: listDisplays')).toMatchObject([
        { id: 0, isDefault: true, metrics: { widthPixels: 720, heightPixels: 1280, densityDpi: 320 } },
      ]);
      expect(await driver.execute('mobile: getDeclaredOrientation')).toBe('SCREEN_ORIENTATION_UNSPECIFIED');
      const list = await driver.findElement('-android uiautomator', 'new UiSelector().scrollable(true)');
      await driver.execute('mobile: pinchOpenGesture', { elementId: list[ELEMENT_KEY], percent: 0.5 });
      await driver.execute('mobile: pinchCloseGesture', {
        left: 0,
        top: 300,
        width: 720,
        height: 600,
        percent: 0.5,
      });
      const noArea = await driver
        .execute('mobile: pinchOpenGesture', { percent: 0.5 })
        .catch((e: unknown) => e);
      expect(String(noArea)).toContain('The pinch area coordinates must be provided if element is not set');
      const scheduled = await driver
        .execute('mobile: scheduleAction', {
          name: 'a',
          steps: [{ type: 'source', name: 's', payload: 'xml' }],
        })
        .catch((e: unknown) => e);
      expect(String(scheduled)).toContain('does not model scheduled actions');
    } finally {
      await prepared.adb(['shell', 'input keyevent HOME']);
      await driver.deleteSession();
    }
  });

  it('finds a toast as //android.widget.Toast for a few seconds after it appeared, as the server lists it', async () => {
    const driver = await session(prepared, PREPARED);
    try {
      await prepared.adbOk(['shell', 'am start -a android.settings.DEVICE_INFO_SETTINGS']);
      await driver.$('android=new UiSelector().text("Build number")').click();
      const toast = driver.$('//android.widget.Toast');
      expect(await toast.getText()).toBe('No need, you are already a developer.');
      expect(await driver.getPageSource()).toMatch(
        /<android.widget.Toast index="1" package="com.android.settings" class="android.widget.Toast" text="No need, you are already a developer."/,
      );
      // uiautomator dump sees the app's window only.
      expect(await prepared.adbOk(['exec-out', 'uiautomator dump /dev/tty'])).not.toContain(
        'already a developer',
      );
    } finally {
      await prepared.adb(['shell', 'input keyevent HOME']);
      await driver.deleteSession();
    }
  });

  it("locks and unlocks the phone with lock(), isLocked() and unlock() by PIN, both of Appium's ways", async () => {
    const driver = await session(prepared, PREPARED);
    try {
      expect(await driver.isLocked()).toBe(false);
      // No lock screen: lock() turns the screen off; unlock() wakes it.
      await driver.lock();
      expect(await driver.isLocked()).toBe(true);
      await driver.unlock();
      expect(await driver.isLocked()).toBe(false);
      await prepared.adbOk(['shell', 'locksettings set-pin 2580']);
      for (const strategy of ['locksettings', 'uiautomator']) {
        await driver.lock();
        expect(await driver.isLocked()).toBe(true);
        await driver.execute('mobile: unlock', { key: '2580', type: 'pin', strategy });
        expect(await driver.isLocked()).toBe(false);
      }
      // The locksettings way cleared the PIN and set it again.
      expect(await prepared.adbOk(['shell', 'locksettings verify --old 2580'])).toBe(
        'Lock credential verified successfully\n',
      );
    } finally {
      await prepared.adb(['shell', 'locksettings clear --old 2580']);
      await driver.deleteSession();
    }
  });

  it('lists Chrome’s DevTools as the WEBVIEW_chrome context while it runs, found as Appium finds it (/proc/net/unix)', async () => {
    const driver = await session(prepared, PREPARED);
    try {
      await prepared.adbOk(['shell', 'am force-stop com.android.chrome']);
      expect(await driver.getContexts()).toEqual(['NATIVE_APP']);
      await prepared.adbOk([
        'shell',
        'am start -a android.intent.action.VIEW -d about:blank com.android.chrome',
      ]);
      await vi.waitFor(
        async () => expect(await driver.getContexts()).toEqual(['NATIVE_APP', 'WEBVIEW_chrome']),
        {
          timeout: 30_000,
          interval: 500,
        },
      );
    } catch (error) {
      throw new Error(`${String(error)}\n--- appium log ---\n${appium.logs().slice(-6000)}`);
    } finally {
      await prepared.adb(['shell', 'am force-stop com.android.chrome']);
      await driver.deleteSession();
    }
  }, 180_000);

  it('records the screen with startRecordingScreen / stopRecordingScreen (screenrecord over adb)', async () => {
    const driver = await session(prepared, PREPARED);
    const dir = mkdtempSync(join(tmpdir(), 'phonelease-appium-video-'));
    try {
      await driver.startRecordingScreen({ timeLimit: 60 });
      await driver.activateApp('com.android.settings');
      await driver.activateApp('com.phonelease.login');
      const video = await driver.stopRecordingScreen();
      const file = join(dir, 'appium.mp4');
      writeFileSync(file, Buffer.from(video, 'base64'));
      const { stream, duration } = await probe(file);
      expect(stream).toMatchObject({ codec_name: 'h264', width: 720, height: 1280 });
      expect(duration).toBeGreaterThan(0);
      expect(await decodeErrors(file)).toBe('');
      // Its bugReport option is screenrecord's --bugreport (the information page first).
      await driver.startRecordingScreen({ timeLimit: 60, bugReport: true, videoSize: '360x640' });
      await driver.activateApp('com.android.settings');
      const report = join(dir, 'bugreport.mp4');
      writeFileSync(report, Buffer.from(await driver.stopRecordingScreen(), 'base64'));
      expect((await probe(report)).stream).toMatchObject({ codec_name: 'h264', width: 360, height: 640 });
      expect(await decodeErrors(report)).toBe('');
      // The driver stopped screenrecord and deleted its file on the phone.
      expect((await prepared.adb(['shell', 'pgrep screenrecord'])).code).toBe(1);
      expect(await prepared.adbOk(['shell', 'ls /sdcard'])).not.toMatch(/\.mp4/);
    } catch (error) {
      throw new Error(`${String(error)}\n--- appium log ---\n${appium.logs().slice(-6000)}`);
    } finally {
      await driver.deleteSession();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
