/**
 * The phone's sed against toybox 0.8.9's (Android 14's): every expected value below is what
 * toybox 0.8.9's sed printed (run by mksh) for the same command line, except s///N, where
 * 0.8.9 itself writes uninitialised bytes before the match: those expected values are toybox's
 * with its February 2023 fix (abd8b1b2), which Android 14's toybox carries.
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

async function sh(source: string, options: { stdin?: string } = {}) {
  const device = new Device({ systemRoot, log: quietLog });
  const stdout = new BufferOutput();
  const stderr = new BufferOutput();
  const shell = new Interpreter(device, commands, initialShellState(device));
  const code = await shell.run(
    source,
    { stdin: new BufferInput(Buffer.from(options.stdin ?? '')), stdout, stderr },
    new AbortController().signal,
  );
  return { code, out: stdout.text(), err: stderr.text() };
}

/** What `source` printed on stdout (a fresh phone each time). */
async function out(source: string): Promise<string> {
  return (await sh(source)).out;
}

describe('sed s/// replacements (toybox 0.8.9)', () => {
  it('reads \\n and \\t in the replacement as a newline and a tab', async () => {
    expect((await sh("printf 'abc\\n' | sed 's/b/\\n/'")).out).toBe('a\nc\n');
    expect((await sh("printf 'abc\\n' | sed 's/b/\\t/'")).out).toBe('a\tc\n');
  });

  it('reads \\\\ as one backslash, even just before the closing delimiter', async () => {
    expect(await sh("printf 'abc\\n' | sed 's/b/\\\\/'")).toEqual({ code: 0, out: 'a\\c\n', err: '' });
    expect((await sh("printf 'a/b\\\\c\\n' | sed 's/a\\/b/X/; s/\\\\/Y/'")).out).toBe('XYc\n');
    expect((await sh("printf 'x\\n' | sed 's/x/a\\/b\\\\\\\\c/'")).out).toBe('a/b\\\\c\n');
  });

  it('reads groups, & and \\& as toybox does', async () => {
    expect((await sh("printf 'ab\\n' | sed -E 's/(a)(b)/\\2\\n\\1\\t&\\&/'")).out).toBe('b\na\tab&\n');
    expect((await sh("printf 'abc\\n' | sed 's/\\(b\\)/[\\1&]/'")).out).toBe('a[bb]c\n');
    expect((await sh("printf 'a$c\\n' | sed 's/c/$$/'")).out).toBe('a$$$\n');
  });
});

describe('sed q (toybox 0.8.9)', () => {
  it('quits after printing the line, with the exit status given', async () => {
    expect(await sh("printf 'a\\nb\\nc\\n' | sed '2q5'")).toEqual({ code: 5, out: 'a\nb\n', err: '' });
    expect(await sh("printf 'a\\nb\\nc\\n' | sed 2q")).toEqual({ code: 0, out: 'a\nb\n', err: '' });
  });
});

