/**
 * Process applets as Android 14's toybox has them: ps, pidof, pgrep, pkill, kill, timeout,
 * nohup, sleep, plus the terminal ones (tty, stty). They read and signal the phone's one
 * process table, so a process another `adb shell` started shows up and can be signalled.
 */
import { CPUS } from '../../identity.js';
import { basename } from '../../fs.js';
import { commName, uidOfUser } from '../../processes.js';
import { startTicks, threadIds } from '../../procfs.js';
import type { ProcessInfo, SignalResult } from '../../processes.js';
import { SIGHUP, SIGKILL, SIGNALS, SIGTERM, signalName, signalNumber } from '../../signals.js';
import { abortableSleep } from '../../timers.js';
import { commandSource, fail, getopt, usageError } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';
import { FileOutput, NULL_OUTPUT } from '../io.js';
import { humanReadable } from './dd.js';

/** toybox's xparsetime: `1.5`, `.25`, `2m`, `1d`; null with the error toybox prints. */
export function parseDuration(spec: string): { ms: number } | { error: string } {
  if (!/^[.\d]/.test(spec)) return { error: `Not a number '${spec}'` };
  const m = /^(\d*)(?:\.(\d*))?(.*)$/.exec(spec)!;
  const unit = m[3] ?? '';
  const scale = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[unit];
  if (scale === undefined) return { error: `Unknown suffix '${unit}'` };
  const seconds = Number(m[1] || '0') + Number(`0.${m[2] ?? ''}`);
  return { ms: seconds * scale * 1000 };
}

const sleep: CommandFn = async (ctx) => {
  if (ctx.args.length === 0) return usageError(ctx, 'Need 1 argument');
  for (const arg of ctx.args) {
    const d = parseDuration(arg);
    if ('error' in d) {
      ctx.stderr.write(`sleep: ${d.error}\n`);
      return 1;
    }
    await abortableSleep(d.ms, ctx.signal);
    if (ctx.signal.aborted) return 130;
  }
  return 0;
};

// ---------- ps ----------

interface Field {
  /** Negative: left-justified text; positive: right-justified number. */
  width: number;
  value(p: ProcessInfo, ctx: CommandContext): string;
  /**
   * What -k sorts by first, as toybox's ksort does: the number behind the field (its slot
   * of /proc/PID/stat: ELAPSED and STIME the start time, %MEM the RSS). Fields without one
   * (names, users, states, F) sort as the text shown, as do equal numbers.
   */
  key?: (p: ProcessInfo, ctx: CommandContext) => number;
}

const pad2 = (n: number) => String(n).padStart(2, '0');

function elapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const days = Math.floor(s / 86400);
  const hms = `${pad2(Math.floor((s % 86400) / 3600))}:${pad2(Math.floor((s % 3600) / 60))}:${pad2(s % 60)}`;
  return days > 0 ? `${days}-${hms}` : hms.replace(/^00:/, '');
}

const uidOf = (p: ProcessInfo) => p.uid ?? uidOfUser(p.user);
const zero = () => 0;
const started = (p: ProcessInfo, ctx: CommandContext) => startTicks(p, ctx.device.bootMs);

