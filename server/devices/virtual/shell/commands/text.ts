/** Text applets for pipes: echo, printf, grep, head, tail, wc, sort, uniq, tr, cut, tee, ... */
import { FsError } from '../../fs.js';
import { commandSource, fail, getopt, openOperand, resolvePath, toyboxArgs, usageError } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';
import { readAll } from '../io.js';
import { abortableSleep } from '../../timers.js';
import { compileRegex, posixRegexSource, RegexError } from './regex.js';
import type { Input } from '../io.js';

/** Backslash escapes of echo -e, printf formats and the shell's print. */
export function unescapeBackslashes(s: string): { text: string; stop: boolean } {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '\\' || i + 1 >= s.length) {
      out += c;
      continue;
    }
    const n = s[++i]!;
    switch (n) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '\\':
        out += '\\';
        break;
      case 'a':
        out += '\x07';
        break;
      case 'b':
        out += '\b';
        break;
      case 'e':
        out += '\x1b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case 'c':
        return { text: out, stop: true };
      case '0': {
        const m = /^[0-7]{0,3}/.exec(s.slice(i + 1))![0];
        out += String.fromCharCode(parseInt(m || '0', 8));
        i += m.length;
        break;
      }
      case 'x': {
        const m = /^[0-9a-fA-F]{1,2}/.exec(s.slice(i + 1));
        if (m) {
          out += String.fromCharCode(parseInt(m[0], 16));
          i += m[0].length;
        } else out += '\\x';
        break;
      }
      default:
        out += `\\${n}`;
    }
  }
  return { text: out, stop: false };
}

/**
 * What echo prints: leading arguments made only of -e, -E and -n are options, backslash
 * sequences are read when `escapes` (toybox's echo: after -e; mksh's: unless -E), and `\\c`
 * ends the output there.
 */
export function echoText(args: readonly string[], escapes: boolean): string {
  let newline = true;
  let i = 0;
  for (; i < args.length && /^-[neE]+$/.test(args[i]!); i++) {
    for (const f of args[i]!.slice(1)) {
      if (f === 'n') newline = false;
      else escapes = f === 'e';
    }
  }
  let text = args.slice(i).join(' ');
  if (escapes) {
    const u = unescapeBackslashes(text);
    text = u.text;
    if (u.stop) newline = false;
  }
  return newline ? `${text}\n` : text;
}

const echo: CommandFn = (ctx) => {
  ctx.stdout.write(echoText(ctx.args, false));
  return 0;
};

/**
 * A long double as Android's (IEEE quad: 113-bit significand) holds it, exactly:
 * `mant * 2^exp2`, or infinity or NaN.
 */
interface LongDouble {
  negative: boolean;
  kind: 'finite' | 'inf' | 'nan';
  mant: bigint;
  exp2: number;
}

const QUAD_BITS = 113;

function bitLength(n: bigint): number {
  return n === 0n ? 0 : n.toString(2).length;
}

/** num/den rounded to an integer, ties to even. */
function divRound(num: bigint, den: bigint): bigint {
  const q = num / den;
  const r2 = (num % den) * 2n;
  return r2 > den || (r2 === den && q % 2n === 1n) ? q + 1n : q;
}

/** The quad nearest num/den (both positive), as mant * 2^exp2. */
function quadOf(num: bigint, den: bigint): { mant: bigint; exp2: number } {
  if (num === 0n) return { mant: 0n, exp2: 0 };
  // Scale so the quotient has QUAD_BITS bits (or one more), then round.
  let shift = QUAD_BITS - (bitLength(num) - bitLength(den)) + 1;
  // Quad's smallest exponent: below it the significand gets shorter (subnormals).
  const scaled = (s: number) => (s >= 0 ? divRound(num << BigInt(s), den) : divRound(num, den << BigInt(-s)));
  let mant = scaled(shift);
  while (bitLength(mant) > QUAD_BITS) {
    shift--;
    mant = scaled(shift);
  }
  if (-shift < -16494) {
    shift = 16494;
    mant = scaled(shift);
  }
  return { mant, exp2: -shift };
}

/**
 * strtold: the number at the start of `arg` (decimal or hex, inf, nan), how much of `arg`
 * it took (0 for none) and whether it is out of range.
 */
