/** System applets: getprop, setprop, settings, id, date, which, sh, log, run-as, ... */
import { DEFAULT_IME } from '../../device.js';
import { APPIUM_IMES } from '../../appium-settings.js';
import { LOAD_AVERAGES } from '../../identity.js';
import { locksettings } from './locksettings.js';
import { appCredentials } from '../../fs.js';
import { SYSTEM_BIN } from '../../system-image.js';
import { isNamespace } from '../../settings.js';
import { SYSTEM_SERVICES, publishedServices } from '../../system-services.js';
import { KEYCODE } from '../../ui/types.js';
import { commandSource, fail, getopt, javaInt, quoteWord, resolvePath, shellException } from '../command.js';
import type { CommandFn } from '../command.js';
import { readAll } from '../io.js';
import { humanReadable } from './dd.js';
import { userName } from './format.js';

const getprop: CommandFn = (ctx) => {
  // -T (a property's type) and -Z (its SELinux context) come from property_contexts, which
  // the phone does not keep: say so rather than print the value as if it were one.
  const unmodeled = ctx.args.find((a) => a === '-T' || a === '-Z');
  if (unmodeled !== undefined)
    return fail(ctx, `${unmodeled}: property types and contexts are not modeled by the virtual phone`);
  const args = ctx.args;
  const props = ctx.device.props;
  if (args.length === 0) {
    for (const [k, v] of props.entries()) ctx.stdout.write(`[${k}]: [${v}]\n`);
    return 0;
  }
  ctx.stdout.write(`${props.get(args[0]!) ?? args[1] ?? ''}\n`);
  return 0;
};

/** Property families the shell user may set on Android 14 (debug_prop, log_tag_prop ...). */
const SHELL_PROPERTIES = ['debug.', 'persist.debug.', 'log.tag.', 'persist.log.tag'];

const setprop: CommandFn = (ctx) => {
  if (ctx.args.length !== 2) {
    ctx.stderr.write('usage: setprop NAME VALUE\n\nSets an Android system property.\n');
    return 1;
  }
  const [key, value] = ctx.args as [string, string];
  // SELinux lets the shell domain set only a few property families (debug, log tags);
  // init refuses the rest, as it does ro.* once set.
  const allowed = ctx.cred.uid === 0 || SHELL_PROPERTIES.some((prefix) => key.startsWith(prefix));
  const error = allowed
    ? ctx.device.props.set(key, value)
    : `Failed to set property '${key}' to '${value}'.\nSee dmesg for error reason.`;
  if (error) {
    ctx.stderr.write(`${error}\n`);
    return 1;
  }
  return 0;
};

const SETTINGS_USAGE = `usage:  settings [--user <USER_ID> | current] get namespace key
        settings [--user <USER_ID> | current] put namespace key value
        settings [--user <USER_ID> | current] delete namespace key
        settings [--user <USER_ID> | current] list namespace

'namespace' is one of {system, secure, global}, case-insensitive
`;

const inRange = (min: number, max: number) => (v: string) => {
  const n = javaInt(v);
  return n !== null && n >= min && n <= max;
};
const oneOf =
  (...values: string[]) =>
  (v: string) =>
    values.includes(v);

/**
 * SystemSettingsValidators (Android 14) for the system settings the phone models and tests
 * set: a value one refuses is never stored (SettingsProvider.validateSystemSettingValue).
 */
const SYSTEM_VALIDATORS: Record<string, (value: string) => boolean> = {
  screen_brightness_mode: oneOf('0', '1'),
  status_bar_show_battery_percent: oneOf('0', '1'),
  screen_off_timeout: inRange(0, 2 ** 31 - 1),
  accelerometer_rotation: oneOf('0', '1'),
  user_rotation: inRange(0, 3),
  show_touches: oneOf('0', '1'),
  pointer_location: oneOf('0', '1'),
  haptic_feedback_enabled: oneOf('0', '1'),
  sound_effects_enabled: oneOf('0', '1'),
  dim_screen: oneOf('0', '1'),
  time_12_24: oneOf('12', '24'),
};

/** SettingsProvider's refusal of a value (its IllegalArgumentException's message), or null. */
function invalidSetting(ns: string, key: string, value: string): string | null {
  return ns === 'system' && SYSTEM_VALIDATORS[key]?.(value) === false
    ? `Invalid value: ${value} for setting: ${key}`
    : null;
}

export const settings: CommandFn = (ctx) => {
  const args = [...ctx.args];
  // --user N and put's trailing [tag] [default] are accepted and ignored
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--user') args.splice(i--, 2);
    else if (args[i] === '--lineage' || args[i] === '--reset') args.splice(i--, 1);
  }
  const [verb, nsRaw, key, value] = args;
  const ns = (nsRaw ?? '').toLowerCase();
  if (!verb || !isNamespace(ns)) {
    ctx.stderr.write(`${verb && nsRaw ? `Invalid namespace '${nsRaw}'\n` : ''}${SETTINGS_USAGE}`);
    return 255;
  }
  const store = ctx.device.settings;
  switch (verb) {
    case 'get':
      if (key === undefined) break;
      ctx.stdout.write(`${store.get(ns, key) ?? 'null'}\n`);
      return 0;
    case 'put': {
      if (key === undefined || value === undefined) break;
      const invalid = invalidSetting(ns, key, value);
      if (invalid !== null) return shellException(ctx, 'put', 'java.lang.IllegalArgumentException', invalid);
      store.put(ns, key, value);
      return 0;
    }
    case 'delete':
      if (key === undefined) break;
      ctx.stdout.write(`Deleted ${store.delete(ns, key)} rows\n`);
      return 0;
    case 'list':
      for (const [k, v] of store.list(ns)) ctx.stdout.write(`${k}=${v}\n`);
      return 0;
    case 'reset':
      // Resetting to the defaults packages set (or clearing what they set) is not modeled.
      ctx.stderr.write('settings: reset is not modeled by the virtual phone; delete the keys you put\n');
      return 255;
  }
  ctx.stderr.write(SETTINGS_USAGE);
  return 255;
};

