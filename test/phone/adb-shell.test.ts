/**
 * The stock adb client against a virtual phone's real ADB port: connection, shell v1/v2/pty,
 * exec, stdin, exit codes, and the system tools with Android's output.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

const shell = (command: string, input?: string) =>
  v.adb(['shell', command], input === undefined ? {} : { input });

describe('connection', () => {
  it('lists the phone with product, model and device from the CNXN banner', async () => {
    const r = await v.adbHost(['devices', '-l']);
    const line = r.stdout.split('\n').find((l) => l.startsWith(v.serial));
    expect(line).toMatch(/\sdevice product:shiba model:Pixel_8 device:shiba\b/);
  });

  it('advertises the adb 29 features without sendrecv_v2, and needs no AUTH', async () => {
    const features = (await v.adbOk(['features'])).trim().split('\n').sort();
    expect(features).toEqual(
      [
        'abb',
        'abb_exec',
        'apex',
        'cmd',
        'fixed_push_mkdir',
        'fixed_push_symlink_timestamp',
        'ls_v2',
        'remount_shell',
        'shell_v2',
        'stat_v2',
      ].sort(),
    );
    expect((await v.adbOk(['get-state'])).trim()).toBe('device');
  });

  it("answers adb root, verity, tcpip and usb as a user build's adbd, or says they are not modeled", async () => {
    expect(await v.adbOk(['root'])).toBe('adbd cannot run as root in production builds\n');
    expect(await v.adbOk(['unroot'])).toBe('adbd not running as root\n');
    for (const verb of ['disable-verity', 'enable-verity'])
      expect(await v.adbOk([verb])).toBe('verity cannot be disabled/enabled - USER build\n');
    // These closed the stream (`error: closed`), saying nothing of why.
    expect(await v.adbOk(['tcpip', '5555'])).toBe(
      "adb tcpip is not modeled by the virtual phone: it is reached over TCP already (phonelease's ADB gateway)\n",
    );
    expect(await v.adbOk(['usb'])).toBe('adb usb is not modeled by the virtual phone: it has no USB\n');
    expect((await v.adbOk(['get-state'])).trim()).toBe('device');
  });
});

describe('shell protocol', () => {
  it('returns exit codes and separates stderr with shell v2', async () => {
    const r = await shell('echo out; echo err >&2; exit 42');
    expect(r.code).toBe(42);
    expect(r.stdout).toBe('out\n');
    expect(r.stderr).toBe('err\n');
  });

  it('loses exit codes and merges stderr with the v1 protocol (adb shell -x)', async () => {
    const r = await v.adb(['shell', '-x', 'echo out; echo err >&2; exit 3']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('out\nerr\n');
  });

  it('delivers every byte a command wrote before it exits, in every shell mode', async () => {
    const f = '/data/local/tmp/close.bin';
    await v.adbOk(['shell', `dd if=/dev/urandom of=${f} bs=1m count=1 status=none`]);
    const expected = (await v.adb(['exec-out', `cat ${f}`])).raw;
    expect(expected.length).toBe(1024 * 1024);
    expect(createHash('sha256').update(expected).digest('hex') + `  ${f}\n`).toBe(
      await v.adbOk(['shell', `sha256sum ${f}`]),
    );
    for (let round = 0; round < 2; round++) {
      const v2 = await v.adb(['shell', `cat ${f}; exit 7`]);
      expect(v2.code).toBe(7);
      expect(v2.raw.equals(expected)).toBe(true);
      expect((await v.adb(['exec-out', `cat ${f}`])).raw.equals(expected)).toBe(true);
      expect((await v.adb(['shell', '-x', `cat ${f}`])).raw.equals(expected)).toBe(true);
    }
    await v.adbOk(['shell', `rm ${f}`]);
  });

  it('passes stdin and closes it at end of input', async () => {
    const r = await shell('cat; echo done', 'line one\nline two\n');
    expect(r.stdout).toBe('line one\nline two\ndone\n');
    expect((await shell('wc -l', 'a\nb\nc\n')).stdout.trim()).toBe('3');
  });

  it('runs an interactive session from stdin without a terminal', async () => {
    const r = await v.adb(['shell'], { input: 'echo ping\nexit 5\n' });
    expect(r.stdout).toBe('ping\n');
    expect(r.code).toBe(5);
  });

  it('runs a script piped into adb shell whole: commands over several lines, here-documents', async () => {
    const script = [
      'for i in 1 2; do',
      '  echo "n=$i"',
      'done',
      "cat <<'EOF'",
      'body $i',
      'EOF',
      'if [ -d /sdcard ]; then',
      '  echo dir',
      'fi',
      'echo "two',
      'lines"',
      'fi',
      'echo after',
      '',
    ].join('\n');
    const r = await v.adb(['shell'], { input: script });
    expect(r.stdout).toBe('n=1\nn=2\nbody $i\ndir\ntwo\nlines\nafter\n');
    // A stray fi is an error at once, and the session goes on.
    expect(r.stderr).toContain("syntax error: unexpected 'fi'");
  });

  it('takes a long here-document piped into adb shell line by line, with <<- and a quoted EOF inside', async () => {
    // 30,000 body lines: parsing the growing script again for each line would take minutes.
    const body = Array.from({ length: 30_000 }, (_, i) => `\tline ${i} $((1 + 1)) EOF`);
    const script = [
      'cat <<-EOF | wc -l',
      ...body,
      '\tEOF',
      'cat <<-EOF | tail -1',
      ...body,
      'EOF',
      'echo end',
      '',
    ];
    const r = await v.adb(['shell'], { input: script.join('\n') });
    expect(r.stdout).toBe('30000\nline 29999 2 EOF\nend\n');
  });

  it('runs a pty session with a prompt and CRLF line ends', async () => {
    const r = await v.adb(['shell', '-tt'], { input: 'echo ping\nexit 6\n' });
    expect(r.stdout).toContain('shiba:/ $ ');
    expect(r.stdout).toContain('ping\r\n');
    expect(r.code).toBe(6);
  });

  it('runs exec: without framing, undoing the quotes exec-out adds', async () => {
    const r = await v.adb(['exec-out', 'echo', 'a  b']);
    expect(r.stdout).toBe('a  b\n');
    expect(r.code).toBe(0);
  });

  it('undoes the quoting of arguments that already contain quotes', async () => {
    const r = await v.adb(['shell', 'echo', "'it'\\''s'", '"two  spaces"']);
    expect(r.stdout).toBe("it's two  spaces\n");
  });

  it('reports unknown commands like mksh, with status 127', async () => {
    const r = await shell('definitely-not-a-command arg');
    expect(r.code).toBe(127);
    expect(r.stderr).toBe('/system/bin/sh: definitely-not-a-command: inaccessible or not found\n');
  });
});

describe('properties and settings', () => {
  it('answers getprop for single keys and lists all in [key]: [value] form', async () => {
    expect(await v.adbOk(['shell', 'getprop', 'ro.build.version.sdk'])).toBe('34\n');
    expect(await v.adbOk(['shell', 'getprop', 'ro.build.version.release'])).toBe('14\n');
    expect(await v.adbOk(['shell', 'getprop ro.product.model; getprop ro.product.manufacturer'])).toBe(
      'Pixel 8\nGoogle\n',
    );
    const all = await v.adbOk(['shell', 'getprop']);
    expect(all).toContain('[sys.boot_completed]: [1]\n');
    expect(all).toContain('[init.svc.bootanim]: [stopped]\n');
    expect(all).toContain('[ro.product.name]: [shiba]\n');
    expect(all).toContain('[ro.kernel.qemu]: [0]\n');
    expect(await v.adbOk(['shell', 'getprop', 'no.such.prop', 'fallback'])).toBe('fallback\n');
    // /system/build.prop holds the build's properties, as getprop gives them.
    const props = (await v.adbOk(['shell', 'grep -v "^#" /system/build.prop'])).trim().split('\n');
    expect(props).toContain('ro.build.version.sdk=34');
    expect(props).toContain('ro.build.id=UQ1A.240205.004');
    expect(props.some((p) => p.startsWith('ro.system.build.fingerprint=google/shiba/shiba:14/'))).toBe(true);
    for (const line of props) {
      const [key, value] = line.split(/=(.*)/s);
      expect(all, line).toContain(`[${key}]: [${value}]\n`);
    }
  });

  it('sets properties, refusing read-only ones', async () => {
    expect((await shell('setprop debug.phonelease.test on; getprop debug.phonelease.test')).stdout).toBe(
      'on\n',
    );
    // The shell user may not set other families (SELinux), only debug.* and log tags.
    expect(await shell('setprop persist.sys.phonelease on')).toMatchObject({
      code: 1,
      stderr: "Failed to set property 'persist.sys.phonelease' to 'on'.\nSee dmesg for error reason.\n",
    });
    const ro = await shell('setprop ro.build.version.sdk 99');
    expect(ro.code).toBe(1);
    expect(ro.stderr).toMatch(/Failed to set property 'ro.build.version.sdk'/);
    expect(await v.adbOk(['shell', 'getprop', 'ro.build.version.sdk'])).toBe('34\n');
  });

  it('gets, puts, deletes and lists settings in the three namespaces', async () => {
    const policy = await shell(
      'settings put global hidden_api_policy_pre_p_apps 1;settings put global hidden_api_policy_p_apps 1;settings put global hidden_api_policy 1',
    );
    expect(policy).toMatchObject({ code: 0, stdout: '' });
    expect(await v.adbOk(['shell', 'settings', 'get', 'global', 'hidden_api_policy'])).toBe('1\n');
    expect(await v.adbOk(['shell', 'settings', 'get', 'secure', 'unset_key'])).toBe('null\n');
    expect(await v.adbOk(['shell', 'settings', 'put', 'system', 'font_scale', '1.3'])).toBe('');
    expect(await v.adbOk(['shell', 'settings', 'list', 'system'])).toContain('font_scale=1.3\n');
    expect(await v.adbOk(['shell', 'settings', 'delete', 'global', 'hidden_api_policy'])).toBe(
      'Deleted 1 rows\n',
    );
    expect(await v.adbOk(['shell', 'settings', 'get', 'global', 'hidden_api_policy'])).toBe('null\n');
  });

  it('reports and overrides the window size and density', async () => {
    expect(await v.adbOk(['shell', 'wm', 'size'])).toBe('Physical size: 720x1280\n');
    expect(await v.adbOk(['shell', 'wm', 'density'])).toBe('Physical density: 320\n');
    await v.adbOk(['shell', 'wm size 1080x1920; wm density 480']);
    expect(await v.adbOk(['shell', 'wm', 'size'])).toBe(
      'Physical size: 720x1280\nOverride size: 1080x1920\n',
    );
    expect(await v.adbOk(['shell', 'wm', 'density'])).toBe('Physical density: 320\nOverride density: 480\n');
    await v.adbOk(['shell', 'wm size reset; wm density reset']);
    expect(await v.adbOk(['shell', 'wm', 'size'])).toBe('Physical size: 720x1280\n');
  });

  it("prints WindowManagerShellCommand's help, user-rotation included, with ShellCommand's status -1", async () => {
    const help = await shell('wm');
    expect(help.code).toBe(255);
    expect(help.stdout).toMatch(/^Window manager \(window\) commands:\n {2}help\n/);
    expect(help.stdout).toContain(
      '  user-rotation [-d DISPLAY_ID] [free|lock] [rotation]\n    Print or set user rotation mode and user rotation.\n',
    );
    expect(help.stdout).toContain("    width and height in pixels unless suffixed with 'dp'.\n");
    expect(await shell('wm help')).toMatchObject({ code: 255, stdout: help.stdout });
    expect(await shell('cmd window -h')).toMatchObject({ code: 255, stdout: help.stdout });
    expect(await shell('wm frobnicate')).toMatchObject({
      code: 255,
      stdout: 'Unknown command: frobnicate\n',
    });
    // Android 14's commands the phone does not model say so, rather than that they are unknown.
    expect((await shell('wm disable-blur true')).stderr).toBe(
      'wm: disable-blur: not modeled by the virtual phone\n',
    );
  });
});

describe('svc', () => {
  const status = async (command: string) => {
    const r = await shell(command);
    return { code: r.code, stdout: r.stdout, stderr: r.stderr };
  };

  it('turns radios on and off, keeps the phone awake, and says what it cannot do', async () => {
    await v.adbOk(['shell', 'svc bluetooth enable']);
    expect(await v.adbOk(['shell', 'settings get global bluetooth_on'])).toBe('1\n');
    await v.adbOk(['shell', 'svc bluetooth disable']);
    expect(await v.adbOk(['shell', 'settings get global bluetooth_on'])).toBe('0\n');
    // Mobile data is telephony's `mobile_data` (what appium-adb's isDataOn reads), by svc or cmd phone.
    await v.adbOk(['shell', 'svc data disable']);
    expect(await v.adbOk(['shell', 'settings get global mobile_data'])).toBe('0\n');
    await v.adbOk(['shell', 'cmd phone data enable']);
    expect(await v.adbOk(['shell', 'settings get global mobile_data'])).toBe('1\n');
    await v.adbOk(['shell', 'svc power stayon usb']);
    expect(await v.adbOk(['shell', 'settings get global stay_on_while_plugged_in'])).toBe('2\n');
    await v.adbOk(['shell', 'svc power stayon true']);
    expect(await v.adbOk(['shell', 'settings get global stay_on_while_plugged_in'])).toBe('7\n');
    // Restarting the phone is not modeled: said, not silently done.
    const reboot = await v.adb(['shell', 'svc power reboot']);
    expect(reboot.code).toBe(1);
    expect(reboot.stderr).toContain('svc: power reboot: not modeled by the virtual phone');
    expect((await v.adb(['shell', 'svc usb setFunctions mtp'])).stderr).toContain('not modeled');
  });

  it("prints the svc script's usage for wifi, data and bluetooth without enable or disable (status 1)", async () => {
    expect(await status('svc wifi sideways')).toEqual({
      code: 1,
      stdout:
        'Control the Wi-Fi manager\n\nusage: svc wifi [enable|disable]\n         Turn Wi-Fi on or off.\n\n',
      stderr: '',
    });
    expect(await status('svc data')).toEqual({
      code: 1,
      stdout: 'Enable/Disable Mobile Data Connectivity\n\nusage: svc data [enable|disable]\n\n',
      stderr: '',
    });
    expect(await status('svc bluetooth on')).toEqual({
      code: 1,
      stdout:
        'Control the Bluetooth manager\n\nusage: svc bluetooth [enable|disable]\n         Turn Bluetooth on or off.\n\n',
      stderr: '',
    });
    expect(await v.adbOk(['shell', 'settings get global bluetooth_on'])).toBe('0\n');
  });

  it('takes only true, false, usb, ac and wireless for power stayon, else prints its help on stderr', async () => {
    await v.adbOk(['shell', 'svc power stayon ac']);
    const usage =
      "Control the power manager\n\nusage: svc power stayon [true|false|usb|ac|wireless]\n         Set the 'keep awake while plugged in' setting.\n       svc power reboot [reason]\n         Perform a runtime shutdown and reboot device with specified reason.\n       svc power shutdown\n         Perform a runtime shutdown and power off the device.\n\n";
    // Names every object has (toString, constructor, __proto__) are not values either.
    for (const bad of [
      'maybe',
      'TRUE',
      'toString',
      'constructor',
      '__proto__',
      'hasOwnProperty',
      'true extra',
    ])
      expect(await status(`svc power stayon ${bad}`), bad).toEqual({ code: 0, stdout: '', stderr: usage });
    expect(await status('svc power stayon')).toEqual({ code: 0, stdout: '', stderr: usage });
    expect(await status('svc power')).toEqual({ code: 0, stdout: '', stderr: usage });
    expect(await v.adbOk(['shell', 'settings get global stay_on_while_plugged_in'])).toBe('1\n');
    await v.adbOk(['shell', 'svc power stayon wireless; svc power stayon false']);
    expect(await v.adbOk(['shell', 'settings get global stay_on_while_plugged_in'])).toBe('0\n');
    await v.adbOk(['shell', 'svc power stayon true']);
  });

  it("lists svc.jar's commands on stderr for none, help or an unknown one, and prints a command's help (status 0)", async () => {
    const list =
      'Available commands:\n' +
      '    help             Show information about the subcommands\n' +
      '    power            Control the power manager\n' +
      '    usb              Control Usb state\n' +
      '    nfc              Control NFC functions\n' +
      '    system-server    System server process related command\n';
    for (const command of ['svc', 'svc frobnicate', 'svc help', 'svc help wifi', 'svc toString'])
      expect(await status(command), command).toEqual({ code: 0, stdout: '', stderr: list });
    const usb = await status('svc usb');
    expect(usb).toMatchObject({ code: 0, stdout: '' });
    expect(usb.stderr).toMatch(/^Control Usb state\n\nusage: svc usb setFunctions \[function\]\n/);
    expect(usb.stderr).toMatch(
      /\n {7}svc usb resetUsbPort \[port number\]\n.*\n.*first connected usb port\n\n$/,
    );
    expect(await status('svc help usb')).toEqual(usb);
    expect(await status('svc usb charge')).toEqual(usb);
    expect(await status('svc nfc')).toEqual({
      code: 0,
      stdout: '',
      stderr: 'Control NFC functions\n\nusage: svc nfc [enable|disable]\n         Turn NFC on or off.\n\n\n',
    });
    expect(await status('svc help help')).toEqual({
      code: 0,
      stdout: '',
      stderr: 'Show information about the subcommands\n',
    });
  });
});

describe('processes and identity', () => {
  it('lists processes with ps, ps -A, ps -o and ps --help', async () => {
    // Without -A, toybox ps shows the processes on its own terminal: on a pty only the
    // session's shell and ps; without one (shell v2 pipes) those without a terminal.
    const rows = async (command: string) =>
      (await v.adbOk(['shell', '-tt', command]))
        .replace(/\r/g, '')
        .trim()
        .split('\n')
        .map((l) => l.trim().split(/\s+/));
    const [header, ...listed] = await rows('ps; true');
    expect(header).toEqual(['USER', 'PID', 'PPID', 'VSZ', 'RSS', 'WCHAN', 'ADDR', 'S', 'NAME']);
    expect(listed.map((r) => r[8])).toEqual(['sh', 'ps']);
    expect(listed[1]![2]).toBe(listed[0]![1]);
    // A lone command replaces the shell (mksh's exec): ps is then adbd's child itself.
    expect((await rows('ps')).slice(1).map((r) => [r[8], r[2]])).toEqual([['ps', '455']]);
    expect(await v.adbOk(['shell', 'ps'])).toMatch(/^system\s+\d+\s+\d+.*\ssystem_server$/m);
    const all = await v.adbOk(['shell', 'ps', '-A']);
    expect(all).toMatch(/^system\s+\d+\s+\d+.*\ssystem_server$/m);
    expect(await v.adbOk(['shell', 'ps --help'])).toMatch(/^-A\b/m);
    expect(await v.adbOk(['shell', 'ps -A -o PID,NAME | grep zygote64'])).toMatch(/^\s*\d+ zygote64\n$/);
  });

  it('finds pids with pidof and pgrep', async () => {
    const pid = (await v.adbOk(['shell', 'pidof', 'system_server'])).trim();
    expect(pid).toMatch(/^\d+$/);
    expect((await v.adbOk(['shell', 'pgrep', 'system_server'])).trim()).toBe(pid);
    expect((await v.adbOk(['shell', 'pgrep', '-f', 'init second'])).trim()).toBe('1');
    expect((await shell('pidof no.such.process')).code).toBe(1);
  });

  it('answers id, whoami, date, which and uname', async () => {
    expect(await v.adbOk(['shell', 'whoami'])).toBe('shell\n');
    expect(await v.adbOk(['shell', 'id'])).toMatch(/^uid=2000\(shell\) gid=2000\(shell\) groups=/);
    expect((await v.adbOk(['shell', 'date', '+%Y-%m-%dT%T%z'])).trim()).toMatch(
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/,
    );
    // toybox date's formats as on a phone (the day of 1795976641: Sunday, 29 November 2026).
    const at = (args: string) => v.adbOk(['shell', `date -d @1795976641 ${args}`]);
    expect(await at("'+%c|%e|%j|%-H|%^b|%k|%l|%u|%w|%R|%r|%P|%C|%G|%V|%U|%W|%A %B'")).toBe(
      'Sun Nov 29 18:24:01 2026|29|333|18|NOV|18| 6|7|0|18:24|06:24:01 PM|pm|20|2026|48|48|47|Sunday November\n',
    );
    expect(await at("'+%s.%3N %:z %6N'")).toBe('1795976641.000 +00:00 000000\n');
    expect(await at('-I')).toBe('2026-11-29\n');
    expect(await at('-Iseconds')).toBe('2026-11-29T18:24:01+00:00\n');
    expect(await at('--iso-8601=hours')).toBe('2026-11-29T18+00:00\n');
    expect(await at('-Ins')).toBe('2026-11-29T18:24:01,000000000+00:00\n');
    expect(await shell('date -Ix')).toMatchObject({
      code: 1,
      stderr: 'date: bad -I: x (see "date --help")\n',
    });
    // The milliseconds of now: three digits, and the seconds are the clock's.
    expect((await v.adbOk(['shell', 'date +%s%3N'])).trim()).toMatch(/^\d{13}$/);
    expect(await v.adbOk(['shell', 'which', 'screencap'])).toBe('/system/bin/screencap\n');
    expect((await shell('which no-such-tool')).code).toBe(1);
    expect(await v.adbOk(['shell', 'uname', '-m'])).toBe('aarch64\n');
    expect(await v.adbOk(['shell', 'sleep 0.05 && echo slept'])).toBe('slept\n');
  });
});

describe('files from the shell', () => {
  it('creates, lists, moves, copies and removes files', async () => {
    const out = await v.adbOk([
      'shell',
      'mkdir -p /sdcard/work/a/b && echo hello > /sdcard/work/a/b/f.txt && cp /sdcard/work/a/b/f.txt /sdcard/work/g.txt && ' +
        'mv /sdcard/work/g.txt /sdcard/work/h.txt && touch /sdcard/work/t && ls /sdcard/work && cat /sdcard/work/h.txt',
    ]);
    expect(out).toBe('a\nh.txt\nt\nhello\n');
    const long = await v.adbOk(['shell', 'ls', '-l', '/sdcard/work/h.txt']);
    expect(long).toMatch(/^-rw-rw---- 1 root media_rw 6 \d{4}-\d\d-\d\d \d\d:\d\d \/sdcard\/work\/h.txt\n$/);
    expect(await v.adbOk(['shell', 'ls', '-d', '/sdcard/work/a'])).toBe('/sdcard/work/a\n');
    expect(await v.adbOk(['shell', 'ls -a /sdcard/work | head -2'])).toBe('.\n..\n');
    const rm = await shell('rm /sdcard/work/a');
    expect(rm).toMatchObject({ code: 1, stderr: 'rm: /sdcard/work/a: Is a directory\n' });
    expect((await shell('rm -r /sdcard/work/a && ls /sdcard/work')).stdout).toBe('h.txt\nt\n');
    expect((await shell('rm -f /sdcard/work/missing; echo $?')).stdout).toBe('0\n');
  });

  it('reports modes, sizes and checksums', async () => {
    await v.adbOk(['shell', 'printf abc > /data/local/tmp/s.txt && chmod 755 /data/local/tmp/s.txt']);
    expect(await v.adbOk(['shell', "stat -c '%a %s %U %n' /data/local/tmp/s.txt"])).toBe(
      '755 3 shell /data/local/tmp/s.txt\n',
    );
    expect(await v.adbOk(['shell', 'md5sum', '/data/local/tmp/s.txt'])).toBe(
      '900150983cd24fb0d6963f7d28e17f72  /data/local/tmp/s.txt\n',
    );
    expect(await v.adbOk(['shell', 'sha256sum /data/local/tmp/s.txt | cut -d " " -f 1'])).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n',
    );
    expect(
      await v.adbOk(['shell', 'head -c 2 /data/local/tmp/s.txt; echo; tail -c 1 /data/local/tmp/s.txt']),
    ).toBe('ab\nc');
    expect(await v.adbOk(['shell', 'df /data | tail -1'])).toMatch(
      /^\/dev\/block\/dm-5\s+\d+\s+\d+\s+\d+\s+\d+%\s+\/data\n$/,
    );
  });

  it('keeps the system read-only and private data private', async () => {
    expect(await shell('touch /system/bin/x')).toMatchObject({
      code: 1,
      stderr: "touch: '/system/bin/x': Read-only file system\n",
    });
    expect(await shell('mkdir /data/data/evil')).toMatchObject({
      code: 1,
      stderr: "mkdir: '/data/data/evil': Permission denied\n",
    });
    expect((await shell('ls /sdcard/')).stdout).toContain('Download\n');
    expect((await shell('echo x > /storage/emulated/0/alias.txt && cat /sdcard/alias.txt')).stdout).toBe(
      'x\n',
    );
  });
});

describe('logcat', () => {
  it('dumps events in threadtime format and clears the buffer', async () => {
    await v.adbOk(['shell', 'log -t PhoneleaseTest hello from the shell']);
    const dump = await v.adbOk(['logcat', '-d']);
    expect(dump).toMatch(
      /^\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\s+\d+\s+\d+ I PhoneleaseTest: hello from the shell$/m,
    );
    expect(await v.adbOk(['logcat', '-c'])).toBe('');
    expect(await v.adbOk(['logcat', '-d'])).toBe('');
  });

  it('refuses an option it does not know or model instead of streaming the log', async () => {
    // Each of these ran as a plain `logcat`, following the log until killed.
    const refused = async (args: string) => {
      const r = await v.adb(['shell', `logcat ${args}`], { timeoutMs: 5000 });
      expect(r.code, args).toBe(1);
      expect(r.stdout, args).toBe('');
      return r.stderr;
    };
    expect(await refused('-S')).toBe("logcat: -S: logd's statistics are not modeled by the virtual phone\n");
    expect(await refused('-L')).toBe(
      'logcat: -L: the log of the previous boot (pstore) is not modeled by the virtual phone\n',
    );
    expect(await refused('-Z')).toBe("logcat: Unknown option '-Z'.\n");
    // What it models still works, with the options tools pass.
    await v.adbOk(['shell', 'log -t PhoneleaseTest options still read']);
    expect(
      await v.adbOk(['shell', 'logcat -d -D -r 1024 -n 2 --wrap -v brief PhoneleaseTest:I *:S']),
    ).toContain('I/PhoneleaseTest(');
  });

  it('writes the log in binary with -B, as logd hands entries to readers, whatever the text filters', async () => {
    await v.adbOk(['shell', 'log -p w -t PhoneleaseBinary written in binary']);
    await v.adbOk(['shell', 'log -p i -t PhoneleaseOther silenced in text']);
    // exec-out: the raw bytes, as adbkit and ya-webadb read `logcat -B`.
    const raw = (await v.adb(['exec-out', 'logcat -B -d -s NoSuchTag *:S'])).raw;
    const entries: {
      pid: number;
      tid: number;
      sec: number;
      nsec: number;
      lid: number;
      uid: number;
      priority: number;
      tag: string;
      message: string;
    }[] = [];
    for (let at = 0; at < raw.length;) {
      const len = raw.readUInt16LE(at);
      const hdrSize = raw.readUInt16LE(at + 2);
      expect(hdrSize).toBe(28);
      const payload = raw.subarray(at + hdrSize, at + hdrSize + len);
      const [tag, message] = payload.subarray(1).toString('utf8').split('\0');
      entries.push({
        pid: raw.readInt32LE(at + 4),
        tid: raw.readUInt32LE(at + 8),
        sec: raw.readUInt32LE(at + 12),
        nsec: raw.readUInt32LE(at + 16),
        lid: raw.readUInt32LE(at + 20),
        uid: raw.readUInt32LE(at + 24),
        priority: payload[0]!,
        tag: tag!,
        message: message!,
      });
      expect(payload.at(-1)).toBe(0);
      at += hdrSize + len;
    }
    // No divider line, every entry despite `*:S`, and the shell's own line with its uid.
    expect(raw.subarray(0, 9).toString()).not.toBe('---------');
    expect(entries.map((e) => e.tag)).toEqual(
      expect.arrayContaining(['PhoneleaseBinary', 'PhoneleaseOther']),
    );
    const mine = entries.find((e) => e.tag === 'PhoneleaseBinary')!;
    expect(mine).toMatchObject({ priority: 5, message: 'written in binary', lid: 0, uid: 2000 });
    expect(mine.nsec).toBeLessThan(1e9);
    const text = await v.adbOk(['shell', 'logcat -d -v epoch -s PhoneleaseBinary']);
    const [, sec, ms, pid, tid] = /(\d+)\.(\d{3}) +(\d+) +(\d+) W PhoneleaseBinary: written in binary/.exec(
      text,
    )!;
    expect(mine).toMatchObject({ sec: Number(sec), pid: Number(pid), tid: Number(tid) });
    expect(Math.floor(mine.nsec / 1e6)).toBe(Number(ms));
    // --pid is logd's filter: it still applies.
    const byPid = (await v.adb(['exec-out', `logcat -B -d --pid=${pid}`])).raw;
    expect(byPid.length).toBeGreaterThan(0);
    expect(byPid.readInt32LE(4)).toBe(Number(pid));
  });

  it('prints the time and uid modifiers of -v as logcat does, and filters by --uid', async () => {
    await v.adbOk(['shell', 'log -t PhoneleaseUid from the shell']);
    const last = async (options: string) =>
      (await v.adbOk(['shell', `logcat -d ${options} -s PhoneleaseUid`])).trim().split('\n').pop();
    expect(await last('-v year')).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} +\d+ +\d+ I PhoneleaseUid: from the shell$/,
    );
    expect(await last('-v epoch')).toMatch(/^\d{10}\.\d{3} +\d+ +\d+ I /);
    expect(await last('-v threadtime,usec')).toMatch(/^\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} /);
    expect(await last('-v zone')).toMatch(/:\d\d\.\d{3} \+0000 /);
    // logd keeps the writer's uid: the shell's, by name when it has five letters or fewer.
    expect(await last('-v brief -v uid')).toMatch(/^I\/PhoneleaseUid\(shell: *\d+\): from the shell$/);
    expect(await last('-v color')).toBe(`\x1B[38;5;40m${(await last('')) ?? ''}\x1B[0m`);
    expect(await v.adbOk(['shell', 'logcat -d --uid=2000 -s PhoneleaseUid'])).toContain('from the shell');
    expect(await v.adbOk(['shell', 'logcat -d --uid=1000 -s PhoneleaseUid'])).not.toContain('from the shell');
    // system_server logs the broadcast, as uid 1000 (system: longer than five letters).
    await v.adbOk(['shell', 'am broadcast -a com.phonelease.UID_TEST']);
    expect(await v.adbOk(['shell', 'logcat -d --uid=1000 -v uid -s ActivityManager'])).toMatch(
      / 1000: +\d+ +\d+ D ActivityManager: Broadcast com\.phonelease\.UID_TEST from shell/,
    );
  });

  it('follows new lines while the stream stays open', async () => {
    const child = spawn(ADB, ['-P', String(v.adbServerPort), '-s', v.serial, 'logcat', '-v', 'threadtime'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const seen = new Promise<void>((resolve) => {
      child.stdout.on('data', (c: Buffer) => {
        output += c.toString();
        if (output.includes('Followed: second')) resolve();
      });
    });
    try {
      // Log until the follower has attached and sees a line.
      for (let i = 0; i < 50 && !output.includes('Followed: second'); i++) {
        await v.adbOk(['shell', `log -t Followed second`]);
        await Promise.race([seen, new Promise((r) => setTimeout(r, 200))]);
      }
      expect(output).toMatch(/ I Followed: second\n/);
    } finally {
      child.kill('SIGTERM');
    }
  });
});

describe('cmd and abb', () => {
  const NO_SERVICE =
    'cmd: No service specified; use -l to list all running services. Use -w to start and wait for a service.\n';

  it('answers no arguments, -l and an unknown service as Android 14 does', async () => {
    expect(await shell('cmd')).toMatchObject({ code: 20, stdout: '', stderr: NO_SERVICE });
    const listed = await v.adbOk(['shell', 'cmd', '-l']);
    expect(listed.startsWith('Currently running services:\n')).toBe(true);
    const names = listed
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.trim());
    expect(names).toEqual(expect.arrayContaining(['activity', 'package', 'settings', 'statusbar', 'window']));
    expect(names).toEqual([...names].sort());
    // The same services service list reports.
    const service = await v.adbOk(['shell', 'service list']);
    for (const name of names) expect(service).toMatch(new RegExp(`^\\d+\\t${name}: \\[`, 'm'));
    expect(await shell('cmd no.such.service list')).toMatchObject({
      code: 20,
      stderr: "cmd: Can't find service: no.such.service\n",
    });
  });

  it("runs the services' commands through cmd and abb alike, with their own status", async () => {
    expect(
      await v.adbOk([
        'shell',
        'cmd -w settings put global phonelease_cmd 1; cmd settings get global phonelease_cmd',
      ]),
    ).toBe('1\n');
    expect(await v.adbOk(['abb', 'settings', 'get', 'global', 'phonelease_cmd'])).toBe('1\n');
    expect(await v.adbOk(['abb', 'package', 'list', 'packages'])).toContain('package:android\n');
    expect(await v.adb(['abb', 'uimode', 'night', 'maybe'])).toMatchObject({ code: 255 });
    expect(await v.adb(['abb'])).toMatchObject({ code: 20, stderr: NO_SERVICE });
    expect((await v.adbOk(['abb', '-l'])).split('\n')[0]).toBe('Currently running services:');
    expect(await v.adb(['abb', 'nope'])).toMatchObject({
      code: 20,
      stderr: "cmd: Can't find service: nope\n",
    });
  });

  it('says what it does not model instead of pretending to succeed', async () => {
    expect(await shell('cmd audio get-volume 3')).toMatchObject({
      code: 255,
      stderr: "cmd: the virtual phone does not model 'cmd audio get-volume 3' (see docs/virtual-phone.md)\n",
    });
    expect((await shell('service call statusbar 1')).code).toBe(1);
    // No notification shade to expand; collapsing the closed one is a no-op.
    expect((await shell('cmd statusbar expand-notifications')).code).toBe(255);
    expect((await shell('cmd statusbar collapse')).code).toBe(0);
    expect((await shell('content query --uri content://media/external/images/media')).code).toBe(1);
  });

  it('answers content as Android does: usage errors on stdout and a missing provider on stderr, status 0', async () => {
    // What appium-adb's own tests check on a phone: the provider's error, not a failed command.
    const missing = await shell('content read --uri content://doesnotexist');
    expect(missing).toMatchObject({ code: 0, stdout: '' });
    expect(missing.stderr).toBe(
      'Error while accessing provider:doesnotexist\njava.lang.IllegalStateException: Could not find provider: doesnotexist\n',
    );
    const unsupported = await shell('content frob');
    expect(unsupported).toMatchObject({ code: 0, stderr: '' });
    expect(unsupported.stdout).toMatch(/^usage: adb shell content \[subcommand\] \[options\]\n/);
    expect(unsupported.stdout).toMatch(/\n\[ERROR\] Unsupported operation: frob\n$/);
    expect((await shell('content query')).stdout).toMatch(
      /\[ERROR\] Content provider URI not specified\. Did you specify --uri argument\?\n$/,
    );
    expect((await shell('content insert --uri content://settings/system')).stdout).toMatch(
      /\[ERROR\] Bindings not specified\. Did you specify --bind argument\(s\)\?\n$/,
    );
    expect((await shell('content insert --uri content://settings/system --bind name')).stdout).toMatch(
      /\[ERROR\] Binding not well formed: name\n$/,
    );
    expect((await shell('content query --uri content://settings/system --limit 1')).stdout).toMatch(
      /\[ERROR\] Unsupported argument: --limit\n$/,
    );
    // Nothing was written by the refused insert.
    expect((await shell('settings get system name')).stdout).toBe('null\n');
  });
});
