/**
 * `screenrecord` on the virtual phone through the stock adb client, as Android 14's: a real
 * H.264 MP4 of the screen that ffprobe reads, its options and messages, and stopping it the
 * way tools stop a phone's (find it with pgrep, kill -2, kill -0 until gone).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADB } from '../support/adb.js';
import { decodeErrors, decodeRgb, probe, run } from '../support/video.js';
import { startVirtualAdb, type VirtualAdb } from '../support/virtual-adb.js';

let v: VirtualAdb;
let dir: string;

beforeAll(async () => {
  v = await startVirtualAdb();
  dir = mkdtempSync(join(tmpdir(), 'phonelease-screenrecord-'));
});

afterAll(async () => {
  await v?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const shell = (command: string) => v.adb(['shell', command]);

async function pullTo(remote: string, name: string): Promise<string> {
  const local = join(dir, name);
  await v.adbOk(['pull', remote, local]);
  return local;
}

/** A long-running `adb shell ...`: its exit once it has one. */
function startAdb(args: string[]): { child: ChildProcess; exited: Promise<number | null> } {
  const child = spawn(ADB, ['-P', String(v.adbServerPort), '-s', v.serial, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.resume();
  child.stderr!.resume();
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, exited };
}

/** The pids of running screenrecord processes, as appium-adb finds them. */
async function screenrecordPids(): Promise<number[]> {
  const r = await shell('pgrep screenrecord');
  return r.stdout.trim().split('\n').filter(Boolean).map(Number);
}

/** The pid of the one screenrecord running, once it runs. */
async function theScreenrecord(): Promise<number> {
  return vi.waitFor(
    async () => {
      const pids = await screenrecordPids();
      expect(pids).toHaveLength(1);
      return pids[0]!;
    },
    { timeout: 10_000 },
  );
}

describe('screenrecord through stock adb', () => {
  it('records the screen for --time-limit seconds into an MP4 ffprobe reads as H.264 at the screen’s size', async () => {
    const r = await shell('screenrecord --time-limit 2 /sdcard/a.mp4');
    expect(r).toMatchObject({ code: 0, stdout: '', stderr: '' });
    const file = await pullTo('/sdcard/a.mp4', 'a.mp4');
    const { stream, duration } = await probe(file);
    expect(stream).toMatchObject({ codec_name: 'h264', width: 720, height: 1280 });
    // Two seconds, and the frames still being encoded then (more on a loaded machine).
    expect(duration).toBeGreaterThan(1.5);
    expect(duration).toBeLessThan(4);
    expect(await decodeErrors(file)).toBe('');
  });

  it('says what it does with --verbose, in screenrecord’s words, and scales to --size', async () => {
    const r = await shell('screenrecord --verbose --time-limit 1 --size 360x640 --bit-rate 4M /sdcard/v.mp4');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.slice(0, 4)).toEqual([
      'Time limit set to 1 seconds',
      'Display is 720x1280 @60.00fps (orientation=ROTATION_0), layerStack=0',
      'Configuring recorder for 360x640 video/avc at 4.00Mbps',
      'Content area is 360x640 at offset x=0 y=0',
    ]);
    expect(r.stdout).toContain('Time limit reached\n');
    expect(r.stdout).toMatch(
      /Encoder stopping; recorded \d+ frames in [12] seconds\nStopping encoder and muxer\n/,
    );
    expect(r.stdout).toContain(
      'Executing: /system/bin/am broadcast -a android.intent.action.MEDIA_SCANNER_SCAN_FILE -d file:///sdcard/v.mp4\n',
    );
    expect(r.stdout).toContain('Broadcast completed: result=0\n');
    const { stream } = await probe(await pullTo('/sdcard/v.mp4', 'v.mp4'));
    expect(stream).toMatchObject({ codec_name: 'h264', width: 360, height: 640 });
  });

  it('adds the information page and a time stamp on every frame with --bugreport, as a phone’s does', async () => {
    const r = await shell('screenrecord --verbose --bugreport --time-limit 1 --size 360x640 /sdcard/b.mp4');
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout.split('\n').slice(0, 5)).toEqual([
      'Time limit set to 1 seconds',
      'Display is 720x1280 @60.00fps (orientation=ROTATION_0), layerStack=0',
      'Configuring recorder for 360x640 video/avc at 20.00Mbps',
      'Bugreport overlay created',
      'Content area is 360x640 at offset x=0 y=0',
    ]);
    const file = await pullTo('/sdcard/b.mp4', 'b.mp4');
    expect(await decodeErrors(file)).toBe('');
    // The page comes first, a quarter of a second before the recording's second.
    expect((await probe(file)).duration).toBeGreaterThan(1.2);
    const [page, screen] = await decodeRgb(file, 360, 640);
    const grey = (frame: Uint8Array, x: number, y: number) => {
      const [r, g, b] = frame.subarray((y * 360 + x) * 3, (y * 360 + x) * 3 + 3);
      return Math.abs(r! - g!) < 8 && Math.abs(g! - b!) < 8 ? r! : -1;
    };
    // Grey frame, black page; then the phone's screen, which is not black there.
    expect(Math.abs(grey(page!, 1, 320) - 128)).toBeLessThan(10);
    expect(grey(page!, 180, 620)).toBeLessThan(10);
    expect(grey(page!, 180, 620)).toBeGreaterThanOrEqual(0);
    expect(grey(screen!, 180, 620)).not.toBe(grey(page!, 180, 620));
    // --show-frame-time alone: no page, the screen from the first frame.
    const stamped = await shell('screenrecord --show-frame-time --time-limit 1 --size 360x640 /sdcard/t.mp4');
    expect(stamped.code).toBe(0);
    const [firstStamped] = await decodeRgb(await pullTo('/sdcard/t.mp4', 't.mp4'), 360, 640);
    expect(Math.abs(grey(firstStamped!, 1, 320) - 128)).toBeGreaterThan(10);
  });

  it('is stopped the way appium-adb stops it: pgrep, kill -2, kill -0 until gone; the file is finished', async () => {
    const recording = startAdb(['shell', 'screenrecord', '--time-limit', '30', '/sdcard/stopped.mp4']);
    try {
      const pid = await theScreenrecord();
      // The file appears once the encoder runs, as Appium checks before it goes on.
      await vi.waitFor(async () => expect((await shell('test -f /sdcard/stopped.mp4')).code).toBe(0), {
        timeout: 10_000,
      });
      await v.adbOk(['shell', 'input keyevent KEYCODE_HOME']);
      expect((await shell(`kill -2 ${pid}`)).code).toBe(0);
      await vi.waitFor(async () => expect((await shell(`kill -0 ${pid}`)).code).toBe(1), { timeout: 10_000 });
      expect(await recording.exited).toBe(0);
      const { stream, duration } = await probe(await pullTo('/sdcard/stopped.mp4', 'stopped.mp4'));
      expect(stream).toMatchObject({ codec_name: 'h264', width: 720, height: 1280 });
      expect(duration).toBeGreaterThan(0);
    } finally {
      recording.child.kill('SIGKILL');
    }
  });

  it('finishes the file when the adb client goes away (SIGHUP) and leaves it unfinished when killed', async () => {
    const hungUp = startAdb(['shell', 'screenrecord /sdcard/hup.mp4']);
    await vi.waitFor(async () => expect(await screenrecordPids()).toHaveLength(1), { timeout: 10_000 });
    hungUp.child.kill('SIGKILL');
    await vi.waitFor(async () => expect(await screenrecordPids()).toHaveLength(0), { timeout: 10_000 });
    expect((await probe(await pullTo('/sdcard/hup.mp4', 'hup.mp4'))).stream.codec_name).toBe('h264');

    const killed = startAdb(['shell', 'screenrecord /sdcard/killed.mp4']);
    try {
      const pid = await theScreenrecord();
      await v.adbOk(['shell', 'input keyevent KEYCODE_HOME']);
      // The first frame is written before anything is finished.
      await vi.waitFor(
        async () =>
          expect(Number(await v.adbOk(['shell', 'stat -c %s /sdcard/killed.mp4']))).toBeGreaterThan(100),
        { timeout: 10_000 },
      );
      expect((await shell(`kill -9 ${pid}`)).code).toBe(0);
      expect(await killed.exited).toBe(137);
      const file = await pullTo('/sdcard/killed.mp4', 'killed.mp4');
      const r = await run('ffprobe', ['-v', 'error', file]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('moov atom not found');
    } finally {
      killed.child.kill('SIGKILL');
    }
  });

  it('answers bad usage with screenrecord’s messages and exit codes, and writes nothing', async () => {
    expect(await shell('screenrecord')).toMatchObject({
      code: 2,
      stderr: 'Must specify output file (see --help).\n',
    });
    expect(await shell('screenrecord --frobnicate /sdcard/x.mp4')).toMatchObject({
      code: 2,
      stderr: "screenrecord: unrecognized option '--frobnicate'\n",
    });
    expect(await shell('screenrecord --size 720by1280 /sdcard/x.mp4')).toMatchObject({
      code: 2,
      stderr: "Invalid size '720by1280', must be width x height\n",
    });
    expect(await shell('screenrecord --size 0x1280 /sdcard/x.mp4')).toMatchObject({
      code: 2,
      stderr: 'Invalid size 0x1280, width and height may not be zero\n',
    });
    expect(await shell('screenrecord --bit-rate 5k /sdcard/x.mp4')).toMatchObject({
      code: 2,
      stderr: 'Unrecognized value: 5k\n',
    });
    expect(await shell('screenrecord --bit-rate 300M /sdcard/x.mp4')).toMatchObject({
      code: 2,
      stderr: 'Bit rate 300000000bps outside acceptable range [100000,200000000]\n',
    });
    expect(await shell('screenrecord --time-limit soon /sdcard/x.mp4')).toMatchObject({
      code: 2,
      stderr: 'Error parsing time limit argument\n',
    });
    expect(await shell('screenrecord --time-limit -1 /sdcard/x.mp4')).toMatchObject({
      code: 2,
      stderr: 'Time limit -1s outside acceptable range [0,4294967295] seconds\n',
    });
    const rotate = await shell('screenrecord --rotate /sdcard/x.mp4');
    expect(rotate.code).toBe(2);
    expect(rotate.stderr).toContain('--rotate is not supported on the virtual phone');
    expect((await shell('test -e /sdcard/x.mp4')).code).toBe(1);
  });

  it('prints its usage with the current defaults to stderr for --help, exit 0', async () => {
    const r = await shell('screenrecord --bit-rate 4M --time-limit 30 --help');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^Usage: screenrecord \[options\] <filename>\n/);
    expect(r.stderr).toContain("e.g. '4000000' is equivalent to '4M'.  Default 4Mbps.");
    expect(r.stderr).toContain('Default is 30. Set to 0');
  });

  it('opens its output as the shell user: a place it may not write is refused with the system’s reason', async () => {
    expect(await shell('screenrecord /system/a.mp4')).toMatchObject({
      code: 1,
      stderr: "Unable to open '/system/a.mp4': Read-only file system\n",
    });
    expect(await shell('screenrecord /data/a.mp4')).toMatchObject({
      code: 1,
      stderr: "Unable to open '/data/a.mp4': Permission denied\n",
    });
    expect(await shell('screenrecord /sdcard/no/such/dir/a.mp4')).toMatchObject({
      code: 1,
      stderr: "Unable to open '/sdcard/no/such/dir/a.mp4': No such file or directory\n",
    });
    expect(await shell('screenrecord --size 721x1280 /sdcard/odd.mp4')).toMatchObject({
      code: 234,
      stderr: 'ERROR: unable to configure video/avc codec at 721x1280 (err=-22)\n',
    });
    expect((await shell('test -e /sdcard/odd.mp4')).code).toBe(1);
  });
});
