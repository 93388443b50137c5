/** Text applets for pipes: echo, printf, grep, head, tail, wc, sort, uniq, tr, cut, tee, ... */
import { StringDecoder } from 'node:string_decoder';
import { FsError } from '../../fs.js';
import { commandSource, fail, getopt, openOperand, resolvePath, usageError } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';
import { readAll } from '../io.js';
import { regexSource } from './sed.js';
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

/** How strtoll/strtold read a printf argument: the number, and whether text is left over. */
interface ParsedNumber {
  value: number;
  bad: boolean;
}

/** strtoll(arg, &end, 0), or a quoted character's code (`'A` is 65), as toybox printf reads. */
function parseInteger(arg: string): ParsedNumber {
  if (arg.startsWith("'") || arg.startsWith('"')) return { value: arg.codePointAt(1) ?? 0, bad: false };
  const m = /^\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)/.exec(arg);
  if (!m) return { value: 0, bad: arg !== '' };
  const digits = m[2]!;
  const magnitude = /^0[xX]/.test(digits)
    ? parseInt(digits.slice(2), 16)
    : digits.startsWith('0')
      ? parseInt(digits, 8)
      : Number(digits);
  return { value: m[1] === '-' ? -magnitude : magnitude, bad: m[0].length < arg.length };
}

/** strtold(arg, &end). */
function parseFloating(arg: string): ParsedNumber {
  const m = /^\s*[+-]?(?:inf(?:inity)?|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)/i.exec(arg);
  if (!m) return { value: 0, bad: arg !== '' };
  const text = m[0].trim().toLowerCase();
  const value = text.includes('inf') ? (text.startsWith('-') ? -Infinity : Infinity) : Number(text);
  return { value, bad: m[0].length < arg.length };
}

/**
 * printf(1)'s format as toybox runs it: the format repeats while arguments remain, and an
 * argument that is not wholly a number still prints what its leading part is worth, then
 * `onBad` hears of it (toybox's `printf: bad %d x`, status 1).
 */
export function formatPrintf(
  format: string,
  args: string[],
  onBad: (conversion: string, arg: string) => void = () => undefined,
): string {
  let out = '';
  let argIndex = 0;
  const next = () => args[argIndex++] ?? '';
  const integer = (conv: string): number => {
    const arg = next();
    const n = parseInteger(arg);
    if (n.bad) onBad(conv, arg);
    return Math.trunc(n.value);
  };
  do {
    const re = /%([-+ 0#]*)(\d+|\*)?(?:\.(\d+|\*))?([sdiouxXcfeEgGb%])/g;
    let last = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(format))) {
      out += unescapeBackslashes(format.slice(last, m.index)).text;
      last = re.lastIndex;
      const [, flags = '', widthSpec, precisionSpec, conv = 's'] = m;
      if (conv === '%') {
        out += '%';
        continue;
      }
      const width = widthSpec === '*' ? parseInteger(next()).value : Number(widthSpec ?? 0);
      const precision =
        precisionSpec === '*'
          ? parseInteger(next()).value
          : precisionSpec === undefined
            ? undefined
            : Number(precisionSpec);
      let v: string;
      let numeric = true;
      switch (conv) {
        case 'd':
        case 'i': {
          const n = integer(conv);
          v = String(Math.abs(n));
          if (precision !== undefined) v = v.padStart(precision, '0');
          v = (n < 0 ? '-' : flags.includes('+') ? '+' : flags.includes(' ') ? ' ' : '') + v;
          break;
        }
        case 'u':
        case 'o':
        case 'x':
        case 'X': {
          const n = integer(conv);
          // A negative number prints as its 64-bit two's complement, as C's unsigned formats do.
          const unsigned = n < 0 ? BigInt.asUintN(64, BigInt(n)) : BigInt(n);
          v = unsigned.toString(conv === 'u' ? 10 : conv === 'o' ? 8 : 16);
          if (conv === 'X') v = v.toUpperCase();
          if (precision !== undefined) v = v.padStart(precision, '0');
          if (flags.includes('#') && unsigned !== 0n && conv !== 'u')
            v = (conv === 'o' ? '0' : `0${conv}`) + v;
          break;
        }
        case 'c':
          numeric = false;
          v = next().slice(0, 1);
          break;
        case 'f':
        case 'e':
        case 'E':
        case 'g':
        case 'G': {
          const arg = next();
          const parsed = parseFloating(arg);
          if (parsed.bad) onBad(conv, arg);
          const num = parsed.value;
          const p = precision ?? 6;
          if (!Number.isFinite(num)) v = Number.isNaN(num) ? 'nan' : num < 0 ? '-inf' : 'inf';
          else if (conv === 'f') v = num.toFixed(p);
          else if (conv === 'e' || conv === 'E') v = num.toExponential(p).replace(/e([+-])(\d)$/, 'e$10$2');
          else v = String(Number(num.toPrecision(p || 1)));
          if (conv === 'E' || conv === 'G') v = v.toUpperCase();
          if (num >= 0 && flags.includes('+')) v = `+${v}`;
          break;
        }
        case 'b':
          numeric = false;
          v = unescapeBackslashes(next()).text;
          break;
        default: {
          numeric = false;
          v = next();
          if (precision !== undefined) v = v.slice(0, precision);
        }
      }
      if (v.length < width) {
        if (flags.includes('-')) v = v.padEnd(width);
        else if (flags.includes('0') && numeric && precision === undefined) {
          const sign = /^[+\- ]/.test(v) ? v[0]! : '';
          v = sign + v.slice(sign.length).padStart(width - sign.length, '0');
        } else v = v.padStart(width);
      }
      out += v;
    }
    out += unescapeBackslashes(format.slice(last)).text;
  } while (argIndex > 0 && argIndex < args.length);
  return out;
}