/** The fields of toybox's ps -o (widths from its table; PID and PPID as wide as pid_max). */
const FIELDS: Record<string, Field> = {
  PID: { width: 6, value: (p) => String(p.pid), key: (p) => p.pid },
  PPID: { width: 6, value: (p) => String(p.ppid), key: (p) => p.ppid },
  PGID: { width: 5, value: (p) => String(p.pgid ?? p.pid), key: (p) => p.pgid ?? p.pid },
  SID: { width: 5, value: (p) => String(p.sid ?? p.pid), key: (p) => p.sid ?? p.pid },
  PRI: { width: 3, value: () => '19', key: zero },
  NI: { width: 3, value: () => '0', key: zero },
  ADDR: { width: 12, value: () => '0', key: zero },
  SZ: { width: 5, value: (p) => String(Math.floor(p.vsz / 4)), key: (p) => p.vsz },
  RSS: { width: 6, value: (p) => String(p.rss), key: (p) => p.rss },
  VSZ: { width: 7, value: (p) => String(p.vsz), key: (p) => p.vsz },
  TTY: { width: -8, value: (p) => p.tty ?? '?' },
  WCHAN: { width: -6, value: (p) => (p.state === 'R' ? '0' : 'do_epoll_wait') },
  LABEL: { width: -30, value: (p) => (p.user === 'shell' ? 'u:r:shell:s0' : 'u:r:untrusted_app:s0') },
  COMM: { width: -27, value: (p) => exePath(p) },
  COMMAND: { width: -27, value: (p) => exePath(p) },
  NAME: { width: -27, value: (p) => p.name },
  CMDLINE: { width: -27, value: (p) => p.args },
  ARGS: { width: -27, value: (p) => p.args.replace(/^\S*\//, '') },
  // The thread's name (/proc/PID/task/TID/stat's second field): the main thread's is the process's.
  CMD: { width: -15, value: (p) => p.comm ?? commName(p.name) },
  UID: { width: 5, value: (p) => String(uidOf(p)), key: uidOf },
  USER: { width: -12, value: (p) => p.user },
  RUID: { width: 4, value: (p) => String(uidOf(p)), key: uidOf },
  RUSER: { width: -8, value: (p) => p.user },
  GID: { width: 8, value: (p) => String(uidOf(p)), key: uidOf },
  GROUP: { width: -8, value: (p) => p.user },
  TIME: { width: 8, value: () => '00:00:00', key: zero },
  ELAPSED: { width: 11, value: (p, ctx) => elapsed(ctx.device.now() - p.startedMs), key: started },
  STIME: {
    width: 5,
    value: (p) => {
      const d = new Date(p.startedMs);
      return `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}`;
    },
    key: started,
  },
  F: { width: 1, value: () => '0' },
  S: { width: -1, value: (p) => p.state ?? 'S' },
  STAT: { width: -5, value: (p) => `${p.state ?? 'S'}${p.sid === p.pid ? 's' : ''}` },
  PCY: { width: -3, value: () => 'fg' },
  C: { width: 1, value: () => '0', key: zero },
  '%CPU': { width: 4, value: () => '0.0', key: zero },
  '%MEM': { width: 5, value: () => '0.0', key: (p) => p.rss },
  // A process's main thread has its pid for a TID; the phone's processes have no other thread.
  TID: { width: 5, value: (p) => String(p.pid), key: (p) => p.pid },
  TCNT: { width: 4, value: (p) => String(threadIds(p).length), key: (p) => threadIds(p).length },
  // 64 from the ELF header of /proc/PID/exe, which only the process's own user may read ('-').
  BIT: {
    width: 3,
    value: (p, ctx) => (uidOf(p) === ctx.cred.uid ? '64' : '-'),
    key: (p, ctx) => (uidOf(p) === ctx.cred.uid ? 64 : 0),
  },
};

const ALIASES: Record<string, string> = {
  NICE: 'NI',
  ETIME: 'ELAPSED',
  PCPU: '%CPU',
  VSIZE: 'VSZ',
  UNAME: 'USER',
};

function exePath(p: ProcessInfo): string {
  if (p.ppid === 512) return '/system/bin/app_process64';
  const argv0 = p.argv?.[0] ?? p.args.split(' ')[0] ?? p.name;
  return argv0.startsWith('/') ? argv0 : `/system/bin/${basename(argv0)}`;
}

interface Column {
  title: string;
  width: number;
  field: Field;
  /** -k: 1 ascending, -1 descending (`-FIELD`). */
  reverse: number;
}

/**
 * Parses `-o PID,NAME=TITLE,ARGS:40` (or -k's `-RSS,+PID`) into columns, as toybox's
 * parse_ko; the offset in `spec` of the first unknown field (after its sign) when there is one.
 */
function parseColumns(spec: string): Column[] | { bad: string; at: number } {
  const columns: Column[] = [];
  let offset = 0;
  for (const item of spec.split(',')) {
    const at = offset;
    offset += item.length + 1;
    if (item === '') continue;
    const sign = item[0] === '-' || item[0] === '+' ? item[0] : '';
    const eq = item.indexOf('=');
    const head = (eq >= 0 ? item.slice(0, eq) : item).slice(sign.length);
    const [rawName, size] = head.split(':') as [string, string | undefined];
    const name = rawName.toUpperCase();
    const key = ALIASES[name] ?? name;
    const field = Object.hasOwn(FIELDS, key) ? FIELDS[key] : undefined;
    if (!field || (size !== undefined && !/^\d+$/.test(size))) return { bad: item, at: at + sign.length };
    let width = field.width;
    if (size !== undefined) width = field.width < 0 ? -Number(size) : Number(size);
    columns.push({ title: eq >= 0 ? item.slice(eq + 1) : key, width, field, reverse: sign === '-' ? -1 : 1 });
  }
  return columns;
}

/**
 * Lays out rows as toybox's show_ps does when its output is not a terminal (-w): one space
 * between fields, numbers right-justified, text left-justified and never cut, no padding
 * after the last field, and a field that overflows its width taken back from the slack of
 * the fields after it; no header when every title is empty (`-o pid=`). -M (`measure`)
 * widens each field to its longest value first, header included.
 */
function renderTable(columns: Column[], rows: string[][], measure: boolean): string {
  const widths = columns.map((c, i) => {
    if (!measure) return c.width;
    const longest = Math.max(0, ...rows.map((r) => r[i]!.length));
    return Math.abs(c.width) < longest ? (c.width < 0 ? -longest : longest) : c.width;
  });
  const padded = (text: string, width: number, size = Math.abs(width)) =>
    width < 0 ? text.padEnd(size) : text.padStart(size);
  const header = columns.map((c, i) => padded(c.title, widths[i]!)).join(' ');
  const line = (cells: string[]) => {
    let extra = 0;
    return cells
      .map((cell, i) => {
        const width = widths[i]!;
        let size = Math.abs(width);
        if (cell.length > size) {
          // Overflow: remember by how much, to take it back from later fields' slack.
          extra += cell.length - size;
          size = cell.length;
        } else if (extra > 0 && cell.length < size) {
          const unused = Math.min(size - cell.length, extra);
          size -= unused;
          extra -= unused;
        }
        return i === cells.length - 1 && width < 0 ? cell : padded(cell, width, size);
      })
      .join(' ');
  };
  const lines = [...(columns.some((c) => c.title !== '') ? [header] : []), ...rows.map(line)];
  return lines.length === 0 ? '' : lines.join('\n') + '\n';
}

/**
 * toybox's ksort: each -k field in turn, by its number when it has one, else (or when the
 * numbers are equal) by the text shown (strcmp), reversed for `-FIELD`.
 */
function sortProcesses(list: ProcessInfo[], keys: Column[], ctx: CommandContext): ProcessInfo[] {
  const compare = (a: ProcessInfo, b: ProcessInfo): number => {
    for (const k of keys) {
      let ret = 0;
      if (k.field.key) ret = Math.sign(k.field.key(a, ctx) - k.field.key(b, ctx));
      if (ret === 0) {
        const [x, y] = [k.field.value(a, ctx), k.field.value(b, ctx)];
        ret = x < y ? -1 : x > y ? 1 : 0;
      }
      if (ret !== 0) return ret * k.reverse;
    }
    return 0;
  };
  return [...list].sort(compare);
}

/**
 * The default fields toybox 0.8.9 builds on Android (ps_main), Android's widths: with -T,
 * TID after PID and the thread's name (CMD) in place of the process's (NAME).
 */
const androidDefault = (threads: boolean) =>
  `USER,PID,${threads ? 'TID,' : ''}PPID,VSIZE:10,RSS,WCHAN:10,ADDR:10,S,${threads ? 'CMD' : 'NAME'}`;

const PS_HELP = `usage: ps [-AadefLlnwZ] [-gG GROUP,] [-k FIELD,] [-o FIELD,] [-p PID,] [-t TTY,] [-uU USER,]

List processes.

Which processes to show (-gGuUpPt selections may be comma separated lists):

-A  All					-a  Has terminal not session leader
-d  All but session leaders		-e  Synonym for -A
-g  In GROUPs				-G  In real GROUPs (before sgid)
-p  PIDs (--pid)			-P  Parent PIDs (--ppid)
-s  In session IDs			-t  Attached to selected TTYs
-T  Show threads also			-u  Owned by selected USERs
-U  Real USERs (before suid)

Output modifiers:

-k  Sort FIELDs (-FIELD to reverse)	-M  Measure/pad future field widths
-n  Show numeric USER and GROUP		-w  Wide output (don't truncate fields)

Which FIELDs to show. (-o HELP for list, default = -o PID,TTY,TIME,CMD)

-f  Full listing (-o USER:12=UID,PID,PPID,C,STIME,TTY,TIME,ARGS=CMD)
-l  Long listing (-o F,S,UID,PID,PPID,C,PRI,NI,ADDR,SZ,WCHAN,TTY,TIME,CMD)
-o  Output FIELDs instead of defaults, each with optional :size and =title
-O  Add FIELDS to defaults
-Z  Include LABEL
`;

/** The terminal of the command's stdio (what toybox's tty_fd finds), or null. */
function ownTerminal(ctx: CommandContext): string | null {
  return ctx.stdin.terminal?.name ?? ctx.stdout.terminal?.name ?? ctx.stderr.terminal?.name ?? null;
}

/** A comma-separated list of numbers or user names, as ps and pgrep take them. */
function userIds(list: string): number[] {
  return list.split(',').map((u) => (/^\d+$/.test(u) ? Number(u) : uidOfUser(u)));
}

/** toybox's comma_args error: `ps: bad -k 'ARG'` and a caret under the bad field, status 1. */
function badList(ctx: CommandContext, option: string, arg: string, at: number): number {
  const err = `bad -${option}`;
  ctx.stderr.write(`ps: ${err} '${arg}'\n${'^'.padStart(5 + 'ps'.length + err.length + at)}\n`);
  return 1;
}

const ps: CommandFn = (ctx) => {
  if (ctx.args.includes('--help')) {
    ctx.stdout.write(PS_HELP);
    return 0;
  }
  const flags = new Set<string>();
  const selections: { key: keyof ProcessInfo | 'uidOf'; values: Set<string> }[] = [];
  const outputs: string[] = [];
  const extra: string[] = [];
  const sorts: string[] = [];
  const args = [...ctx.args];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith('--')) {
      const [long, value] = a.slice(2).split('=') as [string, string | undefined];
      if (long === 'pid' || long === 'ppid' || long === 'sort') {
        // Its value joined by `=` or the next argument, even one that starts with `-`.
        const v = value ?? args[++i];
        const short = long === 'pid' ? 'p' : long === 'ppid' ? 'P' : 'k';
        if (v === undefined) return usageError(ctx, `Missing argument to -${short}`);
        if (long === 'sort') sorts.push(v);
        else selections.push({ key: long === 'pid' ? 'pid' : 'ppid', values: new Set(v.split(',')) });
        continue;
      }
      return usageError(ctx, `Unknown option '${long}'`);
    }
    if (!a.startsWith('-') || a === '-') {
      // Extra arguments are extra -p PIDs.
      if (!/^\d+(,\d+)*$/.test(a)) {
        ctx.stderr.write(`ps: bad ${a}\n`);
        return 1;
      }
      selections.push({ key: 'pid', values: new Set(a.split(',')) });
      continue;
    }
    for (let j = 1; j < a.length; j++) {
      const f = a[j]!;
      if ('oOpPtsuUgGk'.includes(f)) {
        const value = j + 1 < a.length ? a.slice(j + 1) : args[++i];
        if (value === undefined) return usageError(ctx, `Missing argument to -${f}`);
        if (f === 'o') outputs.push(value);
        else if (f === 'O') extra.push(value);
        else if (f === 'k') sorts.push(value);
        else if (f === 'p') selections.push({ key: 'pid', values: new Set(value.split(',')) });
        else if (f === 'P') selections.push({ key: 'ppid', values: new Set(value.split(',')) });
        else if (f === 't') selections.push({ key: 'tty', values: new Set(value.split(',')) });
        else if (f === 's') selections.push({ key: 'sid', values: new Set(value.split(',')) });
        else if (f === 'g' || f === 'G') selections.push({ key: 'pgid', values: new Set(value.split(',')) });
        else if (f === 'u' || f === 'U')
          selections.push({ key: 'uidOf', values: new Set(userIds(value).map(String)) });
        break;
      }
      // toybox names the rest of the group from there (`-rss` is 'rss').
      if (!'AadeflMnwZT'.includes(f)) return usageError(ctx, `Unknown option '${a.slice(j)}'`);
      flags.add(f);
    }
  }
  // -k's fields are read (and refused) before anything is listed, each -k in turn.
  const keys: Column[] = [];
  for (const spec of sorts) {
    const parsed = parseColumns(spec);
    if (!Array.isArray(parsed)) return badList(ctx, 'k', spec, parsed.at);
    keys.push(...parsed);
  }
  const threads = flags.has('T');
  const tid = threads ? 'TID,' : '';
  let spec: string;
  if (outputs.length > 0) spec = outputs.join(',');
  else if (flags.has('f'))
    spec = `USER:12=UID,PID,${tid}PPID,${threads ? 'TCNT' : 'C'},STIME,TTY,TIME,ARGS=CMD`;
  else if (flags.has('l')) spec = `F,S,UID,PID,${tid}PPID,C,PRI,NI,BIT,SZ,WCHAN,TTY,TIME,CMD`;
  else spec = androidDefault(threads);
  if (extra.length > 0) spec = `${spec},${extra.join(',')}`;
  if (flags.has('Z')) spec = `LABEL,${spec}`;
  if (/^help$/i.test(spec)) {
    ctx.stdout.write(Object.keys(FIELDS).join(' ') + '\n');
    return 0;
  }
  const columns = parseColumns(spec);
  if (!Array.isArray(columns)) {
    ctx.stderr.write(`ps: bad -o ${columns.bad}\n`);
    return 1;
  }
  const all = flags.has('A') || flags.has('e');
  const tty = ownTerminal(ctx);
  let list = ctx.device.processes.list().filter((p) => {
    if (selections.length > 0)
      return selections.some(({ key, values }) =>
        values.has(String(key === 'uidOf' ? uidOf(p) : (p[key] ?? ''))),
      );
    if (all) return true;
    if (flags.has('d') || flags.has('a')) return p.sid !== p.pid && (!flags.has('a') || p.tty);
    // toybox's default: the processes on ps's own terminal (without one: those without one).
    return (p.tty ?? null) === tty;
  });
  // -T, or a TID or TCNT field: each process's threads (/proc/PID/task), the main one first.
  // The phone's processes have their main thread only, which is the process's own row.
  if (threads || columns.some((c) => c.field === FIELDS.TID || c.field === FIELDS.TCNT))
    list = list.flatMap((p) => threadIds(p).map(() => p));
  if (keys.length > 0) list = sortProcesses(list, keys, ctx);
  const numeric = flags.has('n');
  const rows = list.map((p) =>
    columns.map((c) => (numeric && c.field === FIELDS.USER ? String(uidOf(p)) : c.field.value(p, ctx))),
  );
  ctx.stdout.write(renderTable(columns, rows, flags.has('M')));
  // Nothing listed: status 1, as toybox's ps.
  return rows.length > 0 ? 0 : 1;
};

