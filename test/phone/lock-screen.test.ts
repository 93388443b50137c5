/**
 * The screen's power and the lock screen, as tools drive them through stock adb: POWER,
 * SLEEP and WAKEUP, `locksettings` (Android's messages and statuses), the keyguard with its
 * PIN bouncer, `wm dismiss-keyguard`, and what dumpsys window / power report, which is how
 * appium-adb's isScreenLocked() and Appium's lock() and unlock() decide.
 */
import { PNG } from 'pngjs';
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import { startVirtualAdb } from '../support/virtual-adb.js';
import type { VirtualAdb } from '../support/virtual-adb.js';

let v: VirtualAdb;

beforeAll(async () => {
  v = await startVirtualAdb();
});

afterAll(async () => {
  await v?.close();
});

const shell = (command: string) => v.adb(['shell', command]);
const out = async (command: string) => (await shell(command)).stdout;

/** appium-adb's isScreenLocked(), on the same dumpsys output. */
async function screenLocked(): Promise<boolean> {
  const window = await out('dumpsys window');
  const power = await out('dumpsys power');
  return (
    ['mShowingLockscreen=true', 'mDreamingLockscreen=true'].some((x) => window.includes(x)) ||
    [/KeyguardStateMonitor[\n\s]+mIsShowing=true/, /\s+mInputRestricted=true/].every((x) => x.test(window)) ||
    /mScreenOnFully=false/.test(window) ||
    /^[\s\w]+wakefulness[^=]*=Dozing$/im.test(power) ||
    /\s+screenState=SCREEN_STATE_OFF/i.test(window)
  );
}

/** The resource ids and texts of the current UI tree. */
async function tree(): Promise<string> {
  await shell('uiautomator dump /sdcard/lock-dump.xml');
  return out('cat /sdcard/lock-dump.xml');
}

afterEach(async () => {
  // Whatever a test left: awake, unlocked, no credential, no lock screen.
  const power = await out('dumpsys power');
  if (power.includes('mWakefulness=Asleep')) await shell('input keyevent WAKEUP');
  for (const old of ['', '2580', 'secret1']) await shell(`locksettings clear${old ? ` --old ${old}` : ''}`);
  await shell('locksettings set-disabled true');
  await shell('wm dismiss-keyguard');
  expect(await screenLocked()).toBe(false);
});

describe('locksettings', () => {
  it('keeps a credential, asks for it with --old, and answers as Android does', async () => {
    expect(await shell('locksettings get-disabled')).toMatchObject({ code: 0, stdout: 'true\n' });
    expect((await out('locksettings help')).split('\n')[0]).toBe('lockSettings service commands:');
    // Too short: refused, and nothing changes.
    expect(await shell('locksettings set-pin 12')).toMatchObject({
      code: 255,
      stdout: "New credential doesn't satisfy admin policies: TOO_SHORT(4)\n",
    });
    expect(await shell('locksettings verify')).toMatchObject({
      code: 0,
      stdout: 'Lock credential verified successfully\n',
    });
    expect(await shell('locksettings set-pin 2580')).toMatchObject({
      code: 0,
      stdout: "Pin set to '2580'\n",
    });
    expect(await shell('locksettings verify')).toMatchObject({
      code: 255,
      stdout: "Old password '' didn't match\n",
    });
    expect(await shell('locksettings verify --old 1111')).toMatchObject({
      code: 255,
      stdout: "Old password '1111' didn't match\n",
    });
    expect(await shell('cmd lock_settings verify --old 2580')).toMatchObject({
      code: 0,
      stdout: 'Lock credential verified successfully\n',
    });
    // Whether the lock screen is disabled needs no credential: a PIN means it is not.
    expect(await out('locksettings get-disabled')).toBe('false\n');
    expect(await shell('locksettings set-password secret1')).toMatchObject({ code: 255 });
    expect(await shell('locksettings set-password --old 2580 secret1')).toMatchObject({
      code: 0,
      stdout: "Password set to 'secret1'\n",
    });
    expect(await shell('locksettings clear --old secret1')).toMatchObject({
      code: 0,
      stdout: 'Lock credential cleared\n',
    });
    expect(await shell('locksettings clear --old secret1')).toMatchObject({
      code: 255,
      stdout: 'Old password provided but user has no password\n',
    });
    expect(await out('locksettings get-disabled')).toBe('true\n');
  });
});

describe('Settings', () => {
  it('names the screen lock the phone has under Security & privacy', async () => {
    const screenLock = async () => {
      await shell('am start -a android.settings.SECURITY_SETTINGS');
      const xml = await tree();
      return /text="Screen lock"[\s\S]*?text="([^"]+)"/.exec(xml)?.[1];
    };
    expect(await screenLock()).toBe('None');
    await shell('locksettings set-disabled false');
    expect(await screenLock()).toBe('Swipe');
    await shell('locksettings set-pin 2580');
    expect(await screenLock()).toBe('PIN');
    await shell('locksettings clear --old 2580; locksettings set-password secret1');
    expect(await screenLock()).toBe('Password');
    await shell('input keyevent HOME');
  });
});