function strtold(arg: string): { value: LongDouble; length: number; range: boolean } {
  const none = {
    value: { negative: false, kind: 'finite' as const, mant: 0n, exp2: 0 },
    length: 0,
    range: false,
  };
  const m =
    /^(\s*)([+-]?)(?:(inf(?:inity)?|nan)|0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?|(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?)/i.exec(
      arg,
    );
  if (!m) return none;
  const negative = m[2] === '-';
  if (m[3]) {
    const kind = m[3].toLowerCase().startsWith('inf') ? 'inf' : 'nan';
    return { value: { negative, kind, mant: 0n, exp2: 0 }, length: m[0].length, range: false };
  }
  let digits: string;
  let exp: number;
  let base: bigint;
  let length = m[0].length;
  if (m[4] !== undefined) {
    digits = `${m[4]}${m[5] ?? ''}`;
    if (digits === '') {
      // "0x" alone is the 0 before the x.
      length = m[1]!.length + m[2]!.length + 1;
      digits = '0';
    }
    base = 16n;
    exp = Number(m[6] ?? 0) - 4 * (m[5] ?? '').length;
  } else {
    digits = `${m[7] ?? ''}${m[8] ?? ''}`;
    if (digits === '') return none;
    if (m[9] !== undefined && !/\d/.test(m[9])) length -= m[9].length + 1;
    base = 10n;
    exp = Number(m[9] ?? 0) - (m[8] ?? '').length;
  }
  let num = BigInt(base === 16n ? `0x${digits}` : digits);
  let den = 1n;
  if (base === 10n) {
    if (exp > 6000) return { value: { negative, kind: 'inf', mant: 0n, exp2: 0 }, length, range: num !== 0n };
    if (exp < -6000)
      return { value: { negative, kind: 'finite', mant: 0n, exp2: 0 }, length, range: num !== 0n };
    if (exp >= 0) num *= 10n ** BigInt(exp);
    else den = 10n ** BigInt(-exp);
  } else if (exp >= 0) num <<= BigInt(Math.min(exp, 20000));
  else den <<= BigInt(Math.min(-exp, 20000));
  const q = quadOf(num, den);
  if (q.mant !== 0n && q.exp2 + bitLength(q.mant) > 16384)
    return { value: { negative, kind: 'inf', mant: 0n, exp2: 0 }, length, range: true };
  return { value: { negative, kind: 'finite', ...q }, length, range: num !== 0n && q.mant === 0n };
}

/** round(v * 10^scale), ties to even, for a finite v. */
function scaledRound(v: LongDouble, scale: number): bigint {
  let num = v.mant;
  let den = 1n;
  if (v.exp2 >= 0) num <<= BigInt(v.exp2);
  else den <<= BigInt(-v.exp2);
  if (scale >= 0) num *= 10n ** BigInt(scale);
  else den *= 10n ** BigInt(-scale);
  return divRound(num, den);
}

/** %e's digits: the significand (precision+1 digits) and the exponent. */
function exponentForm(v: LongDouble, precision: number): { digits: string; exponent: number } {
  if (v.mant === 0n) return { digits: '0'.repeat(precision + 1), exponent: 0 };
  // 2^e2 <= v < 2^(e2+1), so the decimal exponent is one of two.
  const e2 = bitLength(v.mant) - 1 + v.exp2;
  let exponent = Math.floor(e2 * Math.log10(2));
  const atLeast = (x: number): boolean => {
    // v >= 10^x ?
    let num = v.mant;
    let den = 1n;
    if (v.exp2 >= 0) num <<= BigInt(v.exp2);
    else den <<= BigInt(-v.exp2);
    return x >= 0 ? num >= den * 10n ** BigInt(x) : num * 10n ** BigInt(-x) >= den;
  };
  while (atLeast(exponent + 1)) exponent++;
  while (!atLeast(exponent)) exponent--;
  let n = scaledRound(v, precision - exponent);
  if (n >= 10n ** BigInt(precision + 1)) {
    exponent++;
    n = scaledRound(v, precision - exponent);
  }
  return { digits: n.toString(), exponent };
}

/** A long double as %f, %e, %g (and capitals) print it, without sign or padding. */
function formatFloat(v: LongDouble, conv: string, precision: number, alternate: boolean): string {
  const upper = conv === 'E' || conv === 'G' || conv === 'F';
  if (v.kind !== 'finite') return v.kind === 'inf' ? (upper ? 'INF' : 'inf') : upper ? 'NAN' : 'nan';
  const point = (int: string, frac: string) => (frac !== '' || alternate ? `${int}.${frac}` : int);
  const fixed = (p: number) => {
    const s = scaledRound(v, p)
      .toString()
      .padStart(p + 1, '0');
    return point(s.slice(0, s.length - p), s.slice(s.length - p));
  };
  const exponential = (p: number) => {
    const { digits, exponent } = exponentForm(v, p);
    const e = `${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
    return `${point(digits[0]!, digits.slice(1))}${upper ? 'E' : 'e'}${e}`;
  };
  const lower = conv.toLowerCase();
  if (lower === 'f') return fixed(precision);
  if (lower === 'e') return exponential(precision);
  const p = precision === 0 ? 1 : precision;
  const x = exponentForm(v, p - 1).exponent;
  const s = p > x && x >= -4 ? fixed(p - 1 - x) : exponential(p - 1);
  if (alternate) return s;
  // Without #, trailing zeros of the fraction go, and a point left alone.
  const e = s.search(/[eE]/);
  const mantissa = e < 0 ? s : s.slice(0, e);
  const tail = e < 0 ? '' : s.slice(e);
  return (mantissa.includes('.') ? mantissa.replace(/\.?0+$/, '') : mantissa) + tail;
}

/** strtoll(arg, &end, 0): the number, clamped to 64 bits, how much it took, whether it was clamped. */
function strtoll(arg: string): { value: bigint; length: number; range: boolean } {
  const m = /^(\s*[+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)/.exec(arg);
  if (!m) return { value: 0n, length: 0, range: false };
  let value = BigInt(m[2]!.startsWith('0') && !/^0[xX]/.test(m[2]!) ? `0o${m[2]!.slice(1) || '0'}` : m[2]!);
  if (m[1]!.includes('-')) value = -value;
  const max = (1n << 63n) - 1n;
  const min = -(1n << 63n);
  if (value > max) return { value: max, length: m[0].length, range: true };
  if (value < min) return { value: min, length: m[0].length, range: true };
  return { value, length: m[0].length, range: false };
}

/** The letters C gives a backslash (`\\n`), as printf's formats and paste's -d read them. */
export const C_ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\',
  a: '\x07',
  b: '\b',
  e: '\x1b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
};

/**
 * A format's escape at `s[i]` (just after the backslash), as toybox printf reads it: \\c
 * stops everything, \\xHH (one or two digits), \\NNN octal (with `posix`, as %b reads, a
 * 0 may lead: \\0NNN), and the letters of C. Gives the byte(s) and where reading goes on.
 */
function printfEscape(s: string, i: number, posix: boolean): { text: string; next: number; stop?: true } {
  if (s[i] === 'c') return { text: '', next: i + 1, stop: true };
  let p = i;
  let base = 0;
  if (s[p] === 'x') {
    base = 16;
    p++;
  } else {
    if (posix && s[p] === '0') p++;
    if (s[p] !== undefined && s[p]! >= '0' && s[p]! <= '7') base = 8;
  }
  if (base === 0) {
    const c = C_ESCAPES[s[i] ?? ''];
    return c === undefined ? { text: '\\', next: i } : { text: c, next: i + 1 };
  }
  let length = base === 16 ? 2 : 3;
  let result = 0;
  while (length > 0) {
    const d = parseInt(s[p] ?? '', base);
    if (Number.isNaN(d)) break;
    result = result * base + d;
    p++;
    length--;
  }
  return { text: String.fromCharCode(result & 0xff), next: p };
}

/**
 * printf(1)'s format as toybox runs it, on bytes (each char of the strings is one byte, as
 * latin1 holds them): the format repeats while arguments remain and a conversion took one.
 * `onBad` hears of an argument that is not wholly a number (it still prints what its
 * leading part is worth); a conversion toybox does not know throws (`bad %q@2`).
 */
function formatBytes(
  format: string,
  args: string[],
  onBad: (conversion: string, arg: string, reason?: string) => void,
): { text: string; error?: string } {
  let out = '';
  let argIndex = 0;
  for (;;) {
    let seen = false;
    let i = 0;
    while (i < format.length) {
      const ch = format[i]!;
      if (ch === '\\') {
        const e = printfEscape(format, i + 1, false);
        out += e.text;
        if (e.stop) return { text: out };
        i = e.next;
        continue;
      }
      if (ch !== '%' || format[i + 1] === '%') {
        out += ch;
        i += ch === '%' ? 2 : 1;
        continue;
      }
      i++;
      let flags = '';
      while (i < format.length && "-+# '0".includes(format[i]!) && flags.length < 9) flags += format[i++];
      const wp: [number, number] = [0, -1];
      for (let k = 0; ; k++) {
        if (format[i] === '*') {
          i++;
          const a = args[argIndex];
          if (a !== undefined) {
            argIndex++;
            const n = atolx(a);
            if (n === null) return { text: out, error: `not integer: ${a}` };
            wp[k] = n;
          }
        } else
          while (i < format.length && format[i]! >= '0' && format[i]! <= '9')
            wp[k] = wp[k]! * 10 + Number(format[i++]);
        if (k > 0 || format[i] !== '.') break;
        i++;
        wp[1] = 0;
      }
      const conv = format[i++] ?? '';
      seen = true;
      const arg = args[argIndex] !== undefined ? args[argIndex++]! : '';
      let width = wp[0];
      let left = flags.includes('-');
      if (width < 0) {
        left = true;
        width = -width;
      }
      const precision = wp[1] >= 0 ? wp[1] : undefined;
      let body: string;
      let sign = '';
      let zeroPad = false;
      if (conv === 'b') {
        for (let k = 0; k < arg.length;) {
          if (arg[k] === '\\') {
            const e = printfEscape(arg, k + 1, true);
            out += e.text;
            if (e.stop) return { text: out };
            k = e.next;
          } else out += arg[k++];
        }
        continue;
      } else if (conv === 'c') body = arg === '' ? '\0' : arg[0]!;
      else if (conv === 's') body = precision === undefined ? arg : arg.slice(0, precision);
      else if ('diouxX'.includes(conv) && conv !== '') {
        let value: bigint;
        if (arg.startsWith("'") || arg.startsWith('"')) value = BigInt(arg.charCodeAt(1) || 0);
        else {
          const n = strtoll(arg);
          value = n.value;
          if (n.range) onBad(conv, arg, 'Numerical result out of range');
          else if (n.length < arg.length) onBad(conv, arg);
        }
        if (conv === 'd' || conv === 'i') {
          if (value < 0n) sign = '-';
          else if (flags.includes('+')) sign = '+';
          else if (flags.includes(' ')) sign = ' ';
          body = (value < 0n ? -value : value).toString();
        } else {
          const u = BigInt.asUintN(64, value);
          body = u.toString(conv === 'o' ? 8 : conv === 'u' ? 10 : 16);
          if (conv === 'X') body = body.toUpperCase();
          if (flags.includes('#') && u !== 0n && (conv === 'x' || conv === 'X')) sign = `0${conv}`;
        }
        if (precision !== undefined)
          body = precision === 0 && body === '0' ? '' : body.padStart(precision, '0');
        if (conv === 'o' && flags.includes('#') && !body.startsWith('0')) body = `0${body}`;
        zeroPad = flags.includes('0') && precision === undefined;
      } else if ('feEgG'.includes(conv) && conv !== '') {
        const n = strtold(arg);
        if (n.range) onBad(conv, arg, 'Numerical result out of range');
        else if (n.length < arg.length || (n.length === 0 && arg !== '')) onBad(conv, arg);
        const v = n.value;
        if (v.negative) sign = '-';
        else if (flags.includes('+')) sign = '+';
        else if (flags.includes(' ')) sign = ' ';
        body = formatFloat(v, conv, precision ?? 6, flags.includes('#'));
        zeroPad = flags.includes('0') && v.kind === 'finite';
      } else {
        return { text: out, error: `bad %${conv}@${i}` };
      }
      const length = sign.length + body.length;
      if (length >= width) out += sign + body;
      else if (left) out += sign + body + ' '.repeat(width - length);
      else if (zeroPad) out += sign + '0'.repeat(width - length) + body;
      else out += ' '.repeat(width - length) + sign + body;
    }
    if (!seen || argIndex >= args.length) break;
  }
  return { text: out };
}

const latin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');

/**
 * printf(1)'s format as toybox runs it (see formatBytes), as text: `onBad` hears of an
 * argument that is not wholly a number (toybox's `printf: bad %d x`, status 1).
 */
export function formatPrintf(
  format: string,
  args: string[],
  onBad: (conversion: string, arg: string) => void = () => undefined,
): string {
  const r = formatBytes(latin1(format), args.map(latin1), (conv, arg) =>
    onBad(conv, Buffer.from(arg, 'latin1').toString('utf8')),
  );
  return Buffer.from(r.text, 'latin1').toString('utf8');
}

/** toybox printf FORMAT [ARGUMENT...]. */
const printf: CommandFn = (ctx) => {
  if (ctx.args.length === 0) return usageError(ctx, 'Needs 1 argument');
  let status = 0;
  const r = formatBytes(latin1(ctx.args[0]!), ctx.args.slice(1).map(latin1), (conv, arg, reason) => {
    const shown = Buffer.from(arg, 'latin1').toString('utf8');
    ctx.stderr.write(`printf: bad %${conv} ${shown}${reason ? `: ${reason}` : ''}\n`);
    status = 1;
  });
  ctx.stdout.write(Buffer.from(r.text, 'latin1'));
  if (r.error !== undefined) return fail(ctx, r.error);
  return status;
};

/** Reads the named files (or stdin) as text, each whole (within the in-memory limit). */
export async function inputText(
  ctx: CommandContext,
  files: string[],
): Promise<{ name: string; text: string }[] | number> {
  if (files.length === 0 || (files.length === 1 && files[0] === '-'))
    return [{ name: '(standard input)', text: (await readAll(ctx.stdin)).toString('utf8') }];
  const out: { name: string; text: string }[] = [];
  for (const f of files) {
    const input = openOperand(ctx, f);
    if (!input) return 2;
    out.push({ name: f, text: (await readAll(input)).toString('utf8') });
  }
  return out;
}

export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** What Android's regcomp says is wrong with the first bad pattern, as `: MESSAGE` ('' if none says). */
function regexErrorOf(patterns: readonly string[], extended: boolean): string {
  for (const p of patterns) {
    try {
      compileRegex(p, extended, false);
    } catch (error) {
      if (error instanceof RegexError) return `: ${error.message}`;
    }
  }
  return '';
}

/** grep's options: those that take a value, and the flags it models. */
const GREP_VALUES = 'efmABC';
const GREP_FLAGS = 'EFHIbchilLnoqsvwxzZ';
/** toybox grep's long options that are no letter of its own (the virtual phone models only the first). */
const GREP_OTHER_LONG = new Set(['line-buffered', 'color', 'exclude-dir', 'exclude', 'include']);
/** grep's long options that are one of its letters. */
const GREP_LONG: Record<string, string> = {
  'byte-offset': 'b',
  'no-filename': 'h',
  'only-matching': 'o',
  count: 'c',
  'files-without-match': 'L',
  'files-with-matches': 'l',
  quiet: 'q',
  silent: 'q',
};

/**
 * toybox grep [-EFHIbchilLnoqsvwxzZ] [-e PATTERN]... [-f FILE]... [-m MAX] [-A N] [-B N]
 * [-C N] [PATTERN] [FILE...]: every -e and -f pattern counts; context lines with `-` and
 * groups parted by `--`; -b the byte offset, -z lines that end in NUL, -Z a NUL after -l's
 * names; a missing file is said (unless -s) and makes the status 2. -r, -R, -a, --color,
 * --include and --exclude are refused as not modeled.
 */
const grep: CommandFn = async (ctx) => {
  const args: string[] = [];
  for (const [i, a] of ctx.args.entries()) {
    if (a === '--') {
      args.push(...ctx.args.slice(i));
      break;
    }
    const long = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    if (!long) {
      args.push(a);
      continue;
    }
    const [, name, value] = long as unknown as [string, string, string | undefined];
    if (GREP_LONG[name] && value === undefined) args.push(`-${GREP_LONG[name]}`);
    else if (!GREP_OTHER_LONG.has(name) || (name === 'line-buffered' && value !== undefined))
      return fail(ctx, `Unknown option '${a.slice(2)}' (see "${ctx.name} --help")`, 2);
    // toybox colours unless --color (or =auto) goes to no terminal; =never colours too (its quirk).
    else if (name === 'color' && (value === undefined || value === 'auto') && !ctx.stdout.terminal) continue;
    else if (name !== 'line-buffered') return fail(ctx, `${a}: not modeled by the virtual phone`, 2);
  }
  const parsed = toyboxArgs({ ...ctx, args }, GREP_VALUES, GREP_FLAGS, { status: 2, longOptions: true });
  if (typeof parsed === 'number') return parsed;
  const { flags, operands } = parsed;
  const numbers = new Map<string, number>();
  for (const [f, v] of parsed.values) {
    if (!'ABCm'.includes(f)) continue;
    const n = atolx(v[v.length - 1]!);
    if (n === null) return fail(ctx, `not integer: ${v[v.length - 1]}`, 2);
    numbers.set(f, n);
  }
  const patterns = [...(parsed.values.get('e') ?? [])];
  for (const file of parsed.values.get('f') ?? []) {
    const input = openOperand(ctx, file);
    if (!input) return 2;
    patterns.push(...splitLines((await readAll(input)).toString('utf8')));
  }
  const patternGiven = parsed.values.has('e') || parsed.values.has('f');
  if (!patternGiven) {
    const first = operands.shift();
    if (first === undefined) return fail(ctx, 'no REGEX', 2);
    patterns.push(...first.split('\n'));
  }
  const fixed = flags.has('F') || ctx.name === 'fgrep';
  const extended = flags.has('E') || ctx.name === 'egrep';
  let re: RegExp;
  try {
    // Joined into one, each pattern's back-references count the groups of those before it.
    let groupBase = 0;
    const sources = patterns.map((p) => {
      if (fixed) return p.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
      const source = posixRegexSource(p, extended, groupBase);
      if (source !== null) groupBase += new RegExp(`${source}|`).exec('')!.length - 1;
      return source;
    });
    if (sources.includes(null)) throw new Error('bracket');
    const source = sources.map((p) => `(?:${p})`).join('|');
    re = new RegExp(
      flags.has('x')
        ? `^(?:${source})$`
        : flags.has('w')
          ? `(?<![A-Za-z0-9_])(?:${source})(?![A-Za-z0-9_])`
          : source,
      flags.has('i') ? 'gi' : 'g',
    );
  } catch {
    return fail(ctx, `bad regex '${patterns.join('')}'${regexErrorOf(patterns, extended)}`, 2);
  }
  const after = numbers.get('A') ?? numbers.get('C') ?? 0;
  const before = numbers.get('B') ?? numbers.get('C') ?? 0;
  const max = numbers.get('m') ?? Infinity;
  const delim = flags.has('z') ? '\0' : '\n';
  const files = operands.length > 0 ? operands : ['-'];
  const showName = (files.length > 1 || flags.has('H')) && !flags.has('h');
  let matched = 0;
  let status = 0;
  for (const file of files) {
    let text: string;
    if (file === '-') text = (await readAll(ctx.stdin)).toString('utf8');
    else {
      try {
        text = ctx.fs.readFile(resolvePath(ctx, file)).toString('utf8');
      } catch (error) {
        if (!flags.has('s'))
          ctx.stderr.write(`grep: ${file}: ${error instanceof FsError ? error.reason : String(error)}\n`);
        status = 2;
        continue;
      }
    }
    const name = file === '-' ? '(standard input)' : file;
    const lines = text === '' ? [] : text.split(delim);
    if (lines[lines.length - 1] === '') lines.pop();
    // Where each line starts, in bytes (for -b).
    const starts: number[] = [];
    for (let n = 0, at = 0; n < lines.length; n++) {
      starts.push(at);
      at += Buffer.byteLength(lines[n]!) + 1;
    }
    let count = 0;
    /** The last line printed (for context and the `--` between groups), -1 before any. */
    let printed = -1;
    let afterLeft = 0;
    const print = (n: number, mark: ':' | '-', body: string, offset = 0) => {
      if (printed >= 0 && n > printed + 1 && (after > 0 || before > 0)) ctx.stdout.write('--\n');
      ctx.stdout.write(
        `${showName ? `${name}${mark}` : ''}${flags.has('n') ? `${n + 1}${mark}` : ''}${
          flags.has('b') ? `${starts[n]! + offset}${mark}` : ''
        }${body}${delim}`,
      );
      printed = n;
    };
    const quiet = flags.has('c') || flags.has('l') || flags.has('L') || flags.has('q');
    for (let n = 0; n < lines.length; n++) {
      const line = lines[n]!;
      // With -o only a match with text in it counts.
      const matches = [...line.matchAll(re)].filter((m) => !flags.has('o') || flags.has('v') || m[0] !== '');
      const hit = matches.length > 0 !== flags.has('v');
      if (!hit) {
        if (afterLeft > 0) {
          afterLeft--;
          if (!quiet) print(n, '-', line);
        }
        continue;
      }
      if (count >= max) break;
      count++;
      if (flags.has('q')) return 0;
      if (quiet) continue;
      for (let b = Math.max(printed + 1, n - before); b < n; b++) print(b, '-', lines[b]!);
      if (flags.has('o') && !flags.has('v')) {
        for (const m of matches) print(n, ':', m[0], Buffer.byteLength(line.slice(0, m.index)));
        printed = n;
      } else print(n, ':', line);
      afterLeft = count >= max ? 0 : after;
    }
    if (flags.has('c')) ctx.stdout.write(`${showName ? `${name}:` : ''}${count}${delim}`);
    if (flags.has('l') && count > 0) ctx.stdout.write(`${name}${flags.has('Z') ? '\0' : '\n'}`);
    if (flags.has('L') && count === 0) ctx.stdout.write(`${name}${delim}`);
    matched += count;
  }
  if (status !== 0) return status;
  return matched > 0 ? 0 : 1;
};

/**
 * toybox's atolx: strtoll in base 0 (`0x1f`, `017`), then an optional c, w, b, k, m, g, t,
 * p or e suffix (`2k` is 2048, `2kd` 2000), then blanks; null when that is not all there is.
 */
export function atolx(text: string): number | null {
  const m = /^\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)/.exec(text);
  if (!m) return null;
  const digits = m[2]!;
  let value = /^0[xX]/.test(digits)
    ? parseInt(digits.slice(2), 16)
    : digits.startsWith('0')
      ? parseInt(digits, 8)
      : Number(digits);
  if (m[1] === '-') value = -value;
  let rest = text.slice(m[0].length);
  const suffix = 'cwbkmgtpe'.indexOf(rest[0]?.toLowerCase() ?? '');
  if (rest !== '' && suffix >= 0) {
    const shift = suffix - 2;
    rest = rest.slice(1);
    if (shift === -1) value *= 2;
    else if (shift === 0) value *= 512;
    else if (shift > 0) {
      if (rest[0]?.toLowerCase() === 'd') {
        rest = rest.slice(1);
        value *= 1000 ** shift;
      } else value *= 1024 ** shift;
    }
  }
  return /^\s*$/.test(rest) ? value : null;
}

/**
 * head's and tail's arguments as toybox reads them (`?` in the declaration: an argument
 * with an option toybox does not know is an operand). `signed`: tail's `-` numbers, which
 * count from the end unless they start with `+`. Gives the options and operands, or the
 * status after saying what is wrong.
 */
function countOptions(
  ctx: CommandContext,
  flagLetters: string,
  valueLetters: string,
  signed: boolean,
):
  | {
      n: number | null;
      c: number | null;
      last: 'n' | 'c' | null;
      flags: Set<string>;
      values: Map<string, string>;
      operands: string[];
    }
  | number {
  const result = {
    n: null as number | null,
    c: null as number | null,
    last: null as 'n' | 'c' | null,
    flags: new Set<string>(),
    values: new Map<string, string>(),
    operands: [] as string[],
  };
  const number = (letter: string, value: string): number | null => {
    const n = atolx(value);
    if (n === null) {
      fail(ctx, `not integer: ${value}`);
      return null;
    }
    if (signed) return /^[!-/:-@[-`{-~]/.test(value) ? n : -n;
    if (n < 0) {
      usageError(ctx, `-${letter} < 0`);
      return null;
    }
    return n;
  };
  const args = ctx.args;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      result.operands.push(...args.slice(i + 1));
      break;
    }
    const long = /^--(lines|bytes)(?:=(.*))?$/.exec(a);
    if (long) {
      const letter = long[1] === 'lines' ? 'n' : 'c';
      const value = long[2] ?? args[++i];
      if (value === undefined) return usageError(ctx, `Missing argument to --${long[1]}`);
      const n = number(letter, value);
      if (n === null) return 1;
      result[letter as 'n' | 'c'] = n;
      result.last = letter as 'n' | 'c';
      continue;
    }
    if (!a.startsWith('-') || a === '-' || a.startsWith('--')) {
      result.operands.push(a);
      continue;
    }
    // An unknown letter makes the whole argument an operand (`-5`, `-x`).
    const letters = [...a.slice(1)];
    const known = (() => {
      for (const f of letters) {
        if (valueLetters.includes(f)) return true;
        if (!flagLetters.includes(f)) return false;
      }
      return true;
    })();
    if (!known) {
      result.operands.push(a);
      continue;
    }
    for (let k = 1; k < a.length; k++) {
      const f = a[k]!;
      if (!valueLetters.includes(f)) {
        result.flags.add(f);
        continue;
      }
      const value = k < a.length - 1 ? a.slice(k + 1) : args[++i];
      if (value === undefined) return usageError(ctx, `Missing argument to -${f}`);
      if (f === 'n' || f === 'c') {
        const n = number(f, value);
        if (n === null) return 1;
        result[f] = n;
        result.last = f;
      } else result.values.set(f, value);
      break;
    }
  }
  return result;
}