// ---------- pidof, pgrep, pkill ----------

const pidof: CommandFn = (ctx) => {
  let single = false;
  const omit = new Set<string>();
  const names: string[] = [];
  for (let i = 0; i < ctx.args.length; i++) {
    const a = ctx.args[i]!;
    if (a === '-s') single = true;
    else if (a === '-x') continue;
    else if (a === '-o') for (const o of (ctx.args[++i] ?? '').split(',')) omit.add(o);
    else if (a.startsWith('-o')) for (const o of a.slice(2).split(',')) omit.add(o);
    else names.push(a);
  }
  const pids: number[] = [];
  // /proc is read in pid order; a name matches the basename of argv[0].
  for (const p of ctx.device.processes.list()) {
    if (omit.has(String(p.pid))) continue;
    const argv0 = basename(p.argv?.[0] ?? p.args.split(' ')[0] ?? p.name);
    if (!names.some((n) => basename(n) === argv0)) continue;
    pids.push(p.pid);
    if (single) break;
  }
  if (pids.length === 0) return 1;
  ctx.stdout.write(`${pids.join(' ')}\n`);
  return 0;
};

interface Match {
  found: ProcessInfo[];
  long: boolean;
  full: boolean;
}

/** pgrep/pkill's selection: an extended regex on the command name (or -f line), and filters. */
function matchProcesses(ctx: CommandContext, args: string[], valueFlags: string): Match | number {
  const flags = new Set<string>();
  const values = new Map<string, string>();
  const patterns: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      patterns.push(...args.slice(i + 1));
      break;
    }
    if (!a.startsWith('-') || a === '-') {
      patterns.push(a);
      continue;
    }
    for (let j = 1; j < a.length; j++) {
      const f = a[j]!;
      if (valueFlags.includes(f)) {
        values.set(f, a.slice(j + 1) || args[++i] || '');
        break;
      }
      if (!'cflnovxV'.includes(f)) return usageError(ctx, `Unknown option '${f}'`);
      flags.add(f);
    }
  }
  const selectors = ['G', 'g', 'P', 's', 't', 'U', 'u'].filter((f) => values.has(f));
  if ((flags.has('x') || flags.has('f') || selectors.length === 0) && patterns.length === 0)
    return usageError(ctx, 'No PATTERN');
  let regexes: RegExp[];
  try {
    regexes = patterns.map((p) => new RegExp(flags.has('x') ? `^(?:${p})$` : p));
  } catch (error) {
    ctx.stderr.write(`${ctx.name}: bad regex '${patterns.join(' ')}': ${(error as Error).message}\n`);
    return 1;
  }
  const list = (key: string) => new Set((values.get(key) ?? '').split(','));
  let found = ctx.device.processes.list().filter((p) => {
    // Never match ourselves.
    if (p.pid === ctx.process.pid) return false;
    const text = flags.has('f') ? p.args : (p.comm ?? commName(p.name));
    const hit = regexes.length === 0 || regexes.some((r) => r.test(text));
    if (hit === flags.has('v')) return false;
    const uid = String(p.uid ?? uidOfUser(p.user));
    if (values.has('u') && !userIds(values.get('u')!).map(String).includes(uid)) return false;
    if (values.has('U') && !userIds(values.get('U')!).map(String).includes(uid)) return false;
    if (values.has('P') && !list('P').has(String(p.ppid))) return false;
    if (values.has('s') && !list('s').has(String(p.sid ?? p.pid))) return false;
    if (values.has('g') && !list('g').has(String(p.pgid ?? p.pid))) return false;
    if (values.has('t') && !list('t').has(p.tty ?? '')) return false;
    return true;
  });
  if (flags.has('n') || flags.has('o')) {
    const sorted = [...found].sort((a, b) => a.startedMs - b.startedMs || a.pid - b.pid);
    found = sorted.length === 0 ? [] : [flags.has('n') ? sorted[sorted.length - 1]! : sorted[0]!];
  }
  return { found, long: flags.has('l') || flags.has('V'), full: flags.has('f') };
}

