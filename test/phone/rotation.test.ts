/**
 * Turning the display, as tools do it through stock adb: the rotation lock in
 * Settings.System (`settings put system user_rotation`, `wm user-rotation`), what the
 * display then is (screencap's size, `uiautomator dump`'s rotation and bounds, taps in the
 * turned coordinates, dumpsys window and display), the launcher and lock screen that keep
 * portrait as a phone's do, and a recording that goes on through a turn.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ADB } from '../support/adb.js';
import { decodeErrors, decodeRgb } from '../support/video.js';
import { startVirtualAdb } from '../support/virtual-adb.js';
import type { VirtualAdb } from '../support/virtual-adb.js';

let v: VirtualAdb;
let work: string;

beforeAll(async () => {
  v = await startVirtualAdb();
  work = mkdtempSync(join(tmpdir(), 'phonelease-rotation-'));
});

afterAll(async () => {
  await v?.close();
  rmSync(work, { recursive: true, force: true });
});

afterEach(async () => {
  await shell('wm user-rotation lock 0; input keyevent HOME');
});

const shell = (command: string) => v.adb(['shell', command]);
const out = async (command: string) => (await shell(command)).stdout;

/**
 * Starts `adb shell COMMAND` and goes on with it running: `printed` settles once its stdout
 * has matched `pattern` (it fails if the command ends first, or after `ms`), `done` with its
 * exit and output.
 */
function startShell(command: string, pattern: RegExp, ms = 15_000) {
  const child = spawn(ADB, ['-P', String(v.adbServerPort), '-s', v.serial, 'shell', command], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let check: () => void = () => undefined;
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    check();
  });
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code) => {
      check();
      resolve({ code, stdout, stderr });
    }),
  );
  const printed = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no ${pattern} within ${ms} ms: ${stdout}${stderr}`)),
      ms,
    );
    check = () => {
      if (pattern.test(stdout)) resolve();
      else if (child.exitCode === null && child.signalCode === null) return;
      else reject(new Error(`\`${command}\` ended before printing ${pattern}: ${stdout}${stderr}`));
      clearTimeout(timer);
    };
  });
  return { child, printed, done };
}

/** The size of the PNG `screencap -p` gives now. */
async function screenSize(): Promise<{ width: number; height: number }> {
  const png = PNG.sync.read((await v.adb(['exec-out', 'screencap -p'])).raw);
  return { width: png.width, height: png.height };
}

/** The dump's rotation and the bounds of a node by resource id. */
async function dump(): Promise<{ rotation: string; bounds: (id: string) => number[] | null }> {
  await shell('uiautomator dump /sdcard/rotation.xml');
  const xml = await out('cat /sdcard/rotation.xml');
  return {
    rotation: /<hierarchy rotation="(\d)"/.exec(xml)?.[1] ?? '',
    bounds: (id) => {
      const m = new RegExp(`resource-id="${id}"[^>]*bounds="\\[(\\d+),(\\d+)\\]\\[(\\d+),(\\d+)\\]"`).exec(
        xml,
      );
      return m ? m.slice(1).map(Number) : null;
    },
  };
}

