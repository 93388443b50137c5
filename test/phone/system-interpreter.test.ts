/**
 * The phone's sh: quoting as adb clients send it, lists, pipes, redirections, expansions.
 * Runs the interpreter on a phone's system state directly (no adb), so every case is fast.
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Device } from '../../server/devices/virtual/device.js';
import { SHELL_CREDENTIALS } from '../../server/devices/virtual/fs.js';
import { createCommandTable } from '../../server/devices/virtual/shell/commands/index.js';
import { BufferInput, BufferOutput } from '../../server/devices/virtual/shell/io.js';
import type { Output } from '../../server/devices/virtual/shell/io.js';
import { Interpreter, initialShellState } from '../../server/devices/virtual/shell/interpreter.js';
import { parseShell } from '../../server/devices/virtual/shell/parse.js';
import { buildSystemImage } from '../../server/devices/virtual/system-image.js';
import { UIA2_PORT } from '../../server/devices/virtual/activity.js';
import { buildTestApk } from '../support/apk-builder.js';
import { quietLog } from '../support/virtual-adb.js';

const systemRoot = buildSystemImage();
const commands = createCommandTable();

function newDevice(options: { storageBytes?: number } = {}): Device {
  return new Device({ systemRoot, log: quietLog, ...options });
}

async function sh(source: string, options: { device?: Device; stdin?: string } = {}) {
  const device = options.device ?? newDevice();
  const stdout = new BufferOutput();
  const stderr = new BufferOutput();
  const shell = new Interpreter(device, commands, initialShellState(device));
  const code = await shell.run(
    source,
    { stdin: new BufferInput(Buffer.from(options.stdin ?? '')), stdout, stderr },
    new AbortController().signal,
  );
  return { code, out: stdout.text(), err: stderr.text(), device };
}

/** What `source` printed on stdout (a fresh phone each time). */
async function out(source: string): Promise<string> {
  return (await sh(source)).out;
}

describe('quoting', () => {
  it('undoes single quotes, including the adb/appium quote escape', async () => {
    expect(await out("echo 'a  b' 'it'\\''s'")).toBe("a  b it's\n");
  });

  it('handles double quotes with variables, escapes and literal single quotes', async () => {
    expect(await out('X=world; echo "hello $X" "\\$X" "a\\"b" "\'q\'"')).toBe("hello world $X a\"b 'q'\n");
  });

  it('handles backslashes outside quotes and keeps empty quoted arguments', async () => {
    expect(await out('printf "[%s]" a\\ b "" c\\\\d')).toBe('[a b][][c\\d]');
  });

  it("reads $'...' with C's escapes, and quotes inside ${x:-word} as mksh does", async () => {
    expect(await out("echo $'a\\'b' $'\\101\\x41\\u00e9' \"$'x'\"; echo $(echo $'a\\'b)')")).toBe(
      "a'b AAé $'x'\na'b)\n",
    );
    expect(await out('x=; echo "${x:-\'a b\'}" "${x:-"q"}" ${x:-\'a  b\'} ${x:-a  b}')).toBe(
      "'a b' q a  b a b\n",
    );
  });

  it("echoes as mksh's echo: backslash sequences unless -E, \\c ends the output", async () => {
    expect(await out('echo "a\\tb"; echo -E "a\\tb"; echo -n "x\\c"; echo y; echo -nq')).toBe(
      'a\tb\na\\tb\nxy\n-nq\n',
    );
    // /system/bin/echo is toybox's, which does not read them without -e.
    expect(await out("/system/bin/echo 'a\\tb'")).toBe('a\\tb\n');
  });

  it('splits unquoted expansions into fields but not quoted ones', async () => {
    const r = await sh('X="1  2"; printf "<%s>" $X; printf "<%s>" "$X"');
    expect(r.out).toBe('<1><2><1  2>');
  });

  it('keeps adb-quoted screencap arguments as one word each', async () => {
    const r = await sh("echo '-p'");
    expect(r.out).toBe('-p\n');
  });

  it('parses the logcat command adb 29 sends', async () => {
    const list = parseShell(`export ANDROID_LOG_TAGS="''"; exec logcat '-v' 'threadtime' -d`);
    expect(list).toHaveLength(2);
    const r = await sh(`export ANDROID_LOG_TAGS="''"; echo "$ANDROID_LOG_TAGS"`);
    expect(r.out).toBe("''\n");
  });
});

describe('lists, pipes and status', () => {
  it('runs ; && || with exit statuses', async () => {
    expect(await out('false; echo $?; true && echo yes || echo no; false && echo no || echo fallback')).toBe(
      '1\nyes\nfallback\n',
    );
  });

  it('returns the last status and supports exit', async () => {
    expect((await sh('true; false')).code).toBe(1);
    expect((await sh('exit 7; echo never')).code).toBe(7);
    expect((await sh('! false')).code).toBe(0);
  });

  it('pipes output between commands', async () => {
    const r = await sh('printf "b\\na\\nc\\na\\n" | sort | uniq | grep -v c | wc -l');
    expect(r.out.trim()).toBe('2');
  });

  it('stops an endless producer when the reader exits (SIGPIPE)', async () => {
    const r = await sh('yes hello | head -n 3');
    expect(r.out).toBe('hello\nhello\nhello\n');
  });

  it('reports unknown commands with status 127', async () => {
    const r = await sh('frobnicate --now');
    expect(r.code).toBe(127);
    expect(r.err).toBe('/system/bin/sh: frobnicate: inaccessible or not found\n');
  });

  it('answers fg and bg as mksh without a terminal does: no job control', async () => {
    for (const name of ['fg', 'bg']) {
      const r = await sh(`sleep 1 & ${name}; echo "status $?"; kill %1`);
      expect(r.err).toBe(`/system/bin/sh: ${name}: job control not enabled\n`);
      expect(r.out).toBe('status 1\n');
    }
    expect((await sh('type fg')).out).toBe('fg is a shell builtin\n');
  });

  it('reports syntax errors with status 1, as mksh does (its errorf)', async () => {
    const r = await sh('echo "unterminated');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/unterminated/);
  });
});

describe('redirections', () => {
  it('writes, appends and reads files', async () => {
    const r = await sh(
      'echo one > /data/local/tmp/f; echo two >> /data/local/tmp/f; cat < /data/local/tmp/f; wc -c /data/local/tmp/f',
    );
    expect(r.out).toBe('one\ntwo\n8 /data/local/tmp/f\n');
  });

  it('merges stderr into stdout with 2>&1 and drops it with 2>/dev/null', async () => {
    const merged = await sh('ls /nope 2>&1');
    expect(merged.out).toBe('ls: /nope: No such file or directory\n');
    expect(merged.err).toBe('');
    const dropped = await sh('ls /nope 2>/dev/null; echo $?');
    expect(dropped.out).toBe('1\n');
    expect(dropped.err).toBe('');
  });

  it('refuses to write outside the user-writable areas', async () => {
    const r = await sh('echo x > /system/evil');
    expect(r.code).toBe(1);
    expect(r.err).toBe("/system/bin/sh: can't create /system/evil: Read-only file system\n");
  });

  it('redirects a whole group', async () => {
    const r = await sh('{ echo a; echo b; } > /sdcard/g.txt; cat /sdcard/g.txt');
    expect(r.out).toBe('a\nb\n');
  });
});