const pgrep: CommandFn = (ctx) => {
  let signal: number | null = null;
  const args = ctx.args.filter((a, i) => !(a === '-L' || ctx.args[i - 1] === '-L'));
  const l = ctx.args.indexOf('-L');
  if (l >= 0) {
    signal = signalNumber(ctx.args[l + 1] ?? '');
    if (signal === null || signal < 1) return usageError(ctx, `bad -L '${ctx.args[l + 1] ?? ''}'`);
  }
  const d = args.indexOf('-d');
  const delimiter = d >= 0 ? (args[d + 1] ?? '\n') : '\n';
  const m = matchProcesses(
    ctx,
    args.filter((a, i) => !(a === '-d' || args[i - 1] === '-d')),
    'GgPstUu',
  );
  if (typeof m === 'number') return m;
  if (ctx.args.includes('-c')) {
    ctx.stdout.write(`${m.found.length}\n`);
    return m.found.length > 0 ? 0 : 1;
  }
  let status = m.found.length > 0 ? 0 : 1;
  const out: string[] = [];
  for (const p of m.found) {
    if (signal !== null && !sendSignal(ctx, p.pid, signal)) status = 1;
    if (signal === null)
      out.push(m.long ? `${p.pid} ${m.full ? p.args : (p.comm ?? commName(p.name))}` : `${p.pid}`);
  }
  if (out.length > 0)
    ctx.stdout.write(delimiter === '\n' ? `${out.join('\n')}\n` : `${out.join(delimiter)}\n`);
  return status;
};

