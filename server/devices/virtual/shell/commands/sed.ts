/**
 * toybox 0.8.9's sed, as Android 14 ships it: options -n -e -f -i[SUFFIX] -E/-r -s -z;
 * addresses N, $, /re/ and \%re%, ranges ADDR,ADDR and ADDR,+N, `!`; every command
 * ({ } a b c d D g G h H i l n N p P q Q r s t T w x y : = #), with toybox's own quirks
 * (printf escapes in regexes and texts, `2g` meaning only the 2nd match, `0,/re/` and `//`
 * matching every line, q that moves on to the next file). Regexes: see regex.ts. --tarxform and --help are refused by name.
 */
import { FsError } from '../../fs.js';
import { openOperand, resolvePath } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';
import type { Input, Output } from '../io.js';
import { MAX_IN_MEMORY } from '../io.js';
import { compileRegex, type Regex, RegexError } from './regex.js';

/** A fatal error: `sed: MESSAGE` on stderr, status 1 (toybox's error_exit). */
class SedError extends Error {
  /** The whole stderr line, when it is not plain text (a C `%c` of a NUL or half a UTF-8 character). */
  raw?: Buffer;
}

/** The command was killed while it ran (a script that loops forever). */
class Killed extends Error {}

// ---------- the script ----------

/** toybox's unescape(): the character `\C` stands for, or '' if none. */
function unescape(c: string | undefined): string {
  const i = c === undefined ? -1 : '\\abefnrtv'.indexOf(c);
  return i < 0 ? '' : '\\\x07\b\x1b\f\n\r\t\v'[i]!;
}

const isSpace = (c: string | undefined) => c !== undefined && ' \t\n\v\f\r'.includes(c);
const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';

/** C's strtol(s, &end, base 0) at s[i]: the value and the index after it. */
function strtol(s: string, i: number): [number, number] {
  const m = /^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)/.exec(s.slice(i))!;
  const t = m[0];
  const v = /^0[xX]/.test(t)
    ? parseInt(t.slice(2), 16)
    : t.length > 1 && t[0] === '0'
      ? parseInt(t, 8)
      : Number(t);
  return [v, i + t.length];
}

interface WriteTarget {
  /** A file (appended to), or the sed's own stdout/stderr for /dev/stdout, /dev/stderr. */
  path: string | null;
  output: Output | null;
  noeol: boolean;
  pending: string;
}

interface Command {
  c: string;
  /** Line of each address: 0 none, >0 that line, -1 `$`, < -1 `+N` as -2-N (toybox's). */
  lmatch: [number, number];
  /** Regex of each address, null for none (an empty `//` is none too). */
  rmatch: [Regex | null, Regex | null];
  not: boolean;
  /** In an active range: the line count it started at, else 0. */
  hit: number;
  /** a i c text (undefined: none), label of : b t T, q's status, r's file. */
  arg?: string;
  /** s: the regex (null: the last one used), raw replacement, flags. */
  re?: Regex | null;
  replacement?: string;
  global?: boolean;
  print?: boolean;
  occurrence?: number;
  write?: WriteTarget;
  /** y: the two sets. */
  yFrom?: string[];
  yTo?: string[];
}

/** Parses scripts chunk by chunk, as toybox does each -e and each -f line. */
class Parser {
  readonly commands: Command[] = [];
  depth = 0;
  /** A command whose argument continues in the next chunk (a trailing backslash). */
  private pending: { command: Command; kind: 's' | 'a'; delim: string } | null = null;

  constructor(
    private readonly extended: boolean,
    private readonly openWrite: (name: string) => WriteTarget,
  ) {}