describe('the rotation lock', () => {
  it('turns the display with user_rotation while rotation is locked, and the app lays out sideways', async () => {
    await shell('am start -n com.phonelease.login/.LoginActivity');
    expect(await screenSize()).toEqual({ width: 720, height: 1280 });
    expect(await out('wm user-rotation')).toBe('lock 0\n');

    await shell('settings put system user_rotation 1');
    expect(await screenSize()).toEqual({ width: 1280, height: 720 });
    const sideways = await dump();
    expect(sideways.rotation).toBe('1');
    // Every field of the form is on the turned screen, inside its bounds.
    for (const id of ['username', 'password', 'login']) {
      const b = sideways.bounds(`com.phonelease.login:id/${id}`);
      expect(b, id).not.toBeNull();
      expect(b![2]).toBeLessThanOrEqual(1280);
      expect(b![3]).toBeLessThanOrEqual(720);
    }
    // A tap in the turned coordinates lands on the field there.
    const [l, t, r, b] = sideways.bounds('com.phonelease.login:id/username')!;
    await shell(`input tap ${(l! + r!) / 2} ${(t! + b!) / 2}`);
    await shell('input text demo');
    expect(await out('uiautomator dump /sdcard/r.xml >/dev/null; cat /sdcard/r.xml')).toMatch(
      /text="demo" resource-id="com.phonelease.login:id\/username"/,
    );
    // wm size keeps the natural size; dumpsys tells the rotation and the turned size.
    expect(await out('wm size')).toBe('Physical size: 720x1280\n');
    const window = await out('dumpsys window displays');
    expect(window).toContain('cur=1280x720');
    expect(window).toContain('mRotation=1 mDeferredRotationPauseCount=0');
    expect(window).toContain('mUserRotationMode=USER_ROTATION_LOCKED mUserRotation=ROTATION_90');
    expect(await out('dumpsys display')).toContain('orientation=1, logicalFrame=Rect(0, 0 - 1280, 720)');

    // The sensor decides once rotation is free: a phone lying still reads upright.
    await shell('settings put system accelerometer_rotation 1');
    expect(await screenSize()).toEqual({ width: 720, height: 1280 });
    expect(await out('wm user-rotation')).toBe('free\n');
  });

  it('answers wm user-rotation as Android does, and refuses what it cannot take', async () => {
    await shell('am start -n com.phonelease.login/.LoginActivity');
    expect(await shell('wm user-rotation lock 3')).toMatchObject({ code: 0, stdout: '' });
    expect(await out('wm user-rotation')).toBe('lock 3\n');
    expect(await out('settings get system user_rotation')).toBe('3\n');
    expect((await dump()).rotation).toBe('3');
    // `lock` alone locks the rotation the display has (upright once free: the phone's
    // sensor reads upright, as an emulator's does); cmd window is the same command.
    await shell('cmd window user-rotation lock');
    expect(await out('cmd window user-rotation')).toBe('lock 3\n');
    await shell('wm user-rotation free; wm user-rotation lock');
    expect(await out('wm user-rotation')).toBe('lock 0\n');
    await shell('wm user-rotation lock 3');
    // Bad input: Android's messages and status, and nothing changes.
    expect(await shell('wm user-rotation lock 4')).toMatchObject({
      code: 255,
      stderr: 'Error: Rotation argument must be -1 or a valid rotation constant.\n',
    });
    expect(await shell('wm user-rotation lock x')).toMatchObject({
      code: 255,
      stderr: 'Error: For input string: "x"\n',
    });
    expect(await shell('wm user-rotation sideways')).toMatchObject({
      code: 255,
      stderr: 'Error: argument needs to be either -d, free or lock.\n',
    });
    expect(await out('wm user-rotation')).toBe('lock 3\n');
    // What the phone does not model says so.
    expect(await shell('wm fixed-to-user-rotation enabled')).toMatchObject({
      code: 255,
      stderr: 'wm: fixed-to-user-rotation: not modeled by the virtual phone\n',
    });
  });

  it('keeps the launcher and the lock screen upright, as a phone does, and turns again for the app', async () => {
    await shell('wm user-rotation lock 1');
    await shell('input keyevent HOME');
    expect(await screenSize()).toEqual({ width: 720, height: 1280 });
    await shell('am start -n com.android.settings/.Settings');
    expect(await screenSize()).toEqual({ width: 1280, height: 720 });
    await shell('locksettings set-disabled false');
    try {
      await shell('input keyevent POWER; input keyevent WAKEUP');
      expect(await screenSize()).toEqual({ width: 720, height: 1280 });
      await shell('wm dismiss-keyguard');
      expect(await screenSize()).toEqual({ width: 1280, height: 720 });
    } finally {
      await shell('locksettings set-disabled true');
    }
  });
});

describe('a recording through a turn', () => {
  it('keeps the size it started with and fits the turned screen into it', async () => {
    await shell('am start -n com.phonelease.login/.LoginActivity');
    // It says where the screen lies in the video once it records: its first frame is taken.
    const recording = startShell(
      'screenrecord --time-limit 2 --verbose /sdcard/turn.mp4',
      /^Content area is \d+x\d+ at offset /m,
    );
    await recording.printed.catch((error: unknown) => {
      recording.child.kill();
      throw error;
    });
    await shell('settings put system user_rotation 1; input text sideways');
    const done = await recording.done;
    expect(done.code).toBe(0);
    expect(done.stdout).toContain('Display is 720x1280 @60.00fps (orientation=ROTATION_0), layerStack=0');
    const file = join(work, 'turn.mp4');
    await v.adbOk(['pull', '/sdcard/turn.mp4', file]);
    expect(await decodeErrors(file)).toBe('');
    const frames = await decodeRgb(file, 720, 1280);
    expect(frames.length).toBeGreaterThan(1);
    // Mean brightness of a band of rows: the turned screen (1280x720) is fitted into the
    // upright video as 720x405, centred, black above and below.
    const band = (frame: Uint8Array, top: number, rows: number) => {
      let sum = 0;
      for (let i = top * 720 * 3; i < (top + rows) * 720 * 3; i++) sum += frame[i]!;
      return sum / (rows * 720 * 3);
    };
    const first = frames[0]!;
    const last = frames.at(-1)!;
    expect(band(first, 100, 200)).toBeGreaterThan(40);
    expect(band(last, 100, 200)).toBeLessThan(20);
    expect(band(last, 1280 - 300, 200)).toBeLessThan(20);
    expect(band(last, 500, 200)).toBeGreaterThan(40);
    // Recording sideways starts at the turned size.
    const sideways = await shell('screenrecord --time-limit 1 --verbose /sdcard/side.mp4');
    expect(sideways.stdout).toContain(
      'Display is 1280x720 @60.00fps (orientation=ROTATION_90), layerStack=0',
    );
    expect(sideways.stdout).toContain('Configuring recorder for 1280x720 video/avc');
  });
});