const printf: CommandFn = (ctx) => {
  if (ctx.args.length === 0) return fail(ctx, 'Needs 1 argument');
  let status = 0;
  const text = formatPrintf(ctx.args[0]!, ctx.args.slice(1), (conv, arg) => {
    ctx.stderr.write(`printf: bad %${conv} ${arg}\n`);
    status = 1;
  });
  ctx.stdout.write(text);
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

/**
 * getopt's reading of an applet's arguments, each value option keeping every value given;
 * a missing value or an option outside `modeled` is said (status 2) and gives a number.
 */
function toyboxArgs(
  ctx: CommandContext,
  valued: string,
  modeled: string,
): { flags: Set<string>; values: Map<string, string[]>; operands: string[] } | number {
  const { flags, lists, operands, unknown, missing } = getopt(ctx.args, valued);
  if (missing !== null) return fail(ctx, `Missing argument to -${missing} (see "${ctx.name} --help")`, 2);
  const other = [...flags].find((f) => !modeled.includes(f));
  if (other !== undefined) return fail(ctx, `-${other}: not modeled by the virtual phone`, 2);
  if (unknown[0] !== undefined) return fail(ctx, `${unknown[0]}: not modeled by the virtual phone`, 2);
  return { flags, values: lists, operands };
}

/** grep's options: those that take a value, and the flags it models. */
const GREP_VALUES = 'efmABC';
const GREP_FLAGS = 'EFHIchilLnoqsvwxz';

/**
 * toybox grep [-EFHIchilLnoqsvwxz] [-e PATTERN]... [-f FILE]... [-m MAX] [-A N] [-B N]
 * [-C N] [PATTERN] [FILE...]: every -e and -f pattern counts; context lines with `-` and
 * groups parted by `--`; a missing file is said (unless -s) and makes the status 2.
 */
const grep: CommandFn = async (ctx) => {
  const parsed = toyboxArgs(ctx, GREP_VALUES, GREP_FLAGS);
  if (typeof parsed === 'number') return parsed;
  const { flags, operands } = parsed;
  const values = new Map([...parsed.values].map(([f, v]) => [f, v[v.length - 1]!]));
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
    patterns.push(first);
  }
  const fixed = flags.has('F') || ctx.name === 'fgrep';
  const extended = flags.has('E') || ctx.name === 'egrep';
  let re: RegExp;
  try {
    const source = patterns
      .map((p) => (fixed ? p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : regexSource(p, extended)))
      .map((p) => `(?:${p})`)
      .join('|');
    re = new RegExp(
      flags.has('x') ? `^(?:${source})$` : flags.has('w') ? `\\b(?:${source})\\b` : source,
      flags.has('i') ? 'i' : '',
    );
  } catch {
    return fail(ctx, `bad regex '${patterns.join('')}'`, 2);
  }
  const number = (f: string, fallback: number) => {
    const n = Number(values.get(f) ?? values.get('C') ?? fallback);
    return Number.isInteger(n) && n >= 0 ? n : fallback;
  };
  const after = number('A', 0);
  const before = number('B', 0);
  const max = values.has('m') ? Number(values.get('m')) : Infinity;
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
    const lines = splitLines(text);
    let count = 0;
    /** The last line printed (for context and the `--` between groups), -1 before any. */
    let printed = -1;
    let afterLeft = 0;
    const print = (n: number, mark: ':' | '-', body: string) => {
      if (printed >= 0 && n > printed + 1 && (after > 0 || before > 0)) ctx.stdout.write('--\n');
      ctx.stdout.write(
        `${showName ? `${name}${mark}` : ''}${flags.has('n') ? `${n + 1}${mark}` : ''}${body}\n`,
      );
      printed = n;
    };
    for (let n = 0; n < lines.length; n++) {
      const line = lines[n]!;
      re.lastIndex = 0;
      const hit = re.test(line) !== flags.has('v');
      if (!hit) {
        if (afterLeft > 0) {
          afterLeft--;
          if (!flags.has('c') && !flags.has('l') && !flags.has('L') && !flags.has('q')) print(n, '-', line);
        }
        continue;
      }
      if (count >= max) break;
      count++;
      if (flags.has('q')) return 0;
      if (flags.has('c') || flags.has('l') || flags.has('L')) continue;
      for (let b = Math.max(printed + 1, n - before); b < n; b++) print(b, '-', lines[b]!);
      if (flags.has('o') && !flags.has('v')) {
        const g = new RegExp(re.source, `${re.flags}g`);
        // Empty matches print nothing.
        for (const m of line.matchAll(g)) if (m[0] !== '') print(n, ':', m[0]);
        printed = n;
      } else print(n, ':', line);
      afterLeft = count >= max ? 0 : after;
    }
    if (flags.has('c')) ctx.stdout.write(`${showName ? `${name}:` : ''}${count}\n`);
    if (flags.has('l') && count > 0) ctx.stdout.write(`${name}\n`);
    if (flags.has('L') && count === 0) ctx.stdout.write(`${name}\n`);
    matched += count;
  }
  if (status !== 0) return status;
  return matched > 0 ? 0 : 1;
};

