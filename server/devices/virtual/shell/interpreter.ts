/**
 * Runs parsed shell programs against the phone: expansion (parameters, command
 * substitution, field splitting, globs), redirections, pipelines, lists and the builtins
 * that change the shell itself (cd, export, exit, ...). Everything else is a command from
 * the table, as /system/bin would have it.
 */
import type { Device } from '../device.js';
import { FsError, basename, normalizePath } from '../fs.js';
import type { CommandContext, CommandTable, Io } from './command.js';
import { BufferInput, BufferOutput, FileOutput, Pipe } from './io.js';
import type { Output } from './io.js';
import { ShellSyntaxError, parseShell } from './parse.js';
import type { AndOr, Command, List, Pipeline, Redirect, Word } from './parse.js';

export interface ShellState {
  vars: Map<string, string>;
  cwd: string;
  status: number;
  positional: string[];
  pid: number;
}

class ExitSignal {
  constructor(readonly status: number) {}
}

class LoopSignal {
  constructor(
    readonly kind: 'break' | 'continue',
    readonly levels: number,
  ) {}
}

export const SHELL_NAME = '/system/bin/sh';

export function initialShellState(device: Device, extraEnv: Record<string, string> = {}): ShellState {
  const vars = new Map<string, string>([
    [
      'PATH',
      '/product/bin:/apex/com.android.runtime/bin:/apex/com.android.art/bin:/system_ext/bin:/system/bin:/system/xbin:/odm/bin:/vendor/bin:/vendor/xbin',
    ],
    ['HOME', '/'],
    ['USER', 'shell'],
    ['LOGNAME', 'shell'],
    ['SHELL', SHELL_NAME],
    ['HOSTNAME', 'localhost'],
    ['TMPDIR', '/data/local/tmp'],
    ['EXTERNAL_STORAGE', '/sdcard'],
    ['ANDROID_ROOT', '/system'],
    ['ANDROID_DATA', '/data'],
    ['ANDROID_STORAGE', '/storage'],
    ['IFS', ' \t\n'],
    ['PS1', '${HOSTNAME:-localhost}:${PWD} $ '],
    ['PWD', '/'],
    ...Object.entries(extraEnv),
  ]);
  return { vars, cwd: '/', status: 0, positional: [], pid: device.processes.transientPid() };
}

export class Interpreter {
  constructor(
    private readonly device: Device,
    private readonly commands: CommandTable,
    private readonly state: ShellState,
  ) {}

  get status(): number {
    return this.state.status;
  }

  /** Parses and runs source; syntax errors print like mksh and give status 2. */
  async run(source: string, io: Io, signal: AbortSignal): Promise<number> {
    let list: List;
    try {
      list = parseShell(source);
    } catch (error) {
      if (error instanceof ShellSyntaxError) {
        io.stderr.write(`${SHELL_NAME}: ${error.message}\n`);
        this.state.status = 2;
        return 2;
      }
      throw error;
    }
    try {
      return await this.list(list, io, signal);
    } catch (error) {
      if (error instanceof ShellSyntaxError) {
        io.stderr.write(`${SHELL_NAME}: ${error.message}\n`);
        this.state.status = 2;
        return 2;
      }
      if (error instanceof ExitSignal) {
        this.state.status = error.status;
        return error.status;
      }
      if (error instanceof LoopSignal) return this.state.status;
      throw error;
    }
  }

  /** True when the last run ended with `exit` (interactive sessions stop then). */
  exited = false;

  private async list(list: List, io: Io, signal: AbortSignal): Promise<number> {
    let status = this.state.status;
    for (const item of list) {
      if (signal.aborted) return (this.state.status = 130);
      if (item.background) {
        // A job ends with the session that started it, and with the phone.
        const child = new Interpreter(this.device, this.commands, cloneState(this.state));
        const job = child.andOr(item.andOr, io, this.device.scopedSignal(signal)).catch((error: unknown) => {
          if (error instanceof ExitSignal || error instanceof LoopSignal) return;
          this.device.log.debug('virtual shell: background job failed', { error: String(error) });
        });
        this.device.trackJob(job);
        status = this.state.status = 0;
        continue;
      }
      status = await this.andOr(item.andOr, io, signal);
    }
    return status;
  }

