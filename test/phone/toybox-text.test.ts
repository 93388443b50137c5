/**
 * grep, sort and sed's replacements as toybox 0.8.9 (Android 14's) answers them: every
 * expected value here is what toybox printed for the same command line.
 */
import { describe, expect, it } from 'vitest';
import { Device } from '../../server/devices/virtual/device.js';
import { createCommandTable } from '../../server/devices/virtual/shell/commands/index.js';
import { BufferInput, BufferOutput } from '../../server/devices/virtual/shell/io.js';
import { Interpreter, initialShellState } from '../../server/devices/virtual/shell/interpreter.js';
import { buildSystemImage } from '../../server/devices/virtual/system-image.js';
import { quietLog } from '../support/virtual-adb.js';

const systemRoot = buildSystemImage();
const commands = createCommandTable();

async function sh(source: string) {
  const device = new Device({ systemRoot, log: quietLog });
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

const NINE = "printf '1\\n2\\nx\\n4\\n5\\n6\\n7\\nx\\n9\\n'";

describe('grep', () => {
  it('prints context lines with -A, -B and -C, groups parted by --', async () => {
    expect((await sh(`${NINE} | grep -A1 x`)).out).toBe('x\n4\n--\nx\n9\n');
    expect((await sh(`${NINE} | grep -B2 -n x`)).out).toBe('1-1\n2-2\n3:x\n--\n6-6\n7-7\n8:x\n');
    expect((await sh("printf 'a\\nb\\nc\\nd\\ne\\n' | grep -C1 c")).out).toBe('b\nc\nd\n');
    expect((await sh("printf '1\\nx\\n3\\nx\\n' | grep -m1 -A1 x")).out).toBe('x\n');
  });

  it('uses every -e pattern, prints only non-empty -o matches and names stdin with -H', async () => {
    expect((await sh(`${NINE} | grep -e 1 -e 9`)).out).toBe('1\n9\n');
    expect((await sh("printf 'ab12cd3\\n' | grep -o '[0-9]*'")).out).toBe('12\n3\n');
    expect((await sh("printf 'x\\n' | grep -H x")).out).toBe('(standard input):x\n');
  });

  it('goes on past a missing file, says so unless -s, and ends with status 2', async () => {
    expect(
      await sh('printf \'x\\n\' | grep -c x - nosuch; echo "st $?"; grep -s x nosuch; echo "st $?"'),
    ).toEqual({
      code: 0,
      out: '(standard input):1\nst 2\nst 2\n',
      err: 'grep: nosuch: No such file or directory\n',
    });
    expect(await sh('grep -e')).toMatchObject({
      code: 2,
      err: 'grep: Missing argument to -e (see "grep --help")\n',
    });
  });
});

describe('sort', () => {
  it('sorts by -k keys with -t separators, the whole line deciding ties unless -s', async () => {
    expect((await sh("printf 'a 2\\nb 10\\nc 1\\n' | sort -k2n")).out).toBe('c 1\na 2\nb 10\n');
    expect((await sh("printf 'x:3:b\\ny:1:a\\nz:2:c\\n' | sort -t: -k3")).out).toBe('y:1:a\nx:3:b\nz:2:c\n');
    expect((await sh("printf 'b 1\\na 1\\n' | sort -k2; printf 'b 1\\na 1\\n' | sort -s -k2")).out).toBe(
      'a 1\nb 1\nb 1\na 1\n',
    );
    expect(
      (await sh("printf 'ab1\\nac0\\n' | sort -k1.2,1.2; printf 'a  b\\na c\\n' | sort -b -k2")).out,
    ).toBe('ab1\nac0\na  b\na c\n');
    expect((await sh("printf '10\\nabc\\n2\\n-1\\n' | sort -n")).out).toBe('-1\nabc\n2\n10\n');
  });

  it('checks with -c, writes with -o (over its own input) and refuses -k without a key', async () => {
    expect(await sh('printf \'b\\na\\n\' | sort -c; echo "st $?"')).toMatchObject({
      out: 'st 1\n',
      err: 'sort: -: Check line 2\n',
    });
    expect((await sh("printf 'b\\na\\n' > f; sort -o f f; cat f")).out).toBe('a\nb\n');
    expect(await sh('sort -k')).toMatchObject({
      code: 2,
      err: 'sort: Missing argument to -k (see "sort --help")\n',
    });
  });
});

describe('sed', () => {
  it('reads \\n, \\t, & and \\& in a replacement', async () => {
    expect((await sh("echo abc | sed 's/b/\\n/'; echo abc | sed 's/b/\\t[&]\\&/'")).out).toBe(
      'a\nc\na\t[b]&c\n',
    );
    expect((await sh("echo 'k=v' | sed -E 's/([a-z])=([a-z])/\\2:\\1/'")).out).toBe('v:k\n');
  });
});