/** Group names `id` shows (Android's android_filesystem_config names). */
const GROUP_NAMES: Record<number, string> = {
  1004: 'input',
  1007: 'log',
  1011: 'adb',
  1015: 'sdcard_rw',
  1028: 'sdcard_r',
  1078: 'ext_data_rw',
  1079: 'ext_obb_rw',
  3001: 'net_bt_admin',
  3002: 'net_bt',
  3003: 'inet',
  3006: 'net_bw_stats',
  3009: 'readproc',
  3011: 'uhid',
  3012: 'readtracefs',
  9997: 'everybody',
};

function groupName(gid: number): string {
  if (gid >= 20000 && gid < 30000) return `${userName(gid - 10000)}_cache`;
  return GROUP_NAMES[gid] ?? userName(gid);
}

/** id: who the command runs as (the shell user, or an app under run-as). */
const id: CommandFn = (ctx) => {
  const { flags } = getopt(ctx.args);
  const { uid, gid, groups } = ctx.cred;
  const name = flags.has('n');
  if (flags.has('u')) ctx.stdout.write(`${name ? userName(uid) : uid}\n`);
  else if (flags.has('g')) ctx.stdout.write(`${name ? groupName(gid) : gid}\n`);
  else if (flags.has('G')) ctx.stdout.write(`${groups.map((g) => (name ? groupName(g) : g)).join(' ')}\n`);
  else {
    const context = uid === 2000 ? 'u:r:shell:s0' : 'u:r:untrusted_app:s0';
    ctx.stdout.write(
      `uid=${uid}(${userName(uid)}) gid=${gid}(${groupName(gid)}) groups=${groups.map((g) => `${g}(${groupName(g)})`).join(',')} context=${context}\n`,
    );
  }
  return 0;
};

const whoami: CommandFn = (ctx) => {
  ctx.stdout.write(`${userName(ctx.cred.uid)}\n`);
  return 0;
};

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** The ISO 8601 week-numbering year and week of a UTC date (%G, %V). */
function isoWeek(d: Date): { year: number; week: number } {
  // The week's Thursday decides its year.
  const day = (d.getUTCDay() + 6) % 7;
  const thursday = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - day + 3);
  const year = new Date(thursday).getUTCFullYear();
  return { year, week: Math.floor((thursday - Date.UTC(year, 0, 1)) / (7 * 86_400_000)) + 1 };
}

/**
 * toybox date's format on the phone (always UTC): strftime's conversions as bionic makes
 * them, with its flags (`-` no padding, `_` spaces, `0` zeros, `^` upper case), and toybox's
 * own %N (nanoseconds; `%3N` its first three digits, the milliseconds).
 */