/** The first lines (or bytes) of an input, read only as far as needed (`logcat | head -1` ends). */
async function headOf(ctx: CommandContext, input: Input, n: number, bytes: boolean): Promise<void> {
  let left = n;
  while (left > 0) {
    const chunk = await input.read();
    if (chunk === null) break;
    let take = 0;
    if (bytes) take = Math.min(left, chunk.length);
    else
      while (take < chunk.length && left > 0) {
        if (chunk[take++] === 0x0a) left--;
      }
    if (bytes) left -= take;
    ctx.stdout.write(chunk.subarray(0, take));
  }
}

/**
 * toybox head [-n N] [-c N] [-qv] [FILE...]: `-N` as the first operand is `-n N`; headers
 * (`==> NAME <==`, a blank line between) when more than one operand, or with -v.
 */
const head: CommandFn = async (ctx) => {
  const parsed = countOptions(ctx, 'qv', 'nc', false);
  if (typeof parsed === 'number') return parsed;
  const { flags, operands } = parsed;
  let lines = parsed.n ?? 10;
  const first = operands[0];
  if (first !== undefined && first.startsWith('-') && first.length > 1) {
    const n = atolx(first.slice(1));
    if (n === null) return fail(ctx, `not integer: ${first.slice(1)}`);
    lines = n;
    operands.shift();
  }
  const bytes = parsed.last === 'c';
  const count = bytes ? parsed.c! : lines;
  const headers = (operands.length > 1 && !flags.has('q')) || flags.has('v');
  if (operands.length === 0) operands.push('-');
  let status = 0;
  let shown = 0;
  for (const f of operands) {
    const input = openOperand(ctx, f);
    if (!input) {
      status = 1;
      continue;
    }
    if (headers) ctx.stdout.write(`${shown > 0 ? '\n' : ''}==> ${f} <==\n`);
    shown++;
    await headOf(ctx, input, count, bytes);
  }
  return status;
};