describe('sed s///', () => {
  it('reads printf escapes, & and \\1..\\9 in the replacement', async () => {
    expect(await out("printf 'a\\nb\\n' | sed 's/b/\\n/'")).toBe('a\n\n\n');
    expect(await out("printf 'a\\tb\\n' | sed 's/a/[\\t]/;s/b/\\\\/;s/\\t/&&/'")).toBe('[\t\t]\t\\\n');
    expect(await out("echo abc | sed 's/b/\\&/'")).toBe('a&c\n');
    expect(await out("echo abc | sed -n 's/b/[&]/p;s/\\(a\\)\\(.\\)/\\2\\1/p'")).toBe('a[b]c\n[ab]c\n');
    expect(await out("echo abc | sed -E 's/(a)(b)/\\2\\1\\0/'")).toBe('baabc\n');
    expect(await out("echo abc | sed 's/b/\\\n/'")).toBe('a\nc\n');
  });

  it('takes the g, N, p, I and w flags as toybox does (2g is the 2nd match only)', async () => {
    // s///N and 2g: toybox with abd8b1b2 (see the top of the file).
    expect(await out("echo aaaa | sed 's/a/x/g'")).toBe('xxxx\n');
    expect(await out("echo hello | sed 's/l/L/2'")).toBe('helLo\n');
    expect(await out("echo aAaA | sed 's/a/x/Ig'")).toBe('xxxx\n');
    expect(await out("echo hello | sed 's/l*/X/g'")).toBe('XhXeXoX\n');
    expect(await out("printf 'xaxbx\\n' | sed 's/x/-/2g'")).toBe('xa-bx\n');
    expect(await out("echo aa | sed -n 's/a/b/3p'")).toBe('aa\n');
    const w = await sh(
      "cd /data/local/tmp; printf 'a b\\n' | sed 's/\\(a\\) \\(b\\)/\\2 \\1/w w.txt'; cat w.txt",
    );
    expect(w.out).toBe('b a\nb a\n');
  });

  it('translates basic and extended regexes', async () => {
    expect(await out("echo 'a+b' | sed 's/a+b/X/'")).toBe('X\n');
    expect(await out("echo 'aab' | sed 's/a\\+b/X/'")).toBe('X\n');
    expect(await out("echo 'aaab' | sed 's/a\\{2\\}/X/'")).toBe('Xab\n');
    expect(await out("echo 'abcd' | sed 's/b\\|c/X/g'")).toBe('aXXd\n');
    expect(await out("echo 'ab*cd' | sed 's/*/X/;s/^*//'")).toBe('abXcd\n');
    expect(await out("echo 'a^b$c' | sed 's/a^b/X/;s/$c/Y/'")).toBe('XY\n');
    expect(await out("echo 'Hello World 42' | sed 's/[[:upper:]]/U/g;s/[[:digit:]]\\+/N/'")).toBe(
      'Uello Uorld N\n',
    );
    expect(await out("echo 'a]b' | sed 's/[]]/X/'")).toBe('aXb\n');
    expect(await out("echo 'foo bar' | sed 's/\\<b/B/;s/o\\>/O/'")).toBe('foO Bar\n');
    expect(await out("echo abc | sed -E 's/(b|z)+/[\\1]/'")).toBe('a[b]c\n');
    expect(await out("printf 'a\\nb\\n' | sed 'N;s/a.b/dot/'")).toBe('dot\n');
  });
});

