/**
 * Processes, signals and terminals as tools meet them through stock adb: one process table
 * for every session (ps -A, /proc/<pid>, kill from another shell), $! and wait, traps and
 * 128+N, adbd's SIGHUP when the client goes away, and `-t` / tty / stty per adb shell mode.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADB } from '../support/adb.js';
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

/** A long-running `adb shell ...` client: its output so far, and its exit once it has one. */
interface RunningAdb {
  child: ChildProcess;
  stdout(): string;
  exited: Promise<number | null>;
}

function startAdb(args: string[]): RunningAdb {
  const child = spawn(ADB, ['-P', String(v.adbServerPort), '-s', v.serial, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.resume();
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, stdout: () => out, exited };
}

/** `ps -A` rows as tools parse them (appium-adb reads PID and NAME by their column titles). */
async function processes(): Promise<{ pid: number; ppid: number; name: string; args: string }[]> {
  const out = await v.adbOk(['shell', 'ps -A -o PID,PPID,NAME,ARGS']);
  return out
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => {
      const [pid, ppid, name, ...args] = line.trim().split(/\s+/);
      return { pid: Number(pid), ppid: Number(ppid), name: name!, args: args.join(' ') };
    });
}

/** The pid a running `adb shell 'echo $$; ...'` printed first. */
async function firstLinePid(run: RunningAdb): Promise<number> {
  await vi.waitFor(() => expect(run.stdout()).toMatch(/^\d+\n/), { timeout: 10_000 });
  return Number(run.stdout().split('\n')[0]);
}

describe('one process table for every session', () => {
  it('starts with the boot in its log, from the processes that booted it (what a logcat capture waits for)', async () => {
    const log = await v.adbOk(['logcat', '-d', '-v', 'threadtime']);
    const systemServer = (await v.adbOk(['shell', 'pidof system_server'])).trim();
    const init = log.split('\n').find((l) => l.endsWith('init second stage started!'));
    expect(init).toMatch(/^\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} +1 +1 I init +: init second stage started!$/);
    const entered = log.split('\n').find((l) => l.includes('Entered the Android system server!'));
    expect(entered).toMatch(new RegExp(`^\\S+ \\S+ +${systemServer} +${systemServer} I SystemServer: `));
    expect(log).toMatch(/ActivityManager: Start proc \d+:com\.android\.launcher3\/u0a153 for top-activity/);
  });

  it('shows a process another adb shell started in ps -A and /proc, and kill reaches it', async () => {
    const run = startAdb(['shell', 'echo $$; sleep 30; echo after sleep']);
    try {
      const sh = await firstLinePid(run);
      let sleep: { pid: number; ppid: number } | undefined;
      await vi.waitFor(async () => {
        const all = await processes();
        expect(all.find((p) => p.pid === sh)).toMatchObject({ ppid: 455, name: 'sh' });
        sleep = all.find((p) => p.ppid === sh && p.name === 'sleep');
        expect(sleep).toMatchObject({ ppid: sh });
      });
      expect(await v.adbOk(['shell', `cat /proc/${sh}/cmdline | tr '\\0' ' '`])).toBe(
        '/system/bin/sh -c echo $$; sleep 30; echo after sleep ',
      );
      expect(await v.adbOk(['shell', `grep -E '^(Name|PPid|Uid):' /proc/${sleep!.pid}/status`])).toBe(
        `Name:\tsleep\nPPid:\t${sh}\nUid:\t2000\t2000\t2000\t2000\n`,
      );
      expect(await v.adbOk(['shell', `cut -d ' ' -f 1-5 /proc/${sleep!.pid}/stat`])).toBe(
        `${sleep!.pid} (sleep) S ${sh} ${sh}\n`,
      );
      expect(await v.adbOk(['shell', 'pidof sleep'])).toBe(`${sleep!.pid}\n`);
      // Signalled from another session: the sleep dies of SIGTERM, its shell goes on.
      expect(await shell(`kill ${sleep!.pid}`)).toMatchObject({ code: 0, stderr: '' });
      expect(await run.exited).toBe(0);
      expect(run.stdout()).toBe(`${sh}\nafter sleep\n`);
      expect((await processes()).some((p) => p.pid === sh || p.pid === sleep!.pid)).toBe(false);
      expect(await shell(`ls /proc/${sh}`)).toMatchObject({ code: 1 });
    } finally {
      run.child.kill('SIGKILL');
    }
  });

  it("reports a command's death by signal N as 128+N, and kill's errors in mksh's words", async () => {
    expect((await shell('kill -9 $$')).code).toBe(137);
    expect(await v.adbOk(['shell', "sh -c 'kill -TERM $$'; echo $?"])).toBe('143\n');
    expect(await shell('kill 99999')).toMatchObject({
      code: 1,
      stderr: '/system/bin/sh: kill: 99999: No such process\n',
    });
    expect(await shell('kill -0 1')).toMatchObject({
      code: 1,
      stderr: '/system/bin/sh: kill: 1: Operation not permitted\n',
    });
    expect(await v.adbOk(['shell', 'kill -l 130; kill -0 $$ && echo alive'])).toBe('INT\nalive\n');
  });

  it('gives $! the pid of a background job and lets wait report how it ended', async () => {
    const run = startAdb(['shell', 'sleep 30 & echo $!; wait $!; echo "waited $?"']);
    try {
      const job = await firstLinePid(run);
      await vi.waitFor(async () =>
        expect((await processes()).find((p) => p.pid === job)).toMatchObject({ name: 'sleep' }),
      );
      await v.adbOk(['shell', `kill -9 ${job}`]);
      expect(await run.exited).toBe(0);
      expect(run.stdout()).toBe(`${job}\nwaited 137\n`);
    } finally {
      run.child.kill('SIGKILL');
    }
  });

  it('stops a long-running command the way appium-adb does: find it with ps, kill -2, wait until gone', async () => {
    // `adb shell screenrecord ...` is a single command: it runs as the shell process itself.
    const run = startAdb(['shell', 'sleep 30']);
    try {
      let pid = 0;
      await vi.waitFor(async () => {
        const found = (await processes()).filter((p) => p.name === 'sleep' && p.ppid === 455);
        expect(found).toHaveLength(1);
        pid = found[0]!.pid;
      });
      expect((await shell(`kill -2 ${pid}`)).code).toBe(0);
      expect(await run.exited).toBe(130);
      await vi.waitFor(async () => expect((await processes()).some((p) => p.pid === pid)).toBe(false));
      expect(await shell(`kill -0 ${pid}`)).toMatchObject({ code: 1 });
    } finally {
      run.child.kill('SIGKILL');
    }
  });
});