export function strftime(format: string, ms: number): string {
  const d = new Date(ms);
  const dayOfYear = Math.floor((ms - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000);
  const hour12 = d.getUTCHours() % 12 || 12;
  // A number's digits and how strftime pads it (with zeros, or spaces for %e %k %l).
  const num = (n: number, width: number, pad: '0' | ' ' = '0') => ({ n, width, pad });
  type Part = string | { n: number; width: number; pad: '0' | ' ' };
  const part = (c: string): Part | null => {
    switch (c) {
      case 'Y':
        return String(d.getUTCFullYear());
      case 'C':
        return num(Math.floor(d.getUTCFullYear() / 100), 2);
      case 'y':
        return num(d.getUTCFullYear() % 100, 2);
      case 'G':
        return String(isoWeek(d).year);
      case 'g':
        return num(isoWeek(d).year % 100, 2);
      case 'm':
        return num(d.getUTCMonth() + 1, 2);
      case 'd':
        return num(d.getUTCDate(), 2);
      case 'e':
        return num(d.getUTCDate(), 2, ' ');
      case 'j':
        return num(dayOfYear + 1, 3);
      case 'H':
        return num(d.getUTCHours(), 2);
      case 'k':
        return num(d.getUTCHours(), 2, ' ');
      case 'I':
        return num(hour12, 2);
      case 'l':
        return num(hour12, 2, ' ');
      case 'M':
        return num(d.getUTCMinutes(), 2);
      case 'S':
        return num(d.getUTCSeconds(), 2);
      case 's':
        return String(Math.floor(ms / 1000));
      case 'u':
        return String(d.getUTCDay() || 7);
      case 'w':
        return String(d.getUTCDay());
      case 'U':
        return num(Math.floor((dayOfYear + 7 - d.getUTCDay()) / 7), 2);
      case 'W':
        return num(Math.floor((dayOfYear + 7 - ((d.getUTCDay() + 6) % 7)) / 7), 2);
      case 'V':
        return num(isoWeek(d).week, 2);
      case 'z':
        return '+0000';
      case 'Z':
        return 'UTC';
      case 'a':
        return DAYS[d.getUTCDay()]!.slice(0, 3);
      case 'A':
        return DAYS[d.getUTCDay()]!;
      case 'b':
      case 'h':
        return MONTHS[d.getUTCMonth()]!.slice(0, 3);
      case 'B':
        return MONTHS[d.getUTCMonth()]!;
      case 'p':
        return d.getUTCHours() < 12 ? 'AM' : 'PM';
      case 'P':
        return d.getUTCHours() < 12 ? 'am' : 'pm';
      case 'T':
      case 'X':
        return strftime('%H:%M:%S', ms);
      case 'R':
        return strftime('%H:%M', ms);
      case 'r':
        return strftime('%I:%M:%S %p', ms);
      case 'F':
        return strftime('%Y-%m-%d', ms);
      case 'D':
      case 'x':
        return strftime('%m/%d/%y', ms);
      case 'c':
        return strftime('%a %b %e %H:%M:%S %Y', ms);
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case '%':
        return '%';
      default:
        return null;
    }
  };
  return format.replace(
    /%([-_0^]?)(?:(\d)N|(:z)|([a-zA-Z%]))/g,
    (whole, flag: string, digits: string | undefined, colonZ: string | undefined, c: string | undefined) => {
      if (digits !== undefined || c === 'N') {
        // Nanoseconds: the clock's milliseconds, and as many digits as asked (1-9).
        const nanos = String(Math.floor(((ms % 1000) + 1000) % 1000) * 1e6).padStart(9, '0');
        return nanos.slice(0, digits === undefined || digits === '0' ? 9 : Number(digits));
      }
      if (colonZ !== undefined) return '+00:00';
      const value = part(c!);
      if (value === null) return whole;
      let text: string;
      if (typeof value === 'string') text = value;
      else {
        const digitsOf = String(value.n);
        const pad = flag === '_' ? ' ' : flag === '0' ? '0' : value.pad;
        text = flag === '-' ? digitsOf : digitsOf.padStart(value.width, pad);
      }
      return flag === '^' ? text.toUpperCase() : text;
    },
  );
}

/** `date -I[FMT]` / `--iso-8601[=FMT]`: the formats toybox takes, by the name's first letter. */
const ISO_FORMATS: Record<string, string> = {
  d: '%Y-%m-%d',
  h: '%Y-%m-%dT%H%:z',
  m: '%Y-%m-%dT%H:%M%:z',
  s: '%Y-%m-%dT%H:%M:%S%:z',
  n: '%Y-%m-%dT%H:%M:%S,%N%:z',
};

/** A date as toybox date -d takes it: @SECONDS, or YYYY-MM-DD [hh:mm[:ss]] (the phone is UTC). */
function parseDate(text: string): number | null {
  const epoch = /^@(-?\d+(?:\.\d+)?)$/.exec(text);
  if (epoch) return Math.round(Number(epoch[1]) * 1000);
  const m = /^(\d{4})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d)(?::(\d\d))?)?$/.exec(text.trim());
  if (!m) return null;
  return Date.UTC(
    Number(m[1]),
    Number(m[2]) - 1,
    Number(m[3]),
    Number(m[4] ?? 0),
    Number(m[5] ?? 0),
    Number(m[6] ?? 0),
  );
}

/** toybox date: +FORMAT, -u, -d DATE, -r FILE; setting the clock needs root. */
const date: CommandFn = (ctx) => {
  let when = ctx.device.now();
  let format = '%a %b %e %H:%M:%S %Z %Y';
  for (let i = 0; i < ctx.args.length; i++) {
    const a = ctx.args[i]!;
    if (a.startsWith('+')) format = a.slice(1);
    else if (a === '-u' || a === '--utc') continue;
    else if (a.startsWith('-I') || a === '--iso-8601' || a.startsWith('--iso-8601=')) {
      const name = a.startsWith('-I') ? a.slice(2) : a.slice('--iso-8601='.length);
      const iso = ISO_FORMATS[name === '' ? 'd' : name[0]!];
      if (!iso) {
        ctx.stderr.write(`date: bad -I: ${name} (see "date --help")\n`);
        return 1;
      }
      format = iso;
    } else if (a === '-d' || a.startsWith('-d') || a.startsWith('--date=')) {
      const text = a === '-d' ? (ctx.args[++i] ?? '') : a.replace(/^(-d|--date=)/, '');
      const parsed = parseDate(text);
      if (parsed === null) {
        ctx.stderr.write(`date: bad date '${text}'\n`);
        return 1;
      }
      when = parsed;
    } else if (a === '-r') {
      try {
        when = ctx.fs.stat(resolvePath(ctx, ctx.args[++i] ?? '')).mtimeMs;
      } catch {
        ctx.stderr.write(`date: ${ctx.args[i] ?? ''}: No such file or directory\n`);
        return 1;
      }
    } else if (/^\d{8,12}(\.\d\d)?$/.test(a)) {
      ctx.stderr.write('date: cannot set date: Operation not permitted\n');
      return 1;
    } else {
      ctx.stderr.write(`date: bad date '${a}'\n`);
      return 1;
    }
  }
  ctx.stdout.write(`${strftime(format, when)}\n`);
  return 0;
};