describe('sed commands', () => {
  it('runs { } blocks, nested and negated', async () => {
    expect(await out("printf '1\\n2\\n3\\n' | sed -n '/2/{s/2/3/;p}'")).toBe('3\n');
    expect(await out("printf 'abc\\n' | sed -n '/a/{/x/{p};p}'")).toBe('abc\n');
    expect(await out("printf 'a\\nb\\nc\\n' | sed '2!{s/./X/}'")).toBe('X\nb\nX\n');
    expect(await sh("echo a | sed '{p'")).toMatchObject({ code: 1, err: 'sed: no }\n' });
  });

  it('appends, inserts and changes text, in both of toybox’s forms', async () => {
    expect(await out("printf 'a\\nb\\n' | sed '1a\\\nafter'")).toBe('a\nafter\nb\n');
    expect(await out("printf 'a\\nb\\n' | sed '1a after'")).toBe('a\nafter\nb\n');
    expect(await out("printf 'a\\nb\\n' | sed -e '1a\\' -e 'after'")).toBe('a\nafter\nb\n');
    expect(await out("printf 'a\\nb\\n' | sed '2i\\\nbefore\\\ntwo'")).toBe('a\nbefore\ntwo\nb\n');
    expect(await out("printf 'a\\nb\\nc\\n' | sed '1,2c changed'")).toBe('changed\nc\n');
    expect(await out("printf 'a\\nb\\nc\\n' | sed '2!c X'")).toBe('X\nb\nX\n');
    expect(await out("echo a | sed 'a\\text'")).toBe('a\n\text\n');
    expect(await out("printf 'a\\nb' | sed '$a foo'")).toBe('a\nb\nfoo\n');
  });

  it('joins lines with N, D and P', async () => {
    expect(await out("printf 'a\\nb\\nc\\n' | sed 'N;s/\\n/+/'")).toBe('a+b\nc\n');
    expect(await out("printf 'a\\nb\\nc\\n' | sed '$!N;s/\\n/-/'")).toBe('a-b\nc\n');
    expect(await out("printf 'a\\nb\\nc' | sed 'N;P;D'")).toBe('a\nb\nc');
    expect(await out("printf 'a\\nb\\nc\\nd\\n' | sed '/b/{N;N;d}'")).toBe('a\n');
  });

  it('keeps a hold space (h H g G x) and reads on with n', async () => {
    expect(await out("printf 'a\\nb\\nc\\n' | sed -n '1!G;h;$p'")).toBe('c\nb\na\n');
    expect(await out("printf 'a\\nb\\n' | sed -n 'H;${x;s/\\n/,/g;p}'")).toBe(',a,b\n');
    expect(await out("printf 'a\\nb\\nc\\n' | sed 'x'")).toBe('\na\nb\n');
    expect(await out("printf 'a\\nb\\n' | sed G")).toBe('a\n\nb\n\n');
    expect(await out("printf 'a\\nb\\nc\\n' | sed 'n;d'")).toBe('a\nc\n');
  });

  it('quits with q and Q and their exit status', async () => {
    expect(await out("printf 'a\\nb\\nc\\n' | sed '2q3'; echo \"st=$?\"")).toBe('a\nb\nst=3\n');
    expect(await out("printf 'a\\nb\\nc\\n' | sed '2Q3'; echo \"st=$?\"")).toBe('a\nst=3\n');
    expect(await out('yes | sed 3q')).toBe('y\ny\ny\n');
  });

  it('branches to labels with b, t and T', async () => {
    expect(await out("printf 'a b c\\n' | sed ':a;s/ /_/;ta'")).toBe('a_b_c\n');
    expect(await out("printf 'ab\\ncd\\n' | sed 's/a/A/;Tx;s/$/!/;:x'")).toBe('Ab!\ncd\n');
    expect(await out("printf 'a,b,c\\n' | sed -e ':a' -e 's/,/\\n/' -e 'ta'")).toBe('a\nb\nc\n');
    expect(await sh("echo a | sed 'b foo'")).toMatchObject({ code: 1, out: '', err: 'sed: no :foo\n' });
  });

  it('prints line numbers with = and lines unambiguously with l', async () => {
    expect(await out("printf 'a\\nb\\n' | sed =")).toBe('1\na\n2\nb\n');
    expect(await out("printf 'a\\tb\\001\\n' | sed -n l")).toBe('a\\tb\\001$\n');
    expect(await out("printf '%0100d\\n' 0 | sed -n l")).toBe(`${'0'.repeat(76)}\\\n${'0'.repeat(24)}$\n`);
    expect(await out("echo hello | sed 'y/abcdefghij/ABCDEFGHIJ/'")).toBe('HEllo\n');
  });

  it('reads and writes files with r and w', async () => {
    const r = await sh("cd /data/local/tmp; printf 'x\\ny\\n' > r.txt; printf 'a\\nb\\n' | sed '1r r.txt'");
    expect(r.out).toBe('a\nx\ny\nb\n');
    expect(await out("cd /data/local/tmp; printf 'a\\nb\\n' | sed -n '/b/w w2.txt'; cat w2.txt")).toBe('b\n');
  });
});