  /** Parses one chunk; null flushes the end of the script. */
  chunk(source: string | null): void {
    let line = source ?? '';
    if (line.endsWith('\n')) line = line.slice(0, -1);
    let i = 0;
    let errstart = 0;
    const fail = (): never => {
      const at = Buffer.byteLength(line.slice(errstart, i)) + 1;
      const ch = i < line.length ? Buffer.from(line.slice(i, i + 1)).subarray(0, 1) : Buffer.from([0]);
      const error = new SedError('bad pattern');
      error.raw = Buffer.concat([
        Buffer.from(`sed: bad pattern '${line.slice(errstart)}'@${at} (`),
        ch,
        Buffer.from(')\n'),
      ]);
      throw error;
    };
    let command: Command | undefined;
    let resume: 's' | 'a' | null = null;
    let delim = '';
    if (this.pending) {
      ({ command, kind: resume, delim } = this.pending);
      this.pending = null;
    }

    for (;;) {
      if (!resume) {
        for (;;) {
          while (isSpace(line[i]) || line[i] === ';') i++;
          if (line[i] === '#') while (i < line.length && line[i] !== '\n') i++;
          else break;
        }
        if (i >= line.length) return;
        errstart = i;
        command = { c: '', lmatch: [0, 0], rmatch: [null, null], not: false, hit: 0 };
        let n = 0;
        for (; n < 2; n++) {
          if (line[i] === ',') i++;
          else if (n) break;
          if (n && line[i] === '+' && isDigit(line[i + 1])) {
            const [v, next] = strtol(line, i + 1);
            command.lmatch[1] = -2 - v;
            i = next;
          } else if (isDigit(line[i])) [command.lmatch[n], i] = strtol(line, i);
          else if (line[i] === '$') {
            command.lmatch[n] = -1;
            i++;
          } else if (line[i] === '/' || line[i] === '\\') {
            const r = unescapeDelimited(line, i, '');
            if (!r) return fail();
            i = r.next;
            command.rmatch[n] = r.text ? this.regex(r.text, this.extended, false) : null;
          } else break;
        }
        while (isSpace(line[i])) i++;
        if (i >= line.length) return fail();
        if (line[i] === '!') {
          command.not = true;
          i++;
        }
        while (isSpace(line[i])) i++;
        if (i >= line.length) return fail();
        const c = line[i++]!;
        command.c = c;
        this.commands.push(command);
        if ('}:'.includes(c) && n) return fail();
        if ('aiqQr='.includes(c) && n > 1) return fail();
        if (c === '{') this.depth++;
        else if (c === '}') {
          if (!this.depth--) return fail();
        } else if (c === 's') {
          const r = unescapeDelimited(line, i, '');
          if (!r) return fail();
          i = r.next;
          delim = r.delim;
          command.arg = r.text; // the pattern, compiled once the flags are known
          command.replacement = '';
          resume = 's';
        } else if (c === 'w') {
          i = this.writeFile(command, line, i, fail);
        } else if (c === 'y') {
          const a = unescapeDelimited(line, i, '');
          if (!a) return fail();
          i = a.next;
          const b = unescapeDelimited(line, i, a.delim);
          if (!b) return fail();
          i = b.next;
          if (Buffer.byteLength(a.text) !== Buffer.byteLength(b.text)) return fail();
          command.yFrom = [...a.text];
          command.yTo = [...b.text];
        } else if ('abcirtTqQ:'.includes(c)) {
          while (isSpace(line[i]) && line[i] !== '\n') i++;
          resume = 'a';
        } else if (!'dDgGhHlnNpPx='.includes(c)) return fail();
        if (!resume) continue;
      }
      command = command!;

      if (resume === 's') {
        // The replacement, kept raw (\1 and & are read when it is used); a backslash before
        // a newline (or the end of the chunk) is a newline.
        let end = i;
        let text = '';
        let continued = false;
        for (;;) {
          if (line[end] === delim) break;
          if (end >= line.length) return fail();
          if (line[end++] === '\\') {
            if (end >= line.length || line[end] === '\n') {
              text += `${line.slice(i, end - 1)}\n`;
              continued = true;
              break;
            }
            end++;
          }
        }
        if (!continued) text = line.slice(i, end);
        command.replacement += text;
        i = end;
        if (line[i] !== delim) {
          if (i >= line.length) {
            this.pending = { command, kind: 's', delim };
            return;
          }
          i++;
          continue;
        }
        resume = null;
        let icase = false;
        let ere = this.extended;
        command.global = false;
        command.print = false;
        command.occurrence = 0;
        for (i++; i < line.length; i++) {
          const f = line[i]!;
          if (isSpace(f) && f !== '\n') continue;
          if (f === 'i' || f === 'I') icase = true;
          else if (f === 'g') command.global = true;
          else if (f === 'p') command.print = true;
          else if (f === 'x') ere = true;
          else if (!command.occurrence && isDigit(f) && /^0*[1-9]/.test(line.slice(i))) {
            const digits = /^\d+/.exec(line.slice(i))![0];
            command.occurrence = Number(digits);
            i += digits.length - 1;
          } else break;
        }
        const pattern = command.arg!;
        delete command.arg;
        command.re = pattern ? this.regex(pattern, ere, icase) : null;
        if (line[i] === 'w') i = this.writeFile(command, line, i + 1, fail);
        continue;
      }

      // a b c i r t T q Q : — the argument.
      resume = null;
      const c = command.c;
      const words = ':btTqQ'.includes(c);
      let end = 0;
      while (i + end < line.length && !(words ? '}; \t\r\n\v\f' : '\n').includes(line[i + end]!)) end++;
      if (!end) {
        if ('btTqQ'.includes(c)) continue;
        if (command.arg === undefined) return fail();
      }
      if (c === 'q' || c === 'Q') {
        let d = 0;
        while (d < end && isDigit(line[i + d])) d++;
        if (d !== end) {
          i += d;
          return fail();
        }
      }
      if (command.arg === undefined) command.arg = '';
      else if (command.arg) command.arg += '\n';
      else if (source === null) {
        delete command.arg;
        continue;
      }
      if (!'aci'.includes(c)) {
        command.arg += line.slice(i, i + end);
        i += end;
        continue;
      }
      // Text: \C is its escape or C itself; a trailing backslash continues the text.
      let text = '';
      let more = false;
      for (let k = end; k; k--) {
        const ch = line[i++]!;
        if (ch !== '\\') {
          text += ch;
          continue;
        }
        if (!--k) {
          more = true;
          break;
        }
        text += unescape(line[i]) || line[i]!;
        i++;
      }
      command.arg += text;
      if (more) {
        if (i < line.length) {
          i++; // the newline
          resume = 'a';
          continue;
        }
        this.pending = { command, kind: 'a', delim: '' };
        return;
      }
    }
  }