const uname: CommandFn = (ctx) => {
  const { flags } = getopt(ctx.args);
  const parts: string[] = [];
  const all = flags.has('a');
  if (all || flags.has('s') || flags.size === 0) parts.push('Linux');
  if (all || flags.has('n')) parts.push('localhost');
  if (all || flags.has('r')) parts.push('5.15.110-android14-11');
  if (all || flags.has('v')) parts.push('#1 SMP PREEMPT Mon Jan 1 00:00:00 UTC 2024');
  if (all || flags.has('m')) parts.push('aarch64');
  if (all || flags.has('o')) parts.push('Toybox');
  ctx.stdout.write(`${parts.join(' ')}\n`);
  return 0;
};

const hostname: CommandFn = (ctx) => {
  ctx.stdout.write('localhost\n');
  return 0;
};

/** toybox uptime: the time, how long since boot (days, then H:MM, or minutes), users, load. */
const uptime: CommandFn = (ctx) => {
  const now = ctx.device.now();
  const minutes = Math.floor(Math.max(0, now - ctx.device.bootMs) / 60_000);
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const since =
    (days > 0 ? `${days} day${days !== 1 ? 's' : ''}, ` : '') +
    (hours > 0
      ? `${String(hours).padStart(2)}:${String(minutes % 60).padStart(2, '0')}, `
      : `${minutes % 60} min, `);
  ctx.stdout.write(
    ` ${strftime('%T', now)} up ${since} 0 users,  load average: ${LOAD_AVERAGES.join(', ')}\n`,
  );
  return 0;
};

/**
 * toybox free [-bkmgh]: memory and swap from /proc/meminfo (the kernel's sysinfo), in bytes
 * (-k -m -g: KiB, MiB, GiB; -h: toybox's human-readable sizes), in toybox 0.8.9's table.
 */
const free: CommandFn = (ctx) => {
  const { operands } = getopt(ctx.args);
  // In the order given: toybox names the later of two units as the one refused.
  const units = [...new Set(ctx.args.filter((a) => !operands.includes(a)).flatMap((a) => [...a.slice(1)]))];
  if (units.length > 1) return fail(ctx, `No '${units[1]}' with '${units[0]}' (see "free --help")`);
  const meminfo = ctx.device.fs.readFile('/proc/meminfo').toString('utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(meminfo)?.[1] ?? 0);
  const [total, freeRam, shared, buffers, swapTotal, swapFree] = [
    'MemTotal',
    'MemFree',
    'Shmem',
    'Buffers',
    'SwapTotal',
    'SwapFree',
  ].map((field) => kb(field) * 1024) as [number, number, number, number, number, number];
  const shift = { b: 0, k: 10, m: 20, g: 30 }[units[0] as 'b' | 'k' | 'm' | 'g'] ?? 0;
  const show = (bytes: number) =>
    units[0] === 'h'
      ? humanReadable(bytes).replace(' ', '').replace(/B$/, '')
      : String(Math.floor(bytes / 2 ** shift));
  const col = (bytes: number, width: number) => show(bytes).padStart(width);
  ctx.stdout.write(
    '\t\ttotal        used        free      shared     buffers\n' +
      `Mem:${col(total, 17)}${col(total - freeRam, 12)}${col(freeRam, 12)}${col(shared, 12)}${col(buffers, 12)}\n` +
      `-/+ buffers/cache:${col(total - freeRam - buffers, 15)}${col(freeRam + buffers, 12)}\n` +
      `Swap:${col(swapTotal, 16)}${col(swapTotal - swapFree, 12)}${col(swapFree, 12)}\n`,
  );
  return 0;
};

/** toybox env [-i] [-u NAME] [NAME=VALUE...] [COMMAND...]: prints the environment, or runs COMMAND in it. */
const env: CommandFn = async (ctx) => {
  const vars = new Map(ctx.env);
  let i = 0;
  for (; i < ctx.args.length; i++) {
    const a = ctx.args[i]!;
    if (a === '-i' || a === '-') vars.clear();
    else if (a === '-u') {
      const name = ctx.args[++i];
      if (name === undefined) return fail(ctx, 'Missing argument to -u (see "env --help")', 125);
      vars.delete(name);
    } else if (/^-./.test(a)) return fail(ctx, `Unknown option '${a.slice(1)}' (see "env --help")`, 125);
    else if (/^[^=]+=/.test(a)) vars.set(a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1));
    else break;
  }
  const rest = ctx.args.slice(i);
  if (rest.length === 0) {
    for (const [k, v] of vars) ctx.stdout.write(`${k}=${v}\n`);
    return 0;
  }
  return ctx.runShell(rest.map(quoteWord).join(' '), ctx, { env: vars });
};

/** toybox printenv [-0] [NAME...]: the environment, or the values of NAMEs (status 1 if one is unset). */
const printenv: CommandFn = (ctx) => {
  const zero = ctx.args[0] === '-0';
  const names = zero ? ctx.args.slice(1) : ctx.args;
  const end = zero ? '\0' : '\n';
  if (names.length === 0) {
    for (const [k, v] of ctx.env) ctx.stdout.write(`${k}=${v}${end}`);
    return 0;
  }
  let status = 0;
  for (const name of names) {
    const value = ctx.env.get(name);
    if (value === undefined) status = 1;
    else ctx.stdout.write(`${value}${end}`);
  }
  return status;
};

