/** `logcat`: dump (-d), clear (-c) or follow the phone's log buffer. */
import { binaryLogEntry, formatLogEntry } from '../../logcat.js';
import type { LogEntry, LogFormat } from '../../logcat.js';
import { resolvePath } from '../command.js';
import type { CommandFn } from '../command.js';
import { FileOutput } from '../io.js';
import type { Output } from '../io.js';

const PRIORITIES = ['V', 'D', 'I', 'W', 'E', 'F', 'S'];
const FORMATS = new Set<LogFormat>(['threadtime', 'brief', 'time', 'tag', 'process', 'raw', 'long']);
/** Entries a follower may lag behind by before the oldest are dropped (the ring buffer's size). */
const FOLLOW_QUEUE = 4000;

/**
 * -v format modifiers logcat accepts beside the format: the time's (year, epoch, monotonic,
 * usec, nsec, zone; the phone's clock is UTC already), uid and color are applied;
 * printable and descriptive change only binary and event logs, which the phone does not keep.
 */
const MODIFIERS = new Set([
  'color',
  'descriptive',
  'epoch',
  'monotonic',
  'printable',
  'uid',
  'usec',
  'UTC',
  'year',
  'zone',
  'nsec',
]);
const BUFFERS = new Set([
  'main',
  'system',
  'radio',
  'events',
  'crash',
  'default',
  'all',
  'kernel',
  'security',
  'stats',
]);

/** logcat's -t/-T time: `MM-DD hh:mm:ss.mmm` (this year) or `YYYY-MM-DD hh:mm:ss.mmm`, or epoch `s.ms`. */
function parseLogTime(text: string, now: number): number | null {
  const epoch = /^(\d+)\.(\d+)$/.exec(text);
  if (epoch) return Number(epoch[1]) * 1000 + Number(epoch[2]!.slice(0, 3).padEnd(3, '0'));
  const m = /^(?:(\d{4})-)?(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,3}))?$/.exec(text.trim());
  if (!m) return null;
  const year = m[1] ? Number(m[1]) : new Date(now).getUTCFullYear();
  return Date.UTC(
    year,
    Number(m[2]) - 1,
    Number(m[3]),
    Number(m[4]),
    Number(m[5]),
    Number(m[6]),
    Number((m[7] ?? '0').padEnd(3, '0')),
  );
}

interface Filter {
  tag: string;
  min: number;
}

function parseFilter(spec: string): Filter | null {
  const m = /^([^:]+)(?::([VDIWEFS*]))?$/i.exec(spec);
  if (!m) return null;
  const level = (m[2] ?? 'V').toUpperCase();
  return { tag: m[1]!, min: level === '*' ? 0 : PRIORITIES.indexOf(level) };
}

/** Options of Android 14's logcat whose output the virtual phone does not have. */
const UNMODELED_OPTIONS: Record<string, string> = {
  '-S': "logd's statistics are",
  '--statistics': "logd's statistics are",
  '-L': 'the log of the previous boot (pstore) is',
  '--last': 'the log of the previous boot (pstore) is',
  '-p': "logd's prune list is",
  '--prune': "logd's prune list is",
  '-P': "logd's prune list is",
  '-Q': "the emulator's log pipe is",
  '-h': 'its help is',
  '--help': 'its help is',
};

