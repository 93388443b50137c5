/**
 * Small toybox applets scripts reach for: nproc, getconf, mktemp, sync, usleep, unlink,
 * truncate, tac, rev, nl, uuidgen and mount (listing), with toybox's options and messages. (The rest of
 * toybox that the virtual phone does not run says so: see SYSTEM_BIN.)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { CPUS, MOUNTS } from '../../identity.js';
import { abortableSleep } from '../../timers.js';
import { fail, getopt, resolvePath, usageError } from '../command.js';
import type { CommandContext, CommandFn, CommandTable } from '../command.js';
import { basename } from '../../fs.js';
import { SYSTEM_BIN } from '../../system-image.js';
import { errText } from './files.js';
import { inputText, splitLines } from './text.js';

/** nproc [--all]: the CPUs online (all of them are). */
const nproc: CommandFn = (ctx) => {
  const unknown = ctx.args.find((a) => a !== '--all');
  if (unknown !== undefined) return usageError(ctx, `Unknown option '${unknown}'`);
  ctx.stdout.write(`${CPUS.length}\n`);
  return 0;
};

/** getconf's system values (sysconf and confstr names) the phone answers, as bionic's. */
const GETCONF: Record<string, string> = {
  _NPROCESSORS_CONF: String(CPUS.length),
  _NPROCESSORS_ONLN: String(CPUS.length),
  NPROCESSORS_CONF: String(CPUS.length),
  NPROCESSORS_ONLN: String(CPUS.length),
  PAGESIZE: '4096',
  PAGE_SIZE: '4096',
  CLK_TCK: '100',
  LONG_BIT: '64',
  ARG_MAX: '131072',
  OPEN_MAX: '32768',
  CHILD_MAX: '25993',
  HOST_NAME_MAX: '255',
  LOGIN_NAME_MAX: '256',
  LINE_MAX: '2048',
  NGROUPS_MAX: '65536',
  PATH: '/bin:/usr/bin',
};

/** getconf NAME, or getconf -a: the system's configuration values. */
const getconf: CommandFn = (ctx) => {
  const args = ctx.args;
  if (args[0] === '-a') {
    for (const [name, value] of Object.entries(GETCONF)) ctx.stdout.write(`${name} ${value}\n`);
    return 0;
  }
  if (args.length !== 1) return usageError(ctx, args.length === 0 ? 'Need 1 argument' : 'Max 1 argument');
  const value = GETCONF[args[0]!];
  if (value === undefined) return fail(ctx, `bad '${args[0]}'`);
  ctx.stdout.write(`${value}\n`);
  return 0;
};

/**
 * mktemp [-dqtu] [-p DIR] [TEMPLATE]: a new file (0600) or directory (0700) whose name
 * replaces the template's trailing X's; prints its path. The template is tmp.XXXXXXXXXX in
 * $TMPDIR (/data/local/tmp) by default, and a template without a slash goes there too
 * with -t or -p.
 */
const mktemp: CommandFn = (ctx) => {
  const { flags, values, operands, unknown } = getopt(ctx.args, 'p');
  if (unknown.length > 0) return usageError(ctx, `Unknown option '${unknown[0]!.replace(/^-+/, '')}'`);
  if (operands.length > 1) return usageError(ctx, 'Max 1 argument');
  const quiet = flags.has('q');
  const given = operands[0];
  const template = given ?? 'tmp.XXXXXXXXXX';
  const x = /X*$/.exec(template)![0].length;
  if (x < 3) {
    if (!quiet) ctx.stderr.write(`mktemp: Template must end with XXX\n`);
    return 1;
  }
  const tmpdir = values.get('p') ?? ctx.env.get('TMPDIR') ?? '/data/local/tmp';
  const inTmp = given === undefined || flags.has('t') || values.has('p');
  const base = inTmp && !template.includes('/') ? `${tmpdir.replace(/\/$/, '')}/${template}` : template;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  for (let attempt = 0; attempt < 100; attempt++) {
    const random = [...randomBytes(x)].map((b) => alphabet[b % alphabet.length]).join('');
    const path = `${base.slice(0, base.length - x)}${random}`;
    const full = resolvePath(ctx, path);
    if (ctx.fs.exists(full)) continue;
    try {
      // -u only prints a name (unsafe, as toybox says).
      if (!flags.has('u')) {
        if (flags.has('d')) ctx.fs.mkdir(full, { mode: 0o700 });
        else ctx.fs.writeFile(full, Buffer.alloc(0), { mode: 0o600 });
      }
    } catch (error) {
      if (!quiet)
        ctx.stderr.write(
          `mktemp: Failed to create ${flags.has('d') ? 'directory' : 'file'} ${path}: ${errText(error)}\n`,
        );
      return 1;
    }
    ctx.stdout.write(`${path}\n`);
    return 0;
  }
  if (!quiet) ctx.stderr.write(`mktemp: Failed to create ${base}: File exists\n`);
  return 1;
};

