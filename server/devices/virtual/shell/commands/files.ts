/** File applets, toybox style: ls, cat, mkdir, rm, mv, cp, touch, chmod, stat, ... */
import { createHash } from 'node:crypto';
import { FsError, basename, dirname } from '../../fs.js';
import type { FsNode, Stat } from '../../fs.js';
import { fail, getopt, openOperand, resolvePath } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';
import { MOUNTS } from '../../identity.js';
import {
  HR_1000,
  fileType,
  humanReadable3,
  humanReadableLong,
  lsDate,
  modeString,
  statDate,
  userName,
} from './format.js';
import { fileTest as fileTestOf } from '../test-builtin.js';

/** The system's reason for a failed file operation (`No such file or directory`, ...). */
export function errText(error: unknown): string {
  return error instanceof FsError ? error.reason : String(error);
}

/** Copies stdin or each file to stdout, in chunks with flow control (big pulls via cat). */
/** toybox cat [-u] [FILE...]: -u is what it does anyway; -e, -t and -v are refused. */
const cat: CommandFn = async (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  const marks = [...flags].find((f) => f !== 'u');
  if (marks) return fail(ctx, `-${marks}: not modeled by the virtual phone`);
  if (operands.length === 0) operands.push('-');
  let status = 0;
  for (const f of operands) {
    const input = openOperand(ctx, f);
    if (!input) {
      status = 1;
      continue;
    }
    while (!ctx.stdout.closed && !ctx.signal.aborted) {
      const chunk = await input.read();
      if (chunk === null) break;
      ctx.stdout.write(chunk);
      await ctx.stdout.drain();
    }
  }
  return status;
};

interface LsEntry {
  name: string;
  path: string;
  st: Stat;
  node: FsNode;
}