/** pkill's kill of one match; reports a failure as toybox does (`TERM->PID: reason`). */
function sendSignal(ctx: CommandContext, pid: number, signal: number): boolean {
  const result = ctx.device.processes.signal(pid, signal, ctx.cred);
  if (result === 'ok') return true;
  ctx.stderr.write(`${ctx.name}: ${signalName(signal) ?? signal}->${pid}: ${signalError(result)}\n`);
  return false;
}

function signalError(result: Exclude<SignalResult, 'ok'>): string {
  if (result === 'no-such-process') return 'No such process';
  if (result === 'not-permitted') return 'Operation not permitted';
  return 'the virtual phone does not stop or continue processes';
}

const pkill: CommandFn = (ctx) => {
  const args = [...ctx.args];
  let signal = SIGTERM;
  const l = args.indexOf('-l');
  if (l >= 0) {
    const n = signalNumber(args[l + 1] ?? '');
    if (n === null || n < 1) return usageError(ctx, `bad -l '${args[l + 1] ?? ''}'`);
    signal = n;
    args.splice(l, 2);
  } else if (args[0] && /^-[A-Za-z0-9]{2,}$|^-\d$/.test(args[0]) && !/^-[cflnovxV]+$/.test(args[0])) {
    const n = signalNumber(args[0].slice(1));
    if (n === null || n < 1) return usageError(ctx, `bad -l '${args[0].slice(1)}'`);
    signal = n;
    args.shift();
  }
  const m = matchProcesses(ctx, args, 'GgPstUu');
  if (typeof m === 'number') return m;
  let status = m.found.length > 0 ? 0 : 1;
  for (const p of m.found) {
    if (!sendSignal(ctx, p.pid, signal)) status = 1;
    else if (args.includes('-V')) ctx.stdout.write(`${p.pid}\n`);
  }
  return status;
};

/**
 * killall [-l] [-q] [-SIGNAL|-s SIGNAL] PROCESS_NAME...: signals (TERM by default) every
 * process with one of the names (ps's name, or its 15-character comm).
 */