  private async andOr(andOr: AndOr, io: Io, signal: AbortSignal): Promise<number> {
    let status = await this.pipeline(andOr.first, io, signal);
    for (const { op, pipeline } of andOr.rest) {
      if ((op === '&&' && status !== 0) || (op === '||' && status === 0)) continue;
      status = await this.pipeline(pipeline, io, signal);
    }
    return status;
  }

  private async pipeline(p: Pipeline, io: Io, signal: AbortSignal): Promise<number> {
    let status: number;
    if (p.commands.length === 1) {
      status = await this.command(p.commands[0]!, io, signal);
    } else {
      const stages = p.commands.length;
      const pipes = Array.from({ length: stages - 1 }, () => new Pipe());
      const runs = p.commands.map(async (cmd, i) => {
        // A stage stops when the caller goes away or when the stage after it exits (SIGPIPE).
        const controller = new AbortController();
        const abort = () => controller.abort();
        signal.addEventListener('abort', abort, { once: true });
        const downstream = pipes[i];
        downstream?.onReaderGone(abort);
        const stageIo: Io = {
          stdin: i === 0 ? io.stdin : pipes[i - 1]!,
          stdout: downstream ?? io.stdout,
          stderr: io.stderr,
        };
        // Every stage but the last runs in a subshell, as in sh.
        const runner =
          i === stages - 1 ? this : new Interpreter(this.device, this.commands, cloneState(this.state));
        try {
          return await runner.command(cmd, stageIo, controller.signal);
        } catch (error) {
          if (error instanceof ExitSignal) return error.status;
          throw error;
        } finally {
          signal.removeEventListener('abort', abort);
          downstream?.end();
          if (i > 0) pipes[i - 1]!.closeReader();
        }
      });
      const statuses = await Promise.all(runs);
      status = statuses[statuses.length - 1]!;
    }
    if (p.negate) status = status === 0 ? 1 : 0;
    this.state.status = status;
    return status;
  }

  private async command(cmd: Command, io: Io, signal: AbortSignal): Promise<number> {
    if (cmd.type === 'simple') return this.simple(cmd, io, signal);
    const redirected = await this.applyRedirects(cmd.redirects, io, signal);
    if (typeof redirected === 'number') return redirected;
    const { io: rio, files } = redirected;
    let status = 0;
    try {
      switch (cmd.type) {
        case 'group':
          status = await this.list(cmd.body, rio, signal);
          break;
        case 'subshell': {
          const child = new Interpreter(this.device, this.commands, cloneState(this.state));
          try {
            status = await child.list(cmd.body, rio, signal);
          } catch (error) {
            if (error instanceof ExitSignal) status = error.status;
            else throw error;
          }
          break;
        }
        case 'if': {
          let matched = false;
          for (const clause of cmd.clauses) {
            if ((await this.list(clause.cond, rio, signal)) === 0) {
              status = await this.list(clause.body, rio, signal);
              matched = true;
              break;
            }
          }
          if (!matched) status = cmd.otherwise ? await this.list(cmd.otherwise, rio, signal) : 0;
          break;
        }
        case 'while':
        case 'until': {
          status = 0;
          for (let guard = 0; !signal.aborted; guard++) {
            const c = await this.list(cmd.cond, rio, signal);
            if ((cmd.type === 'while') !== (c === 0)) break;
            const r = await this.loopBody(cmd.body, rio, signal);
            status = r.status;
            if (r.stop) break;
            // Yield so a tight `while true` loop cannot starve the event loop.
            if (guard % 64 === 63) await new Promise((resolve) => setImmediate(resolve));
          }
          break;
        }
        case 'for': {
          const items = cmd.items
            ? (await Promise.all(cmd.items.map((w) => this.expandFields(w, io, signal)))).flat()
            : this.state.positional;
          status = 0;
          for (const item of items) {
            if (signal.aborted) break;
            this.state.vars.set(cmd.name, item);
            const r = await this.loopBody(cmd.body, rio, signal);
            status = r.status;
            if (r.stop) break;
          }
          break;
        }
      }
    } finally {
      status = this.reportFiles(files, io, SHELL_NAME, status);
    }
    this.state.status = status;
    return status;
  }