/** sync: the phone's storage is memory; there is nothing to flush. */
const sync: CommandFn = () => 0;

/** usleep MICROSECONDS */
const usleep: CommandFn = async (ctx) => {
  if (ctx.args.length !== 1)
    return usageError(ctx, ctx.args.length === 0 ? 'Need 1 argument' : 'Max 1 argument');
  const us = ctx.args[0]!;
  if (!/^\d+$/.test(us)) return usageError(ctx, `not integer: ${us}`);
  await abortableSleep(Number(us) / 1000, ctx.signal);
  return ctx.signal.aborted ? 130 : 0;
};

/** unlink FILE: removes one name (not a directory). */
const unlink: CommandFn = (ctx) => {
  if (ctx.args.length !== 1)
    return usageError(ctx, ctx.args.length === 0 ? 'Need 1 argument' : 'Max 1 argument');
  const name = ctx.args[0]!;
  const full = resolvePath(ctx, name);
  try {
    if (ctx.fs.lstat(full).kind === 'dir') return fail(ctx, `couldn't unlink '${name}': Is a directory`);
    ctx.fs.remove(full);
    return 0;
  } catch (error) {
    return fail(ctx, `couldn't unlink '${name}': ${errText(error)}`);
  }
};

/** A size as truncate -s reads it: [+-<>/%]N with an optional k, m, g or t (1024s). */
function truncateSize(spec: string): { op: string; bytes: number } | null {
  const m = /^([-+<>/%]?)(\d+)([kmgt]?)$/i.exec(spec);
  if (!m) return null;
  const unit = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[3]!.toLowerCase()]!;
  return { op: m[1]!, bytes: Number(m[2]) * unit };
}

/** truncate [-c] -s SIZE FILE...: sets each file's length (zeros when it grows). */
const truncate: CommandFn = (ctx) => {
  const { flags, values, operands } = getopt(ctx.args, 's');
  if (!values.has('s')) return usageError(ctx, 'Needs -s');
  if (operands.length === 0) return usageError(ctx, 'Need 1 argument');
  const size = truncateSize(values.get('s')!);
  if (!size) return usageError(ctx, `bad -s '${values.get('s')}'`);
  let status = 0;
  for (const name of operands) {
    const full = resolvePath(ctx, name);
    try {
      const exists = ctx.fs.exists(full);
      if (!exists && flags.has('c')) continue;
      const data = exists ? ctx.fs.readFile(full) : Buffer.alloc(0);
      const now = data.length;
      const want = {
        '': size.bytes,
        '+': now + size.bytes,
        '-': Math.max(0, now - size.bytes),
        '<': Math.min(now, size.bytes),
        '>': Math.max(now, size.bytes),
        '/': size.bytes ? Math.floor(now / size.bytes) * size.bytes : now,
        '%': size.bytes ? Math.ceil(now / size.bytes) * size.bytes : now,
      }[size.op]!;
      if (want === now && exists) continue;
      const next = Buffer.alloc(want);
      data.copy(next, 0, 0, Math.min(now, want));
      ctx.fs.writeFile(full, next);
    } catch (error) {
      ctx.stderr.write(`truncate: ${name}: ${errText(error)}\n`);
      status = 1;
    }
  }
  return status;
};

/** Runs `each` over the lines of every operand (stdin without any), as toybox's loopfiles. */
async function eachInput(ctx: CommandContext, each: (lines: string[]) => void): Promise<number> {
  const { operands } = getopt(ctx.args);
  const inputs = await inputText(ctx, operands);
  if (typeof inputs === 'number') return 1;
  for (const { text } of inputs) each(splitLines(text));
  return 0;
}

/** tac [FILE...]: lines in reverse order. */
const tac: CommandFn = (ctx) =>
  eachInput(ctx, (lines) => {
    for (const line of lines.reverse()) ctx.stdout.write(`${line}\n`);
  });

/** rev [FILE...]: each line's characters in reverse order. */
const rev: CommandFn = (ctx) =>
  eachInput(ctx, (lines) => {
    for (const line of lines) ctx.stdout.write(`${[...line].reverse().join('')}\n`);
  });