const ls: CommandFn = (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  const long = flags.has('l') || flags.has('n') || flags.has('g') || flags.has('o');
  const all = flags.has('a');
  const almostAll = flags.has('A');
  const dirAsFile = flags.has('d');
  const classify = flags.has('F') || flags.has('p');
  // -L: what a link points to is shown in its place (a dangling link stays a link).
  const dereference = flags.has('L');
  const fs = ctx.fs;
  const followedOrLink = (path: string, lst: Stat): { st: Stat; node: FsNode } => {
    if (lst.kind === 'link' && dereference) {
      try {
        return { st: fs.stat(path), node: fs.resolve(path, true).node };
      } catch {
        // Dangling: listed as the link it is.
      }
    }
    return { st: lst, node: fs.resolve(path, false).node };
  };
  if (operands.length === 0) operands.push('.');
  let status = 0;
  const files: LsEntry[] = [];
  const dirs: { shown: string; path: string }[] = [];
  for (const op of operands) {
    const path = resolvePath(ctx, op);
    try {
      const lst = fs.lstat(path);
      // ls follows a symlink operand to a directory unless -l/-d
      const followed =
        lst.kind === 'link' && ((!long && !dirAsFile) || dereference || op.endsWith('/'))
          ? fs.stat(path)
          : lst;
      if (followed.kind === 'dir' && !dirAsFile) dirs.push({ shown: op, path });
      else if (followed !== lst)
        files.push({ name: op, path, st: followed, node: fs.resolve(path, true).node });
      else files.push({ name: op, path, ...followedOrLink(path, lst) });
    } catch (error) {
      ctx.stderr.write(`ls: ${op}: ${errText(error)}\n`);
      status = 1;
    }
  }
  // toybox sorts by name (byte order) unless -t, -S, -f or -U say otherwise; -t and -S fall back on it.
  const byName = (a: LsEntry, b: LsEntry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const sortEntries = (list: LsEntry[]) => {
    if (flags.has('f') || flags.has('U')) return list;
    if (flags.has('t')) list.sort((a, b) => b.st.mtimeMs - a.st.mtimeMs || byName(a, b));
    else if (flags.has('S')) list.sort((a, b) => b.st.size - a.st.size || byName(a, b));
    else list.sort(byName);
    if (flags.has('r')) list.reverse();
    return list;
  };
  const render = (list: LsEntry[], withTotal: boolean) => {
    // A directory's listing starts with its blocks with -l (and its kin) or -h, as toybox's does.
    if (withTotal && (long || flags.has('h'))) {
      const kb = list.reduce((n, e) => n + Math.ceil(e.st.size / 4096) * 4, 0);
      ctx.stdout.write(`total ${flags.has('h') ? humanReadable3(kb * 1024) : kb}\n`);
    }
    if (!long) {
      for (const e of list) ctx.stdout.write(`${e.name}${classify && e.st.kind === 'dir' ? '/' : ''}\n`);
      return;
    }
    const rows = list.map((e) => {
      const user = flags.has('n') ? String(e.st.uid) : userName(e.st.uid);
      const group = flags.has('n') ? String(e.st.gid) : userName(e.st.gid);
      const name = e.node.kind === 'link' ? `${e.name} -> ${e.node.target}` : e.name;
      return {
        mode: modeString(e.st.mode),
        links: String(e.st.nlink),
        user,
        group,
        // -h: human_readable's three digits (`4.8K`), as toybox's print_with_h.
        size: flags.has('h') ? humanReadable3(e.st.size) : String(e.st.size),
        date: lsDate(e.st.mtimeMs),
        name,
      };
    });
    const w = (k: keyof (typeof rows)[number]) => Math.max(0, ...rows.map((r) => r[k].length));
    for (const r of rows) {
      const owner = flags.has('g') ? '' : `${r.user.padEnd(w('user'))} `;
      const group = flags.has('o') ? '' : `${r.group.padEnd(w('group'))} `;
      ctx.stdout.write(
        `${r.mode} ${r.links.padStart(w('links'))} ${owner}${group}${r.size.padStart(w('size'))} ${r.date} ${r.name}\n`,
      );
    }
  };
  render(sortEntries(files), false);
  const multi = operands.length > 1 || flags.has('R');
  const listDir = (shown: string, path: string, first: boolean) => {
    let entries: LsEntry[];
    try {
      const real = fs.realpath(path);
      entries = fs.readdir(real).map(({ name, node }) => {
        const entryPath = `${real === '/' ? '' : real}/${name}`;
        const lst = fs.lstat(entryPath);
        return {
          name,
          path: entryPath,
          ...(dereference ? followedOrLink(entryPath, lst) : { st: lst, node }),
        };
      });
      if (all) {
        entries.unshift({
          name: '..',
          path: dirname(real),
          st: fs.stat(dirname(real)),
          node: fs.resolve(dirname(real)).node,
        });
        entries.unshift({ name: '.', path: real, st: fs.stat(real), node: fs.resolve(real).node });
      } else if (!almostAll) entries = entries.filter((e) => !e.name.startsWith('.'));
    } catch (error) {
      ctx.stderr.write(`ls: ${shown}: ${errText(error)}\n`);
      status = 1;
      return;
    }
    if (multi) ctx.stdout.write(`${first && files.length === 0 ? '' : '\n'}${shown}:\n`);
    render(sortEntries(entries), true);
    if (flags.has('R')) {
      for (const e of entries)
        if (e.st.kind === 'dir' && e.name !== '.' && e.name !== '..')
          listDir(`${shown.replace(/\/$/, '')}/${e.name}`, e.path, false);
    }
  };
  dirs.forEach((d, i) => listDir(d.shown, d.path, i === 0));
  return status;
};

const mkdir: CommandFn = (ctx) => {
  const { flags, values, operands } = getopt(ctx.args, 'm');
  if (operands.length === 0) return fail(ctx, `Needs 1 argument (see "${ctx.name} --help")`);
  let status = 0;
  const mode = values.has('m') ? parseInt(values.get('m')!, 8) : undefined;
  for (const op of operands) {
    try {
      const path = resolvePath(ctx, op);
      const made = !ctx.fs.exists(path);
      ctx.fs.mkdir(path, { parents: flags.has('p') });
      // -m sets the new directory's mode exactly, whatever the umask.
      if (mode !== undefined && made) ctx.fs.chmod(path, mode);
    } catch (error) {
      ctx.stderr.write(`mkdir: '${op}': ${errText(error)}\n`);
      status = 1;
    }
  }
  return status;
};

const rm: CommandFn = (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  const force = flags.has('f');
  const recursive = flags.has('r') || flags.has('R');
  if (operands.length === 0 && !force) return fail(ctx, `Needs 1 argument (see "${ctx.name} --help")`);
  let status = 0;
  for (const op of operands) {
    const path = resolvePath(ctx, op);
    try {
      const st = ctx.fs.lstat(path);
      if (st.kind === 'dir' && !recursive && !flags.has('d')) {
        ctx.stderr.write(`rm: ${op}: Is a directory\n`);
        status = 1;
        continue;
      }
      ctx.fs.remove(path, { recursive: recursive || flags.has('d'), dirOnly: false });
    } catch (error) {
      if (force && error instanceof FsError && error.code === 'ENOENT') continue;
      ctx.stderr.write(`rm: ${op}: ${errText(error)}\n`);
      status = 1;
    }
  }
  return status;
};

const rmdir: CommandFn = (ctx) => {
  const { operands } = getopt(ctx.args);
  let status = 0;
  for (const op of operands) {
    try {
      ctx.fs.remove(resolvePath(ctx, op), { dirOnly: true });
    } catch (error) {
      ctx.stderr.write(`rmdir: ${op}: ${errText(error)}\n`);
      status = 1;
    }
  }
  return status;
};

const mv: CommandFn = (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  if (operands.length < 2) return fail(ctx, 'Needs 2 arguments');
  const dest = operands.pop()!;
  let status = 0;
  for (const src of operands) {
    try {
      const destPath = resolvePath(ctx, dest);
      if (flags.has('n') && ctx.fs.exists(destPath) && ctx.fs.stat(destPath).kind !== 'dir') continue;
      ctx.fs.rename(resolvePath(ctx, src), destPath);
    } catch (error) {
      ctx.stderr.write(`mv: bad '${src}': ${errText(error)}\n`);
      status = 1;
    }
  }
  return status;
};

const cp: CommandFn = (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  if (operands.length < 2) return fail(ctx, 'Needs 2 arguments');
  const fs = ctx.fs;
  const destArg = operands.pop()!;
  const dest = resolvePath(ctx, destArg);
  const destIsDir = fs.exists(dest) && fs.stat(dest).kind === 'dir';
  if (operands.length > 1 && !destIsDir) return fail(ctx, `${destArg}: Not a directory`);
  let status = 0;
  const copy = (from: string, to: string, shown: string) => {
    let st: Stat;
    try {
      st = fs.stat(from);
    } catch (error) {
      ctx.stderr.write(`cp: bad '${shown}': ${errText(error)}\n`);
      status = 1;
      return;
    }
    if (st.kind === 'dir') {
      if (!(flags.has('r') || flags.has('R') || flags.has('a'))) {
        ctx.stderr.write(`cp: Skipped dir '${shown}'\n`);
        status = 1;
        return;
      }
      let entries: { name: string }[];
      try {
        if (!fs.exists(to)) fs.mkdir(to);
        entries = fs.readdir(from);
      } catch (error) {
        ctx.stderr.write(
          `cp: '${error instanceof FsError && error.path === from ? shown : to}': ${errText(error)}\n`,
        );
        status = 1;
        return;
      }
      for (const e of entries) copy(`${from}/${e.name}`, `${to}/${e.name}`, `${shown}/${e.name}`);
      return;
    }
    let data: Buffer;
    try {
      data = fs.readFile(from);
    } catch (error) {
      ctx.stderr.write(`cp: '${shown}': ${errText(error)}\n`);
      status = 1;
      return;
    }
    const keep = flags.has('p') || flags.has('a');
    try {
      // A new copy has the source's permissions less the umask (-p: exactly them); one
      // written over keeps its own.
      const created = !fs.exists(to);
      fs.writeFile(
        to,
        data,
        keep ? { mode: st.mode & 0o7777, mtimeMs: st.mtimeMs } : created ? { mode: st.mode & 0o777 } : {},
      );
      if (keep && created) fs.chmod(to, st.mode & 0o7777);
    } catch (error) {
      ctx.stderr.write(`cp: '${to}': ${errText(error)}\n`);
      status = 1;
    }
  };
  for (const src of operands) {
    const from = resolvePath(ctx, src);
    copy(from, destIsDir ? `${dest}/${basename(from)}` : dest, src);
  }
  return status;
};

const touch: CommandFn = (ctx) => {
  const { flags, values, operands } = getopt(ctx.args, 'dtr');
  const fs = ctx.fs;
  let time = ctx.device.now();
  if (values.has('d')) time = Date.parse(values.get('d')!) || time;
  if (values.has('t')) {
    // [[CC]YY]MMDDhhmm[.ss], told apart by length as toybox's parser does.
    const stamp = values.get('t')!;
    const m = /^(\d{8}|\d{10}|\d{12})(?:\.(\d{2}))?$/.exec(stamp);
    if (!m) {
      ctx.stderr.write(`touch: bad date '${stamp}'\n`);
      return 1;
    }
    const digits = m[1]!;
    let year = new Date(time).getUTCFullYear();
    if (digits.length === 12) year = Number(digits.slice(0, 4));
    else if (digits.length === 10)
      year = (Number(digits.slice(0, 2)) < 69 ? 2000 : 1900) + Number(digits.slice(0, 2));
    const rest = digits.slice(digits.length - 8);
    time = Date.UTC(
      year,
      Number(rest.slice(0, 2)) - 1,
      Number(rest.slice(2, 4)),
      Number(rest.slice(4, 6)),
      Number(rest.slice(6, 8)),
      Number(m[2] ?? 0),
    );
  }
  if (values.has('r')) time = fs.stat(resolvePath(ctx, values.get('r')!)).mtimeMs;
  let status = 0;
  for (const op of operands) {
    const path = resolvePath(ctx, op);
    try {
      if (!fs.exists(path)) {
        if (flags.has('c')) continue;
        fs.writeFile(path, Buffer.alloc(0), { mtimeMs: time });
      } else fs.utimes(path, time, time, { now: !values.has('t') && !values.has('d') && !values.has('r') });
    } catch (error) {
      ctx.stderr.write(`touch: '${op}': ${errText(error)}\n`);
      status = 1;
    }
  }
  return status;
};

/** Applies a symbolic (u+x,go-w) or octal mode to current permission bits. */
export function applyMode(spec: string, current: number, isDir: boolean): number | null {
  if (/^[0-7]{1,4}$/.test(spec)) return parseInt(spec, 8);
  let mode = current & 0o7777;
  for (const clause of spec.split(',')) {
    const m = /^([ugoa]*)([-+=])([rwxXst]*)$/.exec(clause);
    if (!m) return null;
    const who = m[1] === '' || m[1]!.includes('a') ? 'ugo' : m[1]!;
    let bits = 0;
    for (const p of m[3]!) {
      const shiftFor = (w: string) => (w === 'u' ? 6 : w === 'g' ? 3 : 0);
      for (const w of who) {
        if (p === 'r') bits |= 4 << shiftFor(w);
        if (p === 'w') bits |= 2 << shiftFor(w);
        if (p === 'x' || (p === 'X' && (isDir || (current & 0o111) !== 0))) bits |= 1 << shiftFor(w);
        if (p === 's') bits |= w === 'u' ? 0o4000 : w === 'g' ? 0o2000 : 0;
        if (p === 't') bits |= 0o1000;
      }
    }
    if (m[2] === '+') mode |= bits;
    else if (m[2] === '-') mode &= ~bits;
    else {
      let mask = 0;
      for (const w of who) mask |= 7 << (w === 'u' ? 6 : w === 'g' ? 3 : 0);
      mode = (mode & ~mask) | bits;
    }
  }
  return mode;
}

const chmod: CommandFn = (ctx) => {
  const { flags, operands } = getopt(ctx.args.filter((a) => !/^-[rwxXst]+$/.test(a) || a === '-R'));
  const symbolicMinus = ctx.args.find((a) => /^-[rwxXst]+$/.test(a) && a !== '-R');
  const spec = symbolicMinus ?? operands.shift();
  if (!spec || operands.length === 0) return fail(ctx, 'Needs 2 arguments');
  let status = 0;
  const fs = ctx.fs;
  const apply = (path: string, shown: string) => {
    let st: Stat;
    try {
      st = fs.stat(path);
    } catch (error) {
      ctx.stderr.write(`chmod: ${shown}: ${errText(error)}\n`);
      status = 1;
      return;
    }
    const mode = applyMode(spec, st.mode, st.kind === 'dir');
    if (mode === null) {
      ctx.stderr.write(`chmod: bad mode '${spec}'\n`);
      status = 1;
      return;
    }
    try {
      fs.chmod(path, mode);
    } catch (error) {
      ctx.stderr.write(
        `chmod: chmod '${shown}' to ${mode.toString(8).padStart(4, '0')}: ${errText(error)}\n`,
      );
      status = 1;
    }
    if (flags.has('R') && st.kind === 'dir') {
      let entries: { name: string }[];
      try {
        entries = fs.readdir(path);
      } catch (error) {
        ctx.stderr.write(`chmod: ${shown}: ${errText(error)}\n`);
        status = 1;
        return;
      }
      for (const e of entries) apply(`${path}/${e.name}`, `${shown}/${e.name}`);
    }
  };
  for (const op of operands) apply(resolvePath(ctx, op), op);
  return status;
};

const chown: CommandFn = (ctx) => {
  const { operands } = getopt(ctx.args);
  for (const op of operands.slice(1)) {
    const path = resolvePath(ctx, op);
    if (!ctx.fs.exists(path)) return fail(ctx, `${op}: No such file or directory`);
    ctx.stderr.write(`chown: ${op}: Operation not permitted\n`);
    return 1;
  }
  return fail(ctx, 'Needs 2 arguments');
};

function statFormat(format: string, shown: string, st: Stat, target: string | null): string {
  return format.replace(/%([a-zA-Z%])/g, (_, c: string) => {
    switch (c) {
      case 's':
        return String(st.size);
      case 'n':
        return shown;
      case 'N':
        return target ? `${shown} -> ${target}` : shown;
      case 'a':
        return (st.mode & 0o7777).toString(8);
      case 'A':
        return modeString(st.mode);
      case 'f':
        return st.mode.toString(16);
      case 'F':
        return fileType(st);
      case 'u':
        return String(st.uid);
      case 'U':
        return userName(st.uid);
      case 'g':
        return String(st.gid);
      case 'G':
        return userName(st.gid);
      case 'h':
        return String(st.nlink);
      case 'i':
        return String(st.ino);
      case 'b':
        return String(Math.ceil(st.size / 512));
      case 'B':
        return '512';
      case 'o':
        return '4096';
      case 'X':
        return String(Math.floor(st.atimeMs / 1000));
      case 'Y':
        return String(Math.floor(st.mtimeMs / 1000));
      case 'Z':
        return String(Math.floor(st.ctimeMs / 1000));
      case 'x':
        return statDate(st.atimeMs);
      case 'y':
        return statDate(st.mtimeMs);
      case 'z':
        return statDate(st.ctimeMs);
      case 'd':
        return '64800';
      case 'D':
        return 'fd00';
      case 'm':
        return '/';
      case '%':
        return '%';
      default:
        return `?`;
    }
  });
}

const stat: CommandFn = (ctx) => {
  const { flags, values, operands } = getopt(ctx.args, 'c');
  const fs = ctx.fs;
  let status = 0;
  for (const op of operands) {
    const path = resolvePath(ctx, op);
    try {
      const st = flags.has('L') ? fs.stat(path) : fs.lstat(path);
      const node = fs.resolve(path, flags.has('L')).node;
      const target = node.kind === 'link' ? node.target : null;
      if (values.has('c')) {
        ctx.stdout.write(`${statFormat(values.get('c')!, op, st, target)}\n`);
        continue;
      }
      const perm = `(${(st.mode & 0o7777).toString(8).padStart(4, '0')}/${modeString(st.mode)})`;
      ctx.stdout.write(
        `  File: ${target ? `${op} -> ${target}` : op}\n` +
          `  Size: ${st.size}\t Blocks: ${Math.ceil(st.size / 512)}\t IO Blocks: 4096\t${fileType(st)}\n` +
          `Device: fd00h/64768d\t Inode: ${st.ino}\t Links: ${st.nlink}\t Device type: 0,0\n` +
          `Access: ${perm}\tUid: (${String(st.uid).padStart(5)}/${userName(st.uid).padStart(8)})\tGid: (${String(st.gid).padStart(5)}/${userName(st.gid).padStart(8)})\n` +
          `Access: ${statDate(st.atimeMs)}\nModify: ${statDate(st.mtimeMs)}\nChange: ${statDate(st.ctimeMs)}\n`,
      );
    } catch (error) {
      ctx.stderr.write(`stat: '${op}': ${errText(error)}\n`);
      status = 1;
    }
  }
  return status;
};

const ln: CommandFn = (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  if (operands.length < 2) return fail(ctx, 'Needs 2 arguments');
  const [target, link] = operands as [string, string];
  const path = resolvePath(ctx, link);
  try {
    if (flags.has('f') && ctx.fs.exists(path)) ctx.fs.remove(path);
    if (!flags.has('s')) return fail(ctx, 'hard links are not modeled by the virtual phone; use ln -s');
    ctx.fs.symlink(target, path);
    return 0;
  } catch (error) {
    return fail(ctx, `${link}: ${errText(error)}`);
  }
};

const readlink: CommandFn = (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  const op = operands[0];
  if (!op) return 1;
  try {
    const path = resolvePath(ctx, op);
    ctx.stdout.write(
      `${flags.has('f') || flags.has('e') || flags.has('m') ? ctx.fs.realpath(path) : ctx.fs.readlink(path)}\n`,
    );
    return 0;
  } catch {
    return 1;
  }
};

const realpath: CommandFn = (ctx) => {
  let status = 0;
  for (const op of getopt(ctx.args).operands) {
    try {
      ctx.stdout.write(`${ctx.fs.realpath(resolvePath(ctx, op))}\n`);
    } catch (error) {
      ctx.stderr.write(`realpath: ${op}: ${errText(error)}\n`);
      status = 1;
    }
  }
  return status;
};

function treeSize(ctx: CommandContext, path: string): number {
  let total = 0;
  for (const { node } of ctx.fs.walkTree(path)) if (node.kind === 'file') total += node.data.length;
  return total;
}

/**
 * toybox df [-HPkhia] [-t TYPE] [FILE...]: the mounts with blocks of their own (-a: all of
 * them), or the one each FILE is on, in toybox 0.8.9's columns (each as wide as its widest
 * entry). -h and -H are human_readable's three digits (`111G`, `5.0G`; -H in 1000s), -P
 * counts 512-byte blocks (unless -k). The phone keeps no inode counts: -i says so.
 */
const df: CommandFn = (ctx) => {
  const { flags, lists, operands, missing } = getopt(ctx.args, 't');
  if (missing !== null) return fail(ctx, `Missing argument to -${missing} (see "df --help")`);
  if (flags.has('i')) return fail(ctx, '-i: not modeled by the virtual phone (it keeps no inode counts)');
  // [-HPh]: the last of -H, -P and -h given wins.
  let style = '';
  for (const a of ctx.args) {
    if (a === '--') break;
    if (/^-[^-]/.test(a)) for (const f of a.slice(1).replace(/t.*$/, '')) if ('HPh'.includes(f)) style = f;
  }
  const human = style === 'h' || style === 'H';
  const units = human ? 1 : style === 'P' && !flags.has('k') ? 512 : 1024;
  // Each -t names one type (toybox compares the whole argument).
  const types = lists.get('t');
  const used = Math.ceil(treeSize(ctx, '/storage/emulated/0') / 1024) + 5_242_880;
  // A mount without blocks of its own (proc, sysfs, devpts) only shows with -a.
  const mounts = MOUNTS.filter(
    (m) => (flags.has('a') || m.sizeKb !== undefined) && (!types || types.includes(m.type)),
  );
  let shown: (typeof MOUNTS)[number][] = mounts;
  let status = 0;
  if (operands.length > 0) {
    // Each operand shows the filesystem it lives on (the longest mount prefix), once per operand.
    shown = [];
    for (const op of operands) {
      let path: string;
      try {
        path = ctx.fs.realpath(resolvePath(ctx, op));
      } catch (error) {
        ctx.stderr.write(`df: '${op}': ${errText(error)}\n`);
        status = 1;
        continue;
      }
      const m = [...MOUNTS]
        .sort((a, b) => b.target.length - a.target.length)
        .find((r) => r.target === '/' || path === r.target || path.startsWith(`${r.target}/`));
      if (m && mounts.includes(m)) shown.push(m);
    }
  }
  const number = (n: number) =>
    human ? humanReadableLong(n, 3, 0, style === 'H' ? HR_1000 : 0) : String(Math.floor(n));
  const rows = shown.map((m) => {
    const sizeKb = m.sizeKb ?? 0;
    const usedKb = m.sizeKb === undefined ? 0 : (m.usedKb ?? used);
    const [size, u, avail] = [sizeKb, usedKb, sizeKb - usedKb].map((kb) =>
      Math.floor((kb * 1024) / units),
    ) as [number, number, number];
    // Use% rounds up: the share of used in used + available.
    const pct = u + avail === 0 ? 0 : Math.ceil((u * 100) / (u + avail));
    return [m.source, number(size), number(u), number(avail), `${pct}%`, m.target];
  });
  const header = [
    'Filesystem',
    human ? 'Size' : units === 512 ? '512-blocks' : style === 'P' ? '1024-blocks' : '1K-blocks',
    'Used',
    human ? 'Avail' : 'Available',
    style === 'P' ? 'Capacity' : 'Use%',
    'Mounted on',
  ];
  // The filesystem column is at least 14 wide (15 with -h or -H); the rest as their widest.
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  widths[0] = Math.max(widths[0]!, 14 + (human ? 1 : 0));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[0]!) : i === 5 ? ` ${c}` : ` ${c.padStart(widths[i]!)}`))
      .join('') + '\n';
  ctx.stdout.write(line(header) + rows.map(line).join(''));
  return status;
};