function countArg(ctx: CommandContext): { n: number; files: string[]; bytes: boolean; fromStart: boolean } {
  let n = 10;
  let bytes = false;
  let fromStart = false;
  const files: string[] = [];
  for (let i = 0; i < ctx.args.length; i++) {
    const a = ctx.args[i]!;
    let value: string | undefined;
    if (a === '-n' || a === '-c') {
      bytes = a === '-c';
      value = ctx.args[++i];
    } else if (/^-[nc].+/.test(a)) {
      bytes = a[1] === 'c';
      value = a.slice(2);
    } else if (/^-\d+$/.test(a)) value = a.slice(1);
    else if (a === '-f' || a === '-F') continue;
    else {
      files.push(a);
      continue;
    }
    if (value !== undefined) {
      if (value.startsWith('+')) fromStart = true;
      n = Math.abs(parseInt(value, 10) || 0);
    }
  }
  return { n, files, bytes, fromStart };
}

/** The first lines (or bytes) of an input, read only as far as needed (`logcat | head -1` ends). */
async function headOf(ctx: CommandContext, input: Input, n: number, bytes: boolean): Promise<void> {
  let taken = 0;
  let pending = '';
  // A character may be split between chunks: decode across them.
  const decoder = new StringDecoder('utf8');
  while (taken < n || n === 0) {
    if (n === 0) return;
    const chunk = await input.read();
    if (chunk === null) break;
    if (bytes) {
      const part = chunk.subarray(0, n - taken);
      ctx.stdout.write(part);
      taken += part.length;
      continue;
    }
    pending += decoder.write(chunk);
    let i: number;
    while (taken < n && (i = pending.indexOf('\n')) >= 0) {
      ctx.stdout.write(pending.slice(0, i + 1));
      pending = pending.slice(i + 1);
      taken++;
    }
  }
  if (bytes || taken >= n) return;
  pending += decoder.end();
  if (pending) ctx.stdout.write(pending);
}