/**
 * nl [-b a|t|n] [-s SEPARATOR] [-v START] [-w WIDTH] [FILE...]: numbers lines (the
 * non-empty ones by default) right-aligned in WIDTH (6), then SEPARATOR (a tab).
 */
const nl: CommandFn = async (ctx) => {
  const { values, operands } = getopt(ctx.args, 'bsvw');
  const style = values.get('b') ?? 't';
  if (!['a', 't', 'n'].includes(style)) return usageError(ctx, `bad -b '${style}'`);
  const width = Number(values.get('w') ?? 6);
  let number = Number(values.get('v') ?? 1);
  if (!Number.isInteger(width) || width < 1 || !Number.isInteger(number)) {
    return usageError(ctx, 'bad -w or -v');
  }
  const separator = values.get('s') ?? '\t';
  const inputs = await inputText(ctx, operands);
  if (typeof inputs === 'number') return 1;
  for (const { text } of inputs) {
    for (const line of splitLines(text)) {
      const numbered = style === 'a' || (style === 't' && line !== '');
      if (numbered) ctx.stdout.write(`${String(number++).padStart(width)}${separator}${line}\n`);
      else ctx.stdout.write(`${' '.repeat(width + separator.length)}${line}\n`);
    }
  }
  return 0;
};

/** uuidgen: a random (version 4) UUID. */
const uuidgen: CommandFn = (ctx) => {
  if (ctx.args.length > 0) return usageError(ctx, `Unknown option '${ctx.args[0]!.replace(/^-+/, '')}'`);
  ctx.stdout.write(`${randomUUID()}\n`);
  return 0;
};

/**
 * mount [-t TYPE]: the mounts, as toybox lists /proc/mounts. Mounting needs root, which
 * the shell is not: mount(2) refuses, as on a phone.
 */
const mount: CommandFn = (ctx) => {
  const { values, operands, unknown, missing } = getopt(ctx.args, 'tOo');
  if (missing !== null) return usageError(ctx, `Missing argument to -${missing}`);
  if (unknown.length > 0) return usageError(ctx, `Unknown option '${unknown[0]}'`);
  if (operands.length === 0) {
    const types = values.get('t')?.split(',');
    for (const m of MOUNTS) {
      if (!types || types.includes(m.type))
        ctx.stdout.write(`${m.source} on ${m.target} type ${m.type} (${m.options})\n`);
    }
    return 0;
  }
  if (operands.length === 1) return fail(ctx, `'${operands[0]}' not in fstab`);
  return fail(ctx, `'${operands[0]}'->'${operands[1]}': Operation not permitted`);
};

export const APPLET_COMMANDS: Record<string, CommandFn> = {
  mount,
  nproc,
  getconf,
  mktemp,
  sync,
  usleep,
  unlink,
  truncate,
  tac,
  rev,
  nl,
  uuidgen,
};

/** What Android 14's toybox answers to `--version` (TOYBOX_VERSION with Android's TOYBOX_VENDOR). */
const TOYBOX_VERSION = '0.8.9-android';

/**
 * Where toybox 0.8.9 suggests installing each applet (`toybox --long`), from the
 * TOYFLAG_USR, TOYFLAG_BIN and TOYFLAG_SBIN of its NEWTOY/OLDTOY declarations.
 */
const INSTALL_PATHS: Record<string, string> = {
  'bin/':
    '[ blkdiscard blkid cat chattr chgrp chmod chown cksum cp cpio date df dmesg dos2unix echo egrep false fgrep fsync grep help hostname kill ln ls lsattr mkdir mknod mktemp mount mountpoint mv netcat netstat nice pidof printenv ps pwd rm rmdir sed sleep stat stty sync touch true umount uname unix2dos usleep vmstat',
  'usr/bin/':
    'acpi base64 basename cal chcon chrt clear cmp comm cut dd diff dirname du env expand expr fallocate file find flock fmt free getconf getfattr getopt groups gunzip gzip head iconv id inotifyd install ionice iorenice iotop killall logname lsof lspci lsusb makedevs md5sum microcom mkfifo more nbd-client nc nl nohup nproc nsenter od paste patch pgrep pkill pmap printf prlimit pwdx readelf readlink realpath renice rev rtcwake seq setfattr setsid sha1sum sha224sum sha256sum sha384sum sha512sum sort split strings tac tail tar taskset tee test time timeout top tr traceroute traceroute6 truncate tty tunctl uclampset ulimit uniq unlink unshare uptime uudecode uuencode uuidgen vi watch wc which whoami xargs xxd yes zcat',
  'sbin/':
    'blockdev freeramdisk hwclock ifconfig insmod losetup lsmod mkswap modinfo partprobe pivot_root rmmod swapoff swapon sysctl vconfig',
  'usr/sbin/':
    'chroot devmem fsfreeze getenforce i2cdetect i2cdump i2cget i2cset load_policy log restorecon rfkill runcon sendevent setenforce',
};
const INSTALL_PATH = new Map(
  Object.entries(INSTALL_PATHS).flatMap(([path, names]) => names.split(' ').map((n) => [n, path] as const)),
);