const killall: CommandFn = (ctx) => {
  const args = [...ctx.args];
  if (args[0] === '-l') {
    ctx.stdout.write(toyboxSignalList());
    return 0;
  }
  let signal = SIGTERM;
  let quiet = false;
  while (args[0]?.startsWith('-') && args[0] !== '--') {
    const a = args.shift()!;
    if (a === '-q') {
      quiet = true;
      continue;
    }
    const spec = a === '-s' ? args.shift() : a.slice(1);
    const n = spec === undefined ? null : signalNumber(spec);
    if (n === null) return usageError(ctx, `Unknown option '${a.slice(1)}'`);
    signal = n;
  }
  if (args[0] === '--') args.shift();
  if (args.length === 0) return usageError(ctx, 'Need 1 argument');
  let status = 0;
  for (const name of args) {
    const found = ctx.device.processes
      .list()
      .filter(
        (p) =>
          p.pid !== ctx.process.pid && (basename(p.name) === name || (p.comm ?? commName(p.name)) === name),
      );
    let killed = 0;
    for (const p of found) {
      if (sendSignal(ctx, p.pid, signal)) killed++;
      else status = 1;
    }
    if (found.length === 0) {
      if (!quiet) ctx.stderr.write(`killall: ${name}: no process killed\n`);
      status = 1;
    } else if (killed === 0) status = 1;
  }
  return status;
};

// ---------- kill (toybox, /system/bin/kill) ----------

/** toybox's list of signals: `N) SIGNAME` five to a line. */
function toyboxSignalList(): string {
  let out = '';
  SIGNALS.forEach((s, i) => {
    out += `${String(s.number).padStart(2)}) SIG${s.name.padEnd(9)}`;
    if ((i + 1) % 5 === 0) out += '\n';
  });
  return `${out}\n`;
}

/**
 * `/system/bin/kill` and `toybox kill`. A bare `kill` in adb shell is mksh's builtin
 * instead (see the interpreter), which words its messages differently.
 */
const kill: CommandFn = (ctx) => {
  const args = [...ctx.args];
  if (args[0] === '-l') {
    const names = args.slice(1);
    if (names.length === 0) {
      ctx.stdout.write(toyboxSignalList());
      return 0;
    }
    for (const n of names) {
      const num = signalNumber(n);
      if (/^\d/.test(n))
        ctx.stdout.write(`${num === null ? 'UNKNOWN' : (signalName(num & 127) ?? 'UNKNOWN')}\n`);
      else ctx.stdout.write(`${num ?? -1}\n`);
    }
    return 0;
  }
  let spec: string | null = null;
  if (args[0] === '-s') {
    spec = args[1] ?? null;
    args.splice(0, 2);
    if (spec === null) return usageError(ctx, 'Missing argument to -s');
  } else if (args[0]?.startsWith('-') && args[0] !== '--') spec = args.shift()!.slice(1);
  if (args[0] === '--') args.shift();
  let signal = SIGTERM;
  if (spec !== null) {
    const n = signalNumber(spec);
    if (n === null) {
      ctx.stderr.write(`kill: Unknown signal '${spec}'\n`);
      return 1;
    }
    signal = n;
  }
  if (args.length === 0) return usageError(ctx, 'missing argument');
  let status = 0;
  for (const arg of args) {
    const pid = Number(arg);
    const result: SignalResult = !/^-?\d+$/.test(arg)
      ? 'no-such-process'
      : pid < 0
        ? ctx.device.processes.signalGroup(-pid, signal, ctx.cred)
        : ctx.device.processes.signal(pid, signal, ctx.cred);
    if (result === 'ok') continue;
    ctx.stderr.write(`kill: bad pid '${arg}': ${signalError(result)}\n`);
    status = 1;
  }
  return status;
};

// ---------- timeout, nohup ----------

const timeout: CommandFn = async (ctx) => {
  const args = [...ctx.args];
  let signal = SIGTERM;
  let killAfter: number | null = null;
  let foreground = false;
  let preserve = false;
  while (args[0]?.startsWith('-') && args[0] !== '-') {
    const a = args.shift()!;
    if (a === '--') break;
    if (a === '--foreground') foreground = true;
    else if (a === '--preserve-status') preserve = true;
    else if (a === '-v' || a === '-i') continue;
    else if (a === '-s' || a === '--signal' || a.startsWith('-s') || a.startsWith('--signal=')) {
      const spec = a === '-s' || a === '--signal' ? args.shift() : a.replace(/^(-s|--signal=)/, '');
      const n = spec === undefined ? null : signalNumber(spec);
      if (n === null) {
        ctx.stderr.write(`timeout: bad -s: '${spec ?? ''}'\n`);
        return 125;
      }
      signal = n;
    } else if (a === '-k' || a.startsWith('-k')) {
      const spec = a === '-k' ? (args.shift() ?? '') : a.slice(2);
      const d = parseDuration(spec);
      if ('error' in d) {
        ctx.stderr.write(`timeout: ${d.error}\n`);
        return 125;
      }
      killAfter = d.ms;
    } else {
      ctx.stderr.write(`timeout: Unknown option '${a.replace(/^-+/, '')}' (see "timeout --help")\n`);
      return 125;
    }
  }
  if (args.length < 2) {
    ctx.stderr.write(`timeout: Need 2 arguments (see "timeout --help")\n`);
    return 125;
  }
  const d = parseDuration(args[0]!);
  if ('error' in d) {
    ctx.stderr.write(`timeout: ${d.error}\n`);
    return 125;
  }
  // The command runs as a child in a process group of its own (unless --foreground).
  const child = ctx.spawn(commandSource(args.slice(1)), ctx, { exec: true, newGroup: !foreground });
  let timedOut: number | null = null;
  const send = (s: number) => {
    timedOut = s;
    if (foreground) child.process.deliver(s);
    else ctx.device.processes.signalGroup(child.process.pid, s, ctx.cred);
  };
  const timers: NodeJS.Timeout[] = [];
  timers.push(
    setTimeout(() => {
      send(signal);
      if (killAfter !== null && signal !== SIGKILL) timers.push(setTimeout(() => send(SIGKILL), killAfter));
    }, d.ms),
  );
  try {
    const status = await child.done;
    if (timedOut === null || preserve) return status;
    return timedOut === SIGKILL ? 137 : 124;
  } finally {
    for (const t of timers) clearTimeout(t);
  }
};

