/**
 * ps -k/--sort and -T, df/ls/du -h and the toybox multiplexer as Android 14's toybox 0.8.9
 * answers them (toys/posix/ps.c, toys/posix/df.c, lib/lib.c human_readable_long, main.c).
 * Expected sizes were printed by toybox 0.8.9 itself (`toybox ls -lh` of files of each size).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Device } from '../../server/devices/virtual/device.js';
import { createCommandTable } from '../../server/devices/virtual/shell/commands/index.js';
import {
  HR_1000,
  humanReadable3,
  humanReadableLong,
} from '../../server/devices/virtual/shell/commands/format.js';
import { BufferInput, BufferOutput } from '../../server/devices/virtual/shell/io.js';
import { Interpreter, initialShellState } from '../../server/devices/virtual/shell/interpreter.js';
import { buildSystemImage } from '../../server/devices/virtual/system-image.js';
import { quietLog, startVirtualAdb } from '../support/virtual-adb.js';
import type { VirtualAdb } from '../support/virtual-adb.js';

const systemRoot = buildSystemImage();
const commands = createCommandTable();

async function sh(source: string, device = new Device({ systemRoot, log: quietLog })) {
  const stdout = new BufferOutput();
  const stderr = new BufferOutput();
  const shell = new Interpreter(device, commands, initialShellState(device));
  const code = await shell.run(
    `cd /data/local/tmp; ${source}`,
    { stdin: new BufferInput(Buffer.from('')), stdout, stderr },
    new AbortController().signal,
  );
  return { code, out: stdout.text(), err: stderr.text() };
}

/** The rows of a ps listing below its header, split on blanks. */
async function psRows(command: string): Promise<string[][]> {
  const r = await sh(command);
  expect(r).toMatchObject({ code: 0, err: '' });
  return r.out
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/));
}

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

describe('ps -k and --sort (toybox ksort)', () => {
  it('sorts by -rss, largest first, as -k and --sort alike', async () => {
    const rows = await psRows('ps -A -k -rss -o PID,RSS,NAME');
    const rss = rows.map((r) => Number(r[1]));
    expect(rss).toEqual([...rss].sort((a, b) => b - a));
    // The phone's biggest: system_server, then SystemUI; kthreadd (no memory) last.
    expect(rows.slice(0, 2)).toEqual([
      ['860', '312456', 'system_server'],
      ['1120', '188344', 'com.android.systemui'],
    ]);
    expect(rows.at(-1)).toEqual(['2', '0', '[kthreadd]']);
    // Not pid order any more.
    const pids = rows.map((r) => Number(r[0]));
    expect(pids).not.toEqual([...pids].sort((a, b) => a - b));
    const names = (rs: string[][]) => rs.map((r) => r.at(-1));
    expect(names(await psRows('ps -A --sort=-rss -o PID,RSS,NAME'))).toEqual(names(rows));
    expect(names(await psRows('ps -A --sort -rss -o PID,RSS,NAME'))).toEqual(names(rows));
    // The default Android columns sort the same way.
    expect(names(await psRows('ps -A -k -rss')).slice(0, 2)).toEqual([
      'system_server',
      'com.android.systemui',
    ]);
    // Ascending without the sign (and with +).
    expect((await psRows('ps -A -k rss -o PID,RSS,NAME'))[0]).toEqual(['2', '0', '[kthreadd]']);
    expect((await psRows('ps -A -k +rss -o PID,RSS,NAME'))[0]).toEqual(['2', '0', '[kthreadd]']);
  });

  it('sorts numbers as numbers and names as text (strcmp), field after field, over several -k', async () => {
    // PID is numeric: 1120 after 860, though "1120" < "860" as text.
    const pids = (await psRows('ps -A -k pid -o PID')).map((r) => Number(r[0]));
    expect(pids).toEqual([...pids].sort((a, b) => a - b));
    const descending = (await psRows('ps -A -k -pid -o PID')).map((r) => Number(r[0]));
    expect(descending).toEqual([...pids].reverse());
    // NAME is text: byte order, so "[kthreadd]" sorts before "adbd".
    const names = (await psRows('ps -A -k name -o NAME')).map((r) => r[0]!);
    expect(names).toEqual([...names].sort(byteOrder));
    expect(names.indexOf('[kthreadd]')).toBeLessThan(names.indexOf('adbd'));
    // USER ascending, then PID descending within a user: one -k with a list, or two -k.
    for (const command of ['ps -A -k user,-pid -o USER,PID', 'ps -A -k user -k -pid -o USER,PID']) {
      const rows = await psRows(command);
      const expected = [...rows].sort((a, b) => byteOrder(a[0]!, b[0]!) || Number(b[1]) - Number(a[1]));
      expect(rows).toEqual(expected);
      expect(rows.filter((r) => r[0] === 'root').map((r) => r[1])).toEqual(['512', '2', '1']);
    }
  });

  it('refuses an unknown field as toybox does, with a caret under it, before printing anything', async () => {
    expect(await sh('ps -A -k foo')).toEqual({ code: 1, out: '', err: "ps: bad -k 'foo'\n            ^\n" });
    expect(await sh('ps -A -k pid,-foo')).toEqual({
      code: 1,
      out: '',
      err: "ps: bad -k 'pid,-foo'\n                 ^\n",
    });
    for (const command of ['ps -k', 'ps -A --sort'])
      expect(await sh(command)).toEqual({
        code: 1,
        out: '',
        err: 'ps: Missing argument to -k (see "ps --help")\n',
      });
    // An unknown option is named with the rest of its group, as toybox does.
    expect(await sh('ps -Arx')).toMatchObject({
      code: 1,
      err: 'ps: Unknown option \'rx\' (see "ps --help")\n',
    });
  });
});