  private regex(text: string, ere: boolean, icase: boolean): Regex {
    try {
      return compileRegex(text, ere, icase);
    } catch (error) {
      if (error instanceof RegexError) throw new SedError(`bad regex '${text}': ${error.message}`);
      throw error;
    }
  }

  /** w FILE (also s///w): up to the end of the chunk or `\;`; the file is created now. */
  private writeFile(command: Command, line: string, i: number, fail: () => never): number {
    while (isSpace(line[i])) i++;
    if (i >= line.length) fail();
    let end = line.indexOf('\\;', i);
    if (end < 0) end = line.length;
    command.write = this.openWrite(line.slice(i, end));
    return end < line.length ? end + 2 : end;
  }
}

/** A delimited string at text[i] (toybox's unescape_delimited_string), or null if unended. */
function unescapeDelimited(
  text: string,
  i: number,
  delim: string,
): { text: string; next: number; delim: string } | null {
  let d = delim;
  if (!d) {
    d = text[i++] ?? '';
    if (d === '\\') d = text[i++] ?? '';
    if (!d || d === '\\' || d === '\n') return null;
  }
  let out = '';
  let mode = '';
  while (mode || text[i] !== d) {
    if (i >= text.length) return null;
    const c = text[i]!;
    if (c === '[') {
      if (!mode) {
        mode = ']';
        if (text[i + 1] === '-' || text[i + 1] === ']') out += text[i++];
      } else if (mode === ']' && '.=:'.includes(text[i + 1] ?? '\0')) {
        out += text[i++];
        mode = text[i]!;
      }
    } else if (c === mode) {
      if (mode === ']') mode = '';
      else {
        out += text[i++];
        mode = ']';
      }
    } else if (mode && c === '-' && text[i - 1] === text[i + 1]) {
      i += 2;
      continue;
    } else if (c === '\\') {
      if (i + 1 >= text.length) return null;
      if (text[i + 1] === d) i++;
      else if (text[i + 1] === '\\') out += text[i++];
      else {
        const u = unescape(text[i + 1]);
        if (u) {
          out += u;
          i += 2;
          continue;
        } else if (!mode) out += text[i++];
      }
    }
    out += text[i++];
  }
  return { text: out, next: i + 1, delim: d };
}

