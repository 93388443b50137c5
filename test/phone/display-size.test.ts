/**
 * Sizing the display as tools do it through stock adb: `wm size` and `wm density` force the
 * size and density the window manager gives apps, and screencap, `uiautomator dump`, taps and
 * dumpsys follow, until `reset`; bad input gets the window manager's answers and changes
 * nothing.
 */
import { PNG } from 'pngjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startVirtualAdb } from '../support/virtual-adb.js';
import type { VirtualAdb } from '../support/virtual-adb.js';

let v: VirtualAdb;

beforeAll(async () => {
  v = await startVirtualAdb();
});

afterAll(async () => {
  await v?.close();
});

afterEach(async () => {
  await shell('wm size reset; wm density reset; wm user-rotation lock 0; input keyevent HOME');
});

const shell = (command: string) => v.adb(['shell', command]);
const out = async (command: string) => (await shell(command)).stdout;

/** The size of the PNG `screencap -p` gives now. */
async function screenSize(): Promise<{ width: number; height: number }> {
  const png = PNG.sync.read((await v.adb(['exec-out', 'screencap -p'])).raw);
  return { width: png.width, height: png.height };
}

/** The bounds of the Login app's node `id` in a dump taken now: [left, top, right, bottom]. */
async function loginBounds(id: string): Promise<number[]> {
  const xml = await out('uiautomator dump /sdcard/size.xml >/dev/null; cat /sdcard/size.xml');
  const m = new RegExp(
    `resource-id="com.phonelease.login:id/${id}"[^>]*bounds="\\[(\\d+),(\\d+)\\]\\[(\\d+),(\\d+)\\]"`,
  ).exec(xml);
  expect(m, `${id} in ${xml.slice(0, 300)}`).not.toBeNull();
  return m!.slice(1).map(Number);
}

