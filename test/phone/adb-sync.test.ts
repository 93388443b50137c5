/**
 * Files over the sync service (push, pull, ls, stat) and device ports over `adb forward`,
 * with the stock adb client against a virtual phone.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync, mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/util/ports.js';
import { ADB } from '../support/adb.js';
import { startVirtualAdb } from '../support/virtual-adb.js';
import type { VirtualAdb } from '../support/virtual-adb.js';

let v: VirtualAdb;
let dir: string;

beforeAll(async () => {
  v = await startVirtualAdb();
  dir = mkdtempSync(join(tmpdir(), 'phonelease-sync-'));
});

afterAll(async () => {
  await v?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('push and pull', () => {
  it('round-trips a 20 MB file byte for byte', async () => {
    const data = randomBytes(20 * 1024 * 1024);
    writeFileSync(join(dir, 'big.bin'), data);
    const push = await v.adbOk(['push', join(dir, 'big.bin'), '/sdcard/Download/big.bin']);
    expect(push).toMatch(/1 file pushed/);
    expect(await v.adbOk(['shell', 'sha256sum', '/sdcard/Download/big.bin'])).toBe(
      `${sha256(data)}  /sdcard/Download/big.bin\n`,
    );
    expect(await v.adbOk(['shell', "stat -c '%s' /sdcard/Download/big.bin"])).toBe(`${data.length}\n`);
    await v.adbOk(['pull', '/sdcard/Download/big.bin', join(dir, 'back.bin')]);
    expect(sha256(readFileSync(join(dir, 'back.bin')))).toBe(sha256(data));
    await v.adbOk(['shell', 'rm', '/sdcard/Download/big.bin']);
  });

  it('creates missing parent directories and keeps mode and mtime', async () => {
    const file = join(dir, 'tool.sh');
    writeFileSync(file, '#!/system/bin/sh\necho tool\n', { mode: 0o755 });
    utimesSync(file, 1_700_000_000, 1_700_000_000);
    await v.adbOk(['push', file, '/data/local/tmp/deep/er/tool.sh']);
    expect(await v.adbOk(['shell', "stat -c '%a %Y %U' /data/local/tmp/deep/er/tool.sh"])).toBe(
      '755 1700000000 shell\n',
    );
    expect(await v.adbOk(['shell', 'sh /data/local/tmp/deep/er/tool.sh'])).toBe('tool\n');
  });

  it('pushes and pulls directories', async () => {
    mkdirSync(join(dir, 'tree/sub'), { recursive: true });
    writeFileSync(join(dir, 'tree/a.txt'), 'A');
    writeFileSync(join(dir, 'tree/sub/b.txt'), 'B');
    await v.adbOk(['push', join(dir, 'tree'), '/sdcard/tree']);
    expect(await v.adbOk(['shell', 'cat /sdcard/tree/a.txt /sdcard/tree/sub/b.txt'])).toBe('AB');
    await v.adbOk(['pull', '/sdcard/tree', join(dir, 'pulled')]);
    expect(readFileSync(join(dir, 'pulled/sub/b.txt'), 'utf8')).toBe('B');
  });

  it('pushes a tree of ordinary files into /data/local/tmp, its directories made 0775 as adbd makes them', async () => {
    mkdirSync(join(dir, 'plain/sub'), { recursive: true });
    writeFileSync(join(dir, 'plain/a.txt'), 'A', { mode: 0o644 });
    writeFileSync(join(dir, 'plain/sub/b.txt'), 'B', { mode: 0o644 });
    // The directories took the first file's mode (0644, no search bit), so the files in
    // them could not be created: "remote couldn't create file: Permission denied".
    expect(await v.adbOk(['push', join(dir, 'plain'), '/data/local/tmp/'])).toMatch(/2 files pushed/);
    expect(
      await v.adbOk(['shell', "stat -c '%a %U %n' /data/local/tmp/plain /data/local/tmp/plain/sub"]),
    ).toBe('775 shell /data/local/tmp/plain\n775 shell /data/local/tmp/plain/sub\n');
    expect(await v.adbOk(['shell', "stat -c '%a' /data/local/tmp/plain/sub/b.txt"])).toBe('644\n');
    await v.adbOk(['pull', '/data/local/tmp/plain', join(dir, 'plain-back')]);
    expect(readFileSync(join(dir, 'plain-back/sub/b.txt'), 'utf8')).toBe('B');
  });

  it('fails clearly for read-only targets and missing sources', async () => {
    writeFileSync(join(dir, 'x.txt'), 'x');
    const ro = await v.adb(['push', join(dir, 'x.txt'), '/system/x.txt']);
    expect(ro.code).not.toBe(0);
    // adb prints its errors on stdout when that is not a terminal
    expect(ro.stdout + ro.stderr).toContain(
      "failed to copy '" +
        join(dir, 'x.txt') +
        "' to '/system/x.txt': remote couldn't create file: Read-only file system",
    );
    const missing = await v.adb(['pull', '/sdcard/nope.txt', join(dir, 'nope.txt')]);
    expect(missing.code).not.toBe(0);
    expect(missing.stdout + missing.stderr).toContain(
      "failed to stat remote object '/sdcard/nope.txt': No such file or directory",
    );
  });

  it('refuses what uid 2000 `shell` may not do, in the shell and over sync', async () => {
    const t = '/data/local/tmp/perm';
    await v.adbOk(['shell', `rm -rf ${t}; mkdir ${t} && echo secret > ${t}/f && chmod a-rwx ${t}/f`]);
    expect(await v.adb(['shell', `cat ${t}/f`])).toMatchObject({
      code: 1,
      stderr: `cat: ${t}/f: Permission denied\n`,
    });
    const pull = await v.adb(['pull', `${t}/f`, join(dir, 'f')]);
    expect(pull.code).toBe(1);
    expect(pull.stdout + pull.stderr).toContain('remote open failed: Permission denied');
    // A read-only file, a directory without r (no listing) and one without x (no entering).
    await v.adbOk(['shell', `echo ro > ${t}/ro && chmod 444 ${t}/ro && mkdir ${t}/wo ${t}/rw`]);
    await v.adbOk(['shell', `chmod 300 ${t}/wo && chmod 600 ${t}/rw`]);
    expect(await v.adb(['shell', `echo more > ${t}/ro`])).toMatchObject({
      code: 1,
      stderr: `/system/bin/sh: can't create ${t}/ro: Permission denied\n`,
    });
    expect(await v.adb(['shell', `ls ${t}/wo`])).toMatchObject({
      code: 1,
      stderr: `ls: ${t}/wo: Permission denied\n`,
    });
    expect(await v.adb(['shell', `cd ${t}/rw`])).toMatchObject({
      code: 2,
      stderr: `/system/bin/sh: cd: ${t}/rw: Permission denied\n`,
    });
    // The system's own areas: /data is not listable, /data/local/tmp and /sdcard are writable.
    expect(await v.adb(['shell', 'ls /data'])).toMatchObject({
      code: 1,
      stderr: 'ls: /data: Permission denied\n',
    });
    writeFileSync(join(dir, 'up.txt'), 'up');
    const denied = await v.adb(['push', join(dir, 'up.txt'), '/data/up.txt']);
    expect(denied.code).toBe(1);
    expect(denied.stdout + denied.stderr).toContain("remote couldn't create file: Permission denied");
    expect(await v.adbOk(['push', join(dir, 'up.txt'), `${t}/up.txt`])).toMatch(/1 file pushed/);
    expect(await v.adbOk(['push', join(dir, 'up.txt'), '/sdcard/up.txt'])).toMatch(/1 file pushed/);
    expect(await v.adbOk(['shell', `ls -ld /data/local/tmp ${t}/ro`])).toMatch(
      new RegExp(`^drwxrwx--x \\d+ shell shell .* /data/local/tmp\n-r--r--r-- 1 shell shell .* ${t}/ro\n$`),
    );
    await v.adbOk(['shell', `chmod -R 700 ${t} && rm -rf ${t}`]);
  });

  it('makes files with dd from the character devices, byte for byte what pull gets', async () => {
    const f = '/data/local/tmp/dd.bin';
    const made = await v.adb(['shell', `dd if=/dev/urandom of=${f} bs=1m count=5`]);
    expect(made.code).toBe(0);
    expect(made.stdout).toBe('');
    expect(made.stderr).toMatch(
      /^5\+0 records in\n5\+0 records out\n5242880 bytes \(5\.0 M\) copied, \d+\.\d{3} s, [\d.]+ [KMG]?\/s\n$/,
    );
    await v.adbOk(['pull', f, join(dir, 'dd.bin')]);
    const pulled = readFileSync(join(dir, 'dd.bin'));
    expect(pulled.length).toBe(5 * 1024 * 1024);
    expect(await v.adbOk(['shell', `sha256sum ${f}`])).toBe(`${sha256(pulled)}  ${f}\n`);
    expect(await v.adbOk(['shell', 'head -c 10 /dev/zero | wc -c; head -c 16 /dev/urandom | wc -c'])).toBe(
      '10\n16\n',
    );
    expect(
      await v.adbOk(['shell', 'dd if=/dev/zero bs=4k count=3 status=none | tr -d "\\000" | wc -c']),
    ).toBe('0\n');
    expect(await v.adbOk(['shell', 'dd if=/dev/zero bs=4k count=3 status=none | wc -c'])).toBe('12288\n');
    expect(
      await v.adb([
        'shell',
        'echo gone > /dev/null; cat /dev/null | wc -c; dd if=/dev/zero of=/dev/null count=2',
      ]),
    ).toMatchObject({
      code: 0,
      stdout: '0\n',
      stderr: expect.stringMatching(/^2\+0 records in\n2\+0 records out\n1024 bytes \(1\.0 K\) copied/),
    });
    await v.adbOk(['shell', `rm ${f}`]);
  });

  it('lists directories with adb ls (LIS2) and resolves /sdcard to emulated storage', async () => {
    await v.adbOk(['shell', 'mkdir -p /sdcard/listing && printf 12345 > /sdcard/listing/five']);
    const out = await v.adbOk(['ls', '/sdcard/listing/']);
    const names = out
      .trim()
      .split('\n')
      .map((l) => l.split(' ').pop());
    expect(names).toEqual(['.', '..', 'five']);
    expect(out).toMatch(/^000081b0 00000005 [0-9a-f]{8} five$/m);
    expect(await v.adbOk(['shell', 'cat', '/storage/emulated/0/listing/five'])).toBe('12345');
  });
});

describe('adb forward to device ports', () => {
  it('reaches `nc -l -p PORT` served inside the phone, both ways', async () => {
    const local = await freePort();
    await v.adbOk(['forward', `tcp:${local}`, 'tcp:7100']);
    expect(await v.adbOk(['forward', '--list'])).toContain(`${v.serial} tcp:${local} tcp:7100`);
    const server = spawn(ADB, ['-P', String(v.adbServerPort), '-s', v.serial, 'shell', 'nc -l -p 7100'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let serverOut = '';
    server.stdout.on('data', (c: Buffer) => (serverOut += c.toString()));
    const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
    try {
      // The listener appears once the shell runs; until then the forward is refused.
      let reply = '';
      for (let attempt = 0; attempt < 50 && reply === ''; attempt++) {
        reply = await new Promise<string>((resolve) => {
          const socket = connect(local, '127.0.0.1');
          let got = '';
          socket.on('connect', () => socket.write('hello phone\n'));
          socket.on('data', (c: Buffer) => {
            got += c.toString();
            if (got.includes('\n')) socket.end();
          });
          socket.on('error', () => resolve(''));
          socket.on('close', () => resolve(got));
          const poll = setInterval(() => {
            if (serverOut.includes('hello phone')) {
              clearInterval(poll);
              server.stdin.write('hello laptop\n');
            }
          }, 20);
          socket.on('close', () => clearInterval(poll));
        });
        if (reply === '') await new Promise((r) => setTimeout(r, 100));
      }
      expect(serverOut).toBe('hello phone\n');
      expect(reply).toBe('hello laptop\n');
      server.stdin.end();
      expect(await exited).toBe(0);
    } finally {
      server.kill();
      await v.adbOk(['forward', '--remove', `tcp:${local}`]);
    }
  });

  it('closes connections to ports nobody listens on', async () => {
    const local = await freePort();
    await v.adbOk(['forward', `tcp:${local}`, 'tcp:7199']);
    try {
      const outcome = await new Promise<string>((resolve) => {
        const socket = connect(local, '127.0.0.1');
        let got = '';
        socket.on('data', (c: Buffer) => (got += c.toString()));
        socket.on('error', () => resolve('error'));
        socket.on('close', () => resolve(`closed:${got}`));
      });
      expect(outcome === 'closed:' || outcome === 'error').toBe(true);
    } finally {
      await v.adbOk(['forward', '--remove', `tcp:${local}`]);
    }
  });
});