// ---------- running it ----------

interface Line {
  text: string;
  /** Whether it ended with the delimiter (a file's last line may not). */
  eol: boolean;
}

/** Lines of an input split on a delimiter byte, read as they arrive. */
class LineReader {
  private buffered: Buffer = Buffer.alloc(0);
  private done = false;
  constructor(
    private readonly input: Input,
    private readonly delim: number,
    /** Called before waiting for input: what is written so far goes out first. */
    private readonly beforeRead: () => Promise<void>,
  ) {}

  async next(): Promise<Line | null> {
    for (;;) {
      const at = this.buffered.indexOf(this.delim);
      if (at >= 0) {
        const text = this.buffered.subarray(0, at).toString('utf8');
        this.buffered = this.buffered.subarray(at + 1);
        return { text, eol: true };
      }
      if (this.done) {
        if (this.buffered.length === 0) return null;
        const text = this.buffered.toString('utf8');
        this.buffered = Buffer.alloc(0);
        return { text, eol: false };
      }
      await this.beforeRead();
      const chunk = await this.input.read();
      if (chunk === null) this.done = true;
      else {
        if (this.buffered.length + chunk.length > MAX_IN_MEMORY) throw new SedError('out of memory');
        this.buffered = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk;
      }
    }
  }
}

/** The editor's state across lines and files (toybox's TT). */
class Sed {
  count = 0;
  hold = '';
  /** The line read ahead (toybox reads one ahead to know the last line). */
  next: Line | null = null;
  /** Where the next line's script starts after n and N (cmds.length: nowhere). */
  restart: number | null = null;
  lastRegex: Regex | null = null;
  /** Set by q: stop reading the current file. */
  stopFile = false;
  exitval = 0;
  out: WriteTarget;
  private steps = 0;
  private width = 0;

  constructor(
    private readonly ctx: CommandContext,
    private readonly cmds: Command[],
    private readonly quiet: boolean,
    private readonly delim: string,
    stdout: WriteTarget,
    private readonly writes: WriteTarget[],
  ) {
    this.out = stdout;
  }

  emit(target: WriteTarget, text: string, eol: boolean): void {
    if (target.noeol) target.pending += this.delim;
    if (eol) text += this.delim;
    if (!text) return;
    target.pending += text;
    target.noeol = !eol;
    if (target.pending.length >= 65536) this.flush(target);
  }

  flush(target: WriteTarget): void {
    // -i's output is the new file, kept whole until the file ends.
    if (!target.pending || (!target.output && target.path === null)) return;
    const data = Buffer.from(target.pending);
    target.pending = '';
    if (target.output) target.output.write(data);
    else if (target.path !== null) {
      try {
        this.ctx.fs.writeFile(target.path, data, { append: true });
      } catch (error) {
        throw new SedError(`w '${target.path}': ${error instanceof FsError ? error.reason : String(error)}`);
      }
    }
  }