/**
 * What tail prints of `data`: a count below 0 counts from the end (the last line may lack
 * its newline), 0 or more from the start (`+N` starts at the Nth; 0, as toybox's, is all).
 */
function tailOf(data: Buffer, count: number, bytes: boolean): Buffer {
  if (bytes)
    return count < 0
      ? data.subarray(Math.max(0, data.length + count))
      : data.subarray(Math.max(0, count - 1));
  if (count < 0) {
    let wanted = -count;
    // The last byte never starts a line, newline or not.
    for (let i = data.length - 2; i >= 0; i--)
      if (data[i] === 0x0a && --wanted === 0) return data.subarray(i + 1);
    return data;
  }
  let skip = count - 1;
  let i = 0;
  while (skip > 0 && i < data.length) if (data[i++] === 0x0a) skip--;
  return data.subarray(i);
}

/**
 * toybox tail [-n N] [-c N] [-fF] [-s SECONDS] [FILE...]: N counts from the end, `+N` from
 * the start; `-N`/`+N` as the first operand is `-n`; headers when more than one operand.
 * -f and -F follow regular files (checking every -s seconds) until the command is stopped.
 */
const tail: CommandFn = async (ctx) => {
  const parsed = countOptions(ctx, 'fF', 'scn', true);
  if (typeof parsed === 'number') return parsed;
  const { flags, operands } = parsed;
  let count = parsed.last === 'c' ? parsed.c! : (parsed.n ?? -10);
  const bytes = parsed.last === 'c';
  if (parsed.last === null) {
    const first = operands[0];
    if (first !== undefined && /^[-+]./.test(first)) {
      const n = atolx(first);
      if (n === null) return fail(ctx, `not integer: ${first}`);
      count = n;
      operands.shift();
    }
  }
  const headers = operands.length > 1;
  if (operands.length === 0) operands.push('-');
  let status = 0;
  let shown = 0;
  const followed: { name: string; path: string; size: number }[] = [];
  for (const f of operands) {
    const input = openOperand(ctx, f);
    if (!input) {
      status = 1;
      continue;
    }
    if (shown++ > 0) ctx.stdout.write('\n');
    if (headers) ctx.stdout.write(`==> ${f} <==\n`);
    const data = await readAll(input);
    ctx.stdout.write(tailOf(data, count, bytes));
    if (f !== '-') followed.push({ name: f, path: resolvePath(ctx, f), size: data.length });
  }
  if (!flags.has('f') && !flags.has('F')) return status;
  const seconds = Number(parsed.values.get('s') ?? 1);
  if (!(seconds >= 0)) return fail(ctx, `bad -s '${parsed.values.get('s')}'`);
  let lastShown = followed.length > 0 ? followed[followed.length - 1]!.name : '';
  while (!ctx.signal.aborted && followed.length > 0) {
    await abortableSleep(seconds * 1000, ctx.signal);
    for (const file of followed) {
      let data: Buffer;
      try {
        data = ctx.fs.readFile(file.path);
      } catch {
        continue;
      }
      if (data.length === file.size) continue;
      const fresh = data.length > file.size ? data.subarray(file.size) : data;
      file.size = data.length;
      if (headers && lastShown !== file.name) ctx.stdout.write(`\n==> ${file.name} <==\n`);
      lastShown = file.name;
      ctx.stdout.write(fresh);
    }
  }
  return status;
};