  private async loopBody(
    body: List,
    io: Io,
    signal: AbortSignal,
  ): Promise<{ status: number; stop: boolean }> {
    try {
      return { status: await this.list(body, io, signal), stop: false };
    } catch (error) {
      if (error instanceof LoopSignal) {
        if (error.levels > 1) throw new LoopSignal(error.kind, error.levels - 1);
        return { status: 0, stop: error.kind === 'break' };
      }
      throw error;
    }
  }

  private async simple(
    cmd: Extract<Command, { type: 'simple' }>,
    io: Io,
    signal: AbortSignal,
  ): Promise<number> {
    const argv: string[] = [];
    for (const w of cmd.words) argv.push(...(await this.expandFields(w, io, signal)));
    const assigns: [string, string][] = [];
    for (const a of cmd.assigns) assigns.push([a.name, await this.expandString(a.value, io, signal)]);
    const redirected = await this.applyRedirects(cmd.redirects, io, signal);
    if (typeof redirected === 'number') return (this.state.status = redirected);
    const { io: rio, files } = redirected;
    let status: number;
    if (argv.length === 0) {
      for (const [k, v] of assigns) this.state.vars.set(k, v);
      status = 0;
    } else {
      status = await this.invoke(argv, assigns, rio, signal);
    }
    status = this.reportFiles(files, io, argv[0] ?? SHELL_NAME, status);
    this.state.status = status;
    return status;
  }

  /**
   * After a redirected command: a write that failed (a full disk) is reported the way a tool
   * reports a failed write, and fails the command.
   */
  private reportFiles(files: FileOutput[], io: Io, name: string, status: number): number {
    for (const f of files) {
      if (!f.error) continue;
      io.stderr.write(`${name}: write error: ${f.error.reason}\n`);
      if (status === 0) status = 1;
    }
    return status;
  }

  private async applyRedirects(
    redirects: Redirect[],
    io: Io,
    signal: AbortSignal,
  ): Promise<{ io: Io; files: FileOutput[] } | number> {
    if (redirects.length === 0) return { io, files: [] };
    const fds: [Io['stdin'], Output, Output] = [io.stdin, io.stdout, io.stderr];
    let stdin = io.stdin;
    const files: FileOutput[] = [];
    for (const r of redirects) {
      const target = await this.expandString(r.target, io, signal);
      const path = normalizePath(target, this.state.cwd);
      if (r.op === '<') {
        try {
          stdin = new BufferInput(this.device.fs.readFile(path));
        } catch (error) {
          io.stderr.write(
            `${SHELL_NAME}: can't open ${target}: ${error instanceof FsError ? error.reason : String(error)}\n`,
          );
          return 1;
        }
        continue;
      }
      if (r.op === '>&' || r.op === '<&') {
        if (target === '-') continue;
        const n = Number(target);
        if (Number.isInteger(n) && n >= 0 && n <= 2) {
          if (r.fd === 1 || r.fd === 2) fds[r.fd] = n === 0 ? fds[1] : fds[n as 1 | 2];
          continue;
        }
        if (r.op === '<&') continue;
        // `>&file` is bash for `&>file`
      }
      if (path === '/dev/null') {
        const sink = { write: () => undefined, drain: () => Promise.resolve(), closed: false };
        if (r.op === '&>' || r.op === '>&') {
          fds[1] = sink;
          fds[2] = sink;
        } else if (r.fd === 1 || r.fd === 2) fds[r.fd] = sink;
        continue;
      }
      const append = r.op === '>>';
      try {
        const exists = this.device.fs.exists(path);
        if (!append || !exists) this.device.fs.writeFile(path, Buffer.alloc(0));
        else if (this.device.fs.stat(path).kind === 'dir') throw new FsError('EISDIR', path);
      } catch (error) {
        io.stderr.write(
          `${SHELL_NAME}: can't create ${target}: ${error instanceof FsError ? error.reason : String(error)}\n`,
        );
        return 1;
      }
      const out = new FileOutput(this.device.fs, path);
      files.push(out);
      if (r.op === '&>' || r.op === '>&') {
        fds[1] = out;
        fds[2] = out;
      } else if (r.fd === 1 || r.fd === 2) fds[r.fd] = out;
    }
    return { io: { stdin, stdout: fds[1], stderr: fds[2] }, files };
  }