describe('traps and hang-ups', () => {
  it('runs trap actions for signals the shell sends itself, and the EXIT trap on exit', async () => {
    expect(await shell("trap 'echo got HUP' HUP; kill -HUP $$; echo after")).toMatchObject({
      code: 0,
      stdout: 'got HUP\nafter\n',
    });
    expect(await shell("trap 'echo bye' EXIT; echo hi; exit 3")).toMatchObject({
      code: 3,
      stdout: 'hi\nbye\n',
    });
    expect(await shell("trap 'echo cleanup' EXIT; kill -TERM $$; echo never")).toMatchObject({
      code: 143,
      stdout: 'cleanup\n',
    });
    expect(await shell("trap 'echo failed' ERR; false; true && echo ok")).toMatchObject({
      stdout: 'failed\nok\n',
    });
    expect(await shell("trap 'echo x' INT; trap")).toMatchObject({ stdout: "trap -- 'echo x' INT\n" });
  });

  it('hangs up the shell when the adb client is interrupted, leaving no process behind', async () => {
    const marker = '/data/local/tmp/hung-up';
    await shell(`rm -f ${marker}`);
    const plain = startAdb(['shell', 'echo $$; sleep 30']);
    const trapped = startAdb([
      'shell',
      `echo $$; trap 'echo hup > ${marker}; exit 1' HUP; while true; do sleep 0.05; done`,
    ]);
    try {
      const shells = [await firstLinePid(plain), await firstLinePid(trapped)];
      const ours = async () =>
        (await processes()).filter((p) => shells.includes(p.pid) || shells.includes(p.ppid));
      await vi.waitFor(async () => expect((await ours()).length).toBeGreaterThanOrEqual(3));
      plain.child.kill('SIGINT');
      trapped.child.kill('SIGKILL');
      await Promise.all([plain.exited, trapped.exited]);
      await vi.waitFor(async () => expect(await ours()).toEqual([]), { timeout: 10_000 });
      expect(await v.adbOk(['shell', `cat ${marker}`])).toBe('hup\n');
    } finally {
      plain.child.kill('SIGKILL');
      trapped.child.kill('SIGKILL');
    }
  });

  it('keeps a background job whose output is redirected running after its session ends', async () => {
    const out = await v.adbOk(['shell', 'sleep 30 > /dev/null 2>&1 & echo $!']);
    const job = Number(out.trim());
    expect((await processes()).find((p) => p.pid === job)).toMatchObject({ name: 'sleep', ppid: 1 });
    await v.adbOk(['shell', `kill ${job}`]);
    await vi.waitFor(async () => expect((await processes()).some((p) => p.pid === job)).toBe(false));
  });
});

describe('terminals', () => {
  it('answers -t, tty and stty by whether adbd gave the session a pty', async () => {
    const probe = 'for fd in 0 1 2; do [ -t $fd ] && echo -n T || echo -n F; done; echo';
    // shell v2 without a pty (a command, or -T): pipes.
    expect(await v.adbOk(['shell', probe])).toBe('FFF\n');
    expect(await v.adbOk(['shell', '-T', probe])).toBe('FFF\n');
    expect(await shell('tty')).toMatchObject({ code: 1, stdout: 'not a tty\n' });
    expect(await shell('stty size')).toMatchObject({
      code: 1,
      stderr: 'stty: tcgetattr standard input: Not a typewriter\n',
    });
    // -tt forces a pty; the legacy protocol (-x) always gets one, in raw mode.
    expect(await v.adbOk(['shell', '-tt', probe])).toBe('TTT\r\n');
    expect(await v.adbOk(['shell', '-x', probe])).toBe('TTT\n');
    expect(await v.adbOk(['shell', '-tt', 'tty'])).toMatch(/^\/dev\/pts\/\d+\r\n$/);
    expect((await v.adb(['shell', '-tt', 'stty -echo; stty'])).stdout).toContain('-echo');
  });
});