/** Counts lines, words, bytes and characters of a stream as it is read. */
async function countOf(input: Input, signal: AbortSignal): Promise<[number, number, number, number]> {
  let lines = 0;
  let words = 0;
  let bytes = 0;
  let chars = 0;
  let inWord = false;
  for (;;) {
    const chunk = await input.read();
    if (chunk === null || signal.aborted) break;
    bytes += chunk.length;
    for (const b of chunk) {
      if (b === 0x0a) lines++;
      // A UTF-8 character starts at every byte that is not a continuation byte.
      if ((b & 0xc0) !== 0x80) chars++;
      const space = b === 0x20 || (b >= 0x09 && b <= 0x0d);
      if (!space && !inWord) words++;
      inWord = !space;
    }
  }
  return [lines, words, bytes, chars];
}

const wc: CommandFn = async (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  const all = !flags.has('l') && !flags.has('w') && !flags.has('c') && !flags.has('m');
  const files = operands.length > 0 ? operands : ['-'];
  const totals = [0, 0, 0, 0];
  let status = 0;
  const show = (counts: number[], name: string | null) => {
    const shown = [
      all || flags.has('l') ? counts[0] : null,
      all || flags.has('w') ? counts[1] : null,
      all || flags.has('c') ? counts[2] : null,
      flags.has('m') ? counts[3] : null,
    ].filter((c): c is number => c !== null);
    const numbers = shown.map((c) => (shown.length > 1 ? String(c).padStart(7) : String(c))).join(' ');
    ctx.stdout.write(name !== null ? `${numbers} ${name}\n` : `${numbers}\n`);
  };
  for (const f of files) {
    const input = openOperand(ctx, f);
    if (!input) {
      status = 1;
      continue;
    }
    const counts = await countOf(input, ctx.signal);
    counts.forEach((c, i) => (totals[i] = totals[i]! + c));
    show(counts, operands.length > 0 ? f : null);
  }
  if (files.length > 1) show(totals, 'total');
  return status;
};

/** A sort key (-k F1[.C1][flags][,F2[.C2][flags]]): fields and characters count from 1. */
interface SortKey {
  startField: number;
  startChar: number;
  endField: number;
  endChar: number;
  flags: string;
}

function parseSortKey(spec: string): SortKey | null {
  const m = /^(\d+)(?:\.(\d+))?([bdfinr]*)(?:,(\d+)(?:\.(\d+))?([bdfinr]*))?$/.exec(spec);
  if (!m || Number(m[1]) < 1) return null;
  return {
    startField: Number(m[1]),
    startChar: Number(m[2] ?? 1),
    endField: m[4] === undefined ? 0 : Number(m[4]),
    endChar: Number(m[5] ?? 0),
    flags: `${m[3]}${m[6] ?? ''}`,
  };
}

/** Where each field of `line` starts and ends: at `separator`, or at blank-to-text changes (a field keeps its leading blanks). */
function sortFields(line: string, separator: string | null): [number, number][] {
  const fields: [number, number][] = [];
  if (separator !== null) {
    let from = 0;
    for (;;) {
      const at = line.indexOf(separator, from);
      fields.push([from, at < 0 ? line.length : at]);
      if (at < 0) return fields;
      from = at + separator.length;
    }
  }
  let i = 0;
  while (i < line.length) {
    const start = i;
    while (i < line.length && /[ \t]/.test(line[i]!)) i++;
    while (i < line.length && !/[ \t]/.test(line[i]!)) i++;
    fields.push([start, i]);
  }
  return fields;
}

