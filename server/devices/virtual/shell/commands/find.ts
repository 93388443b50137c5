/**
 * toybox find: paths, then an expression of tests (-name -iname -path -type -size -newer
 * -mtime -mmin -empty -user -perm), operators (! -not -a -and -o -or, parentheses) and
 * actions (-print -print0 -exec CMD {} ; / + -delete), with -maxdepth/-mindepth. Directories
 * the caller may not read are reported (`find: PATH: Permission denied`) and skipped.
 */
import { FsError, basename, statOf } from '../../fs.js';
import type { FsNode, Stat } from '../../fs.js';
import { commandSource, resolvePath } from '../command.js';
import type { CommandFn } from '../command.js';
import { userName } from './format.js';

interface Entry {
  /** As printed: the root operand followed by the path below it. */
  shown: string;
  real: string;
  node: FsNode;
  st: Stat;
  depth: number;
}

/** Node of the parsed expression. */
type Expr =
  | { op: 'and' | 'or'; left: Expr; right: Expr }
  | { op: 'not'; expr: Expr }
  | { op: 'test'; test: (e: Entry) => boolean }
  | { op: 'action'; run: (e: Entry) => Promise<boolean> | boolean };

class FindError extends Error {}

/** A shell glob (as -name takes it) as a regex. */
export function globRegex(glob: string, flags = ''): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) re += '\\[';
      else {
        re += `[${glob
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '\\' && i + 1 < glob.length) re += `\\${glob[++i]}`;
    else re += c.replace(/[.+^${}()|/]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, flags);
}

/** -size N[bckMG] with + and -: toybox rounds up to the unit, blocks are 512 bytes. */
function sizeTest(spec: string): (e: Entry) => boolean {
  const m = /^([+-]?)(\d+)([bckMG]?)$/.exec(spec);
  if (!m) throw new FindError(`bad -size '${spec}'`);
  const unit = { '': 512, b: 512, c: 1, k: 1024, M: 1 << 20, G: 1 << 30 }[
    m[3] as '' | 'b' | 'c' | 'k' | 'M' | 'G'
  ];
  const n = Number(m[2]);
  return (e) => {
    const units = Math.ceil(e.st.size / unit);
    return m[1] === '+' ? units > n : m[1] === '-' ? units < n : units === n;
  };
}

/** -mtime/-mmin N with + and -: whole days (minutes) since the last change. */
function ageTest(spec: string, unitMs: number, now: number): (e: Entry) => boolean {
  const m = /^([+-]?)(\d+)$/.exec(spec);
  if (!m) throw new FindError(`bad age '${spec}'`);
  const n = Number(m[2]);
  return (e) => {
    const age = Math.floor((now - e.st.mtimeMs) / unitMs);
    return m[1] === '+' ? age > n : m[1] === '-' ? age < n : age === n;
  };
}

export const find: CommandFn = async (ctx) => {
  const args = [...ctx.args];
  const roots: string[] = [];
  while (args.length > 0 && !args[0]!.startsWith('-') && args[0] !== '!' && args[0] !== '(')
    roots.push(args.shift()!);
  if (roots.length === 0) roots.push('.');
  let maxDepth = Infinity;
  let minDepth = 0;
  let hasAction = false;
  const batches: { argv: string[]; paths: string[] }[] = [];
  let status = 0;
  const runCommand = async (argv: string[]) => {
    const s = await ctx.runShell(commandSource(argv), ctx);
    if (s !== 0) status = 1;
    return s === 0;
  };
  let i = 0;
  const primary = (): Expr => {
    const a = args[i++];
    if (a === undefined) throw new FindError('missing argument');
    const value = (): string => {
      const v = args[i++];
      if (v === undefined) throw new FindError(`'${a}' needs 1 arg`);
      return v;
    };
    switch (a) {
      case '!':
      case '-not':
        return { op: 'not', expr: primary() };
      case '(': {
        const e = or();
        if (args[i++] !== ')') throw new FindError("missing ')'");
        return e;
      }
      case '-name':
      case '-iname': {
        const re = globRegex(value(), a === '-iname' ? 'i' : '');
        return { op: 'test', test: (e) => re.test(basename(e.shown) || e.shown) };
      }
      case '-path':
      case '-wholename': {
        const re = globRegex(value());
        return { op: 'test', test: (e) => re.test(e.shown) };
      }
      case '-type': {
        const t = value();
        const kinds: Record<string, string> = { f: 'file', d: 'dir', l: 'link', c: 'chr' };
        if (!kinds[t]) throw new FindError(`bad -type '${t}'`);
        return { op: 'test', test: (e) => e.node.kind === kinds[t] };
      }
      case '-size':
        return { op: 'test', test: sizeTest(value()) };
      case '-mtime':
        return { op: 'test', test: ageTest(value(), 86_400_000, ctx.device.now()) };
      case '-mmin':
        return { op: 'test', test: ageTest(value(), 60_000, ctx.device.now()) };
      case '-newer': {
        const ref = value();
        let mtime: number;
        try {
          mtime = ctx.fs.stat(resolvePath(ctx, ref)).mtimeMs;
        } catch (error) {
          throw new FindError(`${ref}: ${error instanceof FsError ? error.reason : String(error)}`);
        }
        return { op: 'test', test: (e) => e.st.mtimeMs > mtime };
      }
      case '-empty':
        return {
          op: 'test',
          test: (e) =>
            e.node.kind === 'dir' ? e.node.entries.size === 0 : e.node.kind === 'file' && e.st.size === 0,
        };
      case '-user': {
        const u = value();
        return { op: 'test', test: (e) => userName(e.st.uid) === u || String(e.st.uid) === u };
      }
      case '-perm': {
        const spec = value();
        const m = /^([-/]?)([0-7]+)$/.exec(spec);
        if (!m) throw new FindError(`bad -perm '${spec}'`);
        const bits = parseInt(m[2]!, 8);
        return {
          op: 'test',
          test: (e) => {
            const mode = e.st.mode & 0o7777;
            return m[1] === '-' ? (mode & bits) === bits : m[1] === '/' ? (mode & bits) !== 0 : mode === bits;
          },
        };
      }
      case '-maxdepth':
        maxDepth = Number(value());
        return { op: 'test', test: () => true };
      case '-mindepth':
        minDepth = Number(value());
        return { op: 'test', test: () => true };
      case '-print':
      case '-print0': {
        hasAction = true;
        const end = a === '-print0' ? '\0' : '\n';
        return { op: 'action', run: (e) => (ctx.stdout.write(`${e.shown}${end}`), true) };
      }
      case '-delete':
        hasAction = true;
        return {
          op: 'action',
          run: (e) => {
            try {
              ctx.fs.remove(e.real, { dirOnly: e.node.kind === 'dir' });
              return true;
            } catch (error) {
              ctx.stderr.write(
                `find: ${e.shown}: ${error instanceof FsError ? error.reason : String(error)}\n`,
              );
              status = 1;
              return false;
            }
          },
        };
      case '-exec':
      case '-ok': {
        if (a === '-ok')
          throw new FindError("the virtual phone's find does not model -ok (no terminal to ask)");
        hasAction = true;
        const argv: string[] = [];
        while (i < args.length && args[i] !== ';' && args[i] !== '+') argv.push(args[i++]!);
        const end = args[i++];
        if (end === undefined || argv.length === 0) throw new FindError("-exec needs ';' or '+'");
        if (end === '+') {
          const batch = { argv, paths: [] as string[] };
          batches.push(batch);
          return { op: 'action', run: (e) => (batch.paths.push(e.shown), true) };
        }
        return { op: 'action', run: (e) => runCommand(argv.map((x) => x.replaceAll('{}', e.shown))) };
      }
      default:
        throw new FindError(`bad arg '${a}'`);
    }
  };
  const and = (): Expr => {
    let left = primary();
    while (i < args.length && args[i] !== ')' && args[i] !== '-o' && args[i] !== '-or') {
      if (args[i] === '-a' || args[i] === '-and') i++;
      left = { op: 'and', left, right: primary() };
    }
    return left;
  };
  const or = (): Expr => {
    let left = and();
    while (args[i] === '-o' || args[i] === '-or') {
      i++;
      left = { op: 'or', left, right: and() };
    }
    return left;
  };
  let expr: Expr | null;
  try {
    expr = args.length > 0 ? or() : null;
    if (i < args.length) throw new FindError(`bad arg '${args[i]}'`);
  } catch (error) {
    ctx.stderr.write(`find: ${(error as Error).message}\n`);
    return 1;
  }
  const evaluate = async (e: Expr, entry: Entry): Promise<boolean> => {
    switch (e.op) {
      case 'and':
        return (await evaluate(e.left, entry)) && evaluate(e.right, entry);
      case 'or':
        return (await evaluate(e.left, entry)) || evaluate(e.right, entry);
      case 'not':
        return !(await evaluate(e.expr, entry));
      case 'test':
        return e.test(entry);
      default:
        return e.run(entry);
    }
  };
  const fs = ctx.fs;
  for (const root of roots) {
    let real: string;
    try {
      real = fs.realpath(resolvePath(ctx, root));
    } catch (error) {
      ctx.stderr.write(`find: ${root}: ${error instanceof FsError ? error.reason : String(error)}\n`);
      status = 1;
      continue;
    }
    const prefix = root.length > 1 ? root.replace(/\/+$/, '') : root;
    const walk = fs.walkTree(real, (path, error) => {
      ctx.stderr.write(`find: ${prefix}${path.slice(real === '/' ? 0 : real.length)}: ${error.reason}\n`);
      status = 1;
    });
    const visit = async (entry: Entry) => {
      if (entry.depth < minDepth) return;
      const matched = expr ? await evaluate(expr, entry) : true;
      if (matched && !hasAction) ctx.stdout.write(`${entry.shown}\n`);
    };
    // -delete removes children before their directory: it visits in post-order.
    const later: Entry[] = [];
    for (const { path, node } of walk) {
      if (ctx.signal.aborted) break;
      const rel = path === real ? '' : path.slice(real === '/' ? 0 : real.length);
      const depth = rel.split('/').filter(Boolean).length;
      if (depth > maxDepth) continue;
      const entry = { shown: `${prefix}${rel}`, real: path, node, st: statOf(node), depth };
      if (args.includes('-delete')) later.push(entry);
      else await visit(entry);
    }
    for (const entry of later.reverse()) if (!ctx.signal.aborted) await visit(entry);
  }
  for (const batch of batches) {
    if (batch.paths.length === 0) continue;
    const at = batch.argv.indexOf('{}');
    const argv =
      at < 0
        ? [...batch.argv, ...batch.paths]
        : [...batch.argv.slice(0, at), ...batch.paths, ...batch.argv.slice(at + 1)];
    await runCommand(argv);
  }
  return status;
};