const head: CommandFn = async (ctx) => {
  const { n, files, bytes } = countArg(ctx);
  if (files.length === 0) files.push('-');
  let status = 0;
  for (const [i, f] of files.entries()) {
    const input = openOperand(ctx, f);
    if (!input) {
      status = 1;
      continue;
    }
    if (files.length > 1) ctx.stdout.write(`${i > 0 ? '\n' : ''}==> ${f} <==\n`);
    await headOf(ctx, input, n, bytes);
  }
  return status;
};

const tail: CommandFn = async (ctx) => {
  const { n, files, bytes, fromStart } = countArg(ctx);
  const inputs = await inputText(ctx, files);
  if (typeof inputs === 'number') return 1;
  for (const { name, text } of inputs) {
    if (inputs.length > 1) ctx.stdout.write(`==> ${name} <==\n`);
    if (bytes) {
      const b = Buffer.from(text);
      ctx.stdout.write(fromStart ? b.subarray(Math.max(0, n - 1)) : b.subarray(Math.max(0, b.length - n)));
    } else {
      const lines = splitLines(text);
      const sel = fromStart ? lines.slice(Math.max(0, n - 1)) : n === 0 ? [] : lines.slice(-n);
      for (const l of sel) ctx.stdout.write(`${l}\n`);
    }
  }
  return 0;
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
  const parsed = toyboxArgs(ctx, 'kto', 'bcfnrsu');
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

function expandSet(set: string): string {
  const named: Record<string, string> = {
    '[:lower:]': 'abcdefghijklmnopqrstuvwxyz',
    '[:upper:]': 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
    '[:digit:]': '0123456789',
    '[:space:]': ' \t\n\r\f\v',
  };
  let s = set;
  for (const [k, v] of Object.entries(named)) s = s.split(k).join(v);
  s = unescapeBackslashes(s).text;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i + 1] === '-' && i + 2 < s.length) {
      for (let c = s.charCodeAt(i); c <= s.charCodeAt(i + 2); c++) out += String.fromCharCode(c);
      i += 2;
    } else out += s[i];
  }
  return out;
}

const tr: CommandFn = async (ctx) => {
  const { flags, operands } = getopt(ctx.args);
  const text = (await readAll(ctx.stdin)).toString('utf8');
  const from = expandSet(operands[0] ?? '');
  const to = expandSet(operands[1] ?? '');
  let out = '';
  for (const c of text) {
    const i = from.indexOf(c);
    if (flags.has('d')) {
      if (i < 0) out += c;
    } else if (i >= 0) out += to[Math.min(i, to.length - 1)] ?? '';
    else out += c;
  }
  if (flags.has('s') && to)
    out = out.replace(new RegExp(`([${to.replace(/[\]\\^-]/g, '\\$&')}])\\1+`, 'g'), '$1');
  ctx.stdout.write(out);
  return 0;
};

const cut: CommandFn = async (ctx) => {
  const { values, operands } = getopt(ctx.args, 'dfc');
  const inputs = await inputText(ctx, operands);
  if (typeof inputs === 'number') return 1;
  const delim = values.get('d') ?? '\t';
  const ranges = (values.get('f') ?? values.get('c') ?? '1').split(',').map((r) => {
    const [a, b] = r.split('-');
    return {
      from: a ? Number(a) : 1,
      to: b === undefined ? (a ? Number(a) : Infinity) : b ? Number(b) : Infinity,
    };
  });
  const pick = (n: number) => ranges.some((r) => n >= r.from && n <= r.to);
  for (const { text } of inputs) {
    for (const line of splitLines(text)) {
      if (values.has('c')) ctx.stdout.write(`${[...line].filter((_, i) => pick(i + 1)).join('')}\n`);
      else if (!line.includes(delim)) ctx.stdout.write(`${line}\n`);
      else
        ctx.stdout.write(
          `${line
            .split(delim)
            .filter((_, i) => pick(i + 1))
            .join(delim)}\n`,
        );
    }
  }
  return 0;
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