const TOYBOX_HELP = `Toybox ${TOYBOX_VERSION} multicall binary (see https://landley.net/toybox)

usage: toybox [--long | --help | --version | [COMMAND] [ARGUMENTS...]]

With no arguments, "toybox" shows available COMMAND names. Add --long
to include suggested install path for each command, see
https://landley.net/toybox/faq.html#install for details.

First argument is name of a COMMAND to run, followed by any ARGUMENTS
to that command. Most toybox commands also understand:

--help\t\tShow command help (only)
--version\tShow toybox version (only)

The filename "-" means stdin/stdout, and "--" stops argument parsing.

Numerical arguments accept a single letter suffix for
kilo, mega, giga, tera, peta, and exabytes, plus an additional
"d" to indicate decimal 1000's instead of 1024.

Durations can be decimal fractions and accept minute ("m"), hour ("h"),
or day ("d") suffixes (so 0.1m = 6s).
`;

/**
 * toybox's applets: the programs of /system/bin that are links to toybox (`ls -> toybox`),
 * in toybox's order (strcmp). am, pm, getprop and the rest of Android's own are not among them.
 */
function toyboxApplets(ctx: CommandContext): string[] {
  return SYSTEM_BIN.filter((name) => {
    try {
      return ctx.fs.readlink(`/system/bin/${name}`) === 'toybox';
    } catch {
      return false;
    }
  }).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The terminal's width as toybox's terminal_size finds it: stdio's terminal, then $COLUMNS; 80 without. */
function terminalWidth(ctx: CommandContext): number {
  let width = ctx.stdin.terminal?.cols ?? ctx.stdout.terminal?.cols ?? ctx.stderr.terminal?.cols ?? 0;
  const columns = /^\d+/.exec(ctx.env.get('COLUMNS') ?? '');
  if (columns) width = Number(columns[0]);
  return width || 80;
}

/**
 * `toybox [--long | --help | --version | COMMAND [ARGUMENTS...]]` as toybox 0.8.9's main.c:
 * runs one of its applets (by the basename of COMMAND), prints its version or help, or,
 * without arguments, lists the applets in lines of up to the terminal's width less 15.
 * Anything that is not one of its applets (am, pm, getprop) is `Unknown command`, status 127.
 */
export function toyboxCommand(table: () => CommandTable): CommandFn {
  return (ctx) => {
    const [first, ...rest] = ctx.args;
    if (first === '--version') {
      ctx.stdout.write(`toybox ${TOYBOX_VERSION}\n`);
      return 0;
    }
    const applets = toyboxApplets(ctx);
    const unknown = (name: string) => {
      ctx.stderr.write(`toybox: Unknown command ${name} (see "toybox --help")\n`);
      return 127;
    };
    const run = (command: string, args: string[]) => {
      const name = basename(command);
      if (!applets.includes(name)) return unknown(command);
      const fn = table().get(name);
      if (!fn) {
        ctx.stderr.write(`toybox: ${name}: not modeled by the virtual phone (see docs/virtual-phone.md)\n`);
        return 126;
      }
      return fn({ ...ctx, name, args });
    };
    if (first === '--help') {
      if (rest[0] === undefined) {
        ctx.stdout.write(TOYBOX_HELP);
        return 0;
      }
      // `toybox --help COMMAND` is COMMAND's own help.
      return run(rest[0], ['--help']);
    }
    if (first !== undefined && first !== '--long') return run(first, rest);
    const width = terminalWidth(ctx);
    let out = '';
    let len = 0;
    for (const name of applets) {
      const shown = first === '--long' ? `${INSTALL_PATH.get(name) ?? ''}${name}` : name;
      out += shown;
      len += shown.length + 1;
      if (len > width - 15) len = 0;
      out += len ? ' ' : '\n';
    }
    ctx.stdout.write(`${out}\n`);
    return 0;
  };
}
