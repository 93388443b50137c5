/** toybox seq, expr and cmp, and gzip/gunzip/zcat (zlib, as toybox's deflate is). */
import { gunzipSync, gzipSync } from 'node:zlib';
import { FsError } from '../../fs.js';
import { openOperand, resolvePath, usageError } from '../command.js';
import type { CommandFn } from '../command.js';
import { readAll } from '../io.js';
import { formatPrintf } from './text.js';

/** seq [-w] [-f FMT] [-s SEP] [FIRST [INC]] LAST */
const seq: CommandFn = (ctx) => {
  let format: string | null = null;
  let separator = '\n';
  let equalWidth = false;
  const numbers: string[] = [];
  for (let i = 0; i < ctx.args.length; i++) {
    const a = ctx.args[i]!;
    if (a.startsWith('-f')) format = a.length > 2 ? a.slice(2) : (ctx.args[++i] ?? '');
    else if (a.startsWith('-s')) separator = a.length > 2 ? a.slice(2) : (ctx.args[++i] ?? '');
    else if (a === '-w') equalWidth = true;
    else if (/^-?(\d+\.?\d*|\.\d+)$/.test(a)) numbers.push(a);
    else if (a.startsWith('-') && a.length > 1) return usageError(ctx, `Unknown option '${a.slice(1)}'`);
    else {
      ctx.stderr.write(`seq: Not a number '${a}'\n`);
      return 1;
    }
  }
  if (numbers.length < 1 || numbers.length > 3)
    return usageError(ctx, numbers.length < 1 ? 'Need 1 argument' : 'Max 3 arguments');
  const [first, inc, last] =
    numbers.length === 1
      ? ['1', '1', numbers[0]!]
      : numbers.length === 2
        ? [numbers[0]!, '1', numbers[1]!]
        : (numbers as [string, string, string]);
  const step = Number(inc);
  if (step === 0) {
    ctx.stderr.write("seq: increment can't be 0\n");
    return 1;
  }
  // As many decimals as the most precise argument.
  const decimals = Math.max(
    ...[first, inc, last].map((n) => (n.includes('.') ? n.length - n.indexOf('.') - 1 : 0)),
  );
  const values: string[] = [];
  for (let k = 0; ; k++) {
    const x = Number(first) + k * step;
    if ((step > 0 && x > Number(last) + 1e-9) || (step < 0 && x < Number(last) - 1e-9)) break;
    values.push(format !== null ? formatPrintf(format, [String(x)]) : x.toFixed(decimals));
    if (values.length > 10_000_000 || ctx.signal.aborted) break;
  }
  if (equalWidth) {
    const width = Math.max(...values.map((v) => v.length));
    for (let k = 0; k < values.length; k++)
      values[k] = values[k]!.startsWith('-')
        ? `-${values[k]!.slice(1).padStart(width - 1, '0')}`
        : values[k]!.padStart(width, '0');
  }
  if (values.length > 0) ctx.stdout.write(`${values.join(separator)}\n`);
  return 0;
};

class ExprError extends Error {}

/**
 * expr: | & = > >= < <= != + - * / % : (anchored regex match) and length, substr, index,
 * match; status 0 for a non-null non-zero result, 1 otherwise, 2 for a bad expression.
 */
const expr: CommandFn = (ctx) => {
  const tokens = ctx.args;
  let i = 0;
  const isInt = (v: string) => /^-?\d+$/.test(v);
  const num = (v: string) => {
    if (!isInt(v)) throw new ExprError('not integer');
    return Number(v);
  };
  const primary = (): string => {
    const t = tokens[i++];
    if (t === undefined) throw new ExprError('syntax error');
    if (t === '(') {
      const v = or();
      if (tokens[i++] !== ')') throw new ExprError('syntax error');
      return v;
    }
    if (t === 'length') return String([...primary()].length);
    if (t === 'substr') {
      const s = primary();
      const pos = num(primary());
      const len = num(primary());
      return [...s].slice(pos - 1, pos - 1 + len).join('');
    }
    if (t === 'index') {
      const s = primary();
      const chars = primary();
      const at = [...s].findIndex((c) => chars.includes(c));
      return String(at + 1);
    }
    if (t === 'match') return match(primary(), primary());
    return t;
  };
  const match = (s: string, pattern: string): string => {
    const re = new RegExp(`^(?:${pattern.replace(/\\\(/g, '(').replace(/\\\)/g, ')')})`);
    const m = re.exec(s);
    if (pattern.includes('\\(')) return m?.[1] ?? '';
    return String(m ? m[0].length : 0);
  };
  const colon = (): string => {
    let v = primary();
    while (tokens[i] === ':') {
      i++;
      v = match(v, primary());
    }
    return v;
  };
  const mul = (): string => {
    let v = colon();
    while (tokens[i] === '*' || tokens[i] === '/' || tokens[i] === '%') {
      const op = tokens[i++]!;
      const r = num(colon());
      const l = num(v);
      if (op !== '*' && r === 0) throw new ExprError('divide by zero');
      v = String(op === '*' ? l * r : op === '/' ? Math.trunc(l / r) : l % r);
    }
    return v;
  };
  const add = (): string => {
    let v = mul();
    while (tokens[i] === '+' || tokens[i] === '-') {
      const op = tokens[i++]!;
      const r = num(mul());
      v = String(op === '+' ? num(v) + r : num(v) - r);
    }
    return v;
  };
  const cmp = (): string => {
    let v = add();
    while (['=', '==', '!=', '<', '<=', '>', '>='].includes(tokens[i] ?? '')) {
      const op = tokens[i++]!;
      const r = add();
      const c = isInt(v) && isInt(r) ? Number(v) - Number(r) : v < r ? -1 : v > r ? 1 : 0;
      const ok = {
        '=': c === 0,
        '==': c === 0,
        '!=': c !== 0,
        '<': c < 0,
        '<=': c <= 0,
        '>': c > 0,
        '>=': c >= 0,
      }[op];
      v = ok ? '1' : '0';
    }
    return v;
  };
  const and = (): string => {
    let v = cmp();
    while (tokens[i] === '&') {
      i++;
      const r = cmp();
      v = v !== '' && v !== '0' && r !== '' && r !== '0' ? v : '0';
    }
    return v;
  };
  const or = (): string => {
    let v = and();
    while (tokens[i] === '|') {
      i++;
      const r = and();
      v = v !== '' && v !== '0' ? v : r !== '' && r !== '0' ? r : '0';
    }
    return v;
  };
  try {
    if (tokens.length === 0) throw new ExprError('syntax error');
    const v = or();
    if (i < tokens.length) throw new ExprError('syntax error');
    ctx.stdout.write(`${v}\n`);
    return v === '' || v === '0' ? 1 : 0;
  } catch (error) {
    if (!(error instanceof ExprError)) throw error;
    ctx.stderr.write(`expr: ${error.message}\n`);
    return 2;
  }
};