/** nohup: the command ignores SIGHUP (and writes to nohup.out instead of a terminal). */
const nohup: CommandFn = (ctx) => {
  if (ctx.args.length === 0) return usageError(ctx, 'Need 1 argument');
  ctx.process.ignore(SIGHUP);
  let stdout = ctx.stdout;
  if (ctx.stdout.terminal) {
    const path = `${ctx.cwd === '/' ? '' : ctx.cwd}/nohup.out`;
    try {
      ctx.fs.writeFile(path, Buffer.alloc(0), { append: true });
      stdout = new FileOutput(ctx.fs, path);
    } catch {
      stdout = NULL_OUTPUT;
    }
  }
  const stdin = ctx.stdin.terminal ? { read: () => Promise.resolve(null) } : ctx.stdin;
  return ctx.runShell(commandSource(ctx.args), { stdin, stdout, stderr: ctx.stderr }, { exec: true });
};

// ---------- terminals ----------

const tty: CommandFn = (ctx) => {
  const terminal = ctx.stdin.terminal;
  if (!ctx.args.includes('-s')) ctx.stdout.write(terminal ? `/dev/${terminal.name}\n` : 'not a tty\n');
  return terminal ? 0 : 1;
};

const stty: CommandFn = (ctx) => {
  const terminal = ctx.stdin.terminal;
  if (!terminal) {
    ctx.stderr.write('stty: tcgetattr standard input: Not a typewriter\n');
    return 1;
  }
  const args = ctx.args;
  if (args.length === 0 || args[0] === '-a') {
    ctx.stdout.write(
      `speed 38400 baud; rows ${terminal.rows}; columns ${terminal.cols}; line = 0;\n` +
        `${terminal.echo ? '' : '-'}echo\n`,
    );
    return 0;
  }
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === 'size') ctx.stdout.write(`${terminal.rows} ${terminal.cols}\n`);
    else if (a === 'speed') ctx.stdout.write('38400\n');
    else if (a === 'echo' || a === '-echo') terminal.echo = a === 'echo';
    else if (a === 'rows' || a === 'cols' || a === 'columns') {
      const n = Number(args[++i]);
      if (!Number.isInteger(n) || n < 0 || n > 65535) {
        ctx.stderr.write(`stty: missing arg\n`);
        return 1;
      }
      if (a === 'rows') terminal.rows = n;
      else terminal.cols = n;
    } else if (a === 'sane' || a === 'cooked') terminal.echo = true;
    else if (a === 'raw') terminal.echo = false;
    else if (/^-?(icanon|isig|icrnl|onlcr|opost|ixon|echoe|echok|echonl|iexten|brkint|inpck|istrip)$/.test(a))
      continue;
    else {
      ctx.stderr.write(`stty: unknown option: ${a.replace(/^-/, '')}\n`);
      return 1;
    }
  }
  return 0;
};

/** MemTotal of /proc/meminfo, kB (what %MEM is a share of). */
function memTotalKb(ctx: CommandContext): number {
  const meminfo = ctx.device.fs.readFile('/proc/meminfo').toString('utf8');
  return Number(/^MemTotal:\s+(\d+)/m.exec(meminfo)?.[1] ?? 1);
}

/** toybox's human_readable_long(..., dgt, unit, HR_NODOT): at most `digits` digits, then a unit. */
function unitsOf(value: number, digits: number, unit: number): string {
  let n = Math.floor(value);
  let u = unit;
  while (String(n).length > digits) {
    n = Math.floor((n + 512) / 1024);
    u++;
  }
  return `${n}${u > 0 ? ' KMGTPEZY'[u] : ''}`;
}

