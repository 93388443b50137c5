/**
 * grep, sort, cut, head, tail, tr, printf, od, xxd, paste and sed's replacements as toybox
 * 0.8.9 (Android 14's) answers them: every expected value here is what toybox 0.8.9 under
 * mksh printed for the same command line (tr, which Debian's toybox lacks, as its source
 * reads).
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

describe('grep (more)', () => {
  it('reads POSIX classes, takes \\| as a literal |, and checks -A/-B/-C numbers', async () => {
    expect((await sh("printf 'a1\\nb \\nc\\n' | grep -c '[[:space:][:digit:]]'")).out).toBe('2\n');
    expect(await sh("printf 'ab\\na|b\\n' | grep 'a\\|b'")).toMatchObject({ code: 0, out: 'a|b\n' });
    expect(await sh("printf 'a\\n' | grep -A x a")).toEqual({
      code: 2,
      out: '',
      err: 'grep: not integer: x\n',
    });
  });

  it('prints byte offsets with -b, and a line whose only match is empty does not count for -o', async () => {
    expect((await sh("printf 'abcabc\\n' | grep -o -b b")).out).toBe('1:b\n4:b\n');
    expect(await sh("printf 'abc\\n' | grep -o ''")).toMatchObject({ code: 1, out: '' });
    expect((await sh("printf 'foo bar\\n' | grep -w 'o*'")).code).toBe(1);
  });

  it('reads long options as toybox grep does: its own, --color to no terminal, and an unknown one (status 2)', async () => {
    expect(await sh("printf 'a\\nb\\n' | grep --count --color a")).toEqual({ code: 0, out: '1\n', err: '' });
    expect(await sh('grep --foo a; echo $?; grep --count=1 a; echo $?')).toEqual({
      code: 0,
      out: '2\n2\n',
      err: 'grep: Unknown option \'foo\' (see "grep --help")\ngrep: Unknown option \'count=1\' (see "grep --help")\n',
    });
  });

  it('matches back-references, each -e pattern counting its own groups, and refuses one with no group', async () => {
    expect((await sh("printf 'aa\\nab\\n' | grep '\\(a\\)\\1'")).out).toBe('aa\n');
    expect((await sh("printf 'abab\\nxx\\nqrr\\n' | grep -E -e '(ab)\\1' -e '(q)(r)\\2'")).out).toBe(
      'abab\nqrr\n',
    );
    expect(await sh("printf 'a1\\n' | grep 'a\\1'")).toEqual({
      code: 2,
      out: '',
      err: "grep: bad regex 'a\\1': invalid backreference number\n",
    });
  });
});

describe('cut', () => {
  it('needs a selection, and says which', async () => {
    expect(await sh("printf 'a:b\\n' | cut")).toEqual({
      code: 1,
      out: '',
      err: 'cut: Needs -CFfcb (see "cut --help")\n',
    });
    expect((await sh("printf 'a:b\\n' | cut -d: -f2 -c1")).err).toBe(
      "cut: No 'c' with 'f' (see \"cut --help\")\n",
    );
    expect((await sh("printf 'a:b\\n' | cut -d: -f0")).err).toBe("cut: bad -f '0'\n              ^\n");
  });

  it('selects bytes, characters and fields as toybox does', async () => {
    expect((await sh("printf 'abc\\n' | cut -b2; printf 'h\\303\\251llo\\n' | cut -c 2-3")).out).toBe(
      'b\nél\n',
    );
    expect(
      (await sh("printf 'a:b:c\\nxyz\\n' | cut -s -d: -f2; printf 'a:b:c\\n' | cut -d: -f3,1")).out,
    ).toBe('b\na:c\n');
    expect(
      (await sh("printf 'a:b:c\\n' | cut -d: -f1,3 --output-delimiter=-; printf 'a b   c\\n' | cut -F 2-"))
        .out,
    ).toBe('a-c\nb   c\n');
    expect(await sh("printf 'abc\\n' | cut -c 2 nosuch -")).toEqual({
      code: 1,
      out: 'b\n',
      err: 'cut: nosuch: No such file or directory\n',
    });
  });
});

describe('head and tail', () => {
  it('refuse counts that are not numbers, and head a negative one', async () => {
    expect(await sh("printf '1\\n' | head -n x")).toEqual({
      code: 1,
      out: '',
      err: 'head: not integer: x\n',
    });
    expect((await sh("printf '1\\n' | head -n -2")).err).toBe('head: -n < 0 (see "head --help")\n');
    expect((await sh("printf '1\\n' | tail -n x")).err).toBe('tail: not integer: x\n');
  });

  it('read -q, -v, +N and -N as toybox does, headers only for files they open', async () => {
    expect((await sh("printf '1\\n2\\n3\\n' | head -v -n1; printf '1\\n2\\n3\\n' | tail +2")).out).toBe(
      '==> - <==\n1\n2\n3\n',
    );
    expect(await sh("printf '1\\n2\\n3\\n' | tail -n1 nosuch -")).toEqual({
      code: 1,
      out: '==> - <==\n3\n',
      err: 'tail: nosuch: No such file or directory\n',
    });
    // toybox's tail -n 0 prints everything; a last line without a newline stays so.
    expect((await sh("printf '1\\n2\\n' | tail -n 0; printf '1\\n2\\n3' | tail -n 1")).out).toBe('1\n2\n3');
  });
});

describe('tr', () => {
  it('translates, deletes, squeezes and complements bytes as toybox 0.8.9 source does', async () => {
    expect((await sh('echo abc | tr a; echo abc | tr -c a x; echo')).out).toBe('abc\naxxx\n');
    expect((await sh("echo aabbcc | tr -s ab; echo abc | tr -dc 'a\\n'; echo abc | tr abc x")).out).toBe(
      'abcc\na\nxxx\n',
    );
    expect(await sh('tr')).toEqual({ code: 1, out: '', err: 'tr: Needs 1 argument (see "tr --help")\n' });
    expect((await sh('echo abc | tr a b c')).err).toBe('tr: Max 2 arguments (see "tr --help")\n');
  });
});

describe('printf', () => {
  it('rounds exact halves to even and prints %g/%e as C does', async () => {
    expect((await sh("printf '%3.1f %.2f %.0f %.0f\\n' 2.25 2.675 0.5 2.5")).out).toBe('2.2 2.67 0 2\n');
    expect((await sh("printf '%G %g %e %g %g\\n' 1e20 1000000 1e20 0.00001 123456789")).out).toBe(
      '1E+20 1e+06 1.000000e+20 1e-05 1.23457e+08\n',
    );
    expect((await sh("printf '%#g %.3g %.0g|%08.3f\\n' 1 1234567 15 3.14159")).out).toBe(
      '1.00000 1.23e+06 2e+01|0003.142\n',
    );
  });

  it('clamps out-of-range integers, reads \\NNN octal, and refuses conversions it lacks', async () => {
    expect(await sh("printf '%d\\n' 99999999999999999999")).toEqual({
      code: 1,
      out: '9223372036854775807\n',
      err: 'printf: bad %d 99999999999999999999: Numerical result out of range\n',
    });
    expect((await sh("printf '\\101\\x41\\n'; printf '%.3s|%c|\\n' héllo ''")).out).toBe('AA\nhé|\0|\n');
    expect(await sh("printf '%q\\n' a")).toEqual({ code: 1, out: '', err: 'printf: bad %q@2\n' });
  });
});

describe('od, xxd and paste', () => {
  it('od: types, addresses, * for repeated lines', async () => {
    expect((await sh("printf 'hello\\n' | od -c")).out).toBe('0000000   h   e   l   l   o  \\n\n0000006\n');
    expect((await sh("printf 'hello world\\n' | od -An -t x1")).out).toBe(
      ' 68 65 6c 6c 6f 20 77 6f 72 6c 64 0a\n',
    );
    expect((await sh('head -c 64 /dev/zero | od -t x1')).out).toBe(
      '0000000 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00\n*\n0000100\n',
    );
    expect((await sh("printf '\\200\\377' | od -A d -t d1 -t u1")).out).toBe(
      '0000000 -128   -1\n         128  255\n0000002\n',
    );
  });

  it('xxd: the dump, -p, -i and -r', async () => {
    expect((await sh("printf 'hello world\\n' | xxd")).out).toBe(
      '00000000: 6865 6c6c 6f20 776f 726c 640a            hello world.\n',
    );
    expect((await sh("printf 'hello' | xxd -p; printf 'ab\\0' | xxd -i")).out).toBe(
      '68656c6c6f\n  0x61, 0x62, 00\n',
    );
    expect((await sh("printf '68656c6c6f\\n0a\\n' | xxd -r -p")).out).toBe('hello\n');
  });

  it('paste: - operands share stdin, -d delimiters in turn, -s', async () => {
    expect((await sh("printf 'a\\nb\\nc\\n' | paste - -")).out).toBe('a\tb\nc\t\n');
    expect((await sh("printf 'a\\nb\\nc\\n' | paste -s -d ',;'")).out).toBe('a,b;c\n');
    expect((await sh("printf 'a\\nb\\n' > p1; printf '1\\n2\\n3\\n' > p2; paste p1 p2")).out).toBe(
      'a\t1\nb\t2\n\t3\n',
    );
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