  flushAll(): void {
    for (const w of this.writes) this.flush(w);
    this.flush(this.out);
  }

  private regex(r: Regex | null): RegExp {
    if (r) this.lastRegex = r;
    else if (!this.lastRegex) throw new SedError('no previous regex');
    return this.lastRegex!.re;
  }

  private test(r: Regex | null, text: string): boolean {
    const re = this.regex(r);
    re.lastIndex = 0;
    return re.test(text);
  }

  /** Runs the script on the line read before this one; `incoming` (null at EOF) is kept. */
  async line(incoming: Line | null, flushAtEof: boolean): Promise<void> {
    const current = this.next;
    if (!incoming && !flushAtEof) return;
    this.next = incoming;
    if (!current) return;
    let line: string | null = current.text;
    const eol = current.eol;
    if (!eol && line === '') return;
    this.count++;
    const last = incoming === null;
    const appends: { file: boolean; text?: string }[] = [];
    let tea = false;
    let idx = this.restart ?? 0;
    this.restart = null;
    const cmds = this.cmds;

    run: while (idx < cmds.length) {
      if (++this.steps % 10000 === 0) {
        // A script that loops (`:a;ba`) must not hold the whole server: let it be killed.
        await new Promise((resolve) => setImmediate(resolve));
        if (this.ctx.signal.aborted) throw new Killed();
      }
      const command = cmds[idx]!;
      const c = command.c;
      if (command.lmatch[0] || command.rmatch[0]) {
        let miss = false;
        if (command.hit) {
          const lm = command.lmatch[1];
          if (!lm) {
            if (!command.rmatch[1]) command.hit = 0;
            else if (line !== null && this.test(command.rmatch[1], line)) miss = true;
          } else if (lm > 0 && lm < this.count) command.hit = 0;
          else if (lm < -1 && this.count === command.hit + (-lm - 1)) command.hit = 0;
        } else {
          const lm = command.lmatch[0];
          if (!lm) {
            if (line !== null && this.test(command.rmatch[0], line)) command.hit = this.count;
          } else if (lm === this.count || (lm === -1 && last)) command.hit = this.count;
          if (!command.lmatch[1] && !command.rmatch[1]) miss = true;
        }
        const skip = command.not === !!command.hit;
        if (miss || command.lmatch[1] === this.count) command.hit = 0;
        if (skip) {
          if (c === '{') {
            for (let depth = 1; depth;) {
              const k = cmds[++idx]!.c;
              if (k === '{') depth++;
              else if (k === '}') depth--;
            }
          }
          idx++;
          continue;
        }
      }
      // A deleted line still moves the ranges of the commands after it.
      if (line === null) {
        idx++;
        continue;
      }

      switch (c) {
        case 'a':
        case 'r':
          appends.push({ file: c === 'r', text: command.arg });
          break;
        case 'b':
        case 't':
        case 'T': {
          const t = tea;
          if (c !== 'b') tea = false;
          if (c === 'b' || t !== (c === 'T')) {
            if (command.arg === undefined) break run;
            const label = cmds.findIndex((k) => k.c === ':' && k.arg === command.arg);
            if (label < 0) throw new SedError(`no :${command.arg}`);
            idx = label;
          }
          break;
        }
        case 'c':
          if (!command.hit) this.emit(this.out, command.arg ?? '', true);
          line = null;
          continue; // toybox looks at this command's address again, with no line
        case 'd':
          line = null;
          continue;
        case 'D': {
          const nl = line.indexOf(this.delim);
          if (nl < 0) line = null;
          else {
            line = line.slice(nl + 1);
            idx = 0;
          }
          continue;
        }
        case 'g':
          line = this.hold;
          break;
        case 'G':
          line = this.grown(line, this.hold);
          break;
        case 'h':
          this.hold = line;
          break;
        case 'H':
          this.hold = this.grown(this.hold, line);
          break;
        case 'i':
          this.emit(this.out, command.arg ?? '', true);
          break;
        case 'l':
          this.list(line);
          break;
        case 'n':
          this.restart = idx + 1;
          break run;
        case 'N':
          if (incoming) {
            this.restart = idx + 1;
            this.next = { text: this.grown(line, incoming.text), eol: incoming.eol };
            line = null;
          }
          return this.done(line, eol, appends);
        case 'p':
          this.emit(this.out, line, eol);
          break;
        case 'P': {
          const nl = line.indexOf(this.delim);
          this.emit(this.out, nl < 0 ? line : line.slice(0, nl), eol);
          break;
        }
        case 'q':
        case 'Q':
          if (incoming) this.stopFile = true;
          this.next = null;
          if (!this.exitval && command.arg) this.exitval = Number(command.arg) & 255;
          if (c === 'Q') line = null;
          break run;
        case 's': {
          const [result, matched] = this.substitute(command, line);
          line = result;
          if (matched) {
            if (command.print) this.emit(this.out, line, eol);
            tea = true;
            if (command.write) this.emit(command.write, line, eol);
          }
          break;
        }
        case 'w':
          this.emit(command.write!, line, eol);
          break;
        case 'x':
          [line, this.hold] = [this.hold, line];
          break;
        case 'y': {
          const from = command.yFrom!;
          const to = command.yTo!;
          line = [...line].map((ch) => (from.includes(ch) ? (to[from.indexOf(ch)] ?? ch) : ch)).join('');
          break;
        }
        case '=':
          this.emit(this.out, String(this.count), true);
          break;
      }
      idx++;
    }
    return this.done(line, eol, appends);
  }