/** Disk blocks a node takes, in bytes: whole 4 KiB blocks for data, one for a directory. */
function allocated(node: FsNode): number {
  if (node.kind === 'file') return Math.ceil(node.data.length / 4096) * 4096;
  return node.kind === 'dir' ? 4096 : 0;
}

/**
 * toybox du: the disk space of each directory below the operands (in 1 KiB units, -h
 * human-readable, -s only the totals, -a files too), counted in whole blocks.
 */
const du: CommandFn = (ctx) => {
  const { flags, operands } = getopt(ctx.args, 'd');
  if (operands.length === 0) operands.push('.');
  let status = 0;
  const show = (bytes: number, name: string) =>
    ctx.stdout.write(`${flags.has('h') ? humanReadable3(bytes) : Math.ceil(bytes / 1024)}\t${name}\n`);
  const visit = (real: string, shown: string, node: FsNode, depth: number): number => {
    let total = allocated(node);
    if (node.kind === 'dir') {
      let entries: { name: string; node: FsNode }[] = [];
      try {
        entries = ctx.fs.readdir(real);
      } catch (error) {
        ctx.stderr.write(`du: ${shown}: ${errText(error)}\n`);
        status = 1;
      }
      for (const e of entries)
        total += visit(
          `${real === '/' ? '' : real}/${e.name}`,
          `${shown.replace(/\/$/, '')}/${e.name}`,
          e.node,
          depth + 1,
        );
      if (!flags.has('s') || depth === 0) show(total, shown);
    } else if (depth === 0 || (flags.has('a') && !flags.has('s'))) show(total, shown);
    return total;
  };
  for (const op of operands) {
    try {
      const resolved = ctx.fs.resolve(resolvePath(ctx, op));
      visit(resolved.path, op, resolved.node, 0);
    } catch (error) {
      ctx.stderr.write(`du: ${op}: ${errText(error)}\n`);
      status = 1;
    }
  }
  return status;
};