const sh: CommandFn = async (ctx) => {
  const args = [...ctx.args];
  // -e, -u and -x are set options, on from the first line (set on that line, so line
  // numbers stay the script's); -v and -i are not modeled and read as nothing.
  let set = '';
  while (args[0] && /^-[exuvi]+$/.test(args[0])) set += args.shift()!.slice(1).replace(/[vi]/g, '');
  const withOptions = (source: string) => (set ? `set -${set}; ${source}` : source);
  if (args[0] === '-c') {
    const source = args[1];
    if (source === undefined) return fail(ctx, '-c: option requires an argument', 2);
    return ctx.runShell(withOptions(source), ctx, { args: args.slice(3) });
  }
  if (args.length > 0) {
    const path = resolvePath(ctx, args[0]!);
    let text: string;
    try {
      text = ctx.fs.readFile(path).toString('utf8');
    } catch {
      ctx.stderr.write(`/system/bin/sh: ${args[0]}: No such file or directory\n`);
      return 127;
    }
    return ctx.runShell(withOptions(text), ctx, { args: args.slice(1) });
  }
  const script = (await readAll(ctx.stdin)).toString('utf8');
  return ctx.runShell(script, { ...ctx, stdin: { read: () => Promise.resolve(null) } });
};

/** which: the programs that are on the phone's /system/bin (whether it models them or not). */
const which: CommandFn = (ctx) => {
  let status = 0;
  for (const a of ctx.args.filter((x) => !x.startsWith('-'))) {
    if (SYSTEM_BIN.includes(a)) ctx.stdout.write(`/system/bin/${a}\n`);
    else status = 1;
  }
  return status;
};

const log: CommandFn = async (ctx) => {
  const { values, operands } = getopt(ctx.args, 'tpb');
  const priority = (values.get('p') ?? 'i').toUpperCase().slice(0, 1);
  const message =
    operands.length > 0 ? operands.join(' ') : (await readAll(ctx.stdin)).toString('utf8').trimEnd();
  const p = ['V', 'D', 'I', 'W', 'E', 'F'].includes(priority)
    ? (priority as 'V' | 'D' | 'I' | 'W' | 'E' | 'F')
    : 'I';
  ctx.device.logcat.add({
    pid: ctx.process.pid,
    tid: ctx.process.pid,
    priority: p,
    tag: values.get('t') ?? 'log',
    message,
  });
  return 0;
};

/**
 * stay_on_while_plugged_in's bits for `svc power stayon` (BatteryManager's plug types); a
 * Map, so that only these five words are values (not `toString` or `__proto__`).
 */
const STAY_ON = new Map([
  ['false', '0'],
  ['true', '7'],
  ['ac', '1'],
  ['usb', '2'],
  ['wireless', '4'],
]);

/**
 * The usage the svc script prints (on stdout, status 1) for `wifi`, `data` and `bluetooth`
 * without enable or disable: Android 14 hands those three to `cmd` before svc.jar runs.
 */
const SVC_SCRIPT_USAGE: Record<'wifi' | 'data' | 'bluetooth', string> = {
  wifi: 'Control the Wi-Fi manager\n\nusage: svc wifi [enable|disable]\n         Turn Wi-Fi on or off.\n\n',
  data: 'Enable/Disable Mobile Data Connectivity\n\nusage: svc data [enable|disable]\n\n',
  bluetooth:
    'Control the Bluetooth manager\n\nusage: svc bluetooth [enable|disable]\n         Turn Bluetooth on or off.\n\n',
};

/** svc.jar's commands (Android 14's Svc.COMMANDS), with their short and long help. */
const SVC_COMMANDS: [name: string, short: string, long: string][] = [
  ['help', 'Show information about the subcommands', ''],
  [
    'power',
    'Control the power manager',
    "usage: svc power stayon [true|false|usb|ac|wireless]\n         Set the 'keep awake while plugged in' setting.\n       svc power reboot [reason]\n         Perform a runtime shutdown and reboot device with specified reason.\n       svc power shutdown\n         Perform a runtime shutdown and power off the device.\n",
  ],
  [
    'usb',
    'Control Usb state',
    "usage: svc usb setFunctions [function]\n         Set the current usb function. If function is blank, sets to charging.\n       svc usb setScreenUnlockedFunctions [function]\n         Sets the functions which, if the device was charging,\n         become current on screen unlock.\n         If function is blank, turn off this feature.\n       svc usb getFunctions\n         Gets the list of currently enabled functions\n         possible values of [function] are any of 'mtp', 'ptp', 'rndis',\n         'midi', 'ncm (if supporting gadget hal v1.2)'\n       svc usb resetUsbGadget\n         Reset usb gadget\n       svc usb getUsbSpeed\n         Gets current USB speed\n         possible values of USB speed are any of 'low speed', 'full speed',\n         'high speed', 'super speed', 'super speed (10G)',\n         'super speed (20G)', or higher (future extension)\n       svc usb getGadgetHalVersion\n         Gets current Gadget Hal Version\n         possible values of Hal version are any of 'unknown', 'V1_0', 'V1_1',\n         'V1_2'\n       svc usb getUsbHalVersion\n         Gets current USB Hal Version\n         possible values of Hal version are any of 'unknown', 'V1_0', 'V1_1',\n         'V1_2', 'V1_3'\n       svc usb resetUsbPort [port number]\n         Reset the specified connected usb port\n         default: the first connected usb port\n",
  ],
  ['nfc', 'Control NFC functions', 'usage: svc nfc [enable|disable]\n         Turn NFC on or off.\n\n'],
  [
    'system-server',
    'System server process related command',
    'usage: system-server wait-for-crash\n         Wait until the system server process crashes.\n\n',
  ],
];