describe('tests, variables and control flow', () => {
  it('tests files like Appium does', async () => {
    const device = newDevice();
    expect((await sh("[ -e '/data/local/tmp/mock_apps.json' ] && echo __PASS__", { device })).out).toBe('');
    await sh('echo {} > /data/local/tmp/mock_apps.json', { device });
    expect((await sh("[ -e '/data/local/tmp/mock_apps.json' ] && echo __PASS__", { device })).out).toBe(
      '__PASS__\n',
    );
    expect((await sh('test -d /sdcard && test ! -f /sdcard && echo dir', { device })).out).toBe('dir\n');
    expect((await sh('[ 3 -gt 2 -a "x" = "x" ]', { device })).code).toBe(0);
  });

  it('exports variables to commands and runs exec', async () => {
    expect(await out("export GREETING=hi; exec sh -c 'echo $GREETING'")).toBe('hi\n');
    expect(await out('A=1 env | grep ^A=')).toBe('A=1\n');
  });

  it('passes on only exported variables, as mksh does', async () => {
    expect(await out("x=1; sh -c 'echo [$x]'; export x; sh -c 'echo [$x]'")).toBe('[]\n[1]\n');
    expect(await out('typeset -x z=1; env | grep ^z=')).toBe('z=1\n');
    // env -i and -u change what the command gets; printenv prints values; IFS and PS1 stay home.
    expect(
      await out(
        "env -u HOME -i A=1 env; env -i B=2 sh -c 'echo [$B][$HOME]'; env | grep -c -E '^(IFS|PS1)='",
      ),
    ).toBe('A=1\n[2][]\n0\n');
    expect(await sh('env A=1 B=2 printenv A NOPE B; echo $?; env -u')).toMatchObject({
      code: 125,
      out: '1\n2\n1\n',
      err: 'env: Missing argument to -u (see "env --help")\n',
    });
    expect(await out("f() { local -x w=5; sh -c 'echo [$w]'; }; f; sh -c 'echo [$w]'")).toBe('[5]\n[]\n');
    expect(await out('x="a b"; export x; export -p | grep "x="; typeset -p x')).toBe(
      "export x='a b'\ntypeset -x x='a b'\n",
    );
    expect(await sh('export 1x=3; echo never')).toMatchObject({
      code: 1,
      out: '',
      err: '/system/bin/sh: export: 1x=3: not an identifier\n',
    });
  });

  it("keeps a function's local and typeset variables its own", async () => {
    expect(await out('x=1; f() { local x=2; g; }; g() { echo "g $x"; }; f; echo "after $x"')).toBe(
      'g 2\nafter 1\n',
    );
    expect(await out('f() { typeset y=3; }; f; echo "[$y]"; x=1; f() { x=2; }; f; echo $x')).toBe('[]\n2\n');
    expect(await out('local a=1; echo $a; f() { echo f; }; unset -f f; f 2>/dev/null; echo $?')).toBe(
      '1\n127\n',
    );
  });

  it('refuses to change a read-only variable as mksh does', async () => {
    expect(await sh('readonly x=1; x=2; echo never')).toMatchObject({
      code: 2,
      out: '',
      err: '/system/bin/sh: read-only: x\n',
    });
    expect(await sh('readonly x=1; export x=2; echo never')).toMatchObject({
      code: 2,
      err: '/system/bin/sh: export: read-only: x\n',
    });
    expect(await sh('readonly r=1; (r=2); echo "sub $?"; unset r; echo "unset $? $r"')).toMatchObject({
      out: 'sub 2\nunset 1 1\n',
      err: '/system/bin/sh: read-only: r\n/system/bin/sh: read-only: r\n',
    });
    expect(await sh('readonly a=1; read a <<< "c"; echo "read $? $a"; let a=2; echo "let $?"')).toMatchObject(
      {
        out: 'read 2 1\nlet 2\n',
        err: '/system/bin/sh: read: read-only: a\n/system/bin/sh: a=2: = applied to read-only variable\n',
      },
    );
    expect(await out('readonly q=1; readonly -p | grep q; readonly | grep q')).toBe('readonly q=1\nq\n');
    // set prints values as mksh quotes them, so that its output can be read back.
    expect(await out('x="it\'s"; y=$\'a\\tb\'; z=""; t="a=b"; set | grep -E "^(x|y|z|t)="')).toBe(
      "t='a=b'\nx='it'\\''s'\ny=$'a\\tb'\nz=''\n",
    );
  });

  it('gives assignments what mksh gives them: +=, typeset -i, the status of $(...)', async () => {
    expect(await out('x=1; x+=2 y+=b; echo $x $y')).toBe('12 b\n');
    expect(await out('typeset -i n=3+4; n=n+1; echo $n; integer k=5; echo $((k*2))')).toBe('8\n10\n');
    // typeset's formats, as mksh R59c printed them.
    expect(
      await out(
        'x=hello; typeset -u x; echo $x; typeset -l x; x=WoRlD; echo $x; typeset -L5 l="  ab"; typeset -R2 r=abcd; ' +
          'typeset -Z4 z=7; typeset -i -Z4 n=3+4; typeset -L k=abc; k=defgh; echo "[$l][$r][$z][$n][$k]"',
      ),
    ).toBe('HELLO\nworld\n[ab   ][cd][0007][0007][def]\n');
    expect(
      await out('typeset -x -R4 -l v=AB; typeset -p v; typeset -LZ3 w=1; typeset -p w; env | grep ^v='),
    ).toBe("typeset -x -R4 -l v='  ab'\ntypeset -L3 -Z w='1  '\nv=  ab\n");
    expect(await out('x=$(exit 3); echo $?; y=2; echo $?; x=$(false) || echo failed')).toBe('3\n0\nfailed\n');
  });

  it("refuses options toybox's applets have not, as toybox does (cat has no -n)", async () => {
    expect(await sh('echo a | cat -u -; echo a | cat -n')).toMatchObject({
      code: 1,
      out: 'a\n',
      err: 'cat: Unknown option \'n\' (see "cat --help")\n',
    });
    // toybox 0.8.9's answers; options that take a value may be joined (-c%s) or not.
    expect(
      await sh(
        'touch -x f; echo $?; wc -Q; echo $?; id -Q; echo $?; stat -c %s /system/bin/sh -L >/dev/null; echo $?; ' +
          'dirname -Q a; head -5 /proc/version >/dev/null; echo $?',
      ),
    ).toMatchObject({
      out: '1\n1\n1\n0\n.\n.\n0\n',
      err:
        'touch: Unknown option \'x\' (see "touch --help")\nwc: Unknown option \'Q\' (see "wc --help")\n' +
        'id: Unknown option \'Q\' (see "id --help")\n',
    });
    // grep and sort say so with status 2, as their declarations ask (ARGFAIL).
    expect(await sh('grep -y a /proc/version; echo $?; sort -y; echo $?')).toMatchObject({
      out: '2\n2\n',
      err: 'grep: Unknown option \'y\' (see "grep --help")\nsort: Unknown option \'y\' (see "sort --help")\n',
    });
  });

  it('says Terminated, Killed, ... of a command or waited job a signal ended, as mksh does', async () => {
    expect(
      await sh(
        "sh -c 'kill $$'; echo $?; sh -c 'kill -9 $$' 2>/dev/null; echo $?; sh -c 'kill -INT $$'; echo $?; " +
          "sleep 5 & sleep 0.1; kill $!; wait $!; echo $?; sh -c 'kill -PIPE $$' | cat; echo $?",
      ),
    ).toMatchObject({ out: '143\n137\n130\n143\n0\n', err: 'Terminated \nTerminated \n' });
  });

  it('ends case clauses with ;; ;& and ;| as mksh does, and names itself in $KSH_VERSION', async () => {
    expect(await out('case x in x) echo one;| y) echo two;; x) echo three;& q) echo four;; esac')).toBe(
      'one\nthree\nfour\n',
    );
    expect(await sh('echo $KSH_VERSION; env | grep -c KSH_VERSION; KSH_VERSION=1')).toMatchObject({
      code: 2,
      out: '@(#)MIRBSD KSH R59 2020/10/31 Android\n0\n',
      err: '/system/bin/sh: read-only: KSH_VERSION\n',
    });
  });

  it("tests with mksh's test builtin: POSIX's argument rules, arithmetic operands and its errors", async () => {
    expect(await out('[ "1+1" -eq 2 ]; echo $?; x=3; [ x -gt 2 ]; echo $?; [ ! a = b -a c ]; echo $?')).toBe(
      '0\n0\n0\n',
    );
    expect(await out('[ \\( a = a \\) -a \\( b = c -o d \\) ]; echo $?; test -f = -f; echo $?')).toBe(
      '0\n0\n',
    );
    expect(
      await sh('test 2 -gt; echo $?; [ a b ]; echo $?; [ 1 -eq 1; echo $?; [ 1 -eq 1.0 ]; echo $?'),
    ).toMatchObject({
      out: '2\n2\n2\n2\n',
      err:
        '/system/bin/sh: test: -gt: missing second argument\n/system/bin/sh: [: b: unexpected operator/operand\n' +
        "/system/bin/sh: [: missing ]\n/system/bin/sh: 1.0: unexpected '.'\n",
    });
    expect(
      await out("set -e; [ -o errexit ]; echo $?; [ -o '!errexit' ] || echo 'not off'; [ -v HOME ]; echo $?"),
    ).toBe('0\nnot off\n0\n');
    // /system/bin/test is toybox's.
    expect(await sh('/system/bin/[ 1 -eq 1')).toMatchObject({ code: 2, err: "[: missing ']'\n" });
  });

  it('runs the last stage of a pipeline in a subshell and ends on errors as mksh does', async () => {
    expect(await out('x=0; echo 5 | read x; echo $x; echo a | exit 3; echo "after $?"')).toBe('0\nafter 3\n');
    expect(await sh('set -- a; shift 2; echo never')).toMatchObject({
      code: 1,
      out: '',
      err: '/system/bin/sh: shift: nothing to shift\n',
    });
    expect(await sh('echo $((1/0)); echo never')).toMatchObject({
      code: 1,
      out: '',
      err: '/system/bin/sh: 1/0: zero divisor\n',
    });
    expect(await sh('read -t x a; echo $?; read -n y a; echo $?; kill -l TERM')).toMatchObject({
      out: '2\n2\n',
      err:
        "/system/bin/sh: read: syntax error: Invalid argument 'x'\n/system/bin/sh: read: bad number: y\n" +
        '/system/bin/sh: kill: bad number: TERM\n',
    });
    expect(await out('command -v ls nosuch echo; echo $?; umask; type nosuch; cd /sdcard; echo ~+ ~-')).toBe(
      '/system/bin/ls\n1\n000\nnosuch not found\n/sdcard /\n',
    );
  });

  it('expands command substitution, defaults and globs', async () => {
    const device = newDevice();
    await sh('touch /sdcard/a.txt /sdcard/b.txt /sdcard/c.log', { device });
    const r = await sh('echo $(echo nested) ${UNSET:-default} /sdcard/*.txt', { device });
    expect(r.out).toBe('nested default /sdcard/a.txt /sdcard/b.txt\n');
    expect((await sh('echo /sdcard/*.none', { device })).out).toBe('/sdcard/*.none\n');
  });

  it('runs if, for and while', async () => {
    const r = await sh(
      'for i in 1 2 3; do if [ $i = 2 ]; then continue; fi; echo $i; done; n=0; while [ $n -lt 3 ]; do n=$((n + 1)); done; echo "end $n $((2 * (3 + 4) % 5))"',
    );
    expect(r.out).toBe('1\n3\nend 3 4\n');
  });

  it('reads stdin in commands', async () => {
    expect((await sh('cat', { stdin: 'piped\n' })).out).toBe('piped\n');
    expect((await sh('md5sum', { stdin: 'abc' })).out).toBe('900150983cd24fb0d6963f7d28e17f72  -\n');
  });
});

describe('text split across reads', () => {
  it('keeps a UTF-8 character that straddles two stdin chunks whole in head', async () => {
    const device = newDevice();
    const chunks = [
      Buffer.from([0x68, 0xc3]),
      Buffer.from([0xa9, 0x0a, 0x77, 0xe2, 0x82]),
      Buffer.from([0xac, 0x0a, 0x78, 0x0a]),
    ];
    const stdin = { read: () => Promise.resolve(chunks.shift() ?? null) };
    const stdout = new BufferOutput();
    const shell = new Interpreter(device, commands, initialShellState(device));
    await shell.run('head -n 2', { stdin, stdout, stderr: new BufferOutput() }, new AbortController().signal);
    expect(stdout.text()).toBe('hé\nw€\n');
  });
});

describe('background jobs', () => {
  it('runs a job with & and stops it when the phone shuts down, even if its session never ends', async () => {
    const device = newDevice();
    // The caller's signal is never aborted: only the phone's shutdown can stop the job.
    const r = await sh('while true; do sleep 0.05; log -t BgJob tick; done & echo started', { device });
    expect(r.out).toBe('started\n');
    expect(device.runningJobs).toBe(1);
    device.close();
    await vi.waitFor(() => expect(device.runningJobs).toBe(0), { timeout: 5000 });
  });
});