describe('ps -T (threads)', () => {
  it('adds TID after PID and shows the thread name (CMD) in place of NAME', async () => {
    const r = await sh('ps -A -T');
    expect(r.code).toBe(0);
    const [header, ...lines] = r.out.trimEnd().split('\n');
    expect(header).toBe(
      'USER            PID   TID   PPID        VSZ    RSS WCHAN            ADDR S CMD            ',
    );
    const rows = lines.map((l) => l.trim().split(/\s+/));
    // Each process has its main thread only: TID is the PID, one row per process.
    expect(rows.every((row) => row[2] === row[1])).toBe(true);
    expect(rows.length).toBe((await psRows('ps -A')).length);
    // CMD is the kernel's 15-character thread name, not the package name.
    expect(rows.find((row) => row[1] === '1120')?.at(-1)).toBe('ndroid.systemui');
    expect(rows.find((row) => row[1] === '860')?.at(-1)).toBe('system_server');
  });

  it('agrees with /proc/PID/task, TID and TCNT fields, and -f -T', async () => {
    expect(await sh('ps -o PID,TID,TCNT,CMD -p 1')).toEqual({
      code: 0,
      out: '   PID   TID TCNT CMD            \n     1     1    1 init\n',
      err: '',
    });
    const proc = await sh(
      'ls /proc/1120/task; cmp /proc/1120/stat /proc/1120/task/1120/stat && echo same; grep Threads /proc/1120/status',
    );
    expect(proc).toEqual({ code: 0, out: '1120\nsame\nThreads:\t1\n', err: '' });
    const full = await sh('ps -f -T -p 1');
    expect(full.out.split('\n')[0]!.trim().split(/\s+/)).toEqual([
      'UID',
      'PID',
      'TID',
      'PPID',
      'TCNT',
      'STIME',
      'TTY',
      'TIME',
      'CMD',
    ]);
    expect(full.out).toMatch(/^root +1 +1 +0 +1 .* init second_stage\n$/m);
    // Nothing selected: the header alone and status 1, as toybox's ps.
    expect((await sh('ps -T -p 99999')).code).toBe(1);
  });
});