/** The verbs of svc.jar's commands that the virtual phone does not model (they say so). */
const SVC_UNMODELED: Record<string, string[]> = {
  power: ['reboot', 'shutdown'],
  usb: [
    'setFunctions',
    'setScreenUnlockedFunctions',
    'getFunctions',
    'resetUsbGadget',
    'getUsbSpeed',
    'getGadgetHalVersion',
    'getUsbHalVersion',
    'resetUsbPort',
  ],
  nfc: ['enable', 'disable'],
  'system-server': ['wait-for-crash'],
};

/** A command's long help, as Svc.Command.longHelp(); `help` has only its short one. */
function svcLongHelp(name: string): string | undefined {
  const command = SVC_COMMANDS.find(([n]) => n === name);
  if (!command) return undefined;
  const [, short, long] = command;
  return long ? `${short}\n\n${long}` : short;
}

/** Svc's `Available commands:` list: names padded to the longest, as its `%-Ns` format does. */
function svcCommandList(): string {
  const width = Math.max(...SVC_COMMANDS.map(([n]) => n.length));
  return `Available commands:\n${SVC_COMMANDS.map(([n, short]) => `    ${n.padEnd(width)}    ${short}\n`).join('')}`;
}

/**
 * `svc`, as Android 14's: a script that hands `wifi`, `data` and `bluetooth` to `cmd` (their
 * usage on stdout, status 1), then svc.jar for the rest, which prints its help on stderr and
 * exits 0 whatever went wrong: the command list for no or an unknown command, a command's
 * long help for a verb it does not take (PowerCommand's for a stayon value not among
 * true|false|usb|ac|wireless).
 */
const svc: CommandFn = (ctx) => {
  const [service, action, value] = ctx.args;
  const onOff = action === 'enable' || action === 'disable';
  const on = action === 'enable';
  switch (service) {
    case 'wifi':
    case 'data':
    case 'bluetooth':
      if (!onOff) {
        ctx.stdout.write(SVC_SCRIPT_USAGE[service]);
        return 1;
      }
      if (service === 'wifi') ctx.device.setWifi(on);
      else if (service === 'data') ctx.device.setMobileData(on);
      else ctx.device.settings.put('global', 'bluetooth_on', on ? '1' : '0');
      return 0;
  }
  const longHelp = (name: string) => {
    ctx.stderr.write(`${svcLongHelp(name)}\n`);
    return 0;
  };
  if (service === undefined || svcLongHelp(service) === undefined) {
    ctx.stderr.write(svcCommandList());
    return 0;
  }
  if (service === 'help') {
    if (ctx.args.length === 2 && svcLongHelp(action!) !== undefined) return longHelp(action!);
    ctx.stderr.write(svcCommandList());
    return 0;
  }
  if (service === 'power' && action === 'stayon' && ctx.args.length === 3) {
    const bits = STAY_ON.get(value!);
    if (bits === undefined) return longHelp(service);
    // PowerCommand wakes the screen for any setting but false, so that it can stay on.
    if (bits !== '0' && ctx.device.hasUi) ctx.device.ui.key(KEYCODE.WAKEUP);
    ctx.device.settings.put('global', 'stay_on_while_plugged_in', bits);
    return 0;
  }
  if (action !== undefined && SVC_UNMODELED[service]?.includes(action))
    return fail(
      ctx,
      service === 'power'
        ? `power ${action}: not modeled by the virtual phone (it does not restart; end the session and lease a new phone)`
        : `${ctx.args.join(' ')}: not modeled by the virtual phone`,
    );
  return longHelp(service);
};

const runAs: CommandFn = async (ctx) => {
  const args = ctx.args.filter((a) => !a.startsWith('--user'));
  const pkgName = args[0];
  if (!pkgName) return fail(ctx, 'usage: run-as <package-name> [--user <uid>] <command> [<args>]');
  const pkg = ctx.device.packages.get(pkgName);
  if (!pkg) return fail(ctx, `unknown package: ${pkgName}`);
  if (!pkg.debuggable) return fail(ctx, `package not debuggable: ${pkgName}`);
  const command = args.slice(1);
  // run-as execs the command (a shell without one) as the app, in its data directory.
  return ctx.runShell(command.length > 0 ? commandSource(command) : 'sh', ctx, {
    cwd: `/data/data/${pkgName}`,
    cred: appCredentials(pkg.uid),
    exec: true,
  });
};

const service: CommandFn = (ctx) => {
  const [verb, name] = ctx.args;
  const names = publishedServices(ctx.device.system);
  if (verb === 'list') {
    ctx.stdout.write(`Found ${names.length} services:\n`);
    names.forEach((s, i) => {
      const iface = SYSTEM_SERVICES.find((x) => x.name === s)?.iface ?? '';
      ctx.stdout.write(`${i}\t${s}: [${iface}]\n`);
    });
    return 0;
  }
  if (verb === 'check' && name !== undefined) {
    ctx.stdout.write(`Service ${name}: ${names.includes(name) ? 'found' : 'not found'}\n`);
    return 0;
  }
  if (verb === 'call') {
    ctx.stderr.write(
      'service: the virtual phone does not model raw binder transactions; use the cmd, am, pm, settings or input commands instead\n',
    );
    return 1;
  }
  ctx.stderr.write(
    'Usage: service [-h|-?]\n       service list\n       service check SERVICE\n       service call SERVICE CODE [i32 N | i64 N | f N | d N | s16 STR | null | fd f | nfd n | afd f ] ...\n',
  );
  return verb === '-h' || verb === '-?' ? 0 : 1;
};