  // ---------- builtins and commands ----------

  private async invoke(
    argv: string[],
    assigns: [string, string][],
    io: Io,
    signal: AbortSignal,
  ): Promise<number> {
    const name = argv[0]!;
    const args = argv.slice(1);
    const builtin = await this.builtin(name, args, assigns, io, signal);
    if (builtin !== null) return builtin;
    let lookup = name;
    if (name.includes('/')) {
      const path = normalizePath(name, this.state.cwd);
      if (!this.device.fs.exists(path)) {
        io.stderr.write(`${SHELL_NAME}: ${name}: inaccessible or not found\n`);
        return 127;
      }
      if (!/^\/(system|vendor|product|system_ext)\/(x?bin)\//.test(this.device.fs.realpath(path))) {
        io.stderr.write(`${SHELL_NAME}: ${name}: can't execute: Permission denied\n`);
        return 126;
      }
      lookup = basename(path);
    }
    const fn = this.commands.get(lookup);
    if (!fn) {
      io.stderr.write(`${SHELL_NAME}: ${name}: not found\n`);
      this.device.log.debug('virtual shell: command not found', { command: name, args });
      return 127;
    }
    const env = new Map(this.state.vars);
    for (const [k, v] of assigns) env.set(k, v);
    const ctx: CommandContext = {
      name: lookup,
      args,
      device: this.device,
      env,
      cwd: this.state.cwd,
      signal,
      stdin: io.stdin,
      stdout: io.stdout,
      stderr: io.stderr,
      runShell: (source, childIo, options) => {
        const state = cloneState(this.state);
        if (options?.cwd) state.cwd = options.cwd;
        if (options?.args) state.positional = options.args;
        return new Interpreter(this.device, this.commands, state).run(source, childIo, signal);
      },
    };
    try {
      return await fn(ctx);
    } catch (error) {
      if (error instanceof FsError) {
        io.stderr.write(`${lookup}: ${error.message}\n`);
        return 1;
      }
      if (error instanceof ExitSignal || error instanceof LoopSignal) throw error;
      this.device.log.debug('virtual shell: command failed', { command: lookup, args, error: String(error) });
      io.stderr.write(`${lookup}: ${error instanceof Error ? error.message : String(error)}\n`);
      return 1;
    }
  }