/** The header lines of toybox top (tasks, memory, swap, CPUs), as its batch mode prints them. */
function topHeader(ctx: CommandContext, list: ProcessInfo[]): string[] {
  const count = (states: string) => list.filter((p) => states.includes(p.state ?? 'S')).length;
  const meminfo = ctx.device.fs.readFile('/proc/meminfo').toString('utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(meminfo)?.[1] ?? 0);
  // Kilobytes, or megabytes once the memory has eight digits of them (toybox's rule).
  const k = kb('MemTotal') >= 10_000_000 ? 1 : 0;
  const size = (n: number, digits: number) => unitsOf(n / 1024 ** k, digits, k + 1).padStart(10);
  const line = (label: string, total: number, free: number, last: number, lastName: string) =>
    ` ${label}:${size(total, 9)} total,${size(total - free, 8)} used,${size(free, 9)} free,${size(last, 9)} ${lastName}`;
  const cpus = CPUS.length;
  const percent = (name: string, value: number) => `${String(value).padStart(4)}%${name}`;
  return [
    `Tasks: ${list.length} total, ${String(count('R')).padStart(3)} running, ${String(count('SDI')).padStart(3)} sleeping, ${String(count('Tt')).padStart(3)} stopped, ${String(count('Z')).padStart(3)} zombie`,
    line(' Mem', kb('MemTotal'), kb('MemFree'), kb('Buffers'), 'buffers'),
    line('Swap', kb('SwapTotal'), kb('SwapFree'), kb('Cached'), 'cached'),
    `${cpus * 100}%cpu${['user', 'nice', 'sys'].map((n) => percent(n, 0)).join('')}${percent('idle', cpus * 100)}${['iow', 'irq', 'sirq', 'host'].map((n) => percent(n, 0)).join('')}`,
  ];
}

const TOP_TITLES = '  PID USER         PR  NI VIRT  RES  SHR S[%CPU] %MEM     TIME+ ARGS';

/** A process as top's default columns show it (PID USER PR NI VIRT RES SHR S %CPU %MEM TIME+ ARGS). */
function topRow(p: ProcessInfo, memTotal: number): string {
  return [
    String(p.pid).padStart(5),
    p.user.padEnd(12),
    '20',
    '0'.padStart(3),
    humanSize(p.vsz).padStart(4),
    humanSize(p.rss).padStart(4),
    // The virtual phone keeps no shared pages apart: three quarters of RES, as an app's are.
    humanSize(Math.floor((p.rss * 3) / 4)).padStart(4),
    (p.state ?? 'S').padEnd(1),
    '0.0'.padStart(4),
    ((p.rss / memTotal) * 100).toFixed(1).padStart(5),
    '0:00.00'.padStart(9),
    p.args.replace(/^\S*\//, ''),
  ].join(' ');
}

/** A size in KiB as top prints it: three digits at most, one decimal under ten (`4.1M`, `10G`). */
function humanSize(kb: number): string {
  const text = humanReadable(kb * 1024).replace(' ', '');
  return text.endsWith('B') ? text.slice(0, -1) : text;
}

/**
 * toybox top [-bq] [-n N] [-d SECONDS] [-m LINES] [-p PID,] [-u USER,]: the phone's
 * processes with the header toybox prints (tasks, memory from /proc/meminfo, CPUs), busiest
 * first, then the longest running (the virtual phone keeps no CPU time: every process shows
 * 0.0). -b prints plain lines; without it, as on a phone without a terminal, the screen's
 * escape sequences and 80 columns of 20 processes. -n ends after N screens (every -d).
 */
const top: CommandFn = async (ctx) => {
  const { flags, lists: values, operands } = getopt(ctx.args, 'kopusdmnO');
  for (const f of ['H', 'h', 'k', 'o', 's', 'O'])
    if (flags.has(f) || values.has(f)) return fail(ctx, `-${f}: not modeled by the virtual phone`);
  if (operands.length > 0) return usageError(ctx, `Max 0 arguments`);
  const number = (letter: string, fallback: number) => {
    const v = values.get(letter)?.at(-1);
    return v === undefined ? fallback : Number(v);
  };
  const iterations = number('n', Infinity);
  const delay = parseDuration(values.get('d')?.at(-1) ?? '3');
  if ('error' in delay) return fail(ctx, delay.error);
  const maxRows = number('m', Infinity);
  if (!(iterations >= 1) || !(maxRows >= 1)) return usageError(ctx, `-${iterations >= 1 ? 'm' : 'n'} < 1`);
  const pids = new Set((values.get('p') ?? []).flatMap((v) => v.split(',')));
  const users = new Set((values.get('u') ?? []).flatMap((v) => v.split(',')));
  const batch = flags.has('b');
  const memTotal = memTotalKb(ctx);
  if (!batch) ctx.stdout.write('\x1b[?25l');
  for (let i = 0; i < iterations; i++) {
    const list = ctx.device.processes
      .list()
      .filter((p) => (pids.size === 0 || pids.has(String(p.pid))) && (users.size === 0 || users.has(p.user)))
      // top itself is running (it is reading /proc as it draws).
      .map((p) => (p.pid === ctx.process.info.pid ? { ...p, state: 'R' } : p))
      // -%CPU (all alike here), then -ETIME (the longest running first), then -PID.
      .sort((a, b) => a.startedMs - b.startedMs || b.pid - a.pid);
    const header = flags.has('q') ? [] : [...topHeader(ctx, list), TOP_TITLES];
    if (batch) {
      const rows = list.slice(0, maxRows).map((p) => topRow(p, memTotal));
      ctx.stdout.write([...header, ...rows].join('\n') + '\n');
    } else {
      // A screen of 80 columns and 25 lines: the header lines, then as many processes as fit.
      const cut = (text: string) => (text.length > 80 ? `${text.slice(0, 79)}+` : text);
      const lines = header.map((h, k) =>
        k === header.length - 1 && !flags.has('q')
          ? `\x1b[7m${cut(h).padEnd(80)}\x1b[0m\r\n`
          : `${cut(h)}\r\n`,
      );
      const rows = list
        .slice(0, Math.min(maxRows, 25 - header.length))
        .map((p) =>
          p.state === 'R' ? `\x1b[1m${cut(topRow(p, memTotal))}\x1b[m` : cut(topRow(p, memTotal)),
        );
      ctx.stdout.write(`\x1b[H\x1b[J${lines.join('')}${rows.join('\n')}\r`);
    }
    if (i + 1 >= iterations) break;
    if (batch) ctx.stdout.write('\n\n');
    await abortableSleep(delay.ms, ctx.signal);
    if (ctx.signal.aborted) break;
  }
  if (!batch) ctx.stdout.write('\x1b[?25h\x1b[0m\x1b[999H\x1b[K');
  return 0;
};

export const PROCESS_COMMANDS: Record<string, CommandFn> = {
  sleep,
  ps,
  top,
  pidof,
  pgrep,
  pkill,
  killall,
  kill,
  timeout,
  nohup,
  tty,
  stty,
};
