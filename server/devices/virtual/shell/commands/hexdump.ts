/** Byte dumps and line merging as toybox 0.8.9 prints them: od, xxd and paste. */
import { fail, resolvePath, toyboxArgs, usageError } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';
import { openInput, readAll } from '../io.js';
import type { Input } from '../io.js';
import { atolx, C_ESCAPES, eachOperand } from './text.js';

/** A numeric option's last value (atolx), checked against a lowest and highest value. */
function numberOption(
  ctx: CommandContext,
  values: Map<string, string[]>,
  letter: string,
  fallback: number,
  low = -Infinity,
  high = Infinity,
): number | string {
  const given = values.get(letter)?.at(-1);
  if (given === undefined) return fallback;
  const n = atolx(given);
  if (n === null) return `not integer: ${given}`;
  if (n < low) return `-${letter} < ${low}`;
  if (n > high) return `-${letter} > ${high}`;
  return n;
}

/** od's output types: a(scii name), c(har), d(ecimal), u(nsigned), o(ctal), (he)x; size in bytes. */
interface OdType {
  type: 'a' | 'c' | 'd' | 'u' | 'o' | 'x';
  size: number;
}

const ASCII_NAMES =
  'nul soh stx etx eot enq ack bel bs ht nl vt ff cr so si dle dc1 dc2 dc3 dc4 nak syn etb can em sub esc fs gs rs us sp'.split(
    ' ',
  );

/** Reads one -t argument (`x1`, `o2`, `c`, `dI`...) into types, or says it is bad. */
function odTypes(spec: string, types: OdType[]): string | null {
  let s = spec;
  while (s !== '') {
    const type = s[0]!;
    s = s.slice(1);
    if (type === 'f') return `-t f: not modeled by the virtual phone`;
    if (!'acduox'.includes(type)) return `bad -t ${spec}`;
    let size = 1;
    const digits = /^\d+/.exec(s);
    if (digits) {
      size = Number(digits[0]);
      s = s.slice(digits[0].length);
      if ('ac'.includes(type) ? size !== 1 : size < 1 || size > 8) return `bad -t ${spec}`;
    } else if (!'ac'.includes(type)) {
      const at = 'CSIL'.indexOf(s[0] ?? '');
      if (at < 0) size = 4;
      else {
        s = s.slice(1);
        size = 1 << at;
      }
    }
    types.push({ type: type as OdType['type'], size });
  }
  return null;
}

/** One od item: its text and the width toybox gives it (with the leading blank). */
function odItem(t: OdType, bytes: Buffer, at: number): { text: string; pad: number } {
  if (t.type === 'a' || t.type === 'c') {
    const c = bytes[at]!;
    let text: string;
    if (t.type === 'a') {
      const low = c & 127;
      text = low <= 32 ? ASCII_NAMES[low]! : low === 127 ? 'del' : String.fromCharCode(low);
    } else {
      const escapes: Record<number, string> = {
        8: '\\b',
        12: '\\f',
        10: '\\n',
        13: '\\r',
        9: '\\t',
        7: '\\a',
        11: '\\v',
        0: '\\0',
      };
      text = escapes[c] ?? (c < 32 || c >= 127 ? c.toString(8).padStart(3, '0') : String.fromCharCode(c));
    }
    return { text, pad: 4 };
  }
  let value = 0n;
  for (let k = 0; k < t.size; k++) value |= BigInt(bytes[at + k] ?? 0) << BigInt(8 * k);
  const bits = BigInt(8 * t.size);
  const max = t.type === 'd' ? (1n << (bits - 1n)) - 1n : (1n << bits) - 1n;
  const radix = t.type === 'o' ? 8 : t.type === 'x' ? 16 : 10;
  let width = max.toString(radix).length;
  let text: string;
  if (t.type === 'd') {
    width++;
    text = BigInt.asIntN(8 * t.size, value)
      .toString()
      .padStart(width);
  } else if (t.type === 'u') text = value.toString().padStart(width);
  else text = value.toString(radix).padStart(width, '0');
  return { text, pad: width + 1 };
}

