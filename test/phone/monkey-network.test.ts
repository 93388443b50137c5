/**
 * `monkey --port`: Monkey's network script server as adbkit's openMonkey and STF drive it,
 * through stock adb (the shell runs monkey, adb forward reaches its port on the phone).
 */
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandLineSplit } from '../../server/devices/virtual/shell/commands/monkey-network.js';
import { ADB } from '../support/adb.js';
import { startVirtualAdb, type VirtualAdb } from '../support/virtual-adb.js';

let v: VirtualAdb;
beforeAll(async () => {
  v = await startVirtualAdb();
});
afterAll(() => v?.close());

/** A client of the monkey's port through adb forward: send a line, read the answer lines. */
async function client(
  port: number,
): Promise<{ send(line: string): void; next(): Promise<string>; socket: Socket }> {
  const local = Number((await v.adbOk(['forward', 'tcp:0', `tcp:${port}`])).trim());
  const socket = connect({ host: '127.0.0.1', port: local });
  let buffered = '';
  let wake: (() => void) | null = null;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    wake?.();
  });
  return {
    socket,
    send: (line) => socket.write(`${line}\n`),
    async next() {
      while (!buffered.includes('\n')) await new Promise<void>((resolve) => (wake = resolve));
      const at = buffered.indexOf('\n');
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      return line;
    },
  };
}

describe('monkey --port', () => {
  it('splits a line as commandLineSplit does: a quoted run is one word', () => {
    expect(commandLineSplit('type "hello  world" x')).toEqual(['type', 'hello world', 'x']);
    expect(commandLineSplit('type "say \\"hi\\""')).toEqual(['type', 'say "hi"']);
    expect(commandLineSplit('  tap   10 20 ')).toEqual(['tap', '10', '20']);
  });

  it('answers commands a line at a time, serves the next client after done, and ends on quit', async () => {
    const monkey = spawn(ADB, [
      '-P',
      String(v.adbServerPort),
      '-s',
      v.serial,
      'shell',
      'monkey --port 1080 -v',
    ]);
    let out = '';
    monkey.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => monkey.once('exit', resolve));
    await expect.poll(() => v.adbOk(['shell', 'cat /proc/net/tcp']), { timeout: 10_000 }).toContain(':0438 ');

    const first = await client(1080);
    first.send('getvar build.version.release');
    expect(await first.next()).toBe('OK:14');
    first.send('getvar display.width');
    expect(await first.next()).toBe('OK:720');
    first.send('listvar');
    expect((await first.next()).split(/[: ]/)).toEqual(
      expect.arrayContaining(['OK', 'build.model', 'monkey.version']),
    );
    first.send('getvar no.such.var');
    expect(await first.next()).toBe('ERROR:unknown var');
    // A comment and an unknown command get no answer: the next answer is the press's.
    first.send('# a comment');
    first.send('frobnicate');
    first.send('press 0');
    expect(await first.next()).toBe('OK');
    const focus = () => v.adbOk(['shell', 'dumpsys window | grep mCurrentFocus']);
    await v.adbOk(['shell', 'am start -W -n com.android.settings/.Settings']);
    first.send('press KEYCODE_HOME');
    expect(await first.next()).toBe('OK');
    await expect.poll(focus, { timeout: 10_000 }).toContain('com.android.launcher3');
    await v.adbOk(['shell', 'am start -W -n com.android.settings/.Settings']);
    first.send('key down BACK');
    first.send('key up BACK');
    expect([await first.next(), await first.next()]).toEqual(['OK', 'OK']);
    await expect.poll(focus, { timeout: 10_000 }).toContain('com.android.launcher3');
    for (const [line, answer] of [
      ['tap 10 x', 'ERROR:Invalid Argument'],
      ['key sideways HOME', 'ERROR:Invalid Argument'],
      ['press NO_SUCH_KEY', 'ERROR:Invalid Argument'],
      ['flip open', 'ERROR:flip (a keyboard lid) is not modeled by the virtual phone'],
      ['wake', 'OK'],
      ['sleep 50', 'OK'],
      ['touch down 100 200', 'OK'],
      ['touch up 100 200', 'OK'],
    ] as const) {
      first.send(line);
      expect(await first.next(), line).toBe(answer);
    }
    first.send('done');
    await new Promise((resolve) => first.socket.once('close', resolve));

    // The next client is served, and quit ends monkey with what it injected.
    const second = await client(1080);
    second.send('quit');
    expect(await second.next()).toBe('OK');
    expect(await exited).toBe(0);
    expect(out).toMatch(/Events injected: \d+\n/);
    expect(await v.adbOk(['shell', 'cat /proc/net/tcp'])).not.toContain(':0438 ');
  });

  it('says so when the port is taken, and when --port is not a number', async () => {
    const taken = v.phone.device.network.listen(1081, (s) => s.destroy(), { uid: 2000, bind: 'loopback' });
    try {
      expect(await v.adb(['shell', 'monkey --port 1081'])).toMatchObject({
        code: 251,
        stdout: expect.stringContaining('Error binding to network socket.\n') as unknown as string,
      });
    } finally {
      taken();
    }
    const bad = await v.adb(['shell', 'monkey --port x']);
    expect(bad.code).toBe(255);
    expect(bad.stderr).toContain('** Error: Server port to listen on for commands is not a number');
  });
});
