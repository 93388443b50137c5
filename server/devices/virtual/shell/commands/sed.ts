/**
 * toybox sed, the part scripts use: -n, -e (repeatable), -f, -i[SUFFIX], -E/-r; commands
 * s///[gpNI], p, d, q, =, y; addresses N, $, /regex/ and ranges ADDR,ADDR with `!`. Any
 * other command is refused by name, never skipped silently.
 */
import { FsError } from '../../fs.js';
import { resolvePath } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';
import { readAll } from '../io.js';

/** A POSIX basic (or, with extended, ERE) regex as a JavaScript one. */
/**
 * A replacement as `$1`..`$9`, `$&` and `$$` say it: `\\1`..`\\9` and `&` are the groups and
 * the match, `\\n` a newline, `\\t` a tab, `\\&` and `\\\\` themselves, `\\` before any
 * other character that character.
 */
function sedReplacement(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '$') out += '$$';
    else if (c === '&') out += '$&';
    else if (c !== '\\' || i + 1 >= text.length) out += c;
    else {
      const n = text[++i]!;
      if (/\d/.test(n)) out += `$${n}`;
      else if (n === 'n') out += '\n';
      else if (n === 't') out += '\t';
      else out += n === '$' ? '$$' : n;
    }
  }
  return out;
}

export function regexSource(pattern: string, extended: boolean): string {
  if (extended) return pattern;
  // BRE: \| \( \) \{ \} \+ \? are operators; bare ( ) { } + ? | are literals.
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) {
      const n = pattern[++i]!;
      out += '|(){}+?'.includes(n) ? n : `\\${n}`;
    } else if ('|(){}+?'.includes(c)) out += `\\${c}`;
    else out += c;
  }
  return out;
}

type Address = { kind: 'line'; n: number } | { kind: 'last' } | { kind: 'regex'; re: RegExp };

interface SedCommand {
  from: Address | null;
  to: Address | null;
  negate: boolean;
  name: string;
  /** s: the regex, replacement, global flag, occurrence and print flag; y: the two sets. */
  re?: RegExp;
  replacement?: string;
  global?: boolean;
  occurrence?: number;
  print?: boolean;
  from2?: string;
  to2?: string;
  /** q: the exit status it ends sed with. */
  exit?: number;
  /** Range state: inside the range now. */
  active?: boolean;
}

class SedError extends Error {}

/** Reads a delimited field (`/a\/b/`) from `text` at `i`; returns it and the index after. */
function delimited(text: string, i: number, delim: string): [string, number] {
  let out = '';
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      // An escaped delimiter is the character itself; any other escape (\\, \n, \1) stays whole.
      out += text[i + 1] === delim ? delim : c + text[i + 1]!;
      i++;
    } else if (c === delim) return [out, i + 1];
    else out += c;
  }
  throw new SedError(`unmatched '${delim}'`);
}

function parseScript(script: string, extended: boolean): SedCommand[] {
  const commands: SedCommand[] = [];
  let i = 0;
  const skipBlanks = () => {
    while (i < script.length && /[\s;]/.test(script[i]!)) i++;
  };
  const address = (): Address | null => {
    const c = script[i];
    if (c === '$') {
      i++;
      return { kind: 'last' };
    }
    if (c !== undefined && /\d/.test(c)) {
      const m = /^\d+/.exec(script.slice(i))![0];
      i += m.length;
      return { kind: 'line', n: Number(m) };
    }
    if (c === '/' || c === '\\') {
      const delim = c === '\\' ? script[++i]! : '/';
      const [body, next] = delimited(script, i + 1, delim);
      i = next;
      return { kind: 'regex', re: new RegExp(regexSource(body, extended)) };
    }
    return null;
  };
  for (skipBlanks(); i < script.length; skipBlanks()) {
    const from = address();
    let to: Address | null = null;
    if (from && script[i] === ',') {
      i++;
      to = address();
      if (!to) throw new SedError('bad address');
    }
    while (script[i] === ' ') i++;
    let negate = false;
    if (script[i] === '!') {
      negate = true;
      i++;
    }
    const name = script[i++];
    if (name === undefined) throw new SedError('missing command');
    const command: SedCommand = { from, to, negate, name };
    if (name === 's') {
      const delim = script[i]!;
      const [pattern, afterPattern] = delimited(script, i + 1, delim);
      const [replacement, afterReplacement] = delimited(script, afterPattern, delim);
      i = afterReplacement;
      const flags = /^[gpIi0-9]*/.exec(script.slice(i))![0];
      i += flags.length;
      command.global = flags.includes('g');
      command.print = flags.includes('p');
      command.occurrence = Number(/\d+/.exec(flags)?.[0] ?? '1');
      command.re = new RegExp(regexSource(pattern, extended), `g${/[Ii]/.test(flags) ? 'i' : ''}`);
      command.replacement = sedReplacement(replacement);
    } else if (name === 'y') {
      const delim = script[i]!;
      const [a, afterA] = delimited(script, i + 1, delim);
      const [b, afterB] = delimited(script, afterA, delim);
      i = afterB;
      if ([...a].length !== [...b].length) throw new SedError('y/// strings differ in length');
      command.from2 = a;
      command.to2 = b;
    } else if (name === 'q') {
      const digits = /^\s*(\d*)/.exec(script.slice(i))!;
      i += digits[0].length;
      command.exit = Number(digits[1] || '0');
    } else if (!'pd='.includes(name)) {
      throw new SedError(`the virtual phone's sed does not model the '${name}' command`);
    }
    commands.push(command);
  }
  return commands;
}

function matches(a: Address, line: string, n: number, last: boolean): boolean {
  if (a.kind === 'line') return n === a.n;
  if (a.kind === 'last') return last;
  return a.re.test(line);
}