/** cmp [-ls] FILE1 [FILE2]: where two files first differ (status 1), or 0 if they do not. */
const cmp: CommandFn = async (ctx) => {
  const flags = new Set<string>();
  const files: string[] = [];
  for (const a of ctx.args) {
    if (/^-[ls]+$/.test(a)) for (const f of a.slice(1)) flags.add(f);
    else files.push(a);
  }
  if (files.length < 1 || files.length > 2)
    return usageError(ctx, files.length < 1 ? 'Need 1 argument' : 'Max 2 arguments');
  if (files.length === 1) files.push('-');
  const data: Buffer[] = [];
  for (const f of files) {
    const input = openOperand(ctx, f);
    if (!input) return 2;
    data.push(await readAll(input));
  }
  const [a, b] = data as [Buffer, Buffer];
  let line = 1;
  let status = 0;
  for (let k = 0; k < Math.min(a.length, b.length); k++) {
    if (a[k] !== b[k]) {
      status = 1;
      if (flags.has('s')) return 1;
      if (!flags.has('l')) {
        ctx.stdout.write(`${files[0]} ${files[1]} differ: char ${k + 1}, line ${line}\n`);
        return 1;
      }
      ctx.stdout.write(`${k + 1} ${a[k]!.toString(8)} ${b[k]!.toString(8)}\n`);
    }
    if (a[k] === 0x0a) line++;
  }
  if (a.length !== b.length) {
    if (!flags.has('s')) ctx.stderr.write(`cmp: EOF on ${a.length < b.length ? files[0] : files[1]}\n`);
    return 1;
  }
  return status;
};

/**
 * gzip/gunzip/zcat: FILE becomes FILE.gz (and back), -c to stdout, -d decompress, -k keep,
 * -f force, -1..-9 level; stdin to stdout without files.
 */
function gzipFamily(mode: 'gzip' | 'gunzip' | 'zcat'): CommandFn {
  return async (ctx) => {
    let decompress = mode !== 'gzip';
    let toStdout = mode === 'zcat';
    let keep = false;
    let force = false;
    let level = 6;
    const files: string[] = [];
    for (const a of ctx.args) {
      if (/^-[cdfk1-9n]+$/.test(a)) {
        for (const f of a.slice(1)) {
          if (f === 'c') toStdout = true;
          else if (f === 'd') decompress = true;
          else if (f === 'k') keep = true;
          else if (f === 'f') force = true;
          else if (/\d/.test(f)) level = Number(f);
        }
      } else if (a.startsWith('-') && a !== '-')
        return usageError(ctx, `Unknown option '${a.replace(/^-+/, '')}'`);
      else files.push(a);
    }
    const convert = (data: Buffer): Buffer => (decompress ? gunzipSync(data) : gzipSync(data, { level }));
    if (files.length === 0 || (files.length === 1 && files[0] === '-')) {
      try {
        ctx.stdout.write(convert(await readAll(ctx.stdin)));
        return 0;
      } catch {
        ctx.stderr.write(`${ctx.name}: not gzipped\n`);
        return 1;
      }
    }
    let status = 0;
    for (const f of files) {
      const path = resolvePath(ctx, f);
      try {
        if (decompress && !toStdout && !/\.gz$/.test(f)) {
          ctx.stderr.write(`${ctx.name}: ${f}: unknown suffix\n`);
          status = 1;
          continue;
        }
        let out: Buffer;
        try {
          out = convert(ctx.fs.readFile(path));
        } catch (error) {
          if (error instanceof FsError) throw error;
          ctx.stderr.write(`${ctx.name}: ${f}: not gzipped\n`);
          status = 1;
          continue;
        }
        if (toStdout) {
          ctx.stdout.write(out);
          continue;
        }
        const target = decompress ? path.replace(/\.gz$/, '') : `${path}.gz`;
        if (!force && ctx.fs.exists(target)) {
          ctx.stderr.write(`${ctx.name}: ${target}: File exists\n`);
          status = 1;
          continue;
        }
        ctx.fs.writeFile(target, out, { mode: ctx.fs.stat(path).mode & 0o777 });
        if (!keep) ctx.fs.remove(path);
      } catch (error) {
        ctx.stderr.write(`${ctx.name}: ${f}: ${error instanceof FsError ? error.reason : String(error)}\n`);
        status = 1;
      }
    }
    return status;
  };
}

export const UTILITY_COMMANDS: Record<string, CommandFn> = {
  seq,
  expr,
  cmp,
  gzip: gzipFamily('gzip'),
  gunzip: gzipFamily('gunzip'),
  zcat: gzipFamily('zcat'),
};