describe("human-readable sizes (toybox's human_readable)", () => {
  it('gives three digits at most, a decimal only below 10, as toybox 0.8.9 printed them', () => {
    // Bytes -> what `toybox ls -lh` printed for a file of that size.
    const printed: [number, string][] = [
      [0, '0'],
      [999, '999'],
      [1000, '0.9K'],
      [1023, '0.9K'],
      [1024, '1.0K'],
      [1535, '1.4K'],
      [1536, '1.5K'],
      [10239, '10K'],
      [10752, '11K'],
      [102400, '100K'],
      [1047552, '0.9M'],
      [1048064, '1.0M'],
      [123456789, '118M'],
      [5920714752, '5.5G'],
      [119698210816, '111G'],
      [999999999999, '931G'],
      [1099511627776, '1.0T'],
    ];
    for (const [bytes, text] of printed) expect(humanReadable3(bytes)).toBe(text);
    // df -H: thousands and a lower-case k.
    expect(humanReadableLong(1500, 3, 0, HR_1000)).toBe('1.5k');
    expect(humanReadableLong(119698210816, 3, 0, HR_1000)).toBe('120G');
  });

  it('prints df -h as toybox does: 111G, not 111.5G, columns as wide as their entries', async () => {
    const r = await sh('df -h');
    expect(r).toEqual({
      code: 0,
      err: '',
      out:
        'Filesystem      Size Used Avail Use% Mounted on\n' +
        '/dev/block/dm-0 5.5G 5.5G   17M 100% /\n' +
        'tmpfs           3.7G 1.4M  3.7G   1% /dev\n' +
        'tmpfs           3.7G    0  3.7G   0% /mnt\n' +
        '/dev/block/dm-5 111G 5.0G  106G   5% /data\n' +
        '/dev/fuse       111G 5.0G  106G   5% /storage/emulated\n',
    });
    expect((await sh('df -H /data')).out).toBe(
      'Filesystem      Size Used Avail Use% Mounted on\n/dev/block/dm-5 120G 5.3G  114G   5% /data\n',
    );
    expect((await sh('df /data')).out).toBe(
      'Filesystem      1K-blocks    Used Available Use% Mounted on\n' +
        '/dev/block/dm-5 116892784 5242880 111649904   5% /data\n',
    );
    expect((await sh('df -P /')).out).toBe(
      'Filesystem      512-blocks     Used Available Capacity Mounted on\n' +
        '/dev/block/dm-0   11598856 11563896     34960     100% /\n',
    );
  });

  it('shows a missing operand without dropping the others, -a and -t, and refuses -i', async () => {
    expect(await sh('df /nonexist /data')).toEqual({
      code: 1,
      out:
        'Filesystem      1K-blocks    Used Available Use% Mounted on\n' +
        '/dev/block/dm-5 116892784 5242880 111649904   5% /data\n',
      err: "df: '/nonexist': No such file or directory\n",
    });
    expect((await sh('df -a -t proc')).out).toBe(
      'Filesystem     1K-blocks Used Available Use% Mounted on\nproc                   0    0         0   0% /proc\n',
    );
    expect((await sh('df -t f2fs')).out).toMatch(/^Filesystem .*\n\/dev\/block\/dm-5 .* \/data\n$/);
    expect(await sh('df -i')).toMatchObject({
      code: 1,
      out: '',
      err: expect.stringMatching(/^df: -i: not modeled/),
    });
  });

  it('uses the same helper for ls -h (sizes and total), du -h and free -h', async () => {
    const r = await sh(
      'mkdir d; cd d; truncate -s 5000 a; truncate -s 300 b; truncate -s 1048064 c; ls -h; ls -lh | head -1; ls -lh | tail -3 | sed "s/  */ /g" | cut -d" " -f5; du -h .',
    );
    expect(r).toEqual({
      code: 0,
      err: '',
      out: 'total 1.0M\na\nb\nc\ntotal 1.0M\n4.8K\n300\n1.0M\n1.0M\t.\n',
    });
    // The size column is right-aligned to its widest entry.
    expect((await sh('cd d 2>/dev/null; truncate -s 5000 a; truncate -s 300 b; ls -lh a b')).out).toMatch(
      /^-rw-rw-rw- 1 shell shell 4\.8K [-\d]+ [:\d]+ a\n-rw-rw-rw- 1 shell shell {2}300 [-\d]+ [:\d]+ b\n$/,
    );
    expect((await sh('free -h')).out).toMatch(/^Mem: +7\.4G +7\.0G +402M +0 +5\.7M$/m);
  });
});