function selected(c: SedCommand, line: string, n: number, last: boolean): boolean {
  let hit: boolean;
  if (!c.from) hit = true;
  else if (!c.to) hit = matches(c.from, line, n, last);
  else if (c.active) {
    hit = true;
    const end = c.to.kind === 'line' ? n >= c.to.n : matches(c.to, line, n, last);
    if (end) c.active = false;
  } else if (matches(c.from, line, n, last)) {
    hit = true;
    c.active = !(c.to.kind === 'line' && c.to.n <= n);
  } else hit = false;
  return hit !== c.negate;
}

/** Runs the script over text; the output, and the exit status a `q` ended it with. */
function run(commands: SedCommand[], text: string, quiet: boolean): [string, number] {
  const lines = text === '' ? [] : text.split('\n');
  const trailingNewline = lines.length > 0 && lines[lines.length - 1] === '';
  if (trailingNewline) lines.pop();
  let out = '';
  let status = 0;
  for (let idx = 0; idx < lines.length; idx++) {
    let line = lines[idx]!;
    const n = idx + 1;
    const last = idx === lines.length - 1;
    let deleted = false;
    let quit = false;
    for (const c of commands) {
      if (!selected(c, line, n, last)) continue;
      if (c.name === 's') {
        let count = 0;
        let changed = false;
        line = line.replace(c.re!, (...m) => {
          count++;
          if (c.global ? count < c.occurrence! : count !== c.occurrence) return m[0] as string;
          changed = true;
          const groups = m.slice(1, -2) as (string | undefined)[];
          return c.replacement!.replace(/\$(\$|&|\d)/g, (_, g: string) =>
            g === '$' ? '$' : g === '&' ? (m[0] as string) : (groups[Number(g) - 1] ?? ''),
          );
        });
        if (changed && c.print) out += `${line}\n`;
      } else if (c.name === 'y') {
        const from = [...c.from2!];
        const to = [...c.to2!];
        line = [...line].map((ch) => (from.includes(ch) ? to[from.indexOf(ch)]! : ch)).join('');
      } else if (c.name === 'p') out += `${line}\n`;
      else if (c.name === '=') out += `${n}\n`;
      else if (c.name === 'd') {
        deleted = true;
        break;
      } else if (c.name === 'q') {
        quit = true;
        status = c.exit ?? 0;
        break;
      }
    }
    if (!deleted && !quiet) out += last && !trailingNewline ? line : `${line}\n`;
    if (quit) break;
  }
  return [out, status];
}

export const sed: CommandFn = async (ctx) => {
  const scripts: string[] = [];
  const files: string[] = [];
  let quiet = false;
  let extended = false;
  let inPlace: string | null = null;
  const args = ctx.args;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-e' || a === '--expression') scripts.push(args[++i] ?? '');
    else if (a === '-f') {
      try {
        scripts.push(ctx.fs.readFile(resolvePath(ctx, args[++i] ?? '')).toString('utf8'));
      } catch (error) {
        ctx.stderr.write(`sed: ${args[i]}: ${error instanceof FsError ? error.reason : String(error)}\n`);
        return 1;
      }
    } else if (a === '-n' || a === '--quiet' || a === '--silent') quiet = true;
    else if (a === '-E' || a === '-r' || a === '--regexp-extended') extended = true;
    else if (a.startsWith('-i')) inPlace = a.slice(2);
    else if (/^-[nEr]+$/.test(a)) {
      quiet ||= a.includes('n');
      extended ||= /[Er]/.test(a);
    } else if (a.startsWith('-') && a !== '-') {
      ctx.stderr.write(`sed: Unknown option '${a.replace(/^-+/, '')}' (see "sed --help")\n`);
      return 1;
    } else files.push(a);
  }
  if (scripts.length === 0) {
    const first = files.shift();
    if (first === undefined) {
      ctx.stderr.write('sed: Need 1 argument (see "sed --help")\n');
      return 1;
    }
    scripts.push(first);
  }
  let commands: SedCommand[];
  try {
    commands = parseScript(scripts.join('\n'), extended);
  } catch (error) {
    ctx.stderr.write(
      `sed: ${error instanceof SyntaxError ? `bad regex: ${error.message}` : (error as Error).message}\n`,
    );
    return 1;
  }
  if (inPlace !== null) {
    // -i: each file is rewritten with its own output (and kept as FILE+SUFFIX if given).
    let status = 0;
    for (const f of files) {
      const path = resolvePath(ctx, f);
      try {
        const data = ctx.fs.readFile(path);
        if (inPlace) ctx.fs.writeFile(path + inPlace, data);
        for (const c of commands) c.active = false;
        ctx.fs.writeFile(path, Buffer.from(run(commands, data.toString('utf8'), quiet)[0]));
      } catch (error) {
        ctx.stderr.write(`sed: ${f}: ${error instanceof FsError ? error.reason : String(error)}\n`);
        status = 1;
      }
    }
    return status;
  }
  const text = files.length === 0 ? (await readAll(ctx.stdin)).toString('utf8') : await joinFiles(ctx, files);
  if (text === null) return 1;
  const [output, status] = run(commands, text, quiet);
  ctx.stdout.write(output);
  return status;
};

async function joinFiles(ctx: CommandContext, files: string[]): Promise<string | null> {
  let text = '';
  for (const f of files) {
    try {
      const part =
        f === '-'
          ? (await readAll(ctx.stdin)).toString('utf8')
          : ctx.fs.readFile(resolvePath(ctx, f)).toString('utf8');
      text += part.length > 0 && !part.endsWith('\n') ? `${part}\n` : part;
    } catch (error) {
      ctx.stderr.write(`sed: ${f}: ${error instanceof FsError ? error.reason : String(error)}\n`);
      return null;
    }
  }
  return text;
}