describe('wm size', () => {
  it('gives apps the forced size: screencap, the dump and taps are in it, until reset', async () => {
    await shell('am start -W -n com.phonelease.login/.LoginActivity');
    const [, , panelRight] = await loginBounds('username');

    expect(await shell('wm size 1080x1920')).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect(await out('wm size')).toBe('Physical size: 720x1280\nOverride size: 1080x1920\n');
    expect(await screenSize()).toEqual({ width: 1080, height: 1920 });
    // The app laid out again across the wider display (same density: the field is wider).
    const [l, t, r, b] = await loginBounds('username');
    expect(r).toBeGreaterThan(panelRight!);
    expect(r).toBeLessThanOrEqual(1080);
    // A tap is in the forced display's pixels: it lands on the field where the dump says.
    await shell(`input tap ${(l! + r!) / 2} ${(t! + b!) / 2}; input text sized`);
    expect(await out('uiautomator dump /sdcard/typed.xml >/dev/null; cat /sdcard/typed.xml')).toMatch(
      /text="sized" resource-id="com.phonelease.login:id\/username"/,
    );
    const window = await out('dumpsys window displays');
    expect(window).toContain('init=720x1280 320dpi base=1080x1920 320dpi cur=1080x1920');
    expect(await out('dumpsys display')).toContain('logicalFrame=Rect(0, 0 - 1080, 1920)');

    // Turned, the forced size turns with the display.
    await shell('wm user-rotation lock 1');
    expect(await screenSize()).toEqual({ width: 1920, height: 1080 });
    await shell('wm user-rotation lock 0');

    await shell('wm size reset');
    expect(await out('wm size')).toBe('Physical size: 720x1280\n');
    expect(await screenSize()).toEqual({ width: 720, height: 1280 });
    expect((await loginBounds('username'))[2]).toBe(panelRight);
  });

  it('reads dp and px, clears the override with the panel’s own size, and keeps a forced size within bounds', async () => {
    // 360dp at the panel's 320 dpi are 720 pixels: the panel's size, so no override.
    await shell('wm size 600x1000');
    await shell('wm size 360dpx640dp');
    expect(await out('wm size')).toBe('Physical size: 720x1280\n');
    // The size splits at its first x: a width in px does not read (a height does).
    expect(await shell('wm size 540pxx960')).toMatchObject({
      code: 255,
      stderr: 'Error: bad number java.lang.NumberFormatException: For input string: "540p"\n',
    });
    await shell('wm size 540x960px');
    expect(await out('wm size')).toBe('Physical size: 720x1280\nOverride size: 540x960\n');
    expect(await screenSize()).toEqual({ width: 540, height: 960 });
    // Between 200 pixels and three times the panel's long side, as the window manager keeps it.
    await shell('wm size 10x99999');
    expect(await out('wm size')).toBe('Physical size: 720x1280\nOverride size: 200x3840\n');
    // A negative side clears the override, as `reset` does.
    await shell('wm size -1x500');
    expect(await out('wm size')).toBe('Physical size: 720x1280\n');
    // dp are of the display's base density: a forced one counts.
    await shell('wm density 480; wm size 360dpx640dp');
    expect(await out('wm size')).toBe('Physical size: 720x1280\nOverride size: 1080x1920\n');
  });

  it('refuses bad sizes with the window manager’s words and changes nothing', async () => {
    await shell('wm size 600x1000');
    for (const [arg, stderr] of [
      ['1080', 'Error: bad size 1080\n'],
      ['x1920', 'Error: bad size x1920\n'],
      ['1080x', 'Error: bad size 1080x\n'],
      ['widexhigh', 'Error: bad number java.lang.NumberFormatException: For input string: "wide"\n'],
      ['1080x19.5', 'Error: bad number java.lang.NumberFormatException: For input string: "19.5"\n'],
      // The number is read without its unit, as parseDimension reads it.
      ['dpx100', 'Error: bad number java.lang.NumberFormatException: For input string: ""\n'],
      ['1.5dpx9', 'Error: bad number java.lang.NumberFormatException: For input string: "1.5"\n'],
      [
        '99999999999x1920',
        'Error: bad number java.lang.NumberFormatException: For input string: "99999999999"\n',
      ],
    ]) {
      expect(await shell(`wm size ${arg}`), arg).toMatchObject({ code: 255, stdout: '', stderr });
    }
    expect(await out('wm size')).toBe('Physical size: 720x1280\nOverride size: 600x1000\n');
    expect(await screenSize()).toEqual({ width: 600, height: 1000 });
  });
});

describe('wm density', () => {
  it('lays apps out at the forced density, and the panel’s density clears it', async () => {
    await shell('am start -W -n com.phonelease.login/.LoginActivity');
    const [, top, , bottom] = await loginBounds('username');

    await shell('wm density 480');
    expect(await out('wm density')).toBe('Physical density: 320\nOverride density: 480\n');
    // The same size in pixels, each dp 1.5 of them: the field is half as tall again.
    expect(await screenSize()).toEqual({ width: 720, height: 1280 });
    const [, denseTop, , denseBottom] = await loginBounds('username');
    expect(denseBottom! - denseTop!).toBeCloseTo(1.5 * (bottom! - top!), -1);
    expect(await out('dumpsys window displays')).toContain('base=720x1280 480dpi');

    await shell('wm density 320');
    expect(await out('wm density')).toBe('Physical density: 320\n');
    expect(await loginBounds('username')).toEqual([expect.any(Number), top, expect.any(Number), bottom]);
  });

  it('refuses a density that is not a number or below 72, and changes nothing', async () => {
    await shell('wm density 240');
    expect(await shell('wm density 71')).toMatchObject({
      code: 255,
      stderr: 'Error: density must be >= 72\n',
    });
    expect(await shell('wm density high')).toMatchObject({
      code: 255,
      stderr: 'Error: bad number java.lang.NumberFormatException: For input string: "high"\n',
    });
    // Android takes any density; past 1280 dpi the virtual phone would hang drawing, and says so.
    expect(await shell('wm density 100000')).toMatchObject({
      code: 255,
      stderr: 'wm: density 100000: not modeled by the virtual phone (it draws at most 1280 dpi)\n',
    });
    expect(await out('wm density')).toBe('Physical density: 320\nOverride density: 240\n');
  });
});