describe('the toybox multiplexer (main.c)', () => {
  it('prints its version with --version, status 0', async () => {
    expect(await sh('toybox --version')).toEqual({ code: 0, out: 'toybox 0.8.9-android\n', err: '' });
  });

  it("lists only toybox's applets: the links to toybox in /system/bin, in lines up to the width less 15", async () => {
    const r = await sh('toybox');
    expect(r.code).toBe(0);
    const listed = r.out.split(/\s+/).filter(Boolean);
    const links = (await sh("ls -l /system/bin | grep -- '-> toybox$'")).out
      .trim()
      .split('\n')
      .map((l) => l.split(' ').at(-3)!);
    expect(listed).toEqual([...links].sort(byteOrder));
    expect(listed).toEqual(expect.arrayContaining(['[', 'ls', 'ps', 'df', 'sed', 'top', 'xxd']));
    for (const other of ['am', 'pm', 'cmd', 'dumpsys', 'logcat', 'settings', 'wm', 'input', 'uiautomator'])
      expect(listed).not.toContain(other);
    // Not toybox's either: toolbox's getprop, mksh, toybox itself.
    for (const other of ['getprop', 'sh', 'toybox']) expect(listed).not.toContain(other);
    const lines = r.out.split('\n');
    expect(lines.at(-1)).toBe('');
    // A line ends once it passes 80 - 15 columns (each name counts its space).
    for (const line of lines.slice(0, -2)) {
      expect(line.length).toBeGreaterThan(64);
      expect(line.length).toBeLessThanOrEqual(80);
    }
    const narrow = (await sh('COLUMNS=40 toybox')).out.split('\n');
    expect(narrow.length).toBeGreaterThan(lines.length);
    for (const line of narrow.slice(0, -2)) expect(line.length).toBeLessThanOrEqual(40);
  });

  it('gives each applet its install path with --long', async () => {
    const long = (await sh('toybox --long')).out.split(/\s+/).filter(Boolean);
    const plain = (await sh('toybox')).out.split(/\s+/).filter(Boolean);
    expect(long.map((w) => w.replace(/^(usr\/)?s?bin\//, ''))).toEqual(plain);
    expect(long.every((w) => /^(usr\/)?s?bin\/./.test(w))).toBe(true);
    expect(long).toEqual(
      expect.arrayContaining(['bin/[', 'bin/ls', 'usr/bin/du', 'sbin/ifconfig', 'usr/sbin/chroot']),
    );
  });

  it('runs its applets by name, refuses what is not one, and says which it does not model', async () => {
    expect(await sh('toybox /system/bin/echo hi; toybox basename /a/b')).toEqual({
      code: 0,
      out: 'hi\nb\n',
      err: '',
    });
    expect(await sh('toybox am start -a x')).toEqual({
      code: 127,
      out: '',
      err: 'toybox: Unknown command am (see "toybox --help")\n',
    });
    expect((await sh('toybox toybox')).code).toBe(127);
    expect(await sh('toybox tar -tf x')).toEqual({
      code: 126,
      out: '',
      err: 'toybox: tar: not modeled by the virtual phone (see docs/virtual-phone.md)\n',
    });
    const help = await sh('toybox --help');
    expect(help.code).toBe(0);
    expect(help.out).toMatch(
      /^Toybox 0\.8\.9-android multicall binary \(see https:\/\/landley\.net\/toybox\)\n\nusage: toybox \[--long \| --help \| --version \| \[COMMAND\] \[ARGUMENTS\.\.\.\]\]\n/,
    );
  });
});

describe('through stock adb', () => {
  let v: VirtualAdb;
  beforeAll(async () => {
    v = await startVirtualAdb();
  });
  afterAll(async () => {
    await v?.close();
  });

  it('exits 0 for toybox --version and sorts ps by -rss', async () => {
    expect(await v.adb(['shell', 'toybox', '--version'])).toMatchObject({
      code: 0,
      stdout: 'toybox 0.8.9-android\n',
    });
    const sorted = (await v.adbOk(['shell', 'ps -A -k -rss -o NAME'])).split('\n');
    expect(sorted.slice(1, 3)).toEqual(['system_server', 'com.android.systemui']);
    expect(await v.adb(['shell', 'toybox am'])).toMatchObject({ code: 127 });
  });
});