/** md5sum and toybox's sha1sum ... sha512sum: each operand (or stdin) hashed as it is read. */
function digest(algorithm: 'md5' | 'sha1' | 'sha224' | 'sha256' | 'sha384' | 'sha512'): CommandFn {
  return async (ctx) => {
    const { operands } = getopt(ctx.args);
    if (operands.length === 0) operands.push('-');
    let status = 0;
    for (const op of operands) {
      const input = openOperand(ctx, op);
      if (!input) {
        status = 1;
        continue;
      }
      const hash = createHash(algorithm);
      for (;;) {
        const chunk = await input.read();
        if (chunk === null || ctx.signal.aborted) break;
        hash.update(chunk);
      }
      ctx.stdout.write(`${hash.digest('hex')}  ${op}\n`);
    }
    return status;
  };
}

const basenameCmd: CommandFn = (ctx) => {
  const [path, suffix] = ctx.args;
  if (path === undefined) return fail(ctx, `Needs 1 argument (see "${ctx.name} --help")`);
  let b = basename(path);
  if (suffix && b.endsWith(suffix) && b !== suffix) b = b.slice(0, -suffix.length);
  ctx.stdout.write(`${b}\n`);
  return 0;
};

/** toybox dirname PATH...: each one's directory. */
const dirnameCmd: CommandFn = (ctx) => {
  if (ctx.args.length === 0) return fail(ctx, `Needs 1 argument (see "${ctx.name} --help")`);
  for (const path of ctx.args) {
    const trimmed = path.replace(/\/+$/, '') || '/';
    ctx.stdout.write(`${trimmed.includes('/') ? dirname(trimmed) : '.'}\n`);
  }
  return 0;
};