  private done(line: string | null, eol: boolean, appends: { file: boolean; text?: string }[]): void {
    if (line !== null && !this.quiet) this.emit(this.out, line, eol);
    for (const a of appends) {
      if (!a.file) {
        if (a.text !== undefined) this.emit(this.out, a.text, true);
        continue;
      }
      let data: Buffer;
      try {
        for (const w of this.writes) this.flush(w);
        data = this.ctx.fs.readFile(resolvePath(this.ctx, a.text ?? ''));
      } catch {
        continue;
      }
      if (this.out.noeol) this.out.pending += this.delim;
      this.out.noeol = false;
      this.out.pending += data.toString('utf8');
    }
  }

  private grown(a: string, b: string): string {
    if (a.length + b.length >= MAX_IN_MEMORY) throw new SedError('out of memory');
    return `${a}${this.delim}${b}`;
  }

  /** l: escapes, octal for other control bytes, lines wrapped to the terminal with `\`. */
  private list(line: string): void {
    if (!this.width) {
      let x = this.ctx.stdin.terminal?.cols || this.ctx.stdout.terminal?.cols || 0;
      const columns = this.ctx.env.get('COLUMNS');
      if (columns !== undefined && /^\s*\d/.test(columns)) x = parseInt(columns, 10) >>> 0 || x;
      this.width = x || 80;
      if (this.width > 4) this.width -= 4;
    }
    const bytes = Buffer.from(line);
    const out: number[] = [];
    for (const b of bytes) {
      if (out.length >= this.width) {
        out.push(0x5c);
        this.emit(this.out, Buffer.from(out).toString('utf8'), true);
        out.length = 0;
      }
      const x = '\\\x07\b\f\r\t\v\n'.indexOf(String.fromCharCode(b));
      if (x >= 0) out.push(0x5c, '\\abfrtvn'.charCodeAt(x));
      // Android's toybox runs on ARM, where char is unsigned: bytes >= 0x80 go out as they are.
      else if (b >= 0x20) out.push(b);
      else out.push(...Buffer.from(`\\${b.toString(8).padStart(3, '0')}`));
    }
    out.push(0x24);
    this.emit(this.out, Buffer.from(out).toString('utf8'), true);
  }