describe('storage', () => {
  it('fills the disk with `yes > file`, then fails with "No space left on device"', async () => {
    const quota = 4 * 1024 * 1024;
    const device = newDevice({ storageBytes: quota });
    expect(device.fs.usedBytes).toBe(0);
    const r = await sh('yes > /data/local/tmp/y', { device });
    expect(r.code).toBe(1);
    expect(r.err).toBe('yes: write error: No space left on device\n');
    // Memory is bounded by the quota: the file holds exactly what fitted.
    expect(device.fs.stat('/data/local/tmp/y').size).toBe(quota);
    expect(device.fs.usedBytes).toBe(quota);
    expect((await sh('echo more >> /data/local/tmp/y', { device })).err).toBe(
      'echo: write error: No space left on device\n',
    );
    expect((await sh('cp /data/local/tmp/y /sdcard/copy', { device })).err).toContain(
      'No space left on device',
    );
    // Removing the file frees its space.
    expect((await sh('rm /data/local/tmp/y; echo ok > /sdcard/ok; cat /sdcard/ok', { device })).out).toBe(
      'ok\n',
    );
    expect(device.fs.usedBytes).toBe(3);
  });

  it('appends without copying the whole file each time, and never changes bytes already read', async () => {
    const device = newDevice();
    const path = '/data/local/tmp/grow.log';
    // Created by the shell user, so the shell may append to it below.
    device.fs.as(SHELL_CREDENTIALS).writeFile(path, Buffer.from('start\n'));
    const early = device.fs.readFile(path);
    let copies = 0;
    let previous = early;
    for (let i = 0; i < 10_000; i++) {
      device.fs.writeFile(path, Buffer.from(`line ${i}\n`), { append: true });
      const now = device.fs.readFile(path);
      if (now.buffer !== previous.buffer || now.byteOffset !== previous.byteOffset) copies++;
      previous = now;
    }
    // Geometric growth: a few dozen reallocations for ~100 KB, not one per append.
    expect(copies).toBeLessThan(30);
    expect(early.toString()).toBe('start\n');
    const text = device.fs.readFile(path).toString();
    expect(text.startsWith('start\nline 0\nline 1\n')).toBe(true);
    expect(text.endsWith('line 9999\n')).toBe(true);
    expect(device.fs.usedBytes).toBe(text.length);
    // A rewrite starts over; appends after it do not touch what an earlier reader holds.
    const before = device.fs.readFile(path);
    device.fs.writeFile(path, Buffer.from('new\n'));
    device.fs.writeFile(path, Buffer.from('more\n'), { append: true });
    expect(device.fs.readFile(path).toString()).toBe('new\nmore\n');
    expect(before.toString()).toBe(text);
    expect((await sh(`for i in 1 2 3; do echo $i >> ${path}; done; cat ${path}`, { device })).out).toBe(
      'new\nmore\n1\n2\n3\n',
    );
  });

  it('refuses a streamed install larger than the free space before reading it', async () => {
    const device = newDevice({ storageBytes: 1024 * 1024 });
    const r = await sh('pm install -S 1000000000', { device });
    expect(r.code).toBe(1);
    expect(r.out).toBe(
      'Failure [INSTALL_FAILED_INSUFFICIENT_STORAGE: Requested internal only, but not enough space]\n',
    );
  });

  it("writes a redirected command's output while it runs", async () => {
    const device = newDevice();
    const controller = new AbortController();
    const stderr = new BufferOutput();
    const shell = new Interpreter(device, commands, initialShellState(device));
    const run = shell.run(
      'logcat -v raw -s Live > /data/local/tmp/live.txt',
      { stdin: new BufferInput(Buffer.alloc(0)), stdout: new BufferOutput(), stderr },
      controller.signal,
    );
    const file = () =>
      device.fs.exists('/data/local/tmp/live.txt')
        ? device.fs.readFile('/data/local/tmp/live.txt').toString()
        : '';
    await vi.waitFor(() => expect(device.fs.exists('/data/local/tmp/live.txt')).toBe(true));
    device.logcat.add({ pid: 1, tid: 1, priority: 'I', tag: 'Live', message: 'first' });
    await vi.waitFor(() => expect(file()).toBe('first\n'));
    device.logcat.add({ pid: 1, tid: 1, priority: 'I', tag: 'Live', message: 'second' });
    await vi.waitFor(() => expect(file()).toBe('first\nsecond\n'));
    controller.abort();
    await run;
    expect(stderr.text()).toBe('');
  });

  it('writes the output of `logcat > file &` while the job runs', async () => {
    const device = newDevice();
    expect((await sh('logcat -v raw -s Bg > /data/local/tmp/bg.txt & echo started', { device })).out).toBe(
      'started\n',
    );
    device.logcat.add({ pid: 1, tid: 1, priority: 'I', tag: 'Bg', message: 'from the job' });
    await vi.waitFor(() =>
      expect(device.fs.readFile('/data/local/tmp/bg.txt').toString()).toBe('from the job\n'),
    );
    device.close();
    await vi.waitFor(() => expect(device.runningJobs).toBe(0));
  });

  it('truncates log messages to the 4068-byte payload logd keeps', async () => {
    const device = newDevice();
    device.logcat.add({ pid: 1, tid: 1, priority: 'I', tag: 'Big', message: 'é'.repeat(10_000) });
    await sh(`log -t Cmd ${'x'.repeat(10_000)}`, { device });
    const [big, cmd] = device.logcat.snapshot().slice(-2);
    // priority byte + tag + NUL + message + NUL
    expect(1 + Buffer.byteLength(big!.tag) + 1 + Buffer.byteLength(big!.message) + 1).toBeLessThanOrEqual(
      4068,
    );
    expect(big!.message).toMatch(/^(é)+$/);
    expect(Buffer.byteLength(big!.message)).toBeGreaterThan(4000);
    expect(cmd).toMatchObject({ tag: 'Cmd', message: 'x'.repeat(4068 - 3 - 3) });
  });
});

describe('flow control', () => {
  it('follows the log only as fast as its reader takes it, keeping at most the ring buffer', async () => {
    const device = newDevice();
    device.logcat.clear();
    // A reader that stops reading after the first line: drain() then waits until released.
    let release: () => void = () => undefined;
    const drained = new Promise<void>((resolve) => (release = resolve));
    const lines: string[] = [];
    const stuck: Output = {
      closed: false,
      write: (data) => void lines.push(...data.toString().split('\n').filter(Boolean)),
      drain: () => (lines.length > 0 ? drained : Promise.resolve()),
    };
    const controller = new AbortController();
    const shell = new Interpreter(device, commands, initialShellState(device));
    const run = shell.run(
      'logcat -v raw -s Flood',
      { stdin: new BufferInput(Buffer.alloc(0)), stdout: stuck, stderr: new BufferOutput() },
      controller.signal,
    );
    const followers = () => (device.logcat as unknown as { followers: Set<unknown> }).followers.size;
    await vi.waitFor(() => expect(followers()).toBe(1));
    for (let i = 0; i < 10_000; i++)
      device.logcat.add({ pid: 1, tid: 1, priority: 'I', tag: 'Flood', message: `line ${i}` });
    await new Promise((resolve) => setImmediate(resolve));
    // Nothing more was written while the reader was stuck.
    expect(lines.length).toBeLessThanOrEqual(1);
    release();
    // Once it reads again, the newest 4000 entries arrive (older ones were dropped).
    await vi.waitFor(() => expect(lines[lines.length - 1]).toBe('line 9999'));
    expect(lines.length).toBeLessThanOrEqual(4001);
    controller.abort();
    await run;
  });
});

describe('sleep', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sleeps longer than setTimeout can wait at once (about 24.8 days)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let status: number | null = null;
    void sh('sleep 30d').then((r) => (status = r.code));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(status).toBeNull();
    await vi.advanceTimersByTimeAsync(25 * 86_400_000);
    expect(status).toBeNull();
    await vi.advanceTimersByTimeAsync(5 * 86_400_000);
    expect(status).toBe(0);
  });
});

describe('activity manager', () => {
  it('frees device port 6790 on stopping UiAutomator2 only while the port is still its own', () => {
    const device = newDevice();
    const options = { grantAll: false, allowDowngrade: false };
    expect(
      device.packages.install(buildTestApk({ package: 'io.appium.uiautomator2.server' }), options).ok,
    ).toBe(true);
    const testApk = buildTestApk({
      package: 'io.appium.uiautomator2.server.test',
      instrumentation: {
        name: 'androidx.test.runner.AndroidJUnitRunner',
        targetPackage: 'io.appium.uiautomator2.server',
      },
    });
    expect(device.packages.install(testApk, options).ok).toBe(true);
    device.activity.uiAutomator2Factory = () => ({
      handleConnection: (socket) => socket.destroy(),
      close: () => undefined,
    });
    const started = device.activity.startInstrumentation({
      pkg: 'io.appium.uiautomator2.server.test',
      cls: 'androidx.test.runner.AndroidJUnitRunner',
    });
    if (started.kind !== 'server') throw new Error(`not started: ${started.kind}`);
    expect(device.network.isListening(UIA2_PORT)).toBe(true);
    started.stop('test');
    expect(device.network.isListening(UIA2_PORT)).toBe(false);
    // Something else listens there now (an adb reverse): the server cannot bind, as Netty's
    // cannot, and the listener is left alone.
    const unlisten = device.network.listen(UIA2_PORT, () => undefined, { uid: 2000, bind: 'loopback' });
    const again = device.activity.startInstrumentation({
      pkg: 'io.appium.uiautomator2.server.test',
      cls: 'androidx.test.runner.AndroidJUnitRunner',
    });
    expect(again).toEqual({ kind: 'crashed', reason: expect.stringContaining('Address already in use') });
    expect(device.network.isListening(UIA2_PORT)).toBe(true);
    unlisten();
  });
});

describe('memory', () => {
  it('fails `yes | sort` on its own instead of holding unbounded input', async () => {
    const r = await sh('yes | sort');
    expect(r.code).toBe(1);
    expect(r.err).toContain('sort: input is larger than 64 MiB: out of memory');
  }, 60_000);

  it('stops a command substitution at the in-memory limit instead of growing without end', async () => {
    const r = await sh('x=$(yes); echo ${#x}');
    // 64 MiB of "y\n", newlines trimmed at the end: the producer was stopped at the limit.
    expect(Number(r.out.trim())).toBeGreaterThan(60 * 1024 * 1024);
    expect(Number(r.out.trim())).toBeLessThanOrEqual(64 * 1024 * 1024);
  }, 60_000);
});

