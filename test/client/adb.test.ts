/**
 * Driving a leased phone over ADB: the in-process client (@yume-chan/adb through the
 * gateway) for shell, push, pull, install and screenshots, and the stock /usr/bin/adb
 * through the lease's local tunnel, on a private adb server port.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdbError, PhoneSessionClient, leasePhone, runAdb, type Lease } from '../../src/index.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { leaseOptions, tempDir } from './helpers.js';
import { quietPort } from '../support/ports.js';

const APK = fileURLToPath(
  new URL(
    '../../node_modules/appium-uiautomator2-driver/node_modules/io.appium.settings/apks/settings_apk-debug.apk',
    import.meta.url,
  ),
);

let t: TestServer;
let phone: Lease;
let adbPort: number;
beforeAll(async () => {
  t = await startTestServer({ bootMs: 50 });
  adbPort = await quietPort();
  phone = await leasePhone(leaseOptions(t, { adb: { serverPort: adbPort } }));
});
afterAll(async () => {
  await phone?.end();
  await runAdb(['kill-server'], { serverPort: adbPort }).catch(() => undefined);
  await t?.close();
});

/** Width and height from a PNG's IHDR chunk. */
const pngSize = (png: Buffer) => ({ w: png.readUInt32BE(16), h: png.readUInt32BE(20) });

describe('in-process ADB', () => {
  it('runs shell commands with separate stdout, stderr and the exit code (shell v2)', async () => {
    expect(await phone.shell('echo hi; echo oops >&2; exit 3')).toEqual({
      stdout: 'hi\n',
      stderr: 'oops\n',
      exitCode: 3,
    });
    expect((await phone.shell('false')).exitCode).toBe(1);
    expect(await phone.shell('getprop ro.build.version.sdk')).toEqual({
      stdout: '34\n',
      stderr: '',
      exitCode: 0,
    });
    // Quoting reaches the phone's shell untouched.
    expect((await phone.shell(`echo 'a  b' "c;d"`)).stdout).toBe('a  b c;d\n');
  });

  it('pushes and pulls 5 MB byte for byte, from bytes and from a file', async () => {
    const data = randomBytes(5 * 1024 * 1024);
    await phone.push(data, '/sdcard/Download/five.bin');
    expect((await phone.pull('/sdcard/Download/five.bin')).equals(data)).toBe(true);
    expect((await phone.shell('stat -c %s /sdcard/Download/five.bin')).stdout.trim()).toBe(
      String(data.length),
    );

    const file = join(tempDir(), 'note.txt');
    writeFileSync(file, 'hello phone\n');
    await phone.push(file, '/data/local/tmp/note.txt');
    expect((await phone.shell('cat /data/local/tmp/note.txt')).stdout).toBe('hello phone\n');
    await expect(phone.pull('/data/local/tmp/does-not-exist')).rejects.toBeInstanceOf(AdbError);
  });

  it('installs a real APK; the package manager then lists it', async () => {
    expect((await phone.shell('pm list packages')).stdout).not.toContain('package:io.appium.settings\n');
    await phone.install(APK);
    expect((await phone.shell('pm list packages')).stdout).toContain('package:io.appium.settings\n');
    await expect(phone.install(Buffer.from('not an apk'))).rejects.toThrow(/Installing the APK failed/);
  });

  it('takes a screenshot with the phone screencap, the size of the screen', async () => {
    const png = await phone.screenshot();
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(pngSize(png)).toEqual(phone.session.screen);
  });

  it('is refused once ADB access is revoked', async () => {
    const other = await leasePhone(leaseOptions(t));
    try {
      await new PhoneSessionClient({ baseUrl: t.url, apiKey: t.account.key }).revokeAdb(other.id);
      const error = await other.shell('echo hi').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AdbError);
      expect((error as AdbError).code).toMatch(/^adb_(denied|unavailable)$/);
    } finally {
      await other.end();
    }
  });
});

describe('stock adb through the local tunnel', () => {
  it('adbSerial() connects /usr/bin/adb; adb -s SERIAL shell works; end() disconnects and closes the tunnel', async () => {
    const second = await leasePhone(leaseOptions(t, { adb: { serverPort: adbPort } }));
    const serial = await second.adbSerial();
    expect(serial).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(await second.adbSerial()).toBe(serial);
    const r = await runAdb(['-s', serial, 'shell', 'echo', 'hi'], { serverPort: adbPort });
    expect(r).toMatchObject({ stdout: 'hi\n', code: 0 });
    expect((await runAdb(['devices'], { serverPort: adbPort })).stdout).toContain(`${serial}\tdevice`);

    const caps = await second.appiumCapabilities();
    expect(caps).toMatchObject({
      platformName: 'Android',
      'appium:automationName': 'UiAutomator2',
      'appium:udid': serial,
      'appium:adbPort': adbPort,
      'appium:systemPort': expect.any(Number),
      'appium:newCommandTimeout': 120,
    });
    // A fresh phone has no UiAutomator2 server yet: Appium must install it.
    expect(caps).not.toHaveProperty('appium:skipServerInstallation');
    expect(
      (await second.appiumCapabilities({ skipInstallation: true }))['appium:skipDeviceInitialization'],
    ).toBe(true);

    await second.end();
    expect((await runAdb(['devices'], { serverPort: adbPort })).stdout).not.toContain(serial);
    const port = Number(serial.split(':')[1]);
    const refused = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(false);
      });
      s.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);
  });

  it('reports a failed adb connect with adb’s own words (adb exits 0 even then)', async () => {
    const { adbConnect } = await import('../../src/index.js');
    const dead = await quietPort();
    const error = await adbConnect(`127.0.0.1:${dead}`, { serverPort: adbPort }, 5000).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AdbError);
    expect((error as Error).message).toMatch(
      /could not connect to 127\.0\.0\.1:\d+: .*(failed|refused|unable)/i,
    );
  });
});