  /** Runs a builtin, or returns null when name is not one. */
  private async builtin(
    name: string,
    args: string[],
    assigns: [string, string][],
    io: Io,
    signal: AbortSignal,
  ): Promise<number | null> {
    switch (name) {
      case 'cd': {
        const target =
          args[0] === undefined || args[0] === '~'
            ? '/'
            : args[0] === '-'
              ? (this.state.vars.get('OLDPWD') ?? '/')
              : args[0];
        const path = normalizePath(target, this.state.cwd);
        try {
          const st = this.device.fs.stat(path);
          if (st.kind !== 'dir') throw new FsError('ENOTDIR', target);
        } catch (error) {
          io.stderr.write(
            `${SHELL_NAME}: cd: ${target}: ${error instanceof FsError ? error.reason : String(error)}\n`,
          );
          return 2;
        }
        this.state.vars.set('OLDPWD', this.state.cwd);
        this.state.cwd = path;
        this.state.vars.set('PWD', path);
        return 0;
      }
      case 'pwd':
        io.stdout.write(`${this.state.cwd}\n`);
        return 0;
      case 'export':
      case 'readonly':
      case 'local':
      case 'typeset': {
        for (const a of args) {
          const eq = a.indexOf('=');
          if (eq > 0) this.state.vars.set(a.slice(0, eq), a.slice(eq + 1));
          else if (a === '-p') for (const [k, v] of this.state.vars) io.stdout.write(`export ${k}=${v}\n`);
        }
        return 0;
      }
      case 'unset':
        for (const a of args) if (!a.startsWith('-')) this.state.vars.delete(a);
        return 0;
      case 'exit': {
        const status = args[0] === undefined ? this.state.status : Number(args[0]) & 0xff;
        this.exited = true;
        throw new ExitSignal(Number.isFinite(status) ? status : 2);
      }
      case 'return':
        throw new ExitSignal(args[0] === undefined ? this.state.status : Number(args[0]) & 0xff);
      case 'break':
      case 'continue':
        throw new LoopSignal(name, Math.max(1, Number(args[0] ?? '1') || 1));
      case 'exec': {
        if (args.length === 0) return 0;
        return this.invoke(args, assigns, io, signal);
      }
      case 'command':
      case 'builtin': {
        const rest = args[0] === '-v' ? args.slice(1) : args;
        if (args[0] === '-v') {
          const n = rest[0] ?? '';
          if (this.commands.has(n)) {
            io.stdout.write(`/system/bin/${n}\n`);
            return 0;
          }
          return 1;
        }
        if (rest.length === 0) return 0;
        return this.invoke(rest, assigns, io, signal);
      }
      case ':':
        return 0;
      case 'set': {
        if (args[0] === '--') this.state.positional = args.slice(1);
        else if (args.length === 0)
          for (const [k, v] of [...this.state.vars].sort()) io.stdout.write(`${k}=${v}\n`);
        return 0;
      }
      case 'shift': {
        const n = Number(args[0] ?? '1');
        this.state.positional = this.state.positional.slice(n);
        return 0;
      }
      case 'read': {
        const names = args.filter((a) => !a.startsWith('-'));
        const line = await readLine(io.stdin);
        if (line === null) return 1;
        const fields = line.split(/[ \t]+/).filter(Boolean);
        names.forEach((n, i) => {
          const value = i === names.length - 1 ? fields.slice(i).join(' ') : (fields[i] ?? '');
          this.state.vars.set(n, value);
        });
        if (names.length === 0) this.state.vars.set('REPLY', line);
        return 0;
      }
      case 'eval':
        return this.run(args.join(' '), io, signal);
      case '.':
      case 'source': {
        const path = normalizePath(args[0] ?? '', this.state.cwd);
        try {
          return await this.run(this.device.fs.readFile(path).toString('utf8'), io, signal);
        } catch (error) {
          if (error instanceof FsError) {
            io.stderr.write(`${SHELL_NAME}: .: ${args[0] ?? ''}: ${error.reason}\n`);
            return 1;
          }
          throw error;
        }
      }
      case 'wait':
      case 'trap':
      case 'umask':
      case 'ulimit':
      case 'alias':
      case 'unalias':
        return 0;
      case 'type': {
        let status = 0;
        for (const a of args) {
          if (this.commands.has(a)) io.stdout.write(`${a} is /system/bin/${a}\n`);
          else {
            io.stderr.write(`${a} not found\n`);
            status = 1;
          }
        }
        return status;
      }
      default:
        return null;
    }
  }

  // ---------- expansion ----------

  private param(name: string): string | undefined {
    switch (name) {
      case '?':
        return String(this.state.status);
      case '$':
        return String(this.state.pid);
      case '#':
        return String(this.state.positional.length);
      case '@':
      case '*':
        return this.state.positional.join(' ');
      case '0':
        return SHELL_NAME;
      case '!':
        return '';
      case '-':
        return 'h';
    }
    if (/^[1-9][0-9]*$/.test(name)) return this.state.positional[Number(name) - 1];
    if (name === 'PWD') return this.state.cwd;
    if (name === 'RANDOM') return String(Math.floor(Math.random() * 32768));
    return this.state.vars.get(name);
  }

  private async partValue(
    part: Exclude<Word['parts'][number], { type: 'lit' }>,
    io: Io,
    signal: AbortSignal,
  ): Promise<string> {
    if (part.type === 'arith') {
      const expanded = part.source.replace(
        /\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g,
        (_, n: string) => this.param(n) ?? '0',
      );
      return String(evalArithmetic(expanded, (n) => Number(this.param(n) ?? 0) || 0));
    }
    if (part.type === 'cmdsub') {
      const out = new BufferOutput();
      const child = new Interpreter(this.device, this.commands, cloneState(this.state));
      const status = await child.run(
        part.source,
        { stdin: io.stdin, stdout: out, stderr: io.stderr },
        signal,
      );
      this.state.status = status;
      return out.text().replace(/\n+$/, '');
    }
    const value = this.param(part.name);
    const unsetOrEmpty = value === undefined || (value === '' && part.op.startsWith(':'));
    switch (part.op) {
      case '#':
        return String((value ?? '').length);
      case ':-':
      case '-':
        return unsetOrEmpty ? (part.arg ? await this.expandString(part.arg, io, signal) : '') : (value ?? '');
      case ':=':
      case '=': {
        if (!unsetOrEmpty) return value ?? '';
        const v = part.arg ? await this.expandString(part.arg, io, signal) : '';
        this.state.vars.set(part.name, v);
        return v;
      }
      case ':+':
      case '+':
        return unsetOrEmpty ? '' : part.arg ? await this.expandString(part.arg, io, signal) : '';
      default:
        return value ?? '';
    }
  }