/** `test` / `[`: file tests, string and integer comparisons, ! -a -o. */
const test: CommandFn = (ctx) => {
  let args = [...ctx.args];
  if (ctx.name === '[') {
    if (args[args.length - 1] !== ']') return fail(ctx, "missing ']'", 2);
    args = args.slice(0, -1);
  }
  const fileTest = (op: string, operand: string) => fileTestOf(ctx.fs, ctx.cwd, op, operand, ctx.cred);
  const unary = new Set([
    '-e',
    '-f',
    '-d',
    '-s',
    '-r',
    '-w',
    '-x',
    '-h',
    '-L',
    '-c',
    '-n',
    '-z',
    '-b',
    '-p',
    '-S',
    '-t',
    '-u',
    '-g',
    '-k',
    '-O',
    '-G',
  ]);
  let i = 0;
  const primary = (): boolean => {
    const a = args[i];
    if (a === '!') {
      i++;
      return !primary();
    }
    if (a === '(') {
      i++;
      const v = orExpr();
      i++; // ')'
      return v;
    }
    const b = args[i + 1];
    const c = args[i + 2];
    if (
      b !== undefined &&
      c !== undefined &&
      ['=', '==', '!=', '-eq', '-ne', '-lt', '-le', '-gt', '-ge', '<', '>'].includes(b)
    ) {
      i += 3;
      const x = Number(a);
      const y = Number(c);
      switch (b) {
        case '=':
        case '==':
          return a === c;
        case '!=':
          return a !== c;
        case '<':
          return (a ?? '') < c;
        case '>':
          return (a ?? '') > c;
        case '-eq':
          return x === y;
        case '-ne':
          return x !== y;
        case '-lt':
          return x < y;
        case '-le':
          return x <= y;
        case '-gt':
          return x > y;
        default:
          return x >= y;
      }
    }
    if (a !== undefined && unary.has(a) && b !== undefined) {
      i += 2;
      if (a === '-n') return b.length > 0;
      if (a === '-z') return b.length === 0;
      // -t FD: is that descriptor a terminal (a pty session's, not a pipe or a file)?
      if (a === '-t')
        return (
          (b === '0' ? ctx.stdin : b === '1' ? ctx.stdout : b === '2' ? ctx.stderr : null)?.terminal !==
          undefined
        );
      return fileTest(a, b);
    }
    i++;
    return a !== undefined && a.length > 0;
  };
  const andExpr = (): boolean => {
    let v = primary();
    while (args[i] === '-a') {
      i++;
      const r = primary();
      v = v && r;
    }
    return v;
  };
  const orExpr = (): boolean => {
    let v = andExpr();
    while (args[i] === '-o') {
      i++;
      const r = andExpr();
      v = v || r;
    }
    return v;
  };
  if (args.length === 0) return 1;
  return orExpr() ? 0 : 1;
};

export const FILE_COMMANDS: Record<string, CommandFn> = {
  cat,
  ls,
  mkdir,
  rm,
  rmdir,
  mv,
  cp,
  touch,
  chmod,
  chown,
  stat,
  ln,
  readlink,
  realpath,
  df,
  du,
  md5sum: digest('md5'),
  sha1sum: digest('sha1'),
  sha224sum: digest('sha224'),
  sha256sum: digest('sha256'),
  sha384sum: digest('sha384'),
  sha512sum: digest('sha512'),
  basename: basenameCmd,
  dirname: dirnameCmd,
  test,
  '[': test,
};
