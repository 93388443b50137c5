/**
 * The battery through stock adb, as tests written for phones drive it: `dumpsys battery
 * set|unplug|reset|get` and `cmd battery`, which freeze BatteryService's state until a
 * reset, with the status bar and Appium's battery info following.
 */
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startVirtualAdb, type VirtualAdb } from '../support/virtual-adb.js';

let v: VirtualAdb;
beforeAll(async () => {
  v = await startVirtualAdb();
});
afterAll(() => v?.close());

const sh = (command: string) => v.adb(['shell', command]);

/** The right half of the status bar, where the battery is drawn. */
async function batteryPixels(): Promise<Buffer> {
  const png = PNG.sync.read((await v.adb(['exec-out', 'screencap -p'])).raw);
  const rows: Buffer[] = [];
  for (let y = 0; y < 48; y++)
    rows.push(png.data.subarray((y * png.width + 360) * 4, (y + 1) * png.width * 4));
  return Buffer.concat(rows);
}

describe('the battery', () => {
  it('takes forced values until a reset, and dumpsys says its updates stopped', async () => {
    await v.adbOk(['shell', 'settings put system status_bar_show_battery_percent 1']);
    const full = await batteryPixels();
    expect(await v.adbOk(['shell', 'dumpsys battery'])).not.toContain('UPDATES STOPPED');

    expect(await sh('dumpsys battery set level 5')).toMatchObject({ code: 0, stdout: '', stderr: '' });
    const low = await v.adbOk(['shell', 'dumpsys battery']);
    expect(low).toMatch(
      /^Current Battery Service state:\n {2}\(UPDATES STOPPED -- use 'reset' to restart\)\n/,
    );
    expect(low).toContain('\n  level: 5\n');
    expect(low).toContain('\n  USB powered: true\n');
    expect(await batteryPixels()).not.toEqual(full);

    expect((await sh('dumpsys battery unplug')).code).toBe(0);
    const unplugged = await v.adbOk(['shell', 'dumpsys battery']);
    expect(unplugged).toContain('  AC powered: false\n  USB powered: false\n  Wireless powered: false\n');
    expect(unplugged).toContain('\n  level: 5\n');
    expect(await v.adbOk(['shell', 'cmd battery get level'])).toBe('5\n');
    expect(await v.adbOk(['shell', 'cmd battery get usb'])).toBe('false\n');
    // PowerManagerService sees the same battery: unplugged, at 5%, which is low.
    expect(await v.adbOk(['shell', 'dumpsys power'])).toContain(
      '  mIsPowered=false\n  mPlugType=0\n  mBatteryLevel=5\n  mBatteryLevelLow=true\n',
    );
    expect(await v.adbOk(['shell', 'cmd battery set status 3; cmd battery get status'])).toBe('3\n');
    // -f forces the broadcast and prints its sequence number.
    expect(await v.adbOk(['shell', 'cmd battery set -f ac 1'])).toMatch(/^\d+\n$/);
    expect(await v.adbOk(['shell', 'cmd battery get ac'])).toBe('true\n');

    expect(await sh('dumpsys battery reset')).toMatchObject({ code: 0, stdout: '' });
    const reset = await v.adbOk(['shell', 'dumpsys battery']);
    expect(reset).not.toContain('UPDATES STOPPED');
    expect(reset).toContain('\n  level: 100\n');
    expect(reset).toContain('\n  USB powered: true\n');
    expect(await v.adbOk(['shell', 'dumpsys power'])).toContain(
      '  mIsPowered=true\n  mPlugType=2\n  mBatteryLevel=100\n  mBatteryLevelLow=false\n',
    );
    expect(await batteryPixels()).toEqual(full);
  });

  it('answers bad input as BatteryService does, changing nothing', async () => {
    const before = await v.adbOk(['shell', 'dumpsys battery']);
    expect(await sh('cmd battery set level lots')).toMatchObject({ code: 255, stdout: 'Bad value: lots\n' });
    expect(await sh('cmd battery set level')).toMatchObject({ code: 255, stdout: 'No value specified\n' });
    expect(await sh('cmd battery set')).toMatchObject({ code: 255, stdout: 'No property specified\n' });
    expect(await sh('cmd battery get')).toMatchObject({ code: 255, stdout: 'No property specified\n' });
    expect(await sh('cmd battery set charge 3')).toMatchObject({
      code: 0,
      stdout: 'Unknown set option: charge\n',
    });
    expect(await sh('cmd battery get charge')).toMatchObject({
      code: 0,
      stdout: 'Unknown get option: charge\n',
    });
    expect(await sh('cmd battery drain')).toMatchObject({ code: 255, stderr: 'Unknown command: drain\n' });
    // dumpsys reports what the service printed and exits 0 whatever it said.
    expect(await sh('dumpsys battery set level lots')).toMatchObject({
      code: 0,
      stdout: 'Bad value: lots\n',
    });
    expect(await v.adbOk(['shell', 'dumpsys battery'])).toBe(before);
    const help = await v.adbOk(['shell', 'cmd battery help']);
    expect(help).toContain(
      '  set [-f] [ac|usb|wireless|dock|status|level|temp|present|counter|invalid] <value>\n',
    );
  });

  it('says forcing doze is not modeled instead of printing the state as if it had worked', async () => {
    for (const command of [
      'dumpsys deviceidle force-idle',
      'cmd deviceidle force-idle deep',
      'cmd deviceidle unforce',
    ]) {
      const r = await sh(command);
      expect(r.code, command).not.toBe(0);
      expect(r.stderr, command).toContain('does not model');
      expect(r.stdout, command).toBe('');
    }
    expect(await v.adbOk(['shell', 'dumpsys deviceidle'])).toContain('mState=ACTIVE');
  });

  it('says posting a notification is not modeled instead of seeming to post it', async () => {
    const r = await sh('cmd notification post -t Title tag Body');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('not model');
  });
});