/** `--where "name='x'"` as the settings provider takes it: the name, or null for anything else. */
function whereName(where: string | undefined): string | null | undefined {
  if (where === undefined) return undefined;
  const m = /^\s*name\s*=\s*'([^']*)'\s*$/.exec(where) ?? /^\s*name\s*=\s*"([^"]*)"\s*$/.exec(where);
  return m ? m[1]! : null;
}

/**
 * Content providers a phone has whose data the virtual phone does not model (they answer
 * "not modeled"); any other authority is a provider the phone does not have.
 */
const UNMODELED_PROVIDERS = new Set([
  'media',
  'downloads',
  'contacts',
  'com.android.contacts',
  'call_log',
  'sms',
  'mms',
  'mms-sms',
  'telephony',
  'icc',
  'user_dictionary',
  'com.android.calendar',
  'com.android.blockednumber',
  'com.android.voicemail',
  'com.android.externalstorage.documents',
  'com.android.providers.media.documents',
  'com.android.providers.downloads.documents',
]);

/** What each of Android 14's `content` operations accepts (besides --uri and --user). */
const CONTENT_ARGUMENTS: Record<string, string[]> = {
  insert: ['--bind', '--extra'],
  delete: ['--where', '--bind', '--extra'],
  update: ['--where', '--bind', '--extra'],
  query: ['--where', '--projection', '--sort'],
  call: ['--method', '--arg', '--extra'],
  read: [],
  write: [],
  gettype: [],
};

/**
 * `content`, as Android's (a Java program that reports everything and exits 0): a usage
 * mistake prints the usage and `[ERROR] ...` on stdout; a provider the phone does not have
 * prints `Error while accessing provider:NAME` and the exception on stderr. The settings
 * provider (content://settings/system|secure|global) answers query, insert, update and
 * delete, which read and write what `settings` does; other providers of a phone, and the
 * other operations, are not modeled and say so (status 1).
 */
