/**
 * Playwright's own Android support (`_android` from playwright-core) on a virtual phone,
 * through stock adb, as its users run it against a real phone: list the device, run shell
 * commands, take a screenshot, and launch Chrome with its command-line file and its own
 * DevTools socket. Chrome reads /data/local/tmp/chrome-command-line only as the debug app on
 * a user build (`am set-debug-app --persistent com.android.chrome`), as on a Pixel.
 */
import { readFileSync } from 'node:fs';
import { PNG } from 'pngjs';
import { _android, type AndroidDevice } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVirtualAdb, type VirtualAdb } from '../support/virtual-adb.js';

const SETTINGS_APK =
  'node_modules/appium-uiautomator2-driver/node_modules/io.appium.settings/apks/settings_apk-debug.apk';

let v: VirtualAdb;
let device: AndroidDevice;

beforeAll(async () => {
  v = await startVirtualAdb();
  const devices = await _android.devices({ port: v.adbServerPort });
  device = devices.find((d) => d.serial() === v.serial)!;
});

afterAll(async () => {
  await device?.close();
  await v?.close();
});

const shell = async (command: string) => (await v.adbOk(['shell', command])).trim();

/** How many pixels of a PNG have exactly this colour. */
function pixelsOf(png: Buffer, rgb: [number, number, number]): number {
  const image = PNG.sync.read(png);
  let n = 0;
  for (let i = 0; i < image.data.length; i += 4)
    if (image.data[i] === rgb[0] && image.data[i + 1] === rgb[1] && image.data[i + 2] === rgb[2]) n++;
  return n;
}

describe("Playwright's _android on a virtual phone", () => {
  it('lists the phone with its model, runs shell commands, pushes, installs and takes a screenshot', async () => {
    expect(device).toBeDefined();
    expect(device.model()).toBe('Pixel 8');
    expect((await device.shell('getprop ro.build.version.release')).toString().trim()).toBe('14');
    await device.push(Buffer.from('pushed by _android'), '/data/local/tmp/pushed.txt');
    expect(await shell('cat /data/local/tmp/pushed.txt')).toBe('pushed by _android');
    // installApk streams the APK into `cmd package install -S SIZE` over a shell stream.
    await device.installApk(readFileSync(SETTINGS_APK));
    expect(await shell('pm path io.appium.settings')).toMatch(/^package:\/data\/app\/.*\/base\.apk$/);
    const png = PNG.sync.read(await device.screenshot());
    expect([png.width, png.height]).toEqual([720, 1280]);
  });

  it("ignores Chrome's command-line file while Chrome is not the debug app, and says so in the log", async () => {
    await shell('am clear-debug-app');
    await shell(
      'am force-stop com.android.chrome; echo "_ --remote-debugging-socket-name=mine_devtools_remote" > /data/local/tmp/chrome-command-line',
    );
    await shell('am start -W -a android.intent.action.VIEW -d about:blank com.android.chrome');
    await expect
      .poll(() => shell('cat /proc/net/unix | grep -c devtools_remote || true'), { timeout: 15_000 })
      .toBe('1');
    const sockets = await shell('cat /proc/net/unix | grep devtools_remote');
    expect(sockets).toContain('@chrome_devtools_remote');
    expect(sockets).not.toContain('mine_devtools_remote');
    expect(await shell('logcat -d -s chromium')).toContain(
      '/data/local/tmp/chrome-command-line not read: Chrome reads it only as the debug app on a user build (adb shell am set-debug-app --persistent com.android.chrome)',
    );
    await shell('rm /data/local/tmp/chrome-command-line; am force-stop com.android.chrome');
  });

  it('launches Chrome with its own DevTools socket once Chrome is the debug app, and drives a page the screen shows', async () => {
    await shell('am set-debug-app --persistent com.android.chrome');
    expect(await shell('settings get global debug_app')).toBe('com.android.chrome');
    expect(await shell('logcat -d -s ActivityManager | tail -1')).toMatch(
      /Force stopping com\.android\.chrome appid=\d+ user=-1: set debug app$/,
    );

    const context = await device.launchBrowser();
    try {
      const page = await context.newPage();
      await page.setContent(
        '<body style="margin:0;background:#20a060"><button onclick="this.textContent=\'tapped\'">tap me</button></body>',
      );
      await page.click('button');
      expect(await page.textContent('button')).toBe('tapped');
      // Chrome for Android's user agent, and the page on the phone's own screen.
      expect(await page.evaluate(() => navigator.userAgent)).toContain('Android 14; Pixel 8');
      await expect
        .poll(async () => pixelsOf(await device.screenshot(), [0x20, 0xa0, 0x60]), { timeout: 15_000 })
        .toBeGreaterThan(100_000);
    } finally {
      await context.close();
    }

    // The file was read by Chrome's process, and the switch gave the socket its name.
    const log = await shell('logcat -d -s cr_CommandLine chromium');
    expect(log).toMatch(
      /I cr_CommandLine: COMMAND-LINE FLAGS: \[_, --disable-fre, --no-default-browser-check, --remote-debugging-socket-name=playwright_\w+_devtools_remote, .*\] \(from \/data\/local\/tmp\/chrome-command-line\)/,
    );
    expect(log).toMatch(/DevTools on @playwright_\w+_devtools_remote/);
    expect(log).toMatch(/W chromium: not applied by the virtual phone's Chrome .*--disable-popup-blocking/);

    // Playwright's own check: a --user-agent in launchBrowser's args, quoted either way.
    for (const arg of ["--user-agent='I am Foo'", '--user-agent="I am Foo"']) {
      const withAgent = await device.launchBrowser({ args: [arg] });
      try {
        const page = await withAgent.newPage();
        expect(await page.evaluate(() => navigator.userAgent), arg).toBe('I am Foo');
      } finally {
        await withAgent.close();
      }
    }
  });

  it('set-debug-app refuses to wait for a debugger, and clear-debug-app clears the setting', async () => {
    const waiting = await v.adb(['shell', 'am set-debug-app -w com.android.chrome']);
    expect(waiting.code).toBe(255);
    expect(waiting.stderr).toBe(
      'am: set-debug-app -w: waiting for a debugger is not modeled by the virtual phone\n',
    );
    const unknown = await v.adb(['shell', 'am set-debug-app --forever com.android.chrome']);
    expect(unknown).toMatchObject({ code: 255, stderr: 'Error: Unknown option: --forever\n' });
    const missing = await v.adb(['shell', 'am set-debug-app --persistent']);
    expect(missing.code).toBe(255);
    expect(missing.stderr).toContain(
      'java.lang.IllegalArgumentException: Argument expected after "--persistent"',
    );
    await shell('am clear-debug-app');
    expect(await shell('settings get global debug_app')).toBe('null');
    expect(await shell('settings get global wait_for_debugger')).toBe('0');
  });
});