  /** s///: the new line and whether the regex matched at all (for p, w and t). */
  private substitute(command: Command, line: string): [string, boolean] {
    const regex = command.re ?? this.lastRegex;
    const re = this.regex(command.re ?? null);
    const nsub = regex!.nsub;
    const raw = command.replacement!;
    // null until the first replacement. Until then an empty match right after another does not
    // move on (toybox since its February 2023 fix, which Android 14 has; 0.8.9 itself wrote
    // uninitialised bytes, or crashed, for s///N).
    let out: string | null = null;
    let pos = 0;
    let matched = false;
    let zmatch = true;
    let count = 0;
    for (;;) {
      re.lastIndex = pos;
      const m = re.exec(line);
      if (!m) break;
      matched = true;
      const mlen = m[0].length;
      if (!mlen && !zmatch) {
        if (pos >= line.length) break;
        if (out !== null) {
          const ch = String.fromCodePoint(line.codePointAt(pos)!);
          out += ch;
          pos += ch.length;
        }
        zmatch = true;
        continue;
      }
      zmatch = false;
      if (command.occurrence && command.occurrence !== ++count) {
        const end = m.index + mlen;
        if (out !== null) out += line.slice(pos, end);
        pos = end;
        continue;
      }
      let replacement = '';
      for (let k = 0; k < raw.length; k++) {
        const ch = raw[k]!;
        if (ch === '&') replacement += m[0];
        else if (ch !== '\\') replacement += ch;
        else {
          const n = raw[++k]!;
          if (isDigit(n)) {
            if (Number(n) > nsub) throw new SedError(`no s//\\${n}/`);
            replacement += m[Number(n)] ?? '';
          } else replacement += unescape(n) || n;
        }
      }
      if (out === null) out = line.slice(0, pos);
      out += line.slice(pos, m.index) + replacement;
      if (out.length >= MAX_IN_MEMORY) throw new SedError('out of memory');
      pos = m.index + mlen;
      if (!command.global) break;
    }
    return [out === null ? line : out + line.slice(pos), matched];
  }
}

// ---------- the applet ----------