const content: CommandFn = (ctx) => {
  const [verb, ...rest] = ctx.args;
  const usageError = (message: string) => {
    ctx.stdout.write(
      'usage: adb shell content [subcommand] [options]\n\nusage: adb shell content insert --uri <URI> [--user <USER_ID>] --bind <BINDING> [--bind <BINDING>...] [--extra <BINDING>...]\n\n',
    );
    ctx.stdout.write(`[ERROR] ${message}\n`);
    return 0;
  };
  if (verb === undefined || !Object.hasOwn(CONTENT_ARGUMENTS, verb))
    return usageError(`Unsupported operation: ${verb ?? 'null'}`);
  const accepted = ['--uri', '--user', ...CONTENT_ARGUMENTS[verb]!];
  const options = new Map<string, string[]>();
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (!accepted.includes(a)) return usageError(`Unsupported argument: ${a}`);
    const value = rest[++i];
    if (a === '--bind' || a === '--extra') {
      if (!value || value.indexOf(':', value.indexOf(':') + 1) < 0)
        return usageError(`Binding not well formed: ${value ?? 'null'}`);
    } else if (!value || value.startsWith('--')) return usageError(`No value for argument: ${a}`);
    options.set(a, [...(options.get(a) ?? []), value]);
  }
  const uri = options.get('--uri')?.[0];
  if (uri === undefined)
    return usageError('Content provider URI not specified. Did you specify --uri argument?');
  if ((verb === 'insert' || verb === 'update') && !options.has('--bind') && !options.has('--extra'))
    return usageError('Bindings not specified. Did you specify --bind argument(s)?');
  if (verb === 'call' && !options.has('--method'))
    return usageError('Content provider method not specified.');
  const authority = /^content:\/\/([^/?#]*)/.exec(uri)?.[1] ?? '';
  const m = /^content:\/\/settings\/(system|secure|global)\/?$/.exec(uri);
  if (authority !== 'settings' && !UNMODELED_PROVIDERS.has(authority)) {
    ctx.stderr.write(
      `Error while accessing provider:${authority}\njava.lang.IllegalStateException: Could not find provider: ${authority}\n`,
    );
    return 0;
  }
  if (!m || !['query', 'insert', 'update', 'delete'].includes(verb)) {
    ctx.stderr.write(
      `content: the virtual phone models query, insert, update and delete on content://settings/{system,secure,global} only, not ${verb} on ${uri}\n`,
    );
    return 1;
  }
  const ns = m[1] as 'system' | 'secure' | 'global';
  const store = ctx.device.settings;
  // The provider's validation refuses the value; content reports the exception, status 0.
  const refusedValue = (table: string, key: string, value: string): boolean => {
    const invalid = invalidSetting(table, key, value);
    if (invalid !== null)
      ctx.stderr.write(
        `Error while accessing provider:settings\njava.lang.IllegalArgumentException: ${invalid}\n`,
      );
    return invalid !== null;
  };
  const binds = new Map<string, string>();
  for (const b of options.get('--bind') ?? []) {
    const bind = /^([^:]+):[a-z]:(.*)$/.exec(b);
    if (bind) binds.set(bind[1]!, bind[2]!);
  }
  const name = whereName(options.get('--where')?.[0]);
  if (name === null) {
    ctx.stderr.write("content: the virtual phone's settings provider takes --where \"name='KEY'\" only\n");
    return 1;
  }
  switch (verb) {
    case 'query': {
      const rows = store.list(ns).filter(([k]) => name === undefined || k === name);
      if (rows.length === 0) {
        ctx.stdout.write('No result found.\n');
        return 0;
      }
      const projection = options.get('--projection')?.[0]?.split(':');
      rows.forEach(([k, v], i) => {
        const columns: [string, string][] = [
          ['_id', String(i + 1)],
          ['name', k],
          ['value', v],
        ];
        const shown = projection ? columns.filter(([c]) => projection.includes(c)) : columns;
        ctx.stdout.write(`Row: ${i} ${shown.map(([c, x]) => `${c}=${x}`).join(', ')}\n`);
      });
      return 0;
    }
    case 'insert': {
      const key = binds.get('name');
      if (key === undefined) {
        ctx.stderr.write('content: insert needs --bind name:s:KEY --bind value:s:VALUE\n');
        return 1;
      }
      if (refusedValue(ns, key, binds.get('value') ?? '')) return 0;
      store.put(ns, key, binds.get('value') ?? '');
      return 0;
    }
    case 'update': {
      const key = name ?? binds.get('name');
      if (key === undefined || !binds.has('value')) {
        ctx.stderr.write('content: update needs --bind value:s:VALUE and --where "name=\'KEY\'"\n');
        return 1;
      }
      if (refusedValue(ns, key, binds.get('value')!)) return 0;
      store.put(ns, key, binds.get('value')!);
      return 0;
    }
    default: {
      if (name === undefined) {
        ctx.stderr.write('content: delete needs --where "name=\'KEY\'"\n');
        return 1;
      }
      store.delete(ns, name);
      return 0;
    }
  }
};

const IMES = [DEFAULT_IME, APPIUM_IMES.unicode, APPIUM_IMES.appium, APPIUM_IMES.empty];

const ime: CommandFn = (ctx) => {
  const [verb, ...rest] = ctx.args;
  const sys = ctx.device.system;
  const available = () => IMES.filter((i) => i === DEFAULT_IME || ctx.device.packages.get(i.split('/')[0]!));
  switch (verb) {
    case 'list': {
      const all = rest.includes('-a');
      const ids = all ? available() : available().filter((i) => sys.enabledImes.has(i));
      if (rest.includes('-s')) for (const i of ids) ctx.stdout.write(`${i}\n`);
      else
        for (const i of ids)
          ctx.stdout.write(`${i}:\n  mId=${i} mSettingsActivity=null\n  mIsDefaultResourceId=0x0\n`);
      return 0;
    }
    case 'enable':
    case 'disable': {
      const id = rest[rest.length - 1] ?? '';
      // InputMethodManagerService's shell command: an unknown one cannot be enabled (on
      // stderr); disabling one that is not enabled, known or not, is "already disabled".
      if (verb === 'enable' && !available().includes(id)) {
        ctx.stderr.write(`Unknown input method ${id} cannot be enabled for user #0\n`);
        return 0;
      }
      const was = sys.enabledImes.has(id);
      if (verb === 'enable') sys.enabledImes.add(id);
      else sys.enabledImes.delete(id);
      const now = verb === 'enable';
      ctx.stdout.write(`Input method ${id}: ${now === was ? 'already' : 'now'} ${verb}d for user #0\n`);
      return 0;
    }
    case 'set': {
      const id = rest[rest.length - 1] ?? '';
      if (!available().includes(id)) {
        ctx.stderr.write(`Unknown input method ${id} cannot be selected for user #0\n`);
        return 0;
      }
      sys.currentIme = id;
      ctx.device.settings.put('secure', 'default_input_method', id);
      ctx.stdout.write(`Input method ${id} selected for user #0\n`);
      return 0;
    }
    case 'reset':
      sys.currentIme = DEFAULT_IME;
      sys.enabledImes = new Set([DEFAULT_IME]);
      ctx.device.settings.put('secure', 'default_input_method', DEFAULT_IME);
      ctx.stdout.write(
        `Reset current and enabled IMEs for user #0\n  Selected: ${DEFAULT_IME}\n   Enabled: ${DEFAULT_IME}\n`,
      );
      return 0;
    default:
      ctx.stdout.write(
        'ime <command>:\n  list [-a] [-s]\n  enable [--user <USER_ID>] <ID>\n  disable [--user <USER_ID>] <ID>\n  set [--user <USER_ID>] <ID>\n  reset [--user <USER_ID>]\n',
      );
      return 0;
  }
};

const denied =
  (message: string, status = 1): CommandFn =>
  (ctx) => {
    ctx.stderr.write(`${ctx.name}: ${message}\n`);
    return status;
  };

export const SYSTEM_COMMANDS: Record<string, CommandFn> = {
  getprop,
  setprop,
  settings,
  id,
  whoami,
  date,
  uname,
  hostname,
  uptime,
  free,
  env,
  printenv,
  sh,
  log,
  svc,
  'run-as': runAs,
  which,
  locksettings,
  service,
  content,
  ime,
  true: () => 0,
  false: () => 1,
  getenforce: (ctx) => {
    ctx.stdout.write('Enforcing\n');
    return 0;
  },
  reboot: denied('Operation not permitted'),
  dmesg: denied('klogctl: Permission denied'),
  start: denied('must be root'),
  stop: denied('must be root'),
};