function sortKeyText(line: string, key: SortKey, separator: string | null): string {
  const fields = sortFields(line, separator);
  const first = fields[key.startField - 1];
  if (!first) return '';
  let from = first[0];
  if (key.flags.includes('b')) while (from < first[1] && /[ \t]/.test(line[from]!)) from++;
  from = Math.min(from + key.startChar - 1, first[1]);
  let to = line.length;
  if (key.endField > 0) {
    const last = fields[key.endField - 1];
    if (last) to = key.endChar > 0 ? Math.min(last[0] + key.endChar, last[1]) : last[1];
  }
  return line.slice(from, Math.max(from, to));
}

/** strtold's reading of a number at the start of the text (0 when there is none), as sort -n reads. */
function leadingNumber(text: string): number {
  const m = /^\s*[-+]?(\d+\.?\d*|\.\d+)/.exec(text);
  return m ? Number(m[0]) : 0;
}

function compareSortText(a: string, b: string, flags: string): number {
  let r: number;
  if (flags.includes('n')) r = leadingNumber(a) - leadingNumber(b);
  else {
    const x = flags.includes('f') ? a.toUpperCase() : a;
    const y = flags.includes('f') ? b.toUpperCase() : b;
    r = x < y ? -1 : x > y ? 1 : 0;
  }
  return flags.includes('r') ? -r : r;
}

/**
 * toybox sort [-bcfnrsu] [-k KEY]... [-t SEP] [-o FILE] [FILE...]: keys compare first, the
 * whole line last (unless -s); -c checks instead of sorting (`sort: -: Check line N`).
 */
const sort: CommandFn = async (ctx) => {
  const parsed = toyboxArgs(ctx, 'kto', 'bcfnrsu', { status: 2, longOptions: true });
  if (typeof parsed === 'number') return parsed;
  const { flags, operands } = parsed;
  const keys: SortKey[] = [];
  for (const spec of parsed.values.get('k') ?? []) {
    const key = parseSortKey(spec);
    if (!key) return fail(ctx, `bad -k '${spec}'`, 2);
    keys.push(key);
  }
  const separator = parsed.values.get('t')?.at(-1) ?? null;
  const output = parsed.values.get('o')?.at(-1) ?? null;
  const global = [...flags].filter((f) => 'bfnr'.includes(f)).join('');
  const compare = (a: string, b: string): number => {
    for (const key of keys) {
      const r = compareSortText(
        sortKeyText(a, key, separator),
        sortKeyText(b, key, separator),
        key.flags === '' ? global : key.flags,
      );
      if (r !== 0) return r;
    }
    if (keys.length === 0) return compareSortText(a, b, global);
    if (flags.has('s')) return 0;
    // The whole line decides last, in plain byte order (reversed by -r).
    const r = a < b ? -1 : a > b ? 1 : 0;
    return flags.has('r') ? -r : r;
  };
  const inputs = await inputText(ctx, operands);
  if (typeof inputs === 'number') return 1;
  if (flags.has('c')) {
    for (const { name, text } of inputs) {
      const lines = splitLines(text);
      for (let n = 1; n < lines.length; n++) {
        const r = compare(lines[n - 1]!, lines[n]!);
        if (r > 0 || (r === 0 && flags.has('u'))) {
          ctx.stderr.write(`sort: ${name === '(standard input)' ? '-' : name}: Check line ${n + 1}\n`);
          return 1;
        }
      }
    }
    return 0;
  }
  let lines = inputs.flatMap((i) => splitLines(i.text));
  lines.sort(compare);
  if (flags.has('u')) lines = lines.filter((l, i) => i === 0 || compare(lines[i - 1]!, l) !== 0);
  const text = lines.map((l) => `${l}\n`).join('');
  if (output === null) ctx.stdout.write(text);
  else ctx.fs.writeFile(resolvePath(ctx, output), Buffer.from(text));
  return 0;
};

const uniq: CommandFn = async (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  const inputs = await inputText(ctx, operands.slice(0, 1));
  if (typeof inputs === 'number') return 1;
  const lines = splitLines(inputs[0]?.text ?? '');
  const groups: { line: string; count: number }[] = [];
  for (const l of lines) {
    const last = groups[groups.length - 1];
    if (last && last.line === l) last.count++;
    else groups.push({ line: l, count: 1 });
  }
  for (const g of groups) {
    if (flags.has('d') && g.count < 2) continue;
    if (flags.has('u') && g.count > 1) continue;
    ctx.stdout.write(flags.has('c') ? `${String(g.count).padStart(7)} ${g.line}\n` : `${g.line}\n`);
  }
  return 0;
};

/** A tr set's bytes as toybox expands them: escapes, ranges, [:class:] and [=c=]. Or an error. */
function expandSet(arg: Buffer): number[] | string {
  const set: number[] = [];
  const at = (i: number) => (i < arg.length ? arg[i]! : 0);
  const range = (from: number, to: number) => {
    for (let c = from; c <= to; c++) set.push(c);
  };
  let i = 0;
  while (i < arg.length) {
    if (at(i) === 0x5c) {
      // \n \t \e \b \a \f \v \r \\, up to three octal digits, \x and up to two hex digits.
      i++;
      const c = at(i);
      const hex = c === 0x78;
      const base = hex ? 16 : c >= 0x30 && c <= 0x39 ? 8 : 0;
      if (base) {
        let p = hex ? i + 1 : i;
        let length = hex ? 1 : 0;
        let result = 0;
        let literal = false;
        while (length < 3) {
          let num = (at(p) | 0x20) - 0x30;
          if (num > 10) num -= 39;
          if (num < 0 || num >= base) {
            if (hex && --length === 0) literal = true;
            break;
          }
          length++;
          result = result * base + num;
          p++;
        }
        if (literal) {
          // `\xq` is a backslash, then x and q as they are.
          set.push(0x5c);
          continue;
        }
        set.push(result & 0xff);
        i = p;
        continue;
      }
      const named: Record<string, number> = { n: 10, t: 9, e: 27, b: 8, a: 7, f: 12, v: 11, r: 13, '\\': 92 };
      const v = named[String.fromCharCode(c)];
      if (v === undefined || i >= arg.length) set.push(0x5c);
      else {
        set.push(v);
        i++;
      }
      continue;
    }
    if (at(i + 1) === 0x2d && i + 2 < arg.length) {
      if (at(i) > at(i + 2)) return 'reverse colating order';
      range(at(i), at(i + 2));
      i += 3;
      continue;
    }
    const rest = arg.subarray(i).toString('latin1');
    const cls = /^\[:(alpha|alnum|digit|lower|upper|space|blank|punct|cntrl|xdigit):\]/.exec(rest);
    if (cls) {
      const name = cls[1]!;
      if (['alpha', 'upper', 'alnum'].includes(name)) range(0x41, 0x5a);
      if (['alpha', 'lower', 'alnum'].includes(name)) range(0x61, 0x7a);
      if (['alnum', 'digit', 'xdigit'].includes(name)) range(0x30, 0x39);
      if (name === 'space') set.push(9, 10, 12, 13, 11, 32);
      if (name === 'blank') set.push(9, 32);
      if (name === 'punct')
        for (let c = 33; c < 127; c++) if (!/[0-9A-Za-z]/.test(String.fromCharCode(c))) set.push(c);
      if (name === 'cntrl') {
        range(0, 31);
        set.push(127);
      }
      if (name === 'xdigit') {
        range(0x41, 0x46);
        range(0x61, 0x66);
      }
      i += cls[0].length;
      continue;
    }
    if (rest.startsWith('[=')) {
      if (rest.length > 2) set.push(at(i + 2));
      if (rest[3] !== '=' || rest[4] !== ']') return 'bad equiv class';
      i += 2;
      continue;
    }
    set.push(at(i++));
  }
  return set;
}