export const logcat: CommandFn = async (ctx) => {
  let dump = false;
  let clear = false;
  let format: LogFormat = 'threadtime';
  const modifiers = new Set<string>();
  let uids: Set<number> | null = null;
  let tail: number | null = null;
  let follow = true;
  let maxCount = Infinity;
  let regex: RegExp | null = null;
  let pid: number | null = null;
  let file: string | null = null;
  const filters: Filter[] = [];
  let silent = false;
  let binary = false;
  let from: number | null = null;
  const buffers = new Set<string>();
  const args = ctx.args;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    /** The option's name, without an `=value`. */
    const option = a.split('=')[0]!;
    const value = (): string => {
      const eq = a.indexOf('=');
      if (a.startsWith('--') && eq > 0) return a.slice(eq + 1);
      if (/^-[a-zA-Z]./.test(a) && !a.startsWith('--')) return a.slice(2);
      return args[++i] ?? '';
    };
    if (a === '-d') dump = true;
    else if (a === '-B' || a === '--binary') binary = true;
    else if (a === '-c') clear = true;
    else if (a === '-s') silent = true;
    else if (a.startsWith('-v') || a.startsWith('--format')) {
      for (const v of value().split(',')) {
        if (FORMATS.has(v as LogFormat)) format = v as LogFormat;
        else if (MODIFIERS.has(v)) modifiers.add(v);
        else {
          ctx.stderr.write(`logcat: Invalid parameter "${v}" to -v.\n`);
          return 1;
        }
      }
    } else if (a.startsWith('-b') || a.startsWith('--buffer')) {
      for (const b of value().split(',')) {
        if (!BUFFERS.has(b)) {
          ctx.stderr.write(`logcat: Unknown buffer '${b}' listed for -b.\n`);
          return 1;
        }
        buffers.add(b);
      }
    } else if (a.startsWith('-G') || a.startsWith('--buffer-size=')) {
      // Setting logd's buffer sizes (it followed the log instead).
      ctx.stderr.write('logcat: -G: setting the buffer size is not modeled by the virtual phone\n');
      return 1;
    } else if (/^-[nr]/.test(a) || /^--(rotate-kbytes|rotate-count|id)/.test(a)) value();
    else if (a === '--wrap' || a === '--print') continue;
    else if (a.startsWith('-t') || a.startsWith('-T')) {
      // A count of the latest lines, or the time to start from ('MM-DD hh:mm:ss.mmm').
      const v = value();
      if (/^\d+$/.test(v)) tail = Number(v);
      else {
        const since = parseLogTime(v, ctx.device.now());
        if (since === null) {
          ctx.stderr.write(`logcat: -${a[1]} "${v}" not in time format\n`);
          return 1;
        }
        from = since;
      }
      if (a[1] === 't') follow = false;
    } else if (a.startsWith('-m') || a.startsWith('--max-count')) maxCount = Number(value()) || Infinity;
    else if (a.startsWith('-e') || a.startsWith('--regex')) {
      try {
        regex = new RegExp(value());
      } catch {
        ctx.stderr.write('logcat: invalid regex\n');
        return 1;
      }
    } else if (a.startsWith('--pid')) pid = Number(value());
    else if (a.startsWith('--uid')) {
      // Numeric uids only, as logcat takes them (no names are looked up).
      const list = value().split(',');
      const bad = list.find((u) => !/^\d+$/.test(u));
      if (bad !== undefined) {
        ctx.stderr.write(`logcat: Unable to parse UID '${bad}'\n`);
        return 1;
      }
      uids = new Set(list.map(Number));
    } else if (a.startsWith('-f') || a.startsWith('--file')) file = value();
    else if (a === '-g' || a === '--buffer-size') {
      ctx.stdout.write(
        'main: ring buffer is 256 KiB (12 KiB consumed), max entry is 5120 B, max payload is 4068 B\nsystem: ring buffer is 256 KiB (4 KiB consumed), max entry is 5120 B, max payload is 4068 B\ncrash: ring buffer is 256 KiB (0 B consumed), max entry is 5120 B, max payload is 4068 B\n',
      );
      return 0;
    } else if (a === '-D' || a === '--dividers') continue;
    else if (option in UNMODELED_OPTIONS) {
      ctx.stderr.write(`logcat: ${option}: ${UNMODELED_OPTIONS[option]} not modeled by the virtual phone\n`);
      return 1;
    } else if (a.startsWith('-') && a !== '-') {
      ctx.stderr.write(`logcat: Unknown option '${a}'.\n`);
      return 1;
    } else {
      const f = parseFilter(a);
      if (f) filters.push(f);
    }
  }
  const buffer = ctx.device.logcat;
  if (clear) {
    // Only the buffers named (main, system and crash by default) are cleared; the phone's
    // lines are all in main.
    if (buffers.size === 0 || buffers.has('main') || buffers.has('all') || buffers.has('default'))
      buffer.clear();
    return 0;
  }
  if (silent) filters.push({ tag: '*', min: 6 });
  // The phone logs into one buffer, main; the others read as empty.
  if (buffers.size > 0 && ![...buffers].some((b) => ['main', 'default', 'all'].includes(b)))
    filters.push({ tag: '*', min: 7 });
  const passes = (e: LogEntry): boolean => {
    if (from !== null && e.timeMs < from) return false;
    if (pid !== null && e.pid !== pid) return false;
    if (uids !== null && (e.uid === undefined || !uids.has(e.uid))) return false;
    // Binary output writes every entry logd sends: tags, priorities and -e filter only text.
    if (binary) return true;
    if (regex && !regex.test(e.message)) return false;
    const rule = filters.find((f) => f.tag === e.tag) ?? filters.find((f) => f.tag === '*');
    if (rule && PRIORITIES.indexOf(e.priority) < rule.min) return false;
    return true;
  };
  // -f appends to a file (as logcat opens it with O_APPEND); a full disk ends the command.
  const out: Output = file ? new FileOutput(ctx.fs, resolvePath(ctx, file)) : ctx.stdout;
  const finish = (): number => {
    if (out instanceof FileOutput && out.error) {
      ctx.stderr.write(`logcat: write error: ${out.error.reason}\n`);
      return 1;
    }
    return 0;
  };
  const style = { modifiers, bootMs: ctx.device.bootMs };
  let backlog = buffer.snapshot().filter(passes);
  if (tail !== null) backlog = backlog.slice(-tail);
  const following = follow && !dump;
  // Entries wait here until the output can take them (flow control: a reader that stops
  // reading is not buffered for without limit). Like a logd reader that falls behind, a
  // follower that lags by more than the ring buffer loses the oldest entries.
  const pending: LogEntry[] = [...backlog];
  let wake: (() => void) | null = null;
  const unfollow = following
    ? buffer.follow((e) => {
        if (!passes(e)) return;
        pending.push(e);
        if (pending.length > FOLLOW_QUEUE) pending.shift();
        wake?.();
      })
    : () => undefined;
  const onAbort = () => wake?.();
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  try {
    if (backlog.length > 0 && !file && !binary) out.write('--------- beginning of main\n');
    let printed = 0;
    // Until the caller closes the stream or the reader of our pipe went away. Binary output
    // counts nothing, so -m does not end it (logcat counts lines in ProcessBuffer only).
    while (!ctx.signal.aborted && !out.closed && (binary || printed < maxCount)) {
      const e = pending.shift();
      if (!e) {
        if (!following) break;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        continue;
      }
      out.write(binary ? binaryLogEntry(e) : `${formatLogEntry(e, format, style)}\n`);
      printed++;
      await out.drain();
    }
  } finally {
    unfollow();
    ctx.signal.removeEventListener('abort', onAbort);
  }
  return finish();
};