  /** Expands a word without field splitting or globbing (assignments, redirect targets). */
  async expandString(word: Word, io: Io, signal: AbortSignal): Promise<string> {
    let out = '';
    for (const part of word.parts)
      out += part.type === 'lit' ? part.text : await this.partValue(part, io, signal);
    return out;
  }

  /** Expands a word into fields: parameters, substitutions, splitting, globs. */
  async expandFields(word: Word, io: Io, signal: AbortSignal): Promise<string[]> {
    interface Field {
      text: string;
      pattern: string;
      glob: boolean;
      quoted: boolean;
    }
    const fields: Field[] = [];
    let current: Field | null = null;
    const cur = (): Field => (current ??= { text: '', pattern: '', glob: false, quoted: false });
    const ifs = this.state.vars.get('IFS') ?? ' \t\n';
    for (const part of word.parts) {
      if (part.type === 'lit') {
        const f = cur();
        f.text += part.text;
        if (part.quoted) {
          f.quoted = true;
          f.pattern += part.text.replace(/[*?[\]\\]/g, '\\$&');
        } else {
          f.pattern += part.text;
          if (/[*?[]/.test(part.text)) f.glob = true;
        }
        continue;
      }
      if (part.type === 'param' && part.quoted && part.name === '@' && part.op === '') {
        // "$@": one field per positional parameter
        const ps = this.state.positional;
        ps.forEach((p, i) => {
          const f = cur();
          f.text += p;
          f.pattern += p.replace(/[*?[\]\\]/g, '\\$&');
          f.quoted = true;
          if (i < ps.length - 1) {
            fields.push(f);
            current = null;
          }
        });
        continue;
      }
      const value = await this.partValue(part, io, signal);
      if (part.quoted || ifs === '') {
        const f = cur();
        f.text += value;
        f.pattern += value.replace(/[*?[\]\\]/g, '\\$&');
        f.quoted = true;
        continue;
      }
      const pieces = value.split(new RegExp(`[${escapeClass(ifs)}]+`));
      pieces.forEach((piece, i) => {
        if (i > 0) {
          if (current) fields.push(current);
          current = null;
        }
        if (piece !== '') {
          const f = cur();
          f.text += piece;
          f.pattern += piece.replace(/[*?[\]\\]/g, '\\$&');
        }
      });
    }
    if (current) fields.push(current);
    const out: string[] = [];
    for (const f of fields) {
      if (f.text === '' && !f.quoted) continue;
      if (f.glob) {
        const matches = this.glob(f.pattern);
        if (matches.length > 0) {
          out.push(...matches);
          continue;
        }
      }
      out.push(f.text);
    }
    return out;
  }

  private glob(pattern: string): string[] {
    const absolute = pattern.startsWith('/');
    const segments = pattern.split('/').filter((s) => s !== '');
    let candidates: string[] = [absolute ? '/' : ''];
    for (const seg of segments) {
      const next: string[] = [];
      const hasMagic = /(^|[^\\])[*?[]/.test(seg);
      for (const base of candidates) {
        const dirPath = base === '' ? this.state.cwd : base;
        if (!hasMagic) {
          const name = seg.replace(/\\(.)/g, '$1');
          const path = joinPath(base, name);
          if (this.device.fs.exists(normalizePath(path, this.state.cwd))) next.push(path);
          continue;
        }
        let entries: string[];
        try {
          entries = this.device.fs.readdir(dirPath).map((e) => e.name);
        } catch {
          continue;
        }
        const re = globSegmentRegex(seg);
        for (const name of entries) {
          if (name.startsWith('.') && !seg.startsWith('.')) continue;
          if (re.test(name)) next.push(joinPath(base, name));
        }
      }
      candidates = next.sort();
      if (candidates.length === 0) return [];
    }
    return candidates;
  }
}

/** Integer arithmetic of `$((...))`: + - * / % comparisons, && || ! and parentheses. */
export function evalArithmetic(source: string, variable: (name: string) => number): number {
  const tokens = source.match(/\d+|[A-Za-z_][A-Za-z0-9_]*|<=|>=|==|!=|&&|\|\||[-+*/%()<>!]/g) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const primary = (): number => {
    const t = tokens[i++];
    if (t === undefined) throw new ShellSyntaxError('arithmetic syntax error');
    if (t === '(') {
      const v = or();
      i++;
      return v;
    }
    if (t === '-') return -primary();
    if (t === '+') return primary();
    if (t === '!') return primary() === 0 ? 1 : 0;
    if (/^\d+$/.test(t)) return Number(t);
    if (/^[A-Za-z_]/.test(t)) return variable(t);
    throw new ShellSyntaxError(`arithmetic syntax error: ${t}`);
  };
  const mul = (): number => {
    let v = primary();
    while (peek() === '*' || peek() === '/' || peek() === '%') {
      const op = tokens[i++];
      const r = primary();
      if ((op === '/' || op === '%') && r === 0) throw new ShellSyntaxError('divide by zero');
      v = op === '*' ? v * r : op === '/' ? Math.trunc(v / r) : v % r;
    }
    return v;
  };
  const add = (): number => {
    let v = mul();
    while (peek() === '+' || peek() === '-') v = tokens[i++] === '+' ? v + mul() : v - mul();
    return v;
  };
  const cmp = (): number => {
    let v = add();
    for (;;) {
      const op = peek();
      if (op !== '<' && op !== '>' && op !== '<=' && op !== '>=' && op !== '==' && op !== '!=') return v;
      i++;
      const r = add();
      const res =
        op === '<'
          ? v < r
          : op === '>'
            ? v > r
            : op === '<='
              ? v <= r
              : op === '>='
                ? v >= r
                : op === '=='
                  ? v === r
                  : v !== r;
      v = res ? 1 : 0;
    }
  };
  const and = (): number => {
    let v = cmp();
    while (peek() === '&&') {
      i++;
      const r = cmp();
      v = v !== 0 && r !== 0 ? 1 : 0;
    }
    return v;
  };
  const or = (): number => {
    let v = and();
    while (peek() === '||') {
      i++;
      const r = and();
      v = v !== 0 || r !== 0 ? 1 : 0;
    }
    return v;
  };
  if (tokens.length === 0) return 0;
  return or();
}

function joinPath(base: string, name: string): string {
  if (base === '') return name;
  return base.endsWith('/') ? base + name : `${base}/${name}`;
}

function escapeClass(s: string): string {
  return s
    .replace(/[\\\]^-]/g, '\\$&')
    .replace(/\t/g, '\\t')
    .replace(/\n/g, '\\n');
}

function globSegmentRegex(seg: string): RegExp {
  let re = '^';
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i]!;
    if (c === '\\' && i + 1 < seg.length) {
      re += escapeRegex(seg[++i]!);
    } else if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const end = seg.indexOf(']', i + 2);
      if (end < 0) re += '\\[';
      else {
        let body = seg.slice(i + 1, end);
        if (body.startsWith('!')) body = '^' + body.slice(1);
        re += `[${body.replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else re += escapeRegex(c);
  }
  return new RegExp(re + '$', 's');
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function cloneState(state: ShellState): ShellState {
  return {
    vars: new Map(state.vars),
    cwd: state.cwd,
    status: state.status,
    positional: [...state.positional],
    pid: state.pid,
  };
}

async function readLine(input: Io['stdin']): Promise<string | null> {
  // `read` takes one line; inputs here are line-oriented buffers or pipes, so reading the
  // next chunk and keeping its first line is close enough for scripts adb clients send.
  const chunk = await input.read();
  if (chunk === null) return null;
  const text = chunk.toString('utf8');
  const nl = text.indexOf('\n');
  return nl >= 0 ? text.slice(0, nl) : text;
}