describe('what scripts use, as mksh and toybox do it', () => {
  it('formats numbers as toybox printf does, and says which argument is not one', async () => {
    expect(await out("printf '%d %i %x %o %X|%5.3d|%-4d|%+d|%05d\\n' 0x1f 010 255 8 255 7 3 4 -42")).toBe(
      '31 8 ff 10 FF|  007|3   |+4|-0042\n',
    );
    expect(await out("printf '%d %u %c %.2f %e\\n' \"'A\" -1 xyz 2.345 1500")).toBe(
      '65 18446744073709551615 x 2.35 1.500000e+03\n',
    );
    expect(await sh('printf "%d|" 12abc x; echo')).toMatchObject({
      code: 0,
      out: '12|0|\n',
      err: 'printf: bad %d 12abc\nprintf: bad %d x\n',
    });
    expect((await sh('printf %d x')).code).toBe(1);
  });

  it('defines and calls functions, with their own arguments and return', async () => {
    expect(await out('f() { echo "in f $1 $#"; return 3; echo never; }; f x y; echo $?')).toBe(
      'in f x 2\n3\n',
    );
    expect(await out('function g { echo g; }; g')).toBe('g\n');
  });

  it('matches case patterns, removes ${x%pat} ${x#pat} and expands {a,b}', async () => {
    const r = await sh(
      'for f in a.txt b.log c; do case $f in *.txt|*.md) echo text;; (*.log) echo log;; *) echo other;; esac; done',
    );
    expect(r.out).toBe('text\nlog\nother\n');
    expect(await out('x=/a/b.tar.gz; echo ${x%.*} ${x%%.*} ${x#*.} ${x##*/} ${#x}')).toBe(
      '/a/b.tar /a/b tar.gz b.tar.gz 11\n',
    );
    expect(await out('echo p{1,2{a,b}}q "{x,y}"')).toBe('p1q p2aq p2bq {x,y}\n');
    expect(await sh('echo ${nope:?is required}; echo never')).toMatchObject({
      code: 1,
      err: '/system/bin/sh: nope: is required\n',
    });
  });

  it('splits, reads files and sources scripts as mksh does: IFS, $(<file), . FILE ARGS, umask, command -V', async () => {
    // Every expected value is what mksh R59c printed for the same line.
    expect(
      await out(
        'IFS=": "; set -- $(echo " a : b::c "); echo $#; IFS=,; x=",a,"; set -- pre$x $x; echo $# "[$3]"',
      ),
    ).toBe('4\n4 []\n');
    expect(
      await sh('cd /data/local/tmp; echo hi > f; x=$(<f); echo "[$x]"; y=$(<nosuch); echo "[$y] $?"'),
    ).toMatchObject({
      out: '[hi]\n[] 1\n',
      err: "/system/bin/sh: nosuch: can't open $(<...) file: No such file or directory\n",
    });
    expect(
      await out(
        "cd /data/local/tmp; echo 'echo sourced $# $1' > s.sh; set -- p q r; . ./s.sh; . ./s.sh a b; echo $#",
      ),
    ).toBe('sourced 3 p\nsourced 2 a\n3\n');
    expect(
      await out('umask; umask 022; umask; umask -S; umask u=rwx,g=,o=; umask; umask g+r; umask -S'),
    ).toBe('000\n022\nu=rwx,g=rx,o=rx\n077\nu=rwx,g=r,o=\n');
    // adbd clears its umask, so a shell makes files 0666 and directories 0777, less what
    // umask then takes away; mkdir -m and cp -p set their mode exactly, cp keeps the source's.
    expect(
      await out(
        'cd /data/local/tmp; touch u1; mkdir u2; echo > u3; stat -c "%a %n" u1 u2 u3; umask 027; touch u4; mkdir u5; mkdir -m 700 u6; (umask 077; echo > u7); stat -c "%a %n" u4 u5 u6 u7',
      ),
    ).toBe('666 u1\n777 u2\n666 u3\n640 u4\n750 u5\n700 u6\n600 u7\n');
    expect(
      await out(
        'cd /data/local/tmp; echo x > s; chmod 755 s; umask 022; cp s c1; cp -p s c2; chmod 600 s; umask 0; cp -p s c3; stat -c "%a %n" c1 c2 c3',
      ),
    ).toBe('755 c1\n755 c2\n600 c3\n');
    expect(await out('command -V echo nosuch; echo $?; command -v -V echo')).toBe(
      'echo is a shell builtin\nnosuch not found\n1\necho is a shell builtin\n',
    );
  });

  it('honours set -e, -u, -x and -o pipefail, and refuses options it does not model', async () => {
    expect(await sh('set -e; false || true; if false; then :; fi; false; echo never')).toMatchObject({
      code: 1,
      out: '',
    });
    expect((await sh('set -x; echo hi')).err).toBe('+ echo hi\n');
    // As mksh R59c traces them: values quoted, a bare assignment with a space after it.
    expect((await sh('set -x; x=1; y="a b"; X=1 echo z "c d" >/dev/null; a[1]=v; b=(1 2)')).err).toBe(
      "+ x=1 \n+ y='a b' \n+ X=1 echo z 'c d'\n+ a[1]=v \n+ set -A b -- 1 2\n",
    );
    expect((await sh('set -u; echo $nope')).code).toBe(1);
    expect(await out('false | true; echo $?; set -o pipefail; false | true; echo $?')).toBe('0\n1\n');
    expect(await out('set -o pipefail; yes | head -1 > /dev/null; echo $?')).toBe('141\n');
    expect(await sh('set -k')).toMatchObject({
      code: 1,
      err: '/system/bin/sh: set: -k: the virtual phone does not model this option\n',
    });
  });

  it('keeps exec redirections for the rest of the shell', async () => {
    const r = await sh('exec > /data/local/tmp/out.txt; echo one; echo two; cat /data/local/tmp/out.txt >&2');
    expect(r.out).toBe('');
    expect(r.err).toBe('one\ntwo\n');
  });

  it('edits with sed -n, addresses, several -e and -i', async () => {
    expect(await out("printf '1\\n2\\n3\\n4\\n' | sed -n '2,3p'")).toBe('2\n3\n');
    expect(await out("printf 'a b\\n' | sed -e 's/a/x/' -e 's/b/y/'")).toBe('x y\n');
    expect(await out("printf 'k=1\\nj=2\\n' | sed -E '/^j/d; s/([a-z])=([0-9])/\\2:\\1/'")).toBe('1:k\n');
    const edited = await sh(
      "printf 'x\\n' > /data/local/tmp/e; sed -i 's/x/y/' /data/local/tmp/e; cat /data/local/tmp/e",
    );
    expect(edited.out).toBe('y\n');
    expect(await out("echo a | sed 'G'")).toBe('a\n\n');
  });

  it('finds with expressions and -exec, and feeds commands with xargs', async () => {
    const device = newDevice();
    await sh('mkdir -p /data/local/tmp/f/a && touch /data/local/tmp/f/a/1 /data/local/tmp/f/2', { device });
    expect((await sh("find /data/local/tmp/f -type f -exec echo 'got {}' \\;", { device })).out).toBe(
      'got /data/local/tmp/f/2\ngot /data/local/tmp/f/a/1\n',
    );
    expect(
      (await sh('find /data/local/tmp/f -name 1 -o -name 2 | xargs -n 1 basename', { device })).out,
    ).toBe('2\n1\n');
    // toybox's xargs has no -I (toybox 0.8.9's answer).
    expect(await sh("printf 'a\\nb\\n' | xargs -I{} echo '[{}]'")).toMatchObject({
      code: 1,
      out: '',
      err: 'xargs: Unknown option \'I{}\' (see "xargs --help")\n',
    });
    expect(await out('echo x | xargs false; echo $?')).toBe('123\n');
    expect(await out('find /data 2>&1; echo $?')).toBe('/data\nfind: /data: Permission denied\n1\n');
  });

  it('counts with seq and expr, compares with cmp, compresses with gzip', async () => {
    expect(await out('seq 3; seq -s, 2 2 6; seq -w 9 10')).toBe('1\n2\n3\n2,4,6\n09\n10\n');
    expect(await out('expr 2 + 3 \\* 4; expr length hello; expr abc : "a\\(.\\)"; expr 0; echo $?')).toBe(
      '14\n5\nb\n0\n1\n',
    );
    expect(
      await out(
        'echo a > /data/local/tmp/c1; echo b > /data/local/tmp/c2; cmp /data/local/tmp/c1 /data/local/tmp/c2',
      ),
    ).toBe('/data/local/tmp/c1 /data/local/tmp/c2 differ: char 1, line 1\n');
    const gz = await sh(
      'echo hello > /data/local/tmp/z; gzip /data/local/tmp/z; ls /data/local/tmp/z*; zcat /data/local/tmp/z.gz',
    );
    expect(gz.out).toBe('/data/local/tmp/z.gz\nhello\n');
  });

  it('reads line by line with read, leaving the rest of the input to the next reader', async () => {
    expect(await out('printf \'a\\nb\\nc\\n\' | while read l; do echo "got $l"; done')).toBe(
      'got a\ngot b\ngot c\n',
    );
    expect(await out("printf '1\\n2\\n3\\n' | { read x; cat; }")).toBe('2\n3\n');
    expect(await out("printf 'x y z\\nlast' | { read a b; echo $b $?; read c; echo $c $?; }")).toBe(
      'y z 0\nlast 1\n',
    );
    // A trapped signal interrupts wait (status 128+N) and its action runs.
    expect(
      await out("trap 'echo usr1' USR1; sleep 5 & (sleep 0.02; kill -USR1 $$) & wait; echo $?; kill %1"),
    ).toBe('usr1\n138\n');
  });

  it('signals jobs by %N and reports unknown ones as mksh does', async () => {
    // An ended job leaves the numbered table at once (mksh without job control), so its
    // status is waited for by pid.
    expect(await out('sleep 5 & kill %1; wait $!; echo $?')).toBe('143\n');
    expect(await sh('kill %9')).toMatchObject({ code: 1, err: '/system/bin/sh: kill: %9: no such job\n' });
    expect(await sh('sleep 5 & sleep 6 & kill %sleep')).toMatchObject({
      code: 1,
      err: '/system/bin/sh: kill: %sleep: ambiguous\n',
    });
    expect(await out('sleep 5 & sleep 6 & kill %?6 %-; wait; echo $?')).toBe('0\n');
  });

  it('numbers jobs from the lowest free number and lists them as mksh does', async () => {
    const r = await sh('sleep 0.01 & wait; sleep 5 & sleep 6 | cat & jobs; jobs -p %1; kill %1 %2');
    const [first, second, pid] = r.out.split('\n');
    expect(first).toBe('[1] - Running              sleep 5');
    expect(second).toBe('[2] + Running              sleep 6 | cat');
    expect(pid).toMatch(/^\d+$/);
    const ended = await sh('sleep 0.01 & p=$!; wait $p; sleep 5 & jobs; kill %1');
    expect(ended.out).toBe('[1] + Running              sleep 5\n');
  });

  it('says so for a program /system/bin has but the virtual phone does not run', async () => {
    expect(await sh("awk '{print $1}'")).toMatchObject({
      code: 126,
      err: '/system/bin/sh: awk: not modeled by the virtual phone (see docs/virtual-phone.md)\n',
    });
    expect(await out('which awk')).toBe('/system/bin/awk\n');
    // toybox tar is on every phone: the virtual one says it does not run it, not that it is missing.
    expect(await sh('tar -czf /data/local/tmp/t.tgz /data/local/tmp')).toMatchObject({
      code: 126,
      err: '/system/bin/sh: tar: not modeled by the virtual phone (see docs/virtual-phone.md)\n',
    });
  });

  it('runs every toybox applet by name: the ones it models, and a clear refusal for the rest', async () => {
    // What Android 14's toybox lists; `which` finds each in /system/bin.
    const applets = (await out('ls /system/bin')).split('\n');
    for (const name of ['free', 'lsof', 'mount', 'nproc', 'mktemp', 'xxd', 'vi', 'killall'])
      expect(applets).toContain(name);
    expect(await sh('lsof')).toMatchObject({
      code: 126,
      err: '/system/bin/sh: lsof: not modeled by the virtual phone (see docs/virtual-phone.md)\n',
    });
    // Android's own tools too: `ip` (iproute2) is how scripts find the phone's address.
    expect(await sh('which ip; ip route')).toMatchObject({
      code: 126,
      out: '/system/bin/ip\n',
      err: '/system/bin/sh: ip: not modeled by the virtual phone (see docs/virtual-phone.md)\n',
    });
  });

  it('counts the Pixel 8’s nine CPUs wherever a tool looks: nproc, getconf, /proc/cpuinfo, sysfs', async () => {
    const r = await sh(
      'nproc; getconf _NPROCESSORS_ONLN; grep -c ^processor /proc/cpuinfo; cat /sys/devices/system/cpu/online; ls -d /sys/devices/system/cpu/cpu[0-9]* | wc -l; getconf PAGESIZE',
    );
    expect(r).toMatchObject({ code: 0, out: '9\n9\n9\n0-8\n9\n4096\n' });
    // The big core is a Cortex-X3 (part 0xd4e), the last one.
    expect(await out('grep "CPU part" /proc/cpuinfo | tail -1')).toBe('CPU part\t: 0xd4e\n');
    expect(await sh('getconf NOPE')).toMatchObject({ code: 1, err: "getconf: bad 'NOPE'\n" });
  });

  it('counts uptime from the phone’s boot, in /proc/uptime and uptime alike', async () => {
    let ms = Date.UTC(2026, 10, 27, 9, 0, 0);
    const device = new Device({ systemRoot, log: quietLog, now: () => ms });
    ms += 90_500;
    expect((await sh('cat /proc/uptime', { device })).out).toBe('90.50 733.05\n');
    expect((await sh('uptime', { device })).out).toBe(
      ' 09:01:30 up 1 min,  0 users,  load average: 0.42, 0.31, 0.18\n',
    );
    ms += 26 * 3600_000;
    expect((await sh('uptime', { device })).out).toMatch(/^ 11:01:30 up 1 day, {2}2:01, {2}0 users, /);
    // A process started now started at the uptime's tick (stat's field 22, in 1/100 s).
    const r = await sh('cut -d" " -f22 /proc/self/stat; cut -d" " -f1 /proc/uptime', { device });
    const [started, uptime] = r.out.trim().split('\n').map(Number);
    expect(started).toBe(Math.round(uptime! * 100));
  });

  it('keeps /proc/stat as the kernel does: CPU time since boot that agrees with /proc/uptime', async () => {
    let ms = Date.UTC(2026, 10, 27, 9, 0, 0);
    const device = new Device({ systemRoot, log: quietLog, now: () => ms });
    ms += 100_000;
    const first = (await sh('cat /proc/stat', { device })).out;
    const lines = first.split('\n');
    // "cpu " and a line per CPU: user nice system idle iowait irq softirq steal guest guest_nice.
    expect(lines[0]).toMatch(/^cpu {2}(\d+ ){9}\d+$/);
    expect(lines.filter((l) => /^cpu\d+ /.test(l))).toHaveLength(9);
    const fields = (line: string) => line.split(/ +/).slice(1).map(Number);
    const all = fields(lines[0]!);
    // 100 s of 9 CPUs is 90,000 ticks (USER_HZ 100), the idle share the one /proc/uptime gives.
    expect(all.reduce((a, b) => a + b, 0)).toBeGreaterThan(89_900);
    expect(all.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(90_000);
    const [, idleSeconds] = (await sh('cat /proc/uptime', { device })).out.trim().split(' ').map(Number);
    expect(all[3]! / 100).toBeCloseTo(idleSeconds!, 0);
    expect(first).toMatch(new RegExp(`^btime ${Math.floor(Date.UTC(2026, 10, 27, 9, 0, 0) / 1000)}$`, 'm'));
    expect(first).toMatch(/^procs_running 1$/m);
    // A tool's two readings: the busy share of the time between them is the phone's ~10%.
    ms += 10_000;
    const second = fields((await sh('head -1 /proc/stat', { device })).out.trim());
    const delta = second.map((v, i) => v - all[i]!);
    const total = delta.reduce((a, b) => a + b, 0);
    expect(total).toBe(9_000);
    expect((total - delta[3]! - delta[4]!) / total).toBeCloseTo(0.095, 2);
  });

  it('lists the mounts in /proc/mounts and mount, and refuses to mount for the shell', async () => {
    const mounts = await out('cat /proc/mounts');
    expect(mounts).toMatch(/^\/dev\/block\/dm-5 \/data f2fs rw,\S+ 0 0$/m);
    expect(mounts).toMatch(/^proc \/proc proc \S+ 0 0$/m);
    // mount lists the same, toybox's way; df the ones with blocks, from the same table.
    expect(await out('mount -t f2fs')).toMatch(/^\/dev\/block\/dm-5 on \/data type f2fs \(rw,\S+\)\n$/);
    expect((await out('mount')).split('\n').length).toBe(mounts.split('\n').length);
    expect(await out('df /data | tail -1')).toMatch(/^\/dev\/block\/dm-5 +116892784 /);
    // mount(2) needs root (it said "not modeled").
    expect(await sh('mount -t tmpfs tmpfs /mnt/x')).toMatchObject({
      code: 1,
      err: "mount: 'tmpfs'->'/mnt/x': Operation not permitted\n",
    });
    expect((await sh('mount -t')).code).toBe(1);
  });

  it('publishes the battery in sysfs as its driver does, whatever dumpsys battery set forces', async () => {
    expect(await out('ls /sys/class/power_supply')).toBe('ac\nbattery\nusb\n');
    expect(
      await out('cd /sys/class/power_supply; cat battery/capacity battery/status usb/online ac/online'),
    ).toBe('100\nCharging\n1\n0\n');
    expect(await out('grep -E "NAME|CAPACITY|VOLTAGE" /sys/class/power_supply/battery/uevent')).toBe(
      'POWER_SUPPLY_NAME=battery\nPOWER_SUPPLY_CAPACITY=100\nPOWER_SUPPLY_VOLTAGE_NOW=4200000\n',
    );
    // The forced level is BatteryService's; the hardware still reports its own.
    const device = new Device({ systemRoot, log: quietLog });
    await sh('dumpsys battery set level 5', { device });
    expect((await sh('dumpsys battery get level', { device })).out).toBe('5\n');
    expect((await sh('cat /sys/class/power_supply/battery/capacity', { device })).out).toBe('100\n');
  });

  it('reads sh -e/-x/-u, and says what it does not model where it succeeded silently', async () => {
    // sh's set options were read and dropped: `false` did not end the script.
    expect(await sh("sh -e -c 'false; echo after'")).toMatchObject({ code: 1, out: '' });
    expect(await sh("sh -x -c 'echo hi'")).toMatchObject({ code: 0, out: 'hi\n', err: '+ echo hi\n' });
    expect((await sh("sh -u -c 'echo $nosuch'")).code).toBe(1);
    const device = new Device({ systemRoot, log: quietLog });
    // pm clear --cache-only keeps the app's data (it cleared all of it).
    const data = '/data/data/com.phonelease.login';
    device.fs.mkdir(`${data}/cache`, { root: true, parents: true });
    device.fs.writeFile(`${data}/cache/c.tmp`, Buffer.from('c'), { root: true });
    device.fs.writeFile(`${data}/kept.txt`, Buffer.from('k'), { root: true });
    expect(await sh('pm clear --cache-only com.phonelease.login', { device })).toMatchObject({
      code: 0,
      out: 'Success\n',
    });
    expect(device.fs.exists(`${data}/kept.txt`, { root: true })).toBe(true);
    expect(device.fs.exists(`${data}/cache/c.tmp`, { root: true })).toBe(false);
    // settings reset, monkey's random events and logcat -G are not modeled; they exited 0.
    expect(await sh('settings reset global trusted_defaults', { device })).toMatchObject({ code: 255 });
    const monkey = await sh('monkey -p com.android.settings --throttle 100 500', { device });
    expect(monkey.code).toBe(1);
    expect(monkey.err).toBe(
      'monkey: 500 random events are not modeled by the virtual phone; 1 launches the app\n',
    );
    expect(monkey.out).not.toContain('Events injected');
    expect(await sh('logcat -G 16M', { device })).toMatchObject({ code: 1, out: '' });
    // -c clears the buffers named: the phone's lines are in main, which -b crash leaves.
    await sh('log -t KeepMe still here', { device });
    await sh('logcat -b crash -c', { device });
    expect((await sh('logcat -d -s KeepMe', { device })).out).toContain('still here');
    await sh('logcat -c', { device });
    expect((await sh('logcat -d -s KeepMe', { device })).out).toBe('');
  });

  it('answers am, pm, getprop and cmd verbs that exited 0 doing nothing as Android 14 does', async () => {
    const device = new Device({ systemRoot, log: quietLog });
    // getNextArgRequired(): force-stop and kill need a package.
    expect(await sh('am force-stop', { device })).toMatchObject({
      code: 255,
      err: '\nException occurred while executing \'force-stop\':\njava.lang.IllegalArgumentException: Argument expected after "force-stop"\n',
    });
    // kill-all kills the background apps; the one in front stays.
    await sh(
      'am start -W -n com.android.settings/.Settings; am start -W -n com.phonelease.login/.LoginActivity',
      {
        device,
      },
    );
    expect((await sh('pidof com.android.settings', { device })).code).toBe(0);
    await sh('am kill-all', { device });
    expect((await sh('pidof com.android.settings', { device })).code).toBe(1);
    expect((await sh('pidof com.phonelease.login', { device })).code).toBe(0);
    // pm: trim-caches reads its size, compile answers, set-installer is not modeled.
    expect(await sh('pm trim-caches', { device })).toMatchObject({
      code: 1,
      err: 'Error: no size specified\n',
    });
    expect(await sh('pm trim-caches 1G', { device })).toMatchObject({ code: 0, out: '' });
    expect(await sh('pm compile -m speed -f com.android.settings', { device })).toMatchObject({
      code: 0,
      out: 'Success\n',
    });
    expect((await sh('pm compile -m speed com.nope', { device })).code).toBe(1);
    expect((await sh('pm set-installer com.android.chrome com.android.vending', { device })).code).toBe(255);
    expect(await sh('getprop -T ro.build.version.sdk', { device })).toMatchObject({ code: 1, out: '' });
    expect((await sh('cmd notification allow_dnd com.phonelease.login', { device })).code).toBe(255);
    // The platform's permission list and an idle uid are not modeled (an empty list, and 0).
    expect(await sh('pm list permissions -g -d', { device })).toMatchObject({
      code: 255,
      out: '',
      err: 'pm: list permissions: not modeled by the virtual phone\n',
    });
    expect(await sh('am make-uid-idle com.phonelease.login', { device })).toMatchObject({
      code: 255,
      err: 'am: make-uid-idle: not modeled by the virtual phone\n',
    });
  });

  it("applies am start's task flags: --activity-clear-top and --activity-clear-task", async () => {
    const device = new Device({ systemRoot, log: quietLog });
    const run = (command: string) => sh(command, { device });
    const focus = async () =>
      /mCurrentFocus=Window\{\S+ u0 (\S+)\}/.exec((await run('dumpsys window displays')).out)?.[1];
    const wifi = "'com.android.settings/.Settings$WifiSettingsActivity'";
    const settingsThenWifi = async () => {
      await run('am force-stop com.android.settings; am start -W -n com.android.settings/.Settings');
      await run(`am start -W -n ${wifi}`);
      expect(await focus()).toBe('com.android.settings/com.android.settings.Settings$WifiSettingsActivity');
    };
    // Without a flag, Settings' main activity brings its task back as it was: Wi-Fi on top.
    await settingsThenWifi();
    await run('input keyevent HOME; am start -W -n com.android.settings/.Settings');
    expect(await focus()).toBe('com.android.settings/com.android.settings.Settings$WifiSettingsActivity');
    // CLEAR_TOP closes the screens above Settings (the flag was read and dropped).
    const started = await run('am start -W --activity-clear-top -n com.android.settings/.Settings');
    expect(started.out).toMatch(
      /^Starting: Intent \{ flg=0x4000000 cmp=com\.android\.settings\/\.Settings \}$/m,
    );
    expect(await focus()).toBe('com.android.settings/com.android.settings.Settings');
    await run('input keyevent BACK');
    expect(await focus()).toMatch(/launcher3/);
    // CLEAR_TASK: Wi-Fi alone in a new task; BACK leaves the app.
    await settingsThenWifi();
    await run(`am start -W --activity-clear-task -n ${wifi}`);
    expect(await focus()).toBe('com.android.settings/com.android.settings.Settings$WifiSettingsActivity');
    await run('input keyevent BACK');
    expect(await focus()).toMatch(/launcher3/);
    // A repeated launch and profiling are not modeled (-R's count was read as a component).
    expect(await run('am start -R 3 -n com.android.settings/.Settings')).toMatchObject({
      code: 255,
      err: 'Error: -R 3: repeating the start is not modeled by the virtual phone\n',
    });
    expect((await run('am start -P /data/local/tmp/p.trace -n com.android.settings/.Settings')).code).toBe(
      255,
    );
  });

  it("types a key's character, presses it twice for --doubletap, and says a long press of POWER is not modeled", async () => {
    const device = new Device({ systemRoot, log: quietLog });
    const run = (command: string) => sh(command, { device });
    // POWER's long press opens the power menu on a phone; it turned the screen off here.
    expect(await run('input keyevent --longpress POWER')).toMatchObject({
      code: 1,
      err: 'input: a long press of POWER is not modeled by the virtual phone\n',
    });
    expect((await run('dumpsys power')).out).toMatch(/mWakefulness=Awake/);
    expect((await run('input keyevent --longpress 3')).code).toBe(1);
    // A letter's key types it into the field in focus, as a hardware keyboard's does (it typed
    // nothing); --doubletap sends the key twice (the option was dropped).
    await run('am start -W -n com.phonelease.login/.LoginActivity; input tap 360 480');
    await run('input keyevent KEYCODE_D 30 KEYCODE_SPACE 8');
    await run('input keyevent --doubletap KEYCODE_A');
    expect((await run('uiautomator dump /dev/tty')).out).toMatch(
      /text="db 1aa" resource-id="com\.phonelease\.login:id\/username"/,
    );
    // A long press is a key-down, a repeat and a key-up: a key that types or deletes acts on
    // the repeat too, as a held key on a phone.
    await run(
      'input keyevent --longpress KEYCODE_B; input keyevent --longpress DEL; input keyevent --longpress Z',
    );
    expect((await run('uiautomator dump /dev/tty')).out).toMatch(
      /text="db 1aazz" resource-id="com\.phonelease\.login:id\/username"/,
    );
    // Android 14 takes its options before the keys in any order, together: two long presses.
    await run('input keyevent --doubletap --longpress KEYCODE_C');
    expect((await run('uiautomator dump /dev/tty')).out).toMatch(
      /text="db 1aazzcccc" resource-id="com\.phonelease\.login:id\/username"/,
    );
  });

  it('shows memory with free as toybox 0.8.9 does, from /proc/meminfo, and the load in /proc/loadavg', async () => {
    const header = '\t\ttotal        used        free      shared     buffers\n';
    // /proc/meminfo: MemTotal 7767864 kB, MemFree 412140, Buffers 5848, SwapTotal 4194300, SwapFree 3123456.
    expect(await out('free -m')).toBe(
      `${header}Mem:             7585        7183         402           0           5\n` +
        '-/+ buffers/cache:           7177         408\nSwap:            4095        1045        3050\n',
    );
    expect(await out('free -h')).toBe(
      `${header}Mem:             7.4G        7.0G        402M           0        5.7M\n` +
        '-/+ buffers/cache:           7.0G        408M\nSwap:            4.0G        1.0G        2.9G\n',
    );
    expect(await sh('free -h -k; free -x')).toMatchObject({
      code: 1,
      err: "free: No 'k' with 'h' (see \"free --help\")\nfree: Unknown option 'x' (see \"free --help\")\n",
    });
    expect(await out('cut -d" " -f1-3 /proc/loadavg')).toBe('0.42 0.31 0.18\n');
  });

  it('shows processes with top as toybox 0.8.9 lays them out, in batch mode and on a screen', async () => {
    let ms = Date.UTC(2026, 10, 27, 9, 0, 0);
    const device = new Device({ systemRoot, log: quietLog, now: () => ms });
    ms += 60_000;
    const batch = (await sh('top -b -n 1 -p 1,$$ -u root,shell', { device })).out;
    expect(batch.split('\n').slice(0, 5)).toEqual([
      'Tasks: 2 total,   0 running,   2 sleeping,   0 stopped,   0 zombie',
      '  Mem:  7767864K total,  7355724K used,   412140K free,     5848K buffers',
      ' Swap:  4194300K total,  1070844K used,  3123456K free,  3131344K cached',
      '900%cpu   0%user   0%nice   0%sys 900%idle   0%iow   0%irq   0%sirq   0%host',
      '  PID USER         PR  NI VIRT  RES  SHR S[%CPU] %MEM     TIME+ ARGS',
    ]);
    // The longest running first: init since boot, then the shell.
    expect(batch.split('\n').slice(5)).toEqual([
      expect.stringMatching(
        /^ {4}1 root {9}20 {3}0 +\S+ +\S+ +\S+ S {2}0\.0 +\d+\.\d +0:00\.00 init second_stage$/,
      ),
      expect.stringMatching(/^ \d{4} shell .* S {2}0\.0 .* sh$/),
      '',
    ]);
    // top itself is running; without -b it draws a screen: escapes, \r\n, a reversed title line.
    expect(await out('top -b -n 1 -q | grep top')).toMatch(/ R {2}0\.0 .* top -b -n 1 -q\n/);
    const screen = await out('top -n 1 -m 2');
    expect(screen.startsWith('\x1b[?25l\x1b[H\x1b[JTasks: ')).toBe(true);
    expect(screen).toContain(
      `\r\n\x1b[7m${'  PID USER         PR  NI VIRT  RES  SHR S[%CPU] %MEM     TIME+ ARGS'.padEnd(80)}\x1b[0m\r\n`,
    );
    expect(screen.endsWith('\r\x1b[?25h\x1b[0m\x1b[999H\x1b[K')).toBe(true);
    expect(await out('top -b -n 2 -d 0.05 -q -p 1')).toMatch(/^ +1 root .*\n\n\n +1 root .*\n$/);
    expect(await sh('top -x; top -b -n 1 -o PID')).toMatchObject({
      err: 'top: Unknown option \'x\' (see "top --help")\ntop: -o: not modeled by the virtual phone\n',
    });
  });

  it('lists the phone’s listening abstract sockets in /proc/net/unix, as Appium looks for DevTools', async () => {
    const device = newDevice();
    const header = 'Num       RefCount Protocol Flags    Type St Inode Path\n';
    expect((await sh('cat /proc/net/unix', { device })).out).toBe(header);
    device.network.abstractSockets.set('webview_devtools_remote_4242', () => undefined);
    const lines = (await sh('cat /proc/net/unix', { device })).out.split('\n');
    expect(lines[0]).toBe(header.trim());
    // Num RefCount Protocol Flags Type St Inode Path, as appium-android-driver splits it.
    const [, , , flags, , st, , path] = lines[1]!.trim().split(/\s+/);
    expect({ flags, st, path }).toEqual({
      flags: '00010000',
      st: '01',
      path: '@webview_devtools_remote_4242',
    });
    device.network.abstractSockets.delete('webview_devtools_remote_4242');
    expect((await sh('cat /proc/net/unix', { device })).out).toBe(header);
  });

  it('computes $((...)) and let as mksh does: 32-bit integers, C operators, assignments', async () => {
    expect(
      await out(
        'echo $((7/2)) $((-7/2)) $((-7%3)) $((1<<4)) $((5&3)) $((5|3)) $((5^3)) $((~0)) $((!0)) $((2>1?10:20))',
      ),
    ).toBe('3 -3 -1 16 1 7 6 -1 1 10\n');
    // Numbers as mksh reads them (010 is ten outside POSIX mode), and 32-bit wrap-around.
    expect(await out('echo $((0x1f)) $((2#101)) $((16#ff)) $((010)) $((2147483647+1)) $((1#A))')).toBe(
      '31 5 255 10 -2147483648 65\n',
    );
    expect(await out('x=5; echo $((x+=2)) $x $((x++)) $x $((++x)) $((x--)) $x')).toBe('7 7 7 8 9 9 8\n');
    // A variable holding an expression is evaluated; the side not taken assigns nothing.
    expect(await out('a=b+1; b=2; echo $((a*2)) $((0 && (q=5))) q=$q $(( 2 * (3 + (4)) ))')).toBe(
      '6 0 q= 14\n',
    );
    expect(await out('let x=3 y=x*2; echo $? $x $y; let 0; echo $?')).toBe('0 3 6\n1\n');
    expect(await sh('let; echo $?; let 1/0; echo $?')).toMatchObject({
      out: '1\n2\n',
      err: '/system/bin/sh: let: missing argument\n/system/bin/sh: 1/0: zero divisor\n',
    });
    // Errors as mksh words them; the script stops there.
    expect(await sh('echo $((1+)); echo never')).toMatchObject({
      out: '',
      err: "/system/bin/sh: 1+: unexpected 'end of expression'\n",
    });
    expect((await sh('echo $((5 @ 3))')).err).toBe("/system/bin/sh: 5 @ 3: unexpected '@'\n");
    expect((await sh('a=a; echo $((a))')).err).toBe(
      "/system/bin/sh: a: expression recurses on parameter 'a'\n",
    );
    // The text is expanded first: parameters, positional ones and command substitutions.
    expect(await out('set -- 5 6; echo $(( $1 * $2 + $# )) $(( $(echo 4) + 1 ))')).toBe('32 5\n');
  });

  it('feeds here-documents and here-strings to standard input', async () => {
    // Expanded, with \$ kept literal; a quoted delimiter keeps the body as it is.
    expect(await out('x=world\ncat <<EOF\nhello $x\n  $((1+2)) \\$x `echo bt`\nEOF\necho after')).toBe(
      'hello world\n  3 $x bt\nafter\n',
    );
    expect(await out("cat <<'EOF' | wc -l\n$x literal\ntwo\nEOF")).toBe('2\n');
    // <<- drops leading tabs; two on one line are read in turn; a function's input too.
    expect(await out('if true; then\n\tcat <<-END\n\ttabbed\n\tEND\nfi')).toBe('tabbed\n');
    expect(await out('cat <<A; cat <<B\none\nA\ntwo\nB')).toBe('one\ntwo\n');
    expect(await out('f() { cat; }; f <<EOF > /data/local/tmp/out\nx\nEOF\ncat /data/local/tmp/out')).toBe(
      'x\n',
    );
    expect(await out('tr a-z A-Z <<< "here $((2*3))"')).toBe('HERE 6\n');
    // Inside $(...), a body with quotes and parentheses is the body's.
    expect(await out('x=$(cat <<E\ndon\'t (stop)\nE\n); echo "[$x]"')).toBe("[don't (stop)]\n");
    // Descriptors 3 to 9, as mksh R59c answered the same lines.
    expect(
      await out(
        'cd /data/local/tmp; exec 3>f3; print -u3 one; echo two >&3; exec 3>&-; cat f3; ' +
          'exec 4<<EOF\nfour\nEOF\ncat <&4; exec 5<f3; read -u5 l; echo "[$l]"; echo hi 10>f10; cat f10',
      ),
    ).toBe('one\ntwo\nfour\n[one]\nhi 10\n');
    expect(await sh('{ echo out; echo err >&2; } 3>&1 1>&2 2>&3')).toMatchObject({
      out: 'err\n',
      err: 'out\n',
    });
    expect(await out('exec 3>&1; x=$(echo cap; echo direct >&3); echo "[$x]"')).toBe('direct\n[cap]\n');
    expect(await sh('echo hi >&5; echo "st $?"; read -u5 x; echo "st $?"')).toMatchObject({
      out: 'st 1\nst 2\n',
      err: '/system/bin/sh: >&5 : bad file descriptor\n/system/bin/sh: read: -u: 5: bad file descriptor: Bad file descriptor\n',
    });
    expect(await sh('cat <<EOF\nnever closed')).toMatchObject({
      code: 1,
      err: "/system/bin/sh: here document 'EOF' unclosed\n",
    });
  });

  it('reads with read as mksh does: $IFS, backslashes unless -r, -d, -n, -t, and the last name takes the rest', async () => {
    expect(await out('read -r a b <<< \'x\\y z w\'; echo "[$a][$b]"')).toBe('[x\\y][z w]\n');
    expect(await out('read a b <<< \'x\\y z\\ w  v  \'; echo "[$a][$b]"')).toBe('[xy][z w  v]\n');
    // IFS=: holds for read alone; non-white separators keep empty fields and white space.
    expect(
      await out(
        'IFS=: read a b <<< \'p:q:r\'; echo "[$a][$b]"; IFS=: read a b c <<< \' p :: r \'; echo "[$a][$b][$c]"',
      ),
    ).toBe('[p][q:r]\n[ p ][][ r ]\n');
    expect(await out('read <<< \'  lead trail  \'; echo "[$REPLY]"')).toBe('[lead trail]\n');
    // The last line without a newline is read, with status 1; then there is nothing.
    expect(
      await out(
        'printf \'one\\ntwo\' | { read x; echo "$? $x"; read y; echo "$? $y"; read z; echo "$? [$z]"; }',
      ),
    ).toBe('0 one\n1 two\n1 []\n');
    expect(
      await out("printf 'ab:cd' | { read -d : x; echo $x; read -n 1 y; echo $y; read z; echo $z; }"),
    ).toBe('ab\nc\nd\n');
    expect(await out('printf \'a\\\\\\nb\\n\' | { read x; echo "[$x]"; }')).toBe('[ab]\n');
    expect(await out('sleep 5 | { read -t 0.1 x; echo "status $?"; pkill sleep; }')).toBe('status 1\n');
    expect(await out("read -A arr <<< 'p  q r'; echo ${#arr[@]} ${arr[1]}")).toBe('3 q\n');
    // Assignments before a special builtin stay; before others, and functions, they do not.
    expect(await out('X=1 :; echo "[$X]"; f() { echo "in f $Z"; }; Z=3 f; echo "[$Z]"')).toBe(
      '[1]\nin f 3\n[]\n',
    );
  });

  it('keeps arrays as mksh does: set -A, a=(...), a[i]=x, ${a[@]}, ${#a[@]}, ${!a[@]}, PIPESTATUS', async () => {
    // Every expected value is what mksh R59c printed for the same line.
    expect(await out('set -A a x y z; echo ${a[1]} ${#a[@]} "${a[@]}"; set +A a p; echo ${a[@]}')).toBe(
      'y 3 x y z\np y z\n',
    );
    expect(
      await out('a=(1 2 3); echo ${a[2]}; a[5]=q; echo ${#a[*]} ${!a[@]}; unset a[1]; echo ${a[@]}'),
    ).toBe('3\n4 0 1 2 5\n1 3 q\n');
    expect(
      await out(
        'a=(x y); a+=(z w); echo ${a[@]}; b=q; b[2]=r; echo ${b[@]} $b; i=1; b[i+1]+=s; echo ${b[2]}',
      ),
    ).toBe('x y z w\nq r q\nrs\n');
    expect(
      await out(
        'set -A a "p q" r; printf "<%s>" "${a[@]}"; printf "<%s>" "${a[*]}"; printf "<%s>" ${a[@]}; echo',
      ),
    ).toBe('<p q><r><p q r><p><q><r>\n');
    expect(
      await out('set -A a 1 2; echo $((a[1]+1)); ((a[3]=7)); echo ${a[3]} ${a[9]:-none} ${b[@]:-d}'),
    ).toBe('3\n7 none d\n');
    expect(
      await out('false | true | (exit 3); echo ${PIPESTATUS[@]}; true; echo ${#PIPESTATUS[@]} $PIPESTATUS'),
    ).toBe('1 0 3\n1 0\n');
    // A subshell's and a function's local arrays stay theirs; set lists elements one by one.
    expect(
      await out(
        'f() { typeset a; set -A a 1 2; }; set -A a q r s; f; (a[0]=9); echo ${a[@]}; set | grep "^a"',
      ),
    ).toBe('q r s\na[0]=q\na[1]=r\na[2]=s\n');
    expect(await sh('set -A a x y z; echo ${a[@]#x}')).toMatchObject({
      code: 1,
      err: '/system/bin/sh: ${a[@]#x}: bad substitution\n',
    });
    expect(await sh('readonly r=1; r[1]=2; echo $?')).toMatchObject({
      code: 2,
      err: '/system/bin/sh: read-only: r[1]\n',
    });
  });

  it('expands ${X:off:len}, ${X/pat/rep}, nested ${A:-${B}}, ~ and $PPID as mksh does', async () => {
    expect(await out('x=abcdef; echo ${x:1:3} ${x:2} ${x: -2} ${x:(-3):2} ${x:10}.')).toBe(
      'bcd cdef ef de .\n',
    );
    expect(
      await out(
        'x=abcabc; echo ${x/b/X} ${x//b/X} ${x/#a/X} ${x/%c/X} ${x/#b/X} ${x//[ac]/} ${x/b*/Y} ${x/#/pre-}',
      ),
    ).toBe('aXcabc aXcaXc Xbcabc abcabX abcabc bb aY pre-abcabc\n');
    expect(
      await out('p=/sdcard/Download/f.tar.gz; echo ${p//\\//:}; set -- a b c d; echo ${@:2} ${@:1:2}'),
    ).toBe(':sdcard:Download:f.tar.gz\nb c d a b\n');
    expect(await out('a=; b=deflt; echo ${a:-${b}} ${u:-${b:-z}}x "${a:-"q r"}"')).toBe('deflt defltx q r\n');
    // ~ is $HOME (/ for adb's shell) at a word's start and after NAME=; quoted it stays.
    expect(await out('echo ~ ~/x a~ "~" ~user; x=~/d; echo $x; p=/a:~/b:~; echo $p')).toBe(
      '/ //x a~ ~ ~user\n//d\n/a://b:/\n',
    );
    // $PPID is adbd's, in a subshell too.
    const ppid = await sh('echo $PPID; ( echo $PPID ); ps -o PPID= -p $$');
    const [first, second, fromPs] = ppid.out
      .trim()
      .split('\n')
      .map((l) => l.trim());
    expect(first).toMatch(/^[1-9][0-9]*$/);
    expect([second, fromPs]).toEqual([first, first]);
  });

  it('tests with [[ ... ]] as mksh does: patterns, &&, ||, !, ( ), file tests and arithmetic comparisons', async () => {
    expect(
      await out(
        '[[ -d /sdcard ]] && echo dir; [[ -f /sdcard ]] || echo notfile; [[ ! -e /nope ]] && echo gone',
      ),
    ).toBe('dir\nnotfile\ngone\n');
    // Unquoted, the right side of == is a pattern; quoted, a string. No word splitting.
    expect(
      await out(
        'x="a b"; [[ $x == a* ]] && echo glob; [[ $x == "a*" ]] || echo quoted; [[ $x != b* ]] && echo ne',
      ),
    ).toBe('glob\nquoted\nne\n');
    expect(
      await out(
        '[[ -n $u ]] || echo empty; [[ $u ]] || echo empty2; [[ abc < abd ]] && echo lt; [[ 10 -lt 9 ]] || echo num; [[ 1+1 -eq 2 ]] && echo arith',
      ),
    ).toBe('empty\nempty2\nlt\nnum\narith\n');
    expect(await out('if [[ ( -d / && -e /nope ) || 1 -eq 1 ]]; then echo grouped; fi')).toBe('grouped\n');
    expect(await out('[[ -x /system/bin/ls &&\n   -L /system/bin/ls ]] && echo multi')).toBe('multi\n');
    // mksh has no =~.
    expect(await sh('[[ a =~ b ]]; echo never')).toMatchObject({
      code: 1,
      err: "/system/bin/sh: syntax error: '=~' unexpected operator/operand\n",
    });
  });

  it('matches patterns without backtracking, so long strings and many stars stay fast', async () => {
    const r = await sh(
      "x=$(printf 'a%.0s' $(seq 4000)); y=${x/*b/c}; echo ${#y}; z=${x//a/b}; echo ${#z}; " +
        '[[ $x == *a*a*a*a*a*a*b ]] || echo nomatch; case $x in *a*a*a*a*a*b) echo m;; *) echo nm;; esac',
    );
    expect(r.out).toBe('4000\n4000\nnomatch\nnm\n');
    expect(await out('x=aaaa; echo ${x//*/b} ${x%a*} ${x%%a*}. ${x#*a} ${x##*a}.')).toBe('b aaa . aaa .\n');
    // 20,000 backslashes in one line are read in one pass.
    expect(
      await out('x=$(printf "\\\\\\\\%.0s" $(seq 20000)); print -r -- "$x" | { read v; echo ${#v}; }'),
    ).toBe('10000\n');
  });

  it('says when nesting is too deep instead of failing, and runs (( )) as let', async () => {
    const deep = `echo $((${'('.repeat(700)}1${')'.repeat(700)}))`;
    expect(await sh(deep)).toMatchObject({
      code: 1,
      err: expect.stringMatching(/nested too deeply for the virtual phone\n$/),
    });
    expect(await sh(`[[ ${'! '.repeat(20000)}a ]] && echo deep`)).toMatchObject({
      code: 1,
      err: '/system/bin/sh: nested too deeply for the virtual phone\n',
    });
    // (( )) is a command (it wrote a file named 5 for `(( 1 > 5 ))`); $((a); (b)) two subshells.
    expect(
      await sh(
        'i=0; while (( i < 3 )); do echo $i; (( i++ )); done; (( 1 > 5 )) || echo false; ls /data/local/tmp; (( 1/0 )); echo "st $?"',
      ),
    ).toMatchObject({ out: '0\n1\n2\nfalse\nst 2\n', err: '/system/bin/sh:  1/0 : zero divisor\n' });
    expect(await out('echo $((echo a); (echo b)); x=$((cd /; echo hi) ); echo $x; ( (echo n) )')).toBe(
      'a b\nhi\nn\n',
    );
  });

  it('expands quoted patterns and replacements, a lone { in ${...}, and tests -o, -u, -O in [[ ]]', async () => {
    expect(
      (await sh('x=hello; p=l; echo ${x//"$p"/L} ${x/l/\\}} ${x/e/\\&} "${u:-"$HOME"}" ${x:0:-1} ${x:1:-1}'))
        .out,
    ).toBe('heLLo he}lo h&llo / hell ell\n');
    expect(await out("echo ${x:-{}; s='{a}'; s=${s#{}; echo $s")).toBe('{\na}\n');
    expect(await out('set -e; [[ -o errexit ]] && echo on; set -f; [[ -o noglob ]] && echo nog')).toBe(
      'on\nnog\n',
    );
    // A function named test does not take over [[ ]] or `command test`.
    expect(
      await out(
        'test(){ echo hijacked; }; [[ -f /system/build.prop ]] && echo file; command test -d / && echo dir',
      ),
    ).toBe('file\ndir\n');
    expect(
      await out(
        '[[ -u /system ]] || echo nosuid; [[ -O /data/local/tmp ]] && echo owner; [[ -G /sdcard ]] || echo notgroup',
      ),
    ).toBe('nosuid\nowner\nnotgroup\n');
    expect(
      await out(
        'IFS=: read -r a b <<< \'a:b:\'; echo "[$a][$b]"; IFS=: read -r a b <<< \'a:b:c:\'; echo "[$a][$b]"',
      ),
    ).toBe('[a][b]\n[a][b:c:]\n');
    expect(await out('ls -lL /bin | head -2')).toBe(
      'total 1024\n-rwxr-xr-x 1 root shell 4 2009-01-01 00:00 [\n',
    );
    // What a read -t left unread is the next read's.
    expect(
      await out(
        '{ sleep 0.3; echo first; echo second; } | { read -t 0.1 a; echo "a=[$a] $?"; sleep 0.5; read b; read c; echo "b=$b c=$c"; }',
      ),
    ).toBe('a=[] 1\nb=first c=second\n');
  });

  it('reads options with getopts as mksh does', async () => {
    expect(
      await out(
        'set -- -a -b val -c x y; while getopts ab:c o; do echo "$o ${OPTARG-unset} $OPTIND"; done; shift $((OPTIND-1)); echo "rest $@"',
      ),
    ).toBe('a unset 2\nb val 4\nc unset 5\nrest x y\n');
    // A group moves OPTIND once; the end leaves NAME ? and status 1.
    expect(await out('for i in 1 2 3 4; do getopts abc: o -abc10; echo $? $OPTIND $o ${OPTARG-}; done')).toBe(
      '0 2 a\n0 2 b\n0 2 c 10\n1 2 ?\n',
    );
    expect(await sh('getopts ab o -x; echo "$? $o ${OPTARG-unset}"')).toMatchObject({
      out: '0 ? unset\n',
      err: '/system/bin/sh: -x: unknown option\n',
    });
    expect((await sh('getopts ab: o -b; echo "$? $o"')).err).toBe(
      '/system/bin/sh: -b: requires an argument\n',
    );
    // A leading colon: no message, the option in OPTARG.
    expect(
      await sh('getopts :ab: o -x; echo "$o $OPTARG"; OPTIND=1; getopts :ab: o -b; echo "$o $OPTARG"'),
    ).toMatchObject({ out: '? x\n: b\n', err: '' });
    expect(await sh('getopts a opt-; echo $?')).toMatchObject({
      out: '1\n',
      err: '/system/bin/sh: getopts: opt-: is not an identifier\n',
    });
  });

  it('prints with print, and says where a command is with whence', async () => {
    expect(
      await sh('print -n a; print "b\\tc"; print -r "d\\te"; print -R -n "f\\n"; print; print -u2 err'),
    ).toMatchObject({ out: 'ab\tc\nd\\te\nf\\n\n', err: 'err\n' });
    expect(await sh('print -s history')).toMatchObject({
      code: 1,
      err: '/system/bin/sh: print: -s: not modeled by the virtual phone\n',
    });
    expect(
      await sh('f() { :; }; whence ls cd f [[ nope; echo $?; whence -v ls; whence -p ls cd; echo $?'),
    ).toMatchObject({
      out: '/system/bin/ls\ncd\nf\n[[\n1\nls is a tracked alias for /system/bin/ls\n/system/bin/ls\n1\n',
      err: '',
    });
  });

  it('installs toybox and toolbox commands as links, dated as a build dates its files; ls sorts and -L follows', async () => {
    const r = await sh(
      'ls -l /system/bin/sh /system/bin/ls /system/bin/getprop /system/bin/app_process; readlink /system/bin/cat; readlink -f /system/bin/cat; ls -lL /system/bin/ls',
    );
    expect(r.out).toBe(
      'lrwxr-xr-x 1 root shell 13 2009-01-01 00:00 /system/bin/app_process -> app_process64\n' +
        'lrwxr-xr-x 1 root shell  7 2009-01-01 00:00 /system/bin/getprop -> toolbox\n' +
        'lrwxr-xr-x 1 root shell  6 2009-01-01 00:00 /system/bin/ls -> toybox\n' +
        '-rwxr-xr-x 1 root shell  4 2009-01-01 00:00 /system/bin/sh\n' +
        'toybox\n/system/bin/toybox\n' +
        '-rwxr-xr-x 1 root shell 4 2009-01-01 00:00 /system/bin/ls\n',
    );
    // A link runs what it names; the directory lists in name order.
    expect(await out('/system/bin/ls -d /; ls /system/bin | head -3')).toBe('/\n[\nacpi\nam\n');
  });

  it('says what a name is with type and command -v, shows limits with ulimit, and refuses what it cannot do', async () => {
    const r = await sh(
      'f() { :; }; type cd f ls awk echo [[ /system/bin/ls; command -v cd; command -v f; command -v awk; command -v [[; command -v true; command -v nope || echo none',
    );
    // As mksh says it: a program found on PATH becomes a tracked alias; echo and true are
    // its own builtins; [[ is a reserved word.
    expect(r.out).toBe(
      'cd is a shell builtin\nf is a function\nls is a tracked alias for /system/bin/ls\n' +
        'awk is a tracked alias for /system/bin/awk\necho is a shell builtin\n[[ is a reserved word\n' +
        '/system/bin/ls is /system/bin/ls\ncd\nf\n/system/bin/awk\n[[\ntrue\nnone\n',
    );
    expect(await out('ulimit -n; ulimit; ulimit -a | grep nofiles')).toBe(
      '32768\nunlimited\nnofiles(descriptors) 32768\n',
    );
    // Setting a limit, or an alias, would change nothing here: said, not pretended.
    expect(await sh('ulimit -n 1024')).toMatchObject({
      code: 1,
      err: '/system/bin/sh: ulimit: setting limits is not modeled by the virtual phone\n',
    });
    expect(await sh("alias ll='ls -l'")).toMatchObject({
      code: 1,
      err: '/system/bin/sh: alias: aliases are not modeled by the virtual phone; use a function\n',
    });
  });

  it('makes temporary files and directories with mktemp, in $TMPDIR unless told where', async () => {
    const device = newDevice();
    const file = (await sh('mktemp', { device })).out.trim();
    expect(file).toMatch(/^\/data\/local\/tmp\/tmp\.[A-Za-z0-9]{10}$/);
    expect((await sh(`stat -c '%a %s %F' ${file}`, { device })).out).toBe('600 0 regular empty file\n');
    const dir = (await sh('mktemp -d -p /sdcard run.XXXXXX', { device })).out.trim();
    expect(dir).toMatch(/^\/sdcard\/run\.[A-Za-z0-9]{6}$/);
    expect((await sh(`test -d ${dir} && echo dir`, { device })).out).toBe('dir\n');
    expect(await sh('mktemp /data/local/tmp/aXX', { device })).toMatchObject({
      code: 1,
      err: 'mktemp: Template must end with XXX\n',
    });
    expect((await sh('mktemp -q /system/xXXXXXX', { device })).code).toBe(1);
  });

  it('edits files with truncate and unlink, and reads them with tac, rev and nl', async () => {
    const device = newDevice();
    const r = await sh(
      'cd /data/local/tmp; printf "one\\ntwo\\n\\nthree\\n" > t; tac t; rev t; nl t; nl -b a -w 2 -s: t; ' +
        'truncate -s 5 t; wc -c < t; truncate -s +3 t; wc -c < t; truncate -c -s 1 nothing; test -e nothing || echo absent; ' +
        'unlink t; test -e t || echo gone; mkdir d; unlink d',
      { device },
    );
    expect(r.out).toBe(
      'three\n\ntwo\none\n' +
        'eno\nowt\n\neerht\n' +
        '     1\tone\n     2\ttwo\n       \n     3\tthree\n' +
        ' 1:one\n 2:two\n 3:\n 4:three\n' +
        '5\n8\nabsent\ngone\n',
    );
    expect(r.err).toBe("unlink: couldn't unlink 'd': Is a directory\n");
    expect(await out('uuidgen')).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$/,
    );
    expect(await sh('sync; usleep 1000')).toMatchObject({ code: 0, out: '' });
  });

  it('signals processes by name with killall, and says when none had it', async () => {
    const r = await sh(
      'sleep 30 & sleep 30 & killall sleep; wait; killall -9 sleep; killall -q sleep; echo $?',
    );
    expect(r.err).toBe('killall: sleep: no process killed\n');
    expect(r.out).toBe('1\n');
    expect(await out('sleep 30 & killall -s HUP sleep; wait $!; echo $?')).toBe('129\n');
  });

  it('hashes with every sum toybox has on Android', async () => {
    const r = await sh('echo abc | sha224sum; echo abc | sha384sum; echo abc | sha512sum');
    const hash = (algorithm: string) => createHash(algorithm).update('abc\n').digest('hex');
    expect(r.out).toBe(`${hash('sha224')}  -\n${hash('sha384')}  -\n${hash('sha512')}  -\n`);
  });
});