/**
 * toybox tr [-cds] SET1 [SET2]: bytes of SET1 become SET2's at the same place (its last
 * repeating), -d deletes SET1's, -s squeezes runs of SET1's (SET2's when translating or
 * deleting), -c (-C) takes every byte not in SET1, in order. Only SET1 and no -d or -s
 * copies the input as it is.
 */
const tr: CommandFn = async (ctx) => {
  const flags = new Set<string>();
  let i = 0;
  for (; i < ctx.args.length; i++) {
    const a = ctx.args[i]!;
    if (a === '--') {
      i++;
      break;
    }
    if (!a.startsWith('-') || a === '-') break;
    for (const f of a.slice(1)) flags.add(f === 'C' ? 'c' : f);
  }
  const operands = ctx.args.slice(i);
  if (operands.length < 1) return usageError(ctx, 'Needs 1 argument');
  if (operands.length > 2) return usageError(ctx, 'Max 2 arguments');
  let set1 = expandSet(Buffer.from(operands[0]!, 'utf8'));
  if (typeof set1 === 'string') return fail(ctx, set1);
  if (flags.has('c')) {
    const given = new Set(set1);
    set1 = [];
    for (let c = 0; c < 256; c++) if (!given.has(c)) set1.push(c);
  }
  let set2: number[] | null = null;
  if (operands[1] !== undefined) {
    if (operands[1] === '') return fail(ctx, "set2 can't be empty string");
    const s = expandSet(Buffer.from(operands[1], 'utf8'));
    if (typeof s === 'string') return fail(ctx, s);
    set2 = s;
  }
  // Each byte's map: what it becomes, 0x100 to delete it, 0x200 to squeeze it.
  const map = Array.from({ length: 256 }, (_, c) => c);
  if (flags.has('d')) for (const c of set1) map[c] = c | 0x100;
  if (flags.has('s')) for (const c of [...set1, ...(set2 ?? [])]) map[c] = map[c]! | 0x200;
  if (!flags.has('d') && set2 !== null)
    for (const [k, c] of set1.entries()) map[c] = (map[c]! & 0xff00) | set2[Math.min(k, set2.length - 1)]!;
  const out: number[] = [];
  let prev = -1;
  for (;;) {
    const chunk = await ctx.stdin.read();
    if (chunk === null || ctx.signal.aborted) break;
    out.length = 0;
    for (const b of chunk) {
      const ch = map[b]!;
      if (flags.has('d') && ch & 0x100) continue;
      if (flags.has('s') && ch & 0x200 && prev === ch) continue;
      out.push(ch & 0xff);
      prev = ch;
    }
    ctx.stdout.write(Buffer.from(out));
    await ctx.stdout.drain();
  }
  return 0;
};

/** Each operand's bytes (stdin for none or `-`); a missing one is said and makes the status 1. */
export async function eachOperand(
  ctx: CommandContext,
  operands: string[],
  fn: (data: Buffer, name: string) => void | Promise<void>,
): Promise<number> {
  let status = 0;
  for (const f of operands.length > 0 ? operands : ['-']) {
    const input = openOperand(ctx, f);
    if (!input) {
      status = 1;
      continue;
    }
    await fn(await readAll(input), f);
  }
  return status;
}

/** A buffer's lines as byte strings (latin1), without their newlines; a last line without one counts. */
function byteLines(data: Buffer): string[] {
  const text = data.toString('latin1');
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** The length of the UTF-8 character at `i` of a byte string, or -1 where none starts. */
function utf8Length(s: string, i: number): number {
  const b = s.charCodeAt(i);
  const n =
    b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : -1;
  if (n < 0 || i + n > s.length) return -1;
  for (let k = 1; k < n; k++) if ((s.charCodeAt(i + k) & 0xc0) !== 0x80) return -1;
  return n;
}

/**
 * toybox cut -b|-c|-C|-f|-F LIST [-d DELIM] [-O DELIM] [-sD] [FILE...]: LIST is ranges
 * (N, N-M, N-, -M) counting from 1, sorted and merged unless -D; -f splits at any byte of
 * DELIM (TAB by default) and prints a line without one whole (none with -s); -F splits at
 * a regex (blanks by default) and joins with a space; -d '\n' selects whole lines.
 */
const cut: CommandFn = async (ctx) => {
  const flags = new Set<string>();
  const selections: { type: string; list: string }[] = [];
  let delim: string | undefined;
  let outDelim: string | undefined;
  const operands: string[] = [];
  let kind: string | null = null;
  const args = ctx.args;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith('--')) {
      const m = /^--output-delimiter(?:=(.*))?$/.exec(a);
      if (!m) return usageError(ctx, `Unknown option '${a.slice(2)}'`);
      outDelim = m[1] ?? args[++i];
      if (outDelim === undefined) return usageError(ctx, 'Missing argument to --output-delimiter');
      continue;
    }
    if (!a.startsWith('-') || a === '-') {
      operands.push(a);
      continue;
    }
    for (let k = 1; k < a.length; k++) {
      const f = a[k]!;
      if (!'bcCfFOd'.includes(f)) {
        flags.add(f);
        continue;
      }
      const value = k < a.length - 1 ? a.slice(k + 1) : args[++i];
      if (value === undefined) return usageError(ctx, `Missing argument to -${f}`);
      if (f === 'd') delim = value;
      else if (f === 'O') outDelim = value;
      else {
        // -b, -c, -f and -F exclude each other (-C goes with any).
        if ('bcfF'.includes(f)) {
          if (kind !== null && kind !== f) return usageError(ctx, `No '${f}' with '${kind}'`);
          kind = f;
        }
        selections.push({ type: f, list: value });
      }
      break;
    }
  }
  const has = (f: string) => flags.has(f) || selections.some((s) => s.type === f);
  if (selections.length === 0) return usageError(ctx, 'Needs -CFfcb');
  const fields = has('f') || has('F');
  if (flags.has('s') && !fields) return fail(ctx, '-s needs -Ff');
  if (delim !== undefined && !fields) return fail(ctx, '-d needs -Ff');
  // Bytes from here on: the delimiters as the line's bytes are.
  const d = Buffer.from(delim ?? (has('F') ? '[[:space:]][[:space:]]*' : '\t'), 'utf8').toString('latin1');
  let regex: RegExp | null = null;
  if (has('F')) {
    try {
      regex = new RegExp(posixRegexSource(d, true) ?? '[', 'g');
    } catch {
      return fail(ctx, `bad regex '${d}'`);
    }
  }
  const out =
    outDelim !== undefined
      ? Buffer.from(outDelim, 'utf8').toString('latin1')
      : has('F')
        ? ' '
        : has('f')
          ? d
          : null;
  // Ranges as toybox's get_range reads them; an error points a caret at where it stopped.
  let pairs: [number, number][] = [];
  const order = ['C', 'F', 'f', 'c', 'b'];
  for (const type of order) {
    for (const { list } of selections.filter((s) => s.type === type)) {
      let offset = 0;
      for (const item of list === '' ? [] : list.split(',')) {
        const bad = (at: number) => {
          const err = `bad -${type}`;
          ctx.stderr.write(
            `${ctx.name}: ${err} '${list}'\n${' '.repeat(5 + ctx.name.length + err.length + offset + at - 1)}^\n`,
          );
          return 1;
        };
        const pair: [number, number] = [0, Infinity];
        let at = 0;
        let n = 0;
        for (; ; n++) {
          if (n === 2) return bad(at);
          const m = /^\d+/.exec(item.slice(at));
          if (m) {
            const v = Number(m[0]);
            at += m[0].length;
            if (v < 1 || v > 0xffffffff) return bad(at);
            pair[n] = v;
          }
          if (item[at++] !== '-') break;
        }
        if (n === 0) pair[1] = pair[0];
        if (at < item.length) return bad(at);
        if (pair[0] > pair[1]) return bad(0);
        pairs.push(pair);
        offset += item.length + 1;
      }
    }
  }
  if (pairs.length === 0) return fail(ctx, 'no selections');
  if (!flags.has('D')) {
    pairs.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    const merged: [number, number][] = [];
    for (const p of pairs) {
      const last = merged[merged.length - 1];
      if (last && p[0] <= last[1]) last[1] = Math.max(last[1], p[1]);
      else merged.push([...p]);
    }
    pairs = merged;
  }
  const bytesMode = has('b');
  const charMode = !bytesMode && (has('C') || has('c'));
  let lineNumber = 0;
  /** One line's output (without its newline), or null for none at all. */
  const cutLine = (line: string): string | null => {
    lineNumber++;
    let text = '';
    for (const [i, [from, to]] of pairs.entries()) {
      if (d[0] === '\n' && fields) {
        if (lineNumber < from || lineNumber > to) {
          if (i + 1 === pairs.length) return null;
          continue;
        }
        return text + line;
      }
      let start = from > 0 ? from - 1 : 0;
      if (start >= line.length) continue;
      let end = to === 0 || to > line.length ? line.length : to;
      const count = end - start;
      let s: number;
      let e: number;
      if (bytesMode) {
        s = start;
        e = start + count;
      } else if (charMode) {
        s = 0;
        while (start > 0 && s < line.length) {
          const n = utf8Length(line, s);
          if (n > 0) start--;
          s += n < 1 ? 1 : n;
        }
        if (s >= line.length) continue;
        e = s;
        end = count;
        while (end > 0 && e < line.length) {
          const n = utf8Length(line, e);
          if (n > 0) end--;
          e += n < 1 ? 1 : n;
        }
      } else {
        // Skip start-1 delimiters to the first field, then count-1 more to the last.
        const next = (p: number): [number, number] | null => {
          if (regex === null) {
            for (let q = p; q < line.length; q++) if (d.includes(line[q]!)) return [q, q + 1];
            return null;
          }
          regex.lastIndex = p;
          const m = regex.exec(line);
          return m && m[0] !== '' ? [m.index, m.index + m[0].length] : null;
        };
        let p = 0;
        let skipped = 0;
        let want = start;
        while (want > 0 && p < line.length) {
          const hit = next(p);
          if (!hit) {
            p = line.length;
            break;
          }
          p = hit[1];
          want--;
          skipped++;
        }
        if (p >= line.length && (start > 0 || line === '')) {
          // No delimiter before the field: the whole line (none with -s, an empty one with -D).
          if (skipped === 0) {
            if (flags.has('D')) return text;
            if (flags.has('s')) return null;
            return text + line;
          }
          continue;
        }
        s = p;
        want = count;
        e = s;
        while (want > 0 && e < line.length) {
          const hit = next(e);
          if (!hit) {
            e = line.length;
            break;
          }
          if (--want === 0) e = hit[0];
          else e = hit[1];
        }
      }
      if (i > 0 && out !== null) text += out;
      text += line.slice(s, e);
    }
    return text;
  };
  return eachOperand(ctx, operands, (data) => {
    let result = '';
    for (const line of byteLines(data)) {
      const t = cutLine(line);
      if (t !== null) result += `${t}\n`;
    }
    ctx.stdout.write(Buffer.from(result, 'latin1'));
  });
};