export const sed: CommandFn = async (ctx) => {
  const chunks: ({ kind: 'e' | 'f'; value: string } | null)[] = [];
  const files: string[] = [];
  const flags = new Set<string>();
  let suffix = '';
  const args = ctx.args;
  const usage = (message: string) => {
    ctx.stderr.write(`sed: ${message} (see "sed --help")\n`);
    return 1;
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      files.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith('--')) {
      const name = a.slice(2);
      if (name === 'version') {
        ctx.stdout.write('This is not GNU sed version 9.0\n');
        return 0;
      }
      if (name === 'null-data') flags.add('z');
      else if (name === 'tarxform' || name === 'help') {
        ctx.stderr.write(`sed: the virtual phone's sed does not model --${name}\n`);
        return 1;
      } else return usage(`Unknown option '${name}'`);
      continue;
    }
    if (!a.startsWith('-') || a === '-') {
      files.push(a);
      continue;
    }
    for (let j = 1; j < a.length; j++) {
      const f = a[j]!;
      if (f === 'e' || f === 'f') {
        const rest = a.slice(j + 1);
        if (!rest && i + 1 >= args.length) return usage(`Missing argument to -${f}`);
        chunks.push({ kind: f, value: rest || args[++i]! });
        break;
      }
      if (f === 'i') {
        flags.add('i');
        suffix = a.slice(j + 1);
        break;
      }
      if (f === 'E' || f === 'r') flags.add('r');
      else if ('nzs'.includes(f)) flags.add(f);
      else return usage(`Unknown option '${f}'`);
    }
  }
  const delim = flags.has('z') ? '\0' : '\n';
  const writes: WriteTarget[] = [];
  const openWrite = (name: string): WriteTarget => {
    const std = name === '/dev/stdout' ? ctx.stdout : name === '/dev/stderr' ? ctx.stderr : null;
    const path = std ? null : resolvePath(ctx, name);
    if (path !== null) {
      try {
        ctx.fs.writeFile(path, Buffer.alloc(0));
      } catch (error) {
        throw new SedError(`${name}: ${error instanceof FsError ? error.reason : String(error)}`);
      }
    }
    const target: WriteTarget = { path, output: std, noeol: false, pending: '' };
    writes.push(target);
    return target;
  };

  const parser = new Parser(flags.has('r'), openWrite);
  try {
    if (chunks.length === 0) {
      const script = files.shift();
      if (script === undefined) {
        ctx.stderr.write('sed: no pattern\n');
        return 1;
      }
      chunks.push({ kind: 'e', value: script });
    }
    for (const chunk of chunks) {
      if (chunk!.kind === 'e') parser.chunk(chunk!.value);
      else {
        let text: string;
        try {
          text = ctx.fs.readFile(resolvePath(ctx, chunk!.value)).toString('utf8');
        } catch (error) {
          throw new SedError(`${chunk!.value}: ${error instanceof FsError ? error.reason : String(error)}`);
        }
        for (const l of text.split(/(?<=\n)/)) if (l) parser.chunk(l);
        parser.chunk(null); // toybox ends the script at the end of each -f file
      }
    }
    parser.chunk(null);
    if (parser.depth) throw new SedError('no }');
  } catch (error) {
    if (!(error instanceof SedError)) throw error;
    ctx.stderr.write(error.raw ?? `sed: ${error.message}\n`);
    return 1;
  }

  const stdout: WriteTarget = { path: null, output: ctx.stdout, noeol: false, pending: '' };
  const state = new Sed(ctx, parser.commands, flags.has('n'), delim, stdout, writes);
  const separate = flags.has('i') || flags.has('s');
  if (files.length === 0) files.push('-');
  try {
    for (const name of files) {
      let path = '';
      if (flags.has('i')) {
        if (name === '-') {
          ctx.stderr.write('sed: -i on stdin\n');
          state.exitval = 1;
          continue;
        }
        path = resolvePath(ctx, name);
      }
      const input = openOperand(ctx, name);
      if (!input) {
        state.exitval = 1;
        continue;
      }
      if (flags.has('i')) state.out = { path: null, output: null, noeol: false, pending: '' };
      if (separate) {
        state.count = 0;
        for (const c of parser.commands) c.hit = 0;
      }
      const reader = new LineReader(input, delim.charCodeAt(0), async () => {
        state.flushAll();
        await ctx.stdout.drain();
        if (ctx.signal.aborted || ctx.stdout.closed) throw new Killed();
      });
      state.stopFile = false;
      for (;;) {
        const line = await reader.next();
        await state.line(line, separate);
        if (!line || state.stopFile) break;
      }
      if (state.stopFile) await state.line(null, separate);
      if (flags.has('i')) {
        const data = Buffer.from(state.out.pending);
        try {
          if (suffix) ctx.fs.writeFile(path + suffix, ctx.fs.readFile(path));
          ctx.fs.writeFile(path, data);
        } catch (error) {
          ctx.stderr.write(`sed: ${name}: ${error instanceof FsError ? error.reason : String(error)}\n`);
          state.exitval = 1;
        }
        state.out = stdout;
      }
      if (separate) {
        state.next = null;
        state.out.noeol = false;
      }
    }
    if (!separate) await state.line(null, true);
    state.flushAll();
  } catch (error) {
    if (error instanceof Killed) return 1;
    if (!(error instanceof SedError)) throw error;
    state.flushAll();
    ctx.stderr.write(error.raw ?? `sed: ${error.message}\n`);
    return 1;
  }
  return state.exitval;
};