/**
 * toybox od [-bcdosxv] [-A doxn] [-t acduox[SIZE]]... [-j SKIP] [-N COUNT] [-w WIDTH]
 * [FILE...]: the files' bytes as one stream, WIDTH a line, a line equal to the one before
 * as `*` (unless -v), the address in octal unless -A says otherwise. (-t f is not modeled.)
 */
const od: CommandFn = async (ctx) => {
  const parsed = toyboxArgs(ctx, 'jwNAt', 'vxsodcb');
  if (typeof parsed === 'number') return parsed;
  const { flags, values, operands } = parsed;
  const width = numberOption(ctx, values, 'w', 16, 1);
  const skip = numberOption(ctx, values, 'j', 0);
  const limit = numberOption(ctx, values, 'N', Infinity);
  for (const n of [width, skip, limit]) if (typeof n === 'string') return usageError(ctx, n);
  const w = width as number;
  const radix = values.get('A')?.at(-1);
  const addressIndex = radix === undefined ? 2 : 'ndox'.indexOf(radix[0] ?? '\0');
  if (addressIndex < 0) return fail(ctx, `bad -A '${radix![0] ?? ''}'`);
  const types: OdType[] = [];
  const specs = [...(values.get('t') ?? [])];
  for (const [flag, spec] of [
    ['b', 'o1'],
    ['c', 'c'],
    ['d', 'u2'],
    ['o', 'o2'],
    ['s', 'd2'],
    ['x', 'x2'],
  ] as const)
    if (flags.has(flag)) specs.push(spec);
  if (specs.length === 0) specs.push('o2');
  for (const spec of specs) {
    const bad = odTypes(spec, types);
    if (bad !== null) return fail(ctx, bad);
  }
  const parts: { name: string; data: Buffer }[] = [];
  const status = await eachOperand(ctx, operands, (data, name) => void parts.push({ name, data }));
  let data = Buffer.concat(parts.map((p) => p.data));
  data = data.subarray(Math.min(skip as number, data.length));
  if ((limit as number) < data.length) data = data.subarray(0, limit as number);
  const address = (pos: number) =>
    addressIndex === 0
      ? ''
      : addressIndex === 1
        ? String(pos).padStart(7, '0')
        : addressIndex === 2
          ? pos.toString(8).padStart(7, '0')
          : pos.toString(16).padStart(6, '0');
  // The widest item per byte of all the types sets every column's width.
  let pad = 0;
  const zero = Buffer.alloc(8);
  for (const t of types) pad = Math.max(pad, Math.ceil(odItem(t, zero, 0).pad / t.size));
  let out = '';
  let previous: Buffer | null = null;
  let star = false;
  let pos = skip as number;
  for (let at = 0; at < data.length; at += w) {
    const line = Buffer.alloc(w);
    data.copy(line, 0, at, Math.min(at + w, data.length));
    const length = Math.min(w, data.length - at);
    if (!flags.has('v') && previous !== null && line.equals(previous)) {
      if (!star) out += '*\n';
      star = true;
      pos += length;
      continue;
    }
    star = false;
    previous = line;
    out += address(pos);
    pos += length;
    for (const [i, t] of types.entries()) {
      for (let j = 0; j < length; j += t.size) {
        const item = odItem(t, line, j);
        out += item.text.padStart(pad * t.size + (i > 0 && j === 0 ? 7 : 0));
      }
      out += '\n';
    }
  }
  if (addressIndex !== 0) out += `${address(pos)}\n`;
  ctx.stdout.write(Buffer.from(out, 'latin1'));
  return status;
};

/**
 * toybox xxd [-c N] [-g N] [-i] [-l N] [-o N] [-p] [-r] [-s N] [FILE]: the offset, the
 * bytes in hex grouped by -g, then the printable ones; -p plain hex (30 bytes a line), -i
 * C initializer bytes, -r turns a dump (or -p's hex) back into bytes.
 */