const tee: CommandFn = async (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  const chunks: Buffer[] = [];
  for (;;) {
    const c = await ctx.stdin.read();
    if (c === null) break;
    chunks.push(c);
    ctx.stdout.write(c);
    await ctx.stdout.drain();
  }
  const data = Buffer.concat(chunks);
  let status = 0;
  for (const f of operands) {
    try {
      ctx.fs.writeFile(resolvePath(ctx, f), data, { append: flags.has('a') });
    } catch (error) {
      ctx.stderr.write(`tee: ${f}: ${error instanceof FsError ? error.reason : String(error)}\n`);
      status = 1;
    }
  }
  return status;
};

/**
 * toybox xargs: -n N, -I REPLACE (one line per command), -0 / -d DELIM, -r (nothing on
 * empty input), -t (show each command); statuses 123 (a command failed), 124 (one exited
 * 255), 125 (one was killed), 127 (not found).
 */
const xargs: CommandFn = async (ctx) => {
  let per = Infinity;
  let replace: string | null = null;
  let delimiter: string | RegExp = /\s+/;
  let noEmpty = false;
  let trace = false;
  let i = 0;
  for (; i < ctx.args.length && ctx.args[i]!.startsWith('-') && ctx.args[i] !== '-'; i++) {
    const a = ctx.args[i]!;
    const value = (flag: string) => (a.length > flag.length ? a.slice(flag.length) : (ctx.args[++i] ?? ''));
    if (a === '--') {
      i++;
      break;
    }
    if (a.startsWith('-n')) per = Math.max(1, Number(value('-n')) || 1);
    else if (a.startsWith('-I')) replace = value('-I');
    else if (a.startsWith('-d')) delimiter = unescapeBackslashes(value('-d')).text;
    else if (a.startsWith('-s') || a.startsWith('-E') || a.startsWith('-L')) value(a.slice(0, 2));
    else if (/^-[0rtpx]+$/.test(a)) {
      if (a.includes('0')) delimiter = '\0';
      noEmpty ||= a.includes('r');
      trace ||= a.includes('t');
      if (a.includes('p')) {
        ctx.stderr.write("xargs: the virtual phone's xargs does not model -p (no terminal to ask)\n");
        return 1;
      }
    } else return usageError(ctx, `Unknown option '${a.replace(/^-+/, '')}'`);
  }
  const command = i < ctx.args.length ? ctx.args.slice(i) : ['echo'];
  const text = (await readAll(ctx.stdin)).toString('utf8');
  const items =
    replace !== null
      ? text.split('\n').filter((l) => l.length > 0)
      : text.split(delimiter).filter((x) => x.length > 0);
  if (items.length === 0 && (noEmpty || replace !== null)) return 0;
  const batches: string[][] = [];
  if (replace !== null)
    for (const item of items) batches.push(command.map((w) => w.replaceAll(replace!, item)));
  else if (per === Infinity) batches.push([...command, ...items]);
  else
    for (let start = 0; start < Math.max(items.length, 1); start += per)
      batches.push([...command, ...items.slice(start, start + per)]);
  let status = 0;
  for (const argv of batches) {
    if (ctx.signal.aborted) break;
    if (trace) ctx.stderr.write(`${argv.join(' ')}\n`);
    const child = ctx.spawn(commandSource(argv), ctx, { exec: true });
    const s = await child.done;
    if (s === 127 || s === 126) return s;
    if (s === 255) return 124;
    if (s > 128) return 125;
    if (s !== 0) status = 123;
  }
  return status;
};

const base64: CommandFn = async (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  const data = operands[0] ? ctx.fs.readFile(resolvePath(ctx, operands[0])) : await readAll(ctx.stdin);
  if (flags.has('d')) ctx.stdout.write(Buffer.from(data.toString('utf8'), 'base64'));
  else ctx.stdout.write(`${(data.toString('base64').match(/.{1,76}/g) ?? []).join('\n')}\n`);
  return 0;
};

const yes: CommandFn = async (ctx) => {
  const line = `${ctx.args.length > 0 ? ctx.args.join(' ') : 'y'}\n`.repeat(512);
  while (!ctx.signal.aborted && !ctx.stdout.closed) {
    ctx.stdout.write(line);
    await ctx.stdout.drain();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return 0;
};

export const TEXT_COMMANDS: Record<string, CommandFn> = {
  echo,
  printf,
  grep,
  egrep: grep,
  fgrep: grep,
  head,
  tail,
  wc,
  sort,
  uniq,
  tr,
  cut,
  tee,
  xargs,
  base64,
  yes,
};
