/**
 * A lease's evidence over its own ADB connection, on the virtual phone of a real server:
 * the screen recorded with the phone's screenrecord (pieces past its time limit joined into
 * one MP4, deleted on the phone; or discarded unfinished), and the whole log followed into a capped file with the
 * Login app's crash named.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, leasePhone } from '../../src/index.js';
import { decodeErrors, packets, probe } from '../support/video.js';
import { serverPerTest } from '../support/server.js';
import { leaseOptions, tempDir } from './helpers.js';

const server = serverPerTest();

describe('phone.startRecording() / stopRecording()', () => {
  it('records the screen into one MP4, joining the pieces past the piece length, and cleans up the phone', async () => {
    const t = await server({ bootMs: 100 });
    await using phone = await leasePhone(leaseOptions(t));
    const dir = tempDir('phonelease-rec-');
    const started = Date.now();
    await phone.startRecording({ pieceSeconds: 1 });
    await expect(phone.startRecording()).rejects.toThrow(/already recording its screen; call stopRecording/);
    await phone.shell('am start -W -n com.phonelease.login/.LoginActivity');
    // Longer than a piece: screenrecord reaches its limit and the next piece starts.
    await expect
      .poll(
        async () =>
          (await phone.shell('ls /sdcard')).stdout.match(/phonelease-recording-\w+-\d+\.mp4/g)?.length,
        {
          timeout: 30_000,
        },
      )
      .toBeGreaterThanOrEqual(2);
    await phone.press('Home');
    const result = await phone.stopRecording(join(dir, 'screen.mp4'));
    const elapsed = (Date.now() - started) / 1000;
    expect(result.pieces).toBeGreaterThanOrEqual(2);
    const { stream, duration } = await probe(result.path);
    expect(stream).toMatchObject({ codec_name: 'h264', width: 720, height: 1280 });
    expect(duration).toBeCloseTo(result.durationSeconds, 1);
    // The pieces follow each other: every full one lasts its second (less the moment the next
    // screenrecord takes to start), and the last one's frames come after them.
    expect(duration).toBeGreaterThan(result.pieces - 1);
    expect((await packets(result.path)).at(-1)!.pts).toBeGreaterThanOrEqual(result.pieces - 1 - 0.01);
    expect(duration).toBeLessThan(elapsed + 0.5);
    expect(await decodeErrors(result.path)).toBe('');
    expect((await phone.shell('ls /sdcard')).stdout).not.toContain('phonelease-recording');
    await expect(phone.stopRecording(join(dir, 'again.mp4'))).rejects.toBeInstanceOf(ConfigurationError);
  });

  it('discards a recording without finishing it: nothing stays on the phone, and the next one records', async () => {
    const t = await server({ bootMs: 100 });
    await using phone = await leasePhone(leaseOptions(t));
    await phone.startRecording();
    // Whole screens changing as the recording is thrown away: frames are still to encode.
    await phone.shell('am start -W -n com.phonelease.login/.LoginActivity');
    await phone.press('Home');
    await phone.discardRecording();
    expect((await phone.shell('ls /sdcard')).stdout).not.toContain('phonelease-recording');
    expect((await phone.shell('pidof screenrecord')).exitCode).toBe(1);
    await expect(phone.discardRecording()).rejects.toThrow(/not recording its screen; call startRecording/);
    await phone.startRecording();
    await phone.shell('am start -W -n com.android.settings/.Settings');
    const { path } = await phone.stopRecording(join(tempDir('phonelease-rec-'), 'next.mp4'));
    expect((await probe(path)).stream).toMatchObject({ codec_name: 'h264', width: 720, height: 1280 });
    expect(await decodeErrors(path)).toBe('');
  });

  it('ends the recording where screenrecord dies, never starting one after another, and says why', async () => {
    const t = await server({ bootMs: 100 });
    const options = leaseOptions(t);
    await using phone = await leasePhone(options);
    await phone.startRecording();
    const pid = (await phone.shell('pidof screenrecord')).stdout.trim();
    expect(pid).toMatch(/^\d+$/);
    await phone.shell(`kill -9 ${pid}`);
    // The lease hears that its piece died, and says the recording stopped there ...
    await expect
      .poll(() => options.logger.lines.find((l) => l.includes('the screen recording stopped')))
      .toMatch(/screenrecord \(\/sdcard\/phonelease-recording-\w+-1\.mp4\) exited with status 137/);
    // ... instead of starting another screenrecord (which, failing too, would start the next).
    expect((await phone.shell('pidof screenrecord')).exitCode).toBe(1);
    await expect(phone.stopRecording(join(tempDir('phonelease-rec-'), 'cut.mp4'))).rejects.toThrow(
      /the phone recorded no finished video: screenrecord \(\S+\) exited with status 137 before it finished its file/,
    );
    expect((await phone.shell('ls /sdcard')).stdout).not.toContain('phonelease-recording');
    // The next recording starts afresh.
    await phone.startRecording();
    const { path } = await phone.stopRecording(join(tempDir('phonelease-rec-'), 'next.mp4'));
    expect((await probe(path)).stream).toMatchObject({ codec_name: 'h264' });
  });

  it('refuses options screenrecord cannot take before anything starts', async () => {
    const t = await server({ bootMs: 100 });
    await using phone = await leasePhone(leaseOptions(t));
    await expect(phone.startRecording({ pieceSeconds: 0 })).rejects.toThrow(
      /pieceSeconds must be a whole number/,
    );
    await expect(phone.startRecording({ size: { width: 721, height: 1280 } })).rejects.toThrow(
      /screenrecord did not start \(exit status 234\): ERROR: unable to configure video\/avc codec at 721x1280/,
    );
    expect((await phone.shell('ls /sdcard')).stdout).not.toContain('phonelease-recording');
    // The refused start left nothing behind: a new one works.
    await phone.startRecording({ size: { width: 360, height: 640 } });
    const dir = tempDir('phonelease-rec-');
    const { path } = await phone.stopRecording(join(dir, 'small.mp4'));
    expect((await probe(path)).stream).toMatchObject({ width: 360, height: 640 });
  });
});

describe('phone.startLogcat() / stopLogcat()', () => {
  it('keeps the whole log from its start, nothing before it, and names the Login app’s crash', async () => {
    const t = await server({ bootMs: 100 });
    await using phone = await leasePhone(leaseOptions(t));
    const path = join(tempDir('phonelease-logcat-'), 'logcat.txt');
    // An earlier test's last line, most likely in the same second as the start: logcat's
    // -T counts whole seconds, and the capture must still leave it out.
    await phone.shell("log -t PhoneleaseTest 'the test before ends'");
    await phone.startLogcat(path);
    await phone.shell("log -t PhoneleaseTest 'the test starts'");
    await phone.launch('com.phonelease.login');
    await phone.getById('username').fill('crash');
    await phone.getById('password').fill('anything');
    await phone.getById('login').click();
    await expect.poll(async () => (await phone.shell('pidof com.phonelease.login')).exitCode).toBe(1);
    const result = await phone.stopLogcat();
    const log = readFileSync(path, 'utf8');
    expect(log).toMatch(/^\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\s+\d+\s+\d+ I PhoneleaseTest: the test starts$/m);
    expect(log).toContain('E AndroidRuntime: FATAL EXCEPTION: main');
    expect(log).not.toContain('the test before ends');
    expect(result).toMatchObject({ path, linesCut: 0, bytes: Buffer.byteLength(log) });
    expect(result.crashes).toEqual([
      expect.objectContaining({
        kind: 'java',
        package: 'com.phonelease.login',
        summary:
          'java.lang.IllegalStateException: Login crashed on purpose: the test account "crash" always crashes the app',
      }),
    ]);
    expect(result.crashes[0]!.lines[0]).toContain('FATAL EXCEPTION: main');
  });

  it('caps the file by size, keeping the beginning and the end, and says where it cut', async () => {
    const t = await server({ bootMs: 100 });
    await using phone = await leasePhone(leaseOptions(t));
    const path = join(tempDir('phonelease-logcat-'), 'logcat.txt');
    await phone.startLogcat(path, { maxBytes: 4096 });
    await phone.shell("log -t PhoneleaseTest 'first line'");
    await phone.shell(
      'i=0; while [ $i -lt 200 ]; do log -t PhoneleaseTest "filler line $i of a long test"; i=$((i+1)); done',
    );
    await phone.shell("log -t PhoneleaseTest 'last line'");
    const stopped = await phone.stopLogcat();
    const log = readFileSync(path, 'utf8');
    expect(Buffer.byteLength(log)).toBeLessThanOrEqual(4096);
    expect(stopped.linesCut).toBeGreaterThan(100);
    expect(log).toContain('PhoneleaseTest: first line');
    expect(log).toContain('PhoneleaseTest: last line');
    expect(log).toMatch(/^--------- phonelease: \d+ lines cut here to keep this file under 4096 bytes/m);
  });
});