const xxd: CommandFn = async (ctx) => {
  const parsed = toyboxArgs(ctx, 'clogs', 'ipr');
  if (typeof parsed === 'number') return parsed;
  const { flags, values, operands } = parsed;
  if (flags.has('r') && values.has('s')) return usageError(ctx, "No 's' with 'r'");
  if (operands.length > 1) return usageError(ctx, 'Max 1 argument');
  const plain = flags.has('p');
  const numbers: Record<string, number> = {};
  for (const [letter, fallback, low, high] of [
    ['c', plain ? 30 : flags.has('i') ? 12 : 16, 0, 256],
    ['l', 0, -Infinity, Infinity],
    ['o', 0, -Infinity, Infinity],
    ['g', 2, 0, Infinity],
    ['s', 0, -Infinity, Infinity],
  ] as const) {
    const n = numberOption(ctx, values, letter, fallback, low, high);
    if (typeof n === 'string') return usageError(ctx, n);
    numbers[letter] = n;
  }
  const c = numbers.c!;
  const g = plain && !values.has('g') ? c : numbers.g!;
  const parts: { name: string; data: Buffer }[] = [];
  const status = await eachOperand(ctx, operands, (data, name) => void parts.push({ name, data }));
  if (parts.length === 0) return status;
  let data = parts[0]!.data;
  let out = '';
  if (flags.has('r')) {
    const text = data.toString('latin1');
    const bytes: number[] = [];
    if (flags.has('i')) {
      for (const m of text.matchAll(/\s*0x([0-9a-fA-F]{1,2}),?/g)) bytes.push(parseInt(m[1]!, 16));
    } else {
      for (const line of text.split('\n')) {
        let rest = line;
        if (!plain) {
          const m = /^\s*([0-9a-fA-F]+):\s*/.exec(rest);
          if (m) {
            const at = parseInt(m[1]!, 16);
            while (bytes.length < at) bytes.push(0);
            bytes.length = Math.max(0, at);
            rest = rest.slice(m[0].length);
          }
        }
        let col = 0;
        let i = 0;
        while (plain || c === 0 || col < c) {
          const hex = /^[0-9a-fA-F]{2}/.exec(rest.slice(i));
          if (!hex) break;
          bytes.push(parseInt(hex[0], 16));
          col++;
          i += 2;
          if (rest[i] === ' ') i++;
        }
      }
    }
    ctx.stdout.write(Buffer.from(bytes));
    return status;
  }
  let pos = 0;
  // A pipe cannot seek: toybox's xxd -s says so for stdin.
  if (values.has('s') && (operands.length === 0 || operands[0] === '-'))
    return fail(ctx, 'lseek: Illegal seek');
  if (values.has('s')) {
    pos = Math.max(0, numbers.s!);
    data = data.subarray(Math.min(pos, data.length));
  }
  if (numbers.l! > 0) data = data.subarray(0, numbers.l);
  if (flags.has('i')) {
    for (const [k, b] of [...data].entries()) {
      out += `${k % c === 0 ? '  ' : ', '}${b === 0 ? '00' : `0x${b.toString(16).padStart(2, '0')}`}`;
      if (c > 0 && k % c === c - 1) out += ',\n';
    }
    if (data.length % (c || Infinity) !== 0 || (c === 0 && data.length > 0)) out += '\n';
    ctx.stdout.write(out);
    return status;
  }
  const step = c === 0 ? Math.max(data.length, 1) : c;
  for (let at = 0; at < data.length; at += step) {
    const line = data.subarray(at, at + step);
    if (!plain) out += `${(numbers.o! + pos + at).toString(16).padStart(8, '0')}: `;
    let space = 2 * c + (g ? Math.floor((c + g - 1) / g) + 1 : 2);
    for (let i = 0; i < line.length;) {
      out += line[i++]!.toString(16).padStart(2, '0');
      space -= 2;
      if (g && i % g === 0) {
        out += ' ';
        space--;
      }
    }
    if (!plain) {
      out += ' '.repeat(Math.max(0, space));
      for (const b of line) out += b >= 0x20 && b <= 0x7e ? String.fromCharCode(b) : '.';
    }
    if (c || !plain) out += '\n';
  }
  if (!c && plain) out += '\n';
  ctx.stdout.write(out);
  return status;
};