describe('sed addresses', () => {
  it('matches $, /re/, \\%re%, ADDR,+N, ranges and !', async () => {
    expect(await out("printf 'a\\nb\\nc\\nd\\ne\\n' | sed -n '2,+2p'")).toBe('b\nc\nd\n');
    expect(await out("printf 'a\\nb\\nc\\nd\\ne\\n' | sed -n '\\%c%,$p'")).toBe('c\nd\ne\n');
    expect(await out("printf 'a\\nb\\nc\\nd\\ne\\n' | sed -n '/b/,/d/!p'")).toBe('a\ne\n');
    expect(await out("printf 'a\\nb\\nc\\nd\\n' | sed '3,1d'")).toBe('a\nb\nd\n');
    expect(await out("printf 'l1\\nl2\\nl3\\nl4\\n' | sed -n '2,/l/p'")).toBe('l2\nl3\n');
  });

  it('keeps toybox’s quirks: 0,/re/ and // match every line, first~step is an error', async () => {
    expect(await out("printf 'a\\nb\\nc\\n' | sed -n '0,/b/p'")).toBe('a\nb\nc\n');
    expect(await out("printf 'a\\nb\\n' | sed -n '/a/p;//p'")).toBe('a\na\nb\n');
    expect(await sh("printf 'a\\nb\\n' | sed '1~2p'")).toMatchObject({
      code: 1,
      err: "sed: bad pattern '1~2p'@3 (2)\n",
    });
  });
});

describe('sed options and errors', () => {
  it('says what is wrong with a script as toybox does', async () => {
    expect(await sh("sed 's/a'")).toMatchObject({ code: 1, err: "sed: bad pattern 's/a'@2 (/)\n" });
    expect(await sh("sed 's/a/b'")).toMatchObject({ code: 1, err: "sed: bad pattern 's/a/b'@5 (b)\n" });
    expect(await sh("echo a | sed 'k'")).toMatchObject({ code: 1, err: "sed: bad pattern 'k'@2 (\0)\n" });
    expect(await sh("echo a | sed 's/\\(/x/'")).toMatchObject({
      code: 1,
      // Android's regerror (bionic's is NetBSD's) words it so; glibc says "Unmatched ( or \\(".
      err: "sed: bad regex '\\(': parentheses not balanced\n",
    });
    expect(await sh("echo a | sed 's/a/\\2/'")).toMatchObject({ code: 1, err: 'sed: no s//\\2/\n' });
    expect(await sh('sed')).toMatchObject({ code: 1, err: 'sed: no pattern\n' });
    expect(await sh('echo a | sed -x p')).toMatchObject({
      code: 1,
      err: 'sed: Unknown option \'x\' (see "sed --help")\n',
    });
    expect(await sh('echo a | sed -i p')).toMatchObject({ code: 1, err: 'sed: -i on stdin\n' });
  });

  it('edits in place with -i and -iSUFFIX, each file on its own', async () => {
    const r = await sh(
      "cd /data/local/tmp; printf 'x\\n' > e; sed -i.bak 's/x/y/' e; cat e e.bak; printf 'a\\nb\\n' > f1; printf 'c\\n' > f2; sed -i '$a X' f1 f2; cat f1 f2",
    );
    expect(r.out).toBe('y\nx\na\nb\nX\nc\nX\n');
  });

  it('reads -f scripts, -s files separately and -z NUL-separated lines', async () => {
    const f = await sh(
      "cd /data/local/tmp; printf '1d\\ns/b/B/\\n' > s.sed; printf 'a\\nb\\n' | sed -f s.sed",
    );
    expect(f.out).toBe('B\n');
    const s = await sh(
      "cd /data/local/tmp; printf 'x' > f1; printf 'y\\n' > f2; sed p f1 f2; sed -s '$p' f1 f2",
    );
    expect(s.out).toBe('x\nx\ny\ny\nx\nxy\ny\n');
    expect(await out("printf 'a\\0b' | sed -z 's/^/>/;$a X' | od -c")).toBe(
      '0000000   >   a  \\0   >   b  \\0   X  \\0\n0000010\n',
    );
  });

  it('keeps a last line without newline as it was, as p and N see it', async () => {
    expect(await out("printf 'a\\nb' | sed -n 'p;p'")).toBe('a\na\nb\nb');
    expect(await out("printf 'a\\nb' | sed '2c\\\nC'")).toBe('a\nC\n');
  });

  it('refuses only --tarxform and --help, by name', async () => {
    expect(await sh('echo a | sed --tarxform p')).toMatchObject({
      code: 1,
      err: "sed: the virtual phone's sed does not model --tarxform\n",
    });
  });
});