describe('the screen and the lock screen', () => {
  it('turns the screen off with POWER (black, deaf to touches) and on with WAKEUP, with no lock screen by default', async () => {
    expect(await screenLocked()).toBe(false);
    expect(await out('dumpsys display')).toContain('\n  mScreenState=ON\n');
    await shell('input keyevent POWER');
    const asleep = await out('dumpsys power');
    expect(asleep).toContain('mWakefulness=Asleep');
    expect(asleep).toContain('mHoldingDisplaySuspendBlocker=false');
    expect(await out('dumpsys window')).toContain('screenState=SCREEN_STATE_OFF');
    const display = await out('dumpsys display');
    expect(display).toContain('\n  mScreenState=OFF\n');
    expect(display).toContain(', state OFF, committedState OFF');
    expect(await screenLocked()).toBe(true);
    const shot = PNG.sync.read((await v.adb(['exec-out', 'screencap -p'])).raw);
    expect(shot.data.every((byte, i) => i % 4 === 3 || byte === 0)).toBe(true);
    // A tap on a screen that is off opens nothing.
    await shell('input tap 100 400');
    await shell('input keyevent WAKEUP');
    expect(await out('dumpsys power')).toContain('mWakefulness=Awake');
    expect(await out('dumpsys power')).toContain('mHoldingDisplaySuspendBlocker=true');
    expect(await out('dumpsys display')).toContain('\n  mScreenState=ON\n');
    // The lock screen is disabled ("None"): waking up shows what ran, not a keyguard.
    expect(await screenLocked()).toBe(false);
    expect(await tree()).not.toContain('com.android.systemui:id/keyguard');
  });

  it('locks with a PIN: the keyguard, its bouncer, a wrong PIN refused, the right one unlocks', async () => {
    await shell('am start -n com.android.settings/.Settings');
    await shell('locksettings set-pin 2580');
    await shell('input keyevent POWER');
    await shell('input keyevent POWER');
    // Awake, and locked: SystemUI's window has the focus, the keyguard's clock shows.
    expect(await out('dumpsys power')).toContain('mWakefulness=Awake');
    const window = await out('dumpsys window');
    expect(window).toContain('mShowingLockscreen=true');
    expect(window).toMatch(/mCurrentFocus=Window\{\w+ u0 NotificationShade\}/);
    expect(await screenLocked()).toBe(true);
    expect(await tree()).toContain('resource-id="com.android.systemui:id/keyguard_indication_text"');
    expect(await out('dumpsys trust')).toContain('deviceLocked=true');
    // Keys do not reach the app behind it.
    await shell('input keyevent HOME');
    expect(await screenLocked()).toBe(true);
    // A secure keyguard is not dismissed: its bouncer asks for the PIN.
    await shell('wm dismiss-keyguard');
    let ui = await tree();
    expect(ui).toContain('text="Enter your PIN" resource-id="com.android.systemui:id/keyguard_message_area"');
    expect(ui).toContain('resource-id="com.android.systemui:id/pinEntry"');
    for (const d of '0123456789')
      expect(ui).toContain(`text="${d}" resource-id="com.android.systemui:id/digit_text"`);
    await shell('input text 1111');
    await shell('input keyevent ENTER');
    ui = await tree();
    expect(ui).toContain('text="Wrong PIN"');
    expect(await screenLocked()).toBe(true);
    // Digits as key events, as Appium's PIN unlock sends them: the right PIN unlocks.
    for (const d of '2580') await shell(`input keyevent ${7 + Number(d)}`);
    expect(await screenLocked()).toBe(false);
    expect(await out('dumpsys trust')).toContain('deviceLocked=false');
    expect(await tree()).toContain('package="com.android.settings"');
  });

  it('dismisses a swipe lock by swiping up or with wm dismiss-keyguard', async () => {
    await shell('locksettings set-disabled false');
    expect(await out('locksettings get-disabled')).toBe('false\n');
    await shell('input keyevent SLEEP');
    await shell('input keyevent WAKEUP');
    expect(await screenLocked()).toBe(true);
    expect(await tree()).toContain('text="Swipe up to unlock"');
    await shell('input swipe 360 1000 360 300 200');
    expect(await screenLocked()).toBe(false);
    await shell('input keyevent POWER');
    await shell('input keyevent POWER');
    expect(await screenLocked()).toBe(true);
    await shell('wm dismiss-keyguard');
    expect(await screenLocked()).toBe(false);
  });
});