/** paste's -d list as delimiters, in turn: \n \t \\ and \0 (none) are escapes. */
function pasteDelimiters(list: string): string[] {
  const out: string[] = [];
  const chars = [...list];
  for (let i = 0; i < chars.length; i++) {
    if (chars[i] !== '\\') out.push(chars[i]!);
    else if (chars[i + 1] === '0') {
      out.push('');
      i++;
    } else if (chars[i + 1] !== undefined && C_ESCAPES[chars[i + 1]!] !== undefined)
      out.push(C_ESCAPES[chars[++i]!]!);
    else out.push('\\');
  }
  return out;
}

/**
 * toybox paste [-s] [-d LIST] [FILE...]: each file's next line side by side, parted by
 * LIST's delimiters in turn (TAB by default); -s each file's lines on one line. `-`
 * operands share stdin, a line each in turn.
 */
const paste: CommandFn = async (ctx) => {
  const parsed = toyboxArgs(ctx, 'd', 's');
  if (typeof parsed === 'number') return parsed;
  const { flags, values, operands } = parsed;
  const list = values.get('d')?.at(-1) ?? '\t';
  const delimiters = list === '' ? [''] : pasteDelimiters(list);
  const names = operands.length > 0 ? operands : ['-'];
  /** A reader of lines per operand (stdin's shared); null once at its end or missing. */
  let stdinLines: string[] | null = null;
  let stdinAt = 0;
  let missing = -1;
  const readers: ({ lines: string[]; at: number } | 'stdin' | null)[] = [];
  for (const name of names) {
    if (name === '-') {
      if (stdinLines === null) stdinLines = lines((await readAll(ctx.stdin)).toString('latin1'));
      readers.push('stdin');
      continue;
    }
    // toybox's paste goes on to fdopen() the file it could not open, and stops there.
    let input: Input;
    try {
      input = openInput(ctx.fs, resolvePath(ctx, name), ctx.stdin);
    } catch {
      missing = readers.length;
      break;
    }
    readers.push({ lines: lines((await readAll(input)).toString('latin1')), at: 0 });
  }
  if (missing >= 0 && !flags.has('s')) return fail(ctx, 'Bad file descriptor');
  const next = (r: (typeof readers)[number]): string | null => {
    if (r === null) return null;
    if (r === 'stdin') return stdinAt < stdinLines!.length ? stdinLines![stdinAt++]! : null;
    return r.at < r.lines.length ? r.lines[r.at++]! : null;
  };
  let out = '';
  if (flags.has('s')) {
    for (const r of readers) {
      let line: string | null;
      let k = 0;
      while ((line = next(r)) !== null) {
        if (k > 0) out += delimiters[(k - 1) % delimiters.length];
        out += line;
        k++;
      }
      out += '\n';
    }
    if (missing >= 0) {
      ctx.stdout.write(Buffer.from(out, 'latin1'));
      return fail(ctx, 'Bad file descriptor');
    }
  } else {
    for (;;) {
      let row = '';
      let any = false;
      let d = 0;
      for (const [i, r] of readers.entries()) {
        const line = next(r);
        if (line === null) {
          readers[i] = null;
          if (!any) continue;
        }
        const count = any ? 1 : i;
        any = true;
        for (let k = 0; k < count; k++) row += delimiters[d++ % delimiters.length];
        if (line !== null) row += line;
      }
      if (!any) break;
      out += `${row}\n`;
    }
  }
  ctx.stdout.write(Buffer.from(out, 'latin1'));
  return 0;
};

function lines(text: string): string[] {
  if (text === '') return [];
  const all = text.split('\n');
  if (all[all.length - 1] === '') all.pop();
  return all;
}

export const HEXDUMP_COMMANDS: Record<string, CommandFn> = { od, xxd, paste };
