/**
 * Runs parsed shell programs against the phone as mksh (Android's /system/bin/sh) does:
 * expansion (parameters, command substitution, field splitting, globs), redirections,
 * pipelines, lists, background jobs and the builtins that change the shell itself (cd,
 * export, exit, trap, wait, kill, ...). Everything else is a command from the table, as
 * /system/bin would have it, run in a process of its own.
 *
 * Processes follow mksh: each command runs as a child process of its shell (the shell's
 * only command is exec'd in the shell's own process when the source has no quoting or
 * metacharacters, as `sh -c` does), each pipeline stage and subshell is a forked shell, and a
 * background job's pid is `$!`. Signals follow mksh too: a trapped signal runs its action
 * between commands (at once inside `wait`); an untrapped SIGHUP ends the shell at once and
 * hangs up the command it was waiting for; an untrapped SIGINT, SIGQUIT or SIGTERM ends it
 * (running the EXIT trap) once the current command is done, with status 128+N.
 */
import type { Device } from '../device.js';
import { FsError, SHELL_CREDENTIALS, basename, normalizePath } from '../fs.js';
import type { Credentials, FsView } from '../fs.js';
import { ADBD } from '../processes.js';
import { SYSTEM_BIN } from '../system-image.js';
import type { Process } from '../processes.js';
import {
  SIGHUP,
  SIGINT,
  SIGPIPE,
  SIGQUIT,
  SIGTERM,
  SIGNALS,
  defaultAction,
  signalName,
  signalNumber,
} from '../signals.js';
import type { CommandContext, CommandTable, Io, RunShellOptions } from './command.js';
import { userName } from './commands/format.js';
import { echoText, unescapeBackslashes } from './commands/text.js';
import { BufferInput, BufferOutput, EMPTY_INPUT, FileOutput, NULL_OUTPUT, Pipe, openInput } from './io.js';
import type { Input, Output } from './io.js';
import { evaluateArithmetic } from './arith.js';
import { Glob, removePattern, substitutePattern } from './glob.js';
import type { ArithmeticVariables } from './arith.js';
import { ShellSyntaxError, parseShell, tooDeep } from './parse.js';
import { mkshTest } from './test-builtin.js';
import type { TestShell } from './test-builtin.js';
import type { AndOr, Command, CondExpr, List, Pipeline, Redirect, Word } from './parse.js';

/** A trap's condition: a signal number, or the shell's own EXIT and ERR. */
export type TrapKey = number | 'EXIT' | 'ERR';

export interface ShellState {
  /** Each variable's value: an array's element 0. */
  vars: Map<string, string>;
  /** The elements of arrays past element 0, by index (`set -A`, `a[3]=x`, `a=(...)`). */
  elements: Map<string, Map<number, string>>;
  /** Variables passed on to commands in their environment (`export`, and what the shell inherited). */
  exported: Set<string>;
  /** Variables an assignment may not change (`readonly`, `typeset -r`). */
  readonly: Set<string>;
  /** Variables whose assignments are arithmetic (`typeset -i`). */
  integer: Set<string>;
  /** How assignments to a variable are formatted (`typeset -u -l -L -R -Z`). */
  formats: Map<string, VariableFormat>;
  cwd: string;
  status: number;
  positional: string[];
  /** `$$`: the pid of the shell that started the script (subshells keep it); 0 until bound. */
  pid: number;
  /** `$!`: the pid of the last background job. */
  lastBackground: number | null;
  /** Trap actions; an empty action ignores the signal. */
  traps: Map<TrapKey, string>;
  /** Who the shell runs as. */
  cred: Credentials;
  /** Functions defined with `name() { ... }`. */
  functions: Map<string, Command>;
  /**
   * The file creation mask `umask` sets and prints, which files and directories the shell
   * and its commands make are made with: 0, as adbd (which clears its umask) starts shells.
   */
  umask: number;
  /** `set` options in force: e (errexit), u (nounset), x (xtrace), f (noglob), p (pipefail). */
  options: Set<string>;
}

/**
 * typeset's formatting attributes: -u/-l upper or lower case, -L/-R justified in `width`
 * columns (-Z: -R filled with zeros, or -L without leading zeros). A width of 0 is taken
 * from the first value assigned.
 */
export interface VariableFormat {
  case?: 'u' | 'l';
  justify?: 'L' | 'R';
  zero?: boolean;
  width: number;
}

/** A value as a variable with `format` holds it, as mksh's typeset formats it. */
function formatValue(value: string, format: VariableFormat): string {
  let v = format.case === 'u' ? value.toUpperCase() : format.case === 'l' ? value.toLowerCase() : value;
  if (format.justify === 'L') {
    v = v.replace(/^[ \t\n]+/, '');
    if (format.zero) v = v.replace(/^0+/, '');
    v = v.length >= format.width ? v.slice(0, format.width) : v.padEnd(format.width, ' ');
  } else if (format.justify === 'R') {
    v = v.replace(/[ \t\n]+$/, '');
    v =
      v.length >= format.width
        ? v.slice(v.length - format.width)
        : v.padStart(format.width, format.zero ? '0' : ' ');
  }
  return v;
}

export interface InterpreterOptions {
  /**
   * A terminal session (`adb shell` with a pty): SIGINT and SIGTERM do not end it, and
   * background jobs keep SIGINT, as in an interactive mksh with job control.
   */
  interactive?: boolean;
}

class ExitSignal {
  constructor(
    readonly status: number,
    /** The untrapped signal (INT, QUIT, TERM) that ended the shell, if one did. */
    readonly interrupt: number | null = null,
  ) {}
}

/**
 * mksh's errorf: an error that ends a non-interactive shell (an interactive one goes on with
 * its next line) with `status`: 1, or 2 for an assignment to a read-only variable.
 */
class ShellError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** The status a shell ends with for an error it reports as mksh does, or null for any other throw. */
function shellErrorStatus(error: unknown): number | null {
  if (error instanceof ShellError) return error.status;
  // mksh's parser reports with errorf too: status 1.
  if (error instanceof ShellSyntaxError) return 1;
  return null;
}

/** A variable as it was before a function's `local` (or `typeset`) hid it. */
interface SavedVariable {
  value: string | undefined;
  elements: Map<number, string> | undefined;
  exported: boolean;
  readonly: boolean;
  integer: boolean;
  format: VariableFormat | undefined;
}

/** `return` from a function. */
class ReturnSignal {
  constructor(readonly status: number) {}
}

class LoopSignal {
  constructor(
    readonly kind: 'break' | 'continue',
    readonly levels: number,
  ) {}
}

interface Job {
  /** `%N`; null once a non-interactive shell's job has ended (mksh frees the number then). */
  id: number | null;
  process: Process;
  /** The job's command as written, which `jobs` shows. */
  command: string;
  done: Promise<number>;
  status: number | null;
}

/**
 * Ended jobs a non-interactive shell keeps so that `wait PID` still reports their status
 * (mksh keeps such zombies for `$!`); the oldest are forgotten past this many, so a script
 * that starts jobs in a loop holds a bounded table.
 */
const KEPT_ENDED_JOBS = 64;

export const SHELL_NAME = '/system/bin/sh';

/** Android 14's mksh (R59c, built with the vendor suffix " Android"); read-only, not exported. */
const KSH_VERSION = '@(#)MIRBSD KSH R59 2020/10/31 Android';

/** Signals mksh always catches (to clean up): their traps run, or they end the shell. */
const SHELL_SIGNALS = [SIGHUP, SIGINT, SIGQUIT, SIGTERM];

/** `set -o NAME` for the options the shell models. */
const LONG_OPTIONS: Record<string, string> = {
  errexit: 'e',
  nounset: 'u',
  xtrace: 'x',
  noglob: 'f',
  pipefail: 'p',
};

/** Builtins of mksh that the command table also has: they run in the shell's own process. */
const IN_PROCESS = new Set(['true', 'false']);

/**
 * mksh execs the command of `sh -c` in the shell's own process when the source is a single
 * simple command without quoting or metacharacters (`sleep 30`, `screenrecord /sdcard/a.mp4`):
 * adbd's hang-up then reaches the command itself.
 */
export function mkshMayExec(source: string): boolean {
  return !/[<>[\]=`#\n&();|"'*\\?$\t]/.test(source);
}

export function initialShellState(
  device: Device,
  extraEnv: Record<string, string> = {},
  cred: Credentials = SHELL_CREDENTIALS,
): ShellState {
  const user = userName(cred.uid);
  const vars = new Map<string, string>([
    [
      'PATH',
      '/product/bin:/apex/com.android.runtime/bin:/apex/com.android.art/bin:/system_ext/bin:/system/bin:/system/xbin:/odm/bin:/vendor/bin:/vendor/xbin',
    ],
    ['HOME', '/'],
    ['USER', user],
    ['LOGNAME', user],
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
  void device;
  // The shell's own IFS and PS1 are not passed on: adbd's environment has neither.
  const exported = new Set([...vars.keys()].filter((name) => name !== 'IFS' && name !== 'PS1'));
  return startingState(vars, exported, cred);
}

/**
 * A shell as it starts: these variables (the `exported` ones passed on to commands) and
 * $KSH_VERSION; no arrays, attributes, functions, traps or options.
 */
function startingState(
  vars: Map<string, string>,
  exported: Set<string>,
  cred: Credentials,
  umask = 0,
): ShellState {
  vars.set('KSH_VERSION', KSH_VERSION);
  return {
    vars,
    elements: new Map(),
    exported,
    readonly: new Set(['KSH_VERSION']),
    integer: new Set(),
    formats: new Map(),
    umask,
    cwd: '/',
    status: 0,
    positional: [],
    pid: 0,
    lastBackground: null,
    traps: new Map(),
    cred,
    functions: new Map(),
    options: new Set(),
  };
}

/** The state a forked subshell starts with: a copy, with caught traps reset (ignored ones stay). */
function subshellState(state: ShellState): ShellState {
  return {
    vars: new Map(state.vars),
    elements: new Map([...state.elements].map(([name, items]) => [name, new Map(items)])),
    exported: new Set(state.exported),
    readonly: new Set(state.readonly),
    integer: new Set(state.integer),
    formats: new Map([...state.formats].map(([name, format]) => [name, { ...format }])),
    umask: state.umask,
    cwd: state.cwd,
    status: state.status,
    positional: [...state.positional],
    pid: state.pid,
    lastBackground: state.lastBackground,
    traps: new Map([...state.traps].filter(([, action]) => action === '')),
    cred: state.cred,
    functions: new Map(state.functions),
    options: new Set(state.options),
  };
}

/** The file of a command substitution that is only `< FILE` (`$(<f)`); null for any other. */
function inputRedirectOnly(source: string): Word | null {
  let list: List;
  try {
    list = parseShell(source);
  } catch {
    return null;
  }
  const item = list.length === 1 && !list[0]!.background ? list[0]!.andOr : null;
  const command = item && item.rest.length === 0 && !item.first.negate ? item.first.commands : null;
  const simple = command?.length === 1 ? command[0]! : null;
  if (simple?.type !== 'simple' || simple.words.length > 0 || simple.assigns.length > 0) return null;
  const [redirect] = simple.redirects;
  return simple.redirects.length === 1 && redirect!.op === '<' && redirect!.fd === 0
    ? redirect!.target
    : null;
}

/** Holds the outputs a process writes to, as its open file descriptors would. */
function holdOutputs(process: Process, io: Io): void {
  const releases: (() => void)[] = [];
  const seen = new Set<Output>();
  for (const out of [io.stdout, io.stderr]) {
    if (seen.has(out) || !out.hold) continue;
    seen.add(out);
    releases.push(out.hold());
  }
  process.setHolds(releases);
}

export class Interpreter {
  readonly proc: Process;
  /** Background jobs, oldest first: the last is `%+`, the one before it `%-`. */
  private jobs: Job[] = [];
  /** Children the shell is waiting for right now: a hang-up of the shell reaches them too. */
  private readonly foreground = new Set<Process>();
  /** Trapped signals whose action has yet to run. */
  private readonly pendingTraps: number[] = [];
  /** An untrapped SIGINT/SIGQUIT/SIGTERM that ends the shell at the next command boundary. */
  private interrupt: number | null = null;
  private readonly wakers = new Set<() => void>();
  /** >0 while running a condition (if/while, left of && and ||, after !): no ERR trap. */
  private conditionDepth = 0;
  private exitTrapRun = false;
  /** Resolves with 128+N once a signal has terminated this shell's process. */
  private readonly death: Promise<number>;
  /** The filesystem as this shell's user sees it. */
  private readonly fs: FsView;
  /** The shell's umask as it is when a file is made (the views of its files read it). */
  private readonly umask = (): number => this.state.umask;
  /** True when the last run ended with `exit` (interactive sessions stop then). */
  exited = false;

  constructor(
    private readonly device: Device,
    private readonly commands: CommandTable,
    private readonly state: ShellState,
    proc?: Process,
    private readonly options: InterpreterOptions = {},
  ) {
    this.proc =
      proc ??
      device.processes.spawn({
        parent: ADBD,
        argv: [SHELL_NAME],
        uid: state.cred.uid,
        user: userName(state.cred.uid),
        newSession: true,
        tty: null,
      });
    if (state.pid === 0) state.pid = this.proc.pid;
    this.death = this.proc.whenTerminated();
    this.fs = device.fs.as(state.cred, this.proc.pid, this.umask);
    this.proc.handle(SHELL_SIGNALS, (signal) => this.onSignal(signal));
    for (const [key, action] of state.traps) {
      if (typeof key !== 'number') continue;
      if (action === '') this.proc.ignore(key);
      else this.proc.handle(key, (signal) => this.onSignal(signal));
    }
  }

  get status(): number {
    return this.state.status;
  }

  /** Parses and runs source; syntax errors print like mksh and give status 2. */
  async run(source: string, io: Io, signal: AbortSignal, options: { exec?: boolean } = {}): Promise<number> {
    let list: List;
    try {
      list = parseShell(source);
    } catch (error) {
      return this.reportError(error, io);
    }
    const running = this.list(list, io, signal, options.exec === true);
    // A shell that a signal terminated is gone at once, whatever it was waiting for.
    running.catch(() => undefined);
    try {
      return await Promise.race([running, this.death]);
    } catch (thrown) {
      const error = tooDeep(thrown) ?? thrown;
      if (shellErrorStatus(error) !== null) return this.reportError(error, io);
      if (error instanceof ExitSignal) {
        this.exited = true;
        this.state.status = error.status;
        if (error.interrupt !== null) this.interruptedBy = error.interrupt;
        return error.status;
      }
      if (error instanceof LoopSignal) return this.state.status;
      throw error;
    } finally {
      this.conditionDepth = 0;
    }
  }

  /** Says an error as mksh says it and returns the status it ends the shell with; rethrows any other. */
  private reportError(error: unknown, io: Io): number {
    const status = shellErrorStatus(error);
    if (status === null) throw error;
    io.stderr.write(`${SHELL_NAME}: ${(error as Error).message}\n`);
    this.state.status = status;
    return status;
  }

  /** Runs one command from the table in this shell's own process, as exec(2) would (abb). */
  execute(argv: string[], io: Io, signal: AbortSignal): Promise<number> {
    return this.invoke(argv, [], io, signal, true);
  }

  /** The untrapped signal that ended the shell (for the EXIT trap and its process group). */
  private interruptedBy: number | null = null;

  /** Runs source as this process's whole program: the EXIT trap runs at its end. */
  async script(
    source: string,
    io: Io,
    signal: AbortSignal,
    options: { exec?: boolean } = {},
  ): Promise<number> {
    const status = await this.run(source, io, signal, options);
    return this.finish(io, signal, status);
  }

  /**
   * The shell exits with `status`: its EXIT trap runs (not after a signal that terminated
   * it), and a shell that an untrapped SIGINT or SIGTERM ended passes that signal on to its
   * process group, as mksh does. Returns the final status.
   */
  async finish(io: Io, signal: AbortSignal, status: number): Promise<number> {
    if (this.proc.termSignal !== null) return 128 + this.proc.termSignal;
    let final = status;
    const action = this.state.traps.get('EXIT');
    if (action && !this.exitTrapRun) {
      this.exitTrapRun = true;
      try {
        await Promise.race([this.evaluate(action, io, signal), this.death]);
      } catch (error) {
        if (error instanceof ExitSignal) final = error.status;
        else if (!(error instanceof LoopSignal || shellErrorStatus(error) !== null)) throw error;
      }
      if (this.proc.termSignal !== null) return 128 + this.proc.termSignal;
    }
    const interrupt = this.interruptedBy;
    if (interrupt !== null && (interrupt === SIGINT || interrupt === SIGTERM)) {
      // mksh "hams up its death": the signal goes to its whole process group.
      const pgid = this.proc.info.pgid;
      if (pgid === this.proc.pid) {
        for (const p of this.device.processes.list())
          if (p.pgid === pgid && p.pid !== this.proc.pid)
            this.device.processes.signal(p.pid, interrupt, this.state.cred);
      }
      // ... and then to itself, so that whoever waits for it sees it killed by that signal.
      if (final === 128 + interrupt) this.proc.terminate(interrupt);
    }
    return final;
  }

  /** Parses and runs source in this shell; `exit` in it ends the shell (eval, ., traps). */
  private async evaluate(source: string, io: Io, signal: AbortSignal): Promise<number> {
    return this.list(parseShell(source), io, signal, false);
  }

  // ---------- signals ----------

  private onSignal(signal: number): void {
    const action = this.state.traps.get(signal);
    if (action !== undefined && action !== '') {
      this.pendingTraps.push(signal);
      this.wake();
      return;
    }
    if (signal === SIGHUP) {
      // An untrapped hang-up ends mksh at once, without its EXIT trap; on its way out it
      // hangs up the job it was waiting for.
      for (const child of this.foreground) child.deliver(SIGHUP);
      this.proc.terminate(SIGHUP);
      return;
    }
    if (signal === SIGINT || signal === SIGQUIT || signal === SIGTERM) {
      if (this.options.interactive) return;
      this.interrupt ??= signal;
      this.wake();
      return;
    }
    // A trapped signal whose trap was removed meanwhile: its default action.
    if (defaultAction(signal) === 'terminate') this.proc.terminate(signal);
  }

  private wake(): void {
    for (const w of [...this.wakers]) w();
  }

  /** Between commands: an interrupt ends the shell; pending traps run, keeping `$?`. */
  private async checkpoint(io: Io, signal: AbortSignal): Promise<void> {
    if (this.interrupt !== null) {
      const sig = this.interrupt;
      throw new ExitSignal(128 + sig, sig);
    }
    while (this.pendingTraps.length > 0) {
      const sig = this.pendingTraps.shift()!;
      const action = this.state.traps.get(sig);
      if (!action) continue;
      const saved = this.state.status;
      await this.evaluate(action, io, signal);
      this.state.status = saved;
    }
  }

  private stopped(signal: AbortSignal): boolean {
    return signal.aborted || this.proc.terminated.aborted;
  }

  private stoppedStatus(): number {
    return this.proc.termSignal !== null ? 128 + this.proc.termSignal : 130;
  }

  // ---------- processes ----------

  /** fork(2): a subshell in a new child process, with a copy of this shell's state. */
  private fork(): Interpreter {
    const proc = this.device.processes.spawn({
      parent: this.proc,
      argv: this.proc.info.argv ?? [SHELL_NAME],
      uid: this.state.cred.uid,
      user: userName(this.state.cred.uid),
    });
    return new Interpreter(this.device, this.commands, subshellState(this.state), proc, {});
  }

  /** Runs a forked subshell's work to its end (EXIT trap included); its process then exits. */
  private async runChild(
    child: Interpreter,
    io: Io,
    signal: AbortSignal,
    work: () => Promise<number>,
  ): Promise<number> {
    let status: number;
    try {
      const running = work();
      running.catch(() => undefined);
      status = await Promise.race([running, child.death]);
    } catch (error) {
      if (error instanceof ExitSignal) {
        status = error.status;
        child.interruptedBy = error.interrupt;
      } else if (error instanceof LoopSignal) status = child.state.status;
      else status = child.reportError(error, io);
    }
    try {
      return await child.finish(io, signal, status);
    } finally {
      child.proc.exit();
    }
  }

  /** `cmd &`: a job in a forked child; a simple command is exec'd in it, so `$!` is its pid. */
  private background(andOr: AndOr, io: Io, signal: AbortSignal): void {
    const child = this.fork();
    // A non-interactive shell's jobs read /dev/null and ignore SIGINT and SIGQUIT.
    const jobIo: Io = this.options.interactive ? io : { ...io, stdin: EMPTY_INPUT };
    if (!this.options.interactive) {
      child.proc.ignore(SIGINT);
      child.proc.ignore(SIGQUIT);
    }
    holdOutputs(child.proc, jobIo);
    const done = this.runChild(child, jobIo, signal, () => child.andOr(andOr, jobIo, signal, true)).catch(
      (error: unknown) => {
        this.device.log.debug('virtual shell: background job failed', { error: String(error) });
        return 1;
      },
    );
    const job: Job = { id: this.freeJobId(), process: child.proc, command: andOr.text, done, status: null };
    void done.then((status) => this.jobEnded(job, status));
    this.jobs.push(job);
    this.state.lastBackground = child.proc.pid;
    this.device.trackJob(done);
  }

  /** mksh numbers a new job with the lowest number no job has. */
  private freeJobId(): number {
    let id = 1;
    while (this.jobs.some((j) => j.id === id)) id++;
    return id;
  }

  private jobEnded(job: Job, status: number): void {
    job.status = status;
    // An interactive shell reports an ended job (`jobs` prints it once as Done); a
    // non-interactive one frees its number at once and keeps it only for `wait PID`.
    if (this.options.interactive) return;
    job.id = null;
    const ended = this.jobs.filter((j) => j.status !== null);
    if (ended.length > KEPT_ENDED_JOBS) this.forgetJob(ended[0]!);
  }

  private forgetJob(job: Job): void {
    this.jobs = this.jobs.filter((j) => j !== job);
  }

  // ---------- lists and pipelines ----------

  private async list(list: List, callerIo: Io, signal: AbortSignal, exec: boolean): Promise<number> {
    let status = this.state.status;
    for (const item of list) {
      // `exec >file` redirects the rest of the shell's commands.
      const io = this.persistentIo ?? callerIo;
      if (this.stopped(signal)) return (this.state.status = this.stoppedStatus());
      if (item.background) {
        this.background(item.andOr, io, signal);
        status = this.state.status = 0;
      } else {
        status = await this.andOr(item.andOr, io, signal, exec && list.length === 1);
      }
      await this.checkpoint(io, signal);
    }
    return status;
  }

  private async andOr(andOr: AndOr, io: Io, signal: AbortSignal, exec: boolean): Promise<number> {
    const n = andOr.rest.length;
    let status = await this.pipeline(andOr.first, io, signal, exec && n === 0, n > 0);
    for (let i = 0; i < n; i++) {
      const { op, pipeline } = andOr.rest[i]!;
      if ((op === '&&' && status !== 0) || (op === '||' && status === 0)) continue;
      if (this.stopped(signal)) return this.stoppedStatus();
      status = await this.pipeline(pipeline, io, signal, false, i < n - 1);
    }
    return status;
  }

  /** Runs a list as a condition: a failure there is not an error (no ERR trap). */
  private async condition(list: List, io: Io, signal: AbortSignal): Promise<number> {
    this.conditionDepth++;
    try {
      return await this.list(list, io, signal, false);
    } finally {
      this.conditionDepth--;
    }
  }

  private async pipeline(
    p: Pipeline,
    io: Io,
    signal: AbortSignal,
    exec: boolean,
    asCondition: boolean,
  ): Promise<number> {
    if (asCondition || p.negate) this.conditionDepth++;
    let status: number;
    try {
      const statuses =
        p.commands.length === 1
          ? [await this.command(p.commands[0]!, io, signal, exec)]
          : await this.pipe(p.commands, io, signal);
      // Each stage's status, as mksh keeps them; set -o pipefail: the last stage that failed decides.
      this.setArray('PIPESTATUS', statuses.map(String));
      status = this.state.options.has('p')
        ? ([...statuses].reverse().find((s) => s !== 0) ?? 0)
        : statuses[statuses.length - 1]!;
    } finally {
      if (asCondition || p.negate) this.conditionDepth--;
    }
    if (p.negate) status = status === 0 ? 1 : 0;
    this.state.status = status;
    if (status !== 0 && !asCondition && !p.negate && this.conditionDepth === 0) {
      await this.errTrap(io, signal);
      // set -e: a failure outside a condition ends the shell.
      if (this.state.options.has('e')) throw new ExitSignal(status);
    }
    return status;
  }

  /** mksh's ERR trap: after a command fails outside a condition. */
  private async errTrap(io: Io, signal: AbortSignal): Promise<void> {
    const action = this.state.traps.get('ERR');
    if (!action) return;
    const saved = this.state.status;
    // The trap is not run again for failures inside itself.
    this.state.traps.delete('ERR');
    try {
      await this.evaluate(action, io, signal);
    } finally {
      if (!this.state.traps.has('ERR')) this.state.traps.set('ERR', action);
      this.state.status = saved;
    }
  }

  /**
   * `a | b | c`: every stage in a forked subshell, its simple command exec'd there. The last
   * one too, as in mksh: `echo a | read x` leaves this shell's x as it was.
   */
  private async pipe(commands: Command[], io: Io, signal: AbortSignal): Promise<number[]> {
    const stages = commands.length;
    const pipes = Array.from({ length: stages - 1 }, () => new Pipe());
    const children = commands.map(() => this.fork());
    const runs = commands.map(async (cmd, i) => {
      const child = children[i]!;
      const pipe = pipes[i];
      // Writing on after the next stage exited is SIGPIPE for the writer (the stage, and
      // what it runs in the foreground).
      // (A producer that checks whether anyone still reads is about to write: it gets it too.)
      const broken = () => {
        for (const p of [child.proc, ...child.foreground]) p.deliver(SIGPIPE);
      };
      const stageIo: Io = {
        stdin: i === 0 ? io.stdin : pipes[i - 1]!,
        stdout: pipe
          ? {
              get closed() {
                if (pipe.closed) broken();
                return pipe.closed;
              },
              write: (data) => {
                if (!pipe.closed) pipe.write(data);
                else broken();
              },
              drain: () => pipe.drain(),
            }
          : io.stdout,
        stderr: io.stderr,
        ...(io.fds ? { fds: io.fds } : {}),
      };
      holdOutputs(child.proc, stageIo);
      this.foreground.add(child.proc);
      try {
        return await this.runChild(child, stageIo, signal, () => child.command(cmd, stageIo, signal, true));
      } finally {
        this.foreground.delete(child.proc);
        pipe?.end();
        if (i > 0) pipes[i - 1]!.closeReader();
      }
    });
    const statuses = await Promise.all(runs);
    this.reportSignalled(
      children.map((c) => c.proc),
      io,
    );
    return statuses;
  }

  private async command(cmd: Command, io: Io, signal: AbortSignal, exec: boolean): Promise<number> {
    if (cmd.type === 'simple') return this.simple(cmd, io, signal, exec);
    if (cmd.type === 'function') {
      this.state.functions.set(cmd.name, cmd.body);
      return (this.state.status = 0);
    }
    const redirected = await this.applyRedirects(cmd.redirects, io, signal);
    if (typeof redirected === 'number') return redirected;
    const { io: rio, files } = redirected;
    let status = 0;
    try {
      switch (cmd.type) {
        case 'group':
          status = await this.list(cmd.body, rio, signal, false);
          break;
        case 'subshell': {
          const child = this.fork();
          holdOutputs(child.proc, rio);
          this.foreground.add(child.proc);
          try {
            status = await this.runChild(child, rio, signal, () => child.list(cmd.body, rio, signal, false));
          } finally {
            this.foreground.delete(child.proc);
          }
          break;
        }
        case 'if': {
          let matched = false;
          for (const clause of cmd.clauses) {
            if ((await this.condition(clause.cond, rio, signal)) === 0) {
              status = await this.list(clause.body, rio, signal, false);
              matched = true;
              break;
            }
          }
          if (!matched) status = cmd.otherwise ? await this.list(cmd.otherwise, rio, signal, false) : 0;
          break;
        }
        case 'while':
        case 'until': {
          status = 0;
          for (let guard = 0; !this.stopped(signal); guard++) {
            const c = await this.condition(cmd.cond, rio, signal);
            if ((cmd.type === 'while') !== (c === 0)) break;
            const r = await this.loopBody(cmd.body, rio, signal);
            status = r.status;
            if (r.stop) break;
            // Yield so a tight `while true` loop cannot starve the event loop.
            if (guard % 64 === 63) await new Promise((resolve) => setImmediate(resolve));
          }
          break;
        }
        case 'case': {
          const subject = await this.expandString(cmd.word, io, signal);
          status = 0;
          let run = false;
          for (const clause of cmd.clauses) {
            // ;& runs the next body without testing its patterns.
            if (!run)
              for (const p of clause.patterns)
                if (Glob.compile(await this.expandPattern(p, io, signal)).matches(subject)) {
                  run = true;
                  break;
                }
            if (!run) continue;
            status = await this.list(clause.body, rio, signal, false);
            if (clause.then === ';;') break;
            run = clause.then === ';&';
          }
          break;
        }
        case 'arith':
          try {
            const value = evaluateArithmetic(
              await this.expandString(cmd.expression, rio, signal),
              this.arithmeticVariables(),
            );
            status = value !== 0 ? 0 : 1;
          } catch (error) {
            // As let: the error is said, the status is 2, the script goes on.
            if (!(error instanceof ShellSyntaxError)) throw error;
            rio.stderr.write(`${SHELL_NAME}: ${error.message}\n`);
            status = 2;
          }
          break;
        case 'cond':
          status = (await this.testCondition(cmd.expr, rio, signal)) ? 0 : 1;
          break;
        case 'for': {
          const items = cmd.items
            ? (await Promise.all(cmd.items.map((w) => this.expandFields(w, io, signal)))).flat()
            : this.state.positional;
          status = 0;
          for (const item of items) {
            if (this.stopped(signal)) break;
            this.setVariable(cmd.name, item);
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

  /** Whether a `[[ ]]` expression holds; `&&` and `||` evaluate their right side only when needed. */
  private async testCondition(e: CondExpr, io: Io, signal: AbortSignal): Promise<boolean> {
    switch (e.kind) {
      case 'and':
        return (await this.testCondition(e.left, io, signal)) && this.testCondition(e.right, io, signal);
      case 'or':
        return (await this.testCondition(e.left, io, signal)) || this.testCondition(e.right, io, signal);
      case 'not':
        return !(await this.testCondition(e.expr, io, signal));
      case 'string':
        return (await this.expandString(e.word, io, signal)) !== '';
      case 'unary': {
        const operand = await this.expandString(e.operand, io, signal);
        if (e.op === '-n') return operand !== '';
        if (e.op === '-z') return operand === '';
        if (e.op === '-o') return this.state.options.has(LONG_OPTIONS[operand] ?? operand);
        // File tests are test's own (the builtin, whatever function is named test).
        const op = e.op === '-a' ? '-e' : e.op;
        return (await this.invoke(['test', op, operand], [], io, signal, false, { functions: false })) === 0;
      }
      case 'binary': {
        const left = await this.expandString(e.left, io, signal);
        if (e.op === '=' || e.op === '==' || e.op === '!=') {
          // The right side is a pattern where it is not quoted.
          const matches = Glob.compile(await this.expandPattern(e.right, io, signal)).matches(left);
          return e.op === '!=' ? !matches : matches;
        }
        const right = await this.expandString(e.right, io, signal);
        if (e.op === '<') return left < right;
        if (e.op === '>') return left > right;
        if (e.op === '-nt' || e.op === '-ot' || e.op === '-ef')
          return (
            (await this.invoke(['test', left, e.op, right], [], io, signal, false, { functions: false })) ===
            0
          );
        // -eq and the others compare arithmetic expressions.
        const vars = this.arithmeticVariables();
        const l = evaluateArithmetic(left, vars);
        const r = evaluateArithmetic(right, vars);
        const compare = {
          '-eq': l === r,
          '-ne': l !== r,
          '-lt': l < r,
          '-le': l <= r,
          '-gt': l > r,
          '-ge': l >= r,
        };
        return compare[e.op as keyof typeof compare];
      }
    }
  }

  private async loopBody(
    body: List,
    io: Io,
    signal: AbortSignal,
  ): Promise<{ status: number; stop: boolean }> {
    try {
      return { status: await this.list(body, io, signal, false), stop: false };
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
    exec: boolean,
  ): Promise<number> {
    const substitutions = this.substitutions;
    const argv: string[] = [];
    for (const word of cmd.words)
      for (const w of braceExpand(word)) argv.push(...(await this.expandFields(w, io, signal)));
    const assigns: [string, string][] = [];
    const xtrace = this.state.options.has('x');
    /** What set -x shows of the assignments, as mksh shows them. */
    const traced: string[] = [];
    for (const a of cmd.assigns) {
      // Arrays and their elements are the shell's own: set at once, never a command's environment.
      if (a.elements) {
        const values: string[] = [];
        for (const word of a.elements)
          for (const w of braceExpand(word)) values.push(...(await this.expandFields(w, io, signal)));
        if (xtrace)
          io.stderr.write(
            `+ set ${a.append ? '+' : '-'}A ${a.name} -- ${values.map(shellQuote).join(' ')}\n`,
          );
        this.setArray(a.name, values, a.append);
        continue;
      }
      const value = await this.expandString(a.value, io, signal);
      if (a.index) {
        const index = await this.subscript(a.index, io, signal);
        const assigned = (a.append ? (this.elementValue(a.name, index) ?? '') : '') + value;
        if (xtrace) traced.push(`${a.name}[${index >>> 0}]=${shellQuote(assigned)}`);
        this.setElement(a.name, index, assigned);
        continue;
      }
      if (xtrace) traced.push(`${a.name}=${shellQuote(value)}`);
      if (this.state.readonly.has(a.name)) throw new ShellError(`read-only: ${a.name}`, 2);
      assigns.push([a.name, a.append ? (this.state.vars.get(a.name) ?? '') + value : value]);
    }
    const redirected = await this.applyRedirects(cmd.redirects, io, signal);
    if (typeof redirected === 'number') return (this.state.status = redirected);
    const { io: rio, files } = redirected;
    let status: number;
    if (argv.length === 0) {
      if (xtrace && traced.length > 0) io.stderr.write(`+ ${traced.map((t) => `${t} `).join('')}\n`);
      for (const [k, v] of assigns) this.setVariable(k, v);
      // `x=$(cmd)` has the status of its (last) command substitution.
      status = this.substitutions !== substitutions ? this.state.status : 0;
    } else if (argv.length === 1 && argv[0] === 'exec' && cmd.redirects.length > 0) {
      // exec with redirections only: they stay for the rest of the shell.
      this.persistentIo = rio;
      status = 0;
      return (this.state.status = status);
    } else if (this.stopped(signal)) {
      status = this.stoppedStatus();
    } else {
      if (xtrace) io.stderr.write(`+ ${[...traced, ...argv.map(shellQuote)].join(' ')}\n`);
      this.killedCommand = null;
      status = await this.invoke(argv, assigns, rio, signal, exec);
      // mksh says it where the command's own redirections are in force (2>/dev/null hides it).
      const killed = this.killedCommand as Process | null;
      if (killed) this.reportSignalled([killed], rio);
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

  /**
   * A command's redirections, in order, over the descriptors it inherits (0 to 9): files,
   * here-documents, duplicates (`2>&1`, `3>&1 1>&2 2>&3`) and closes (`3>&-`). A duplicate of
   * a descriptor that is not open is mksh's `>&5 : bad file descriptor`, status 1.
   */
  private async applyRedirects(
    redirects: Redirect[],
    io: Io,
    signal: AbortSignal,
  ): Promise<{ io: Io; files: FileOutput[] } | number> {
    if (redirects.length === 0) return { io, files: [] };
    const table = new Map<number, Input | Output>([
      [0, io.stdin],
      [1, io.stdout],
      [2, io.stderr],
      ...(io.fds ?? []),
    ]);
    const files: FileOutput[] = [];
    for (const r of redirects) {
      const target = await this.expandString(r.target, io, signal);
      if (r.op === '<<' || r.op === '<<<') {
        // A here-document is its body; a here-string its word and a newline.
        table.set(r.fd, new BufferInput(Buffer.from(r.op === '<<<' ? `${target}\n` : target)));
        continue;
      }
      const path = normalizePath(target, this.state.cwd);
      if (r.op === '<') {
        try {
          table.set(r.fd, openInput(this.fs, path, io.stdin));
        } catch (error) {
          io.stderr.write(
            `${SHELL_NAME}: can't open ${target}: ${error instanceof FsError ? error.reason : String(error)}\n`,
          );
          return 1;
        }
        continue;
      }
      if (r.op === '>&' || r.op === '<&') {
        if (target === '-') {
          // Closing: the shell's own descriptors go; 0 to 2 stay as they are.
          if (r.fd > 2) table.delete(r.fd);
          continue;
        }
        if (/^[0-9]$/.test(target)) {
          const source = table.get(Number(target));
          if (source === undefined) {
            io.stderr.write(`${SHELL_NAME}: ${r.op}${target} : bad file descriptor\n`);
            return 1;
          }
          // (>&0 writes where the shell's output goes: its stdin is a terminal or a pipe it shares.)
          table.set(r.fd, r.op === '>&' && !('write' in source) ? table.get(1)! : source);
          continue;
        }
        if (r.op === '<&') continue;
        // `>&file` is bash for `&>file`
      }
      let out: Output;
      if (path === '/dev/null') out = NULL_OUTPUT;
      else {
        const append = r.op === '>>';
        try {
          const exists = this.fs.exists(path);
          if (!append || !exists) this.fs.writeFile(path, Buffer.alloc(0));
          else if (this.fs.stat(path).kind === 'dir') throw new FsError('EISDIR', path);
        } catch (error) {
          io.stderr.write(
            `${SHELL_NAME}: can't create ${target}: ${error instanceof FsError ? error.reason : String(error)}\n`,
          );
          return 1;
        }
        const file = new FileOutput(this.fs, path);
        files.push(file);
        out = file;
      }
      if (r.op === '&>' || r.op === '>&') {
        table.set(1, out);
        table.set(2, out);
      } else table.set(r.fd, out);
    }
    const input = table.get(0)!;
    const output = (fd: number) => {
      const o = table.get(fd)!;
      return 'write' in o ? o : NULL_OUTPUT;
    };
    const fds = new Map([...table].filter(([fd]) => fd > 2));
    return {
      io: {
        stdin: 'read' in input ? input : EMPTY_INPUT,
        stdout: output(1),
        stderr: output(2),
        ...(fds.size > 0 ? { fds } : {}),
      },
      files,
    };
  }

  // ---------- builtins and commands ----------

  private async invoke(
    argv: string[],
    assigns: [string, string][],
    io: Io,
    signal: AbortSignal,
    exec: boolean,
    /** `functions: false`: a function of that name is passed over (`command`, `builtin`). */
    search: { functions?: boolean } = {},
  ): Promise<number> {
    const name = argv[0]!;
    const args = argv.slice(1);
    const useFunctions = search.functions !== false;
    if (
      assigns.length > 0 &&
      (SHELL_BUILTINS.has(name) || (useFunctions && this.state.functions.has(name))) &&
      !PASSES_ASSIGNMENTS.has(name)
    ) {
      // NAME=value before a builtin or a function: a special builtin keeps it; for the
      // others it holds while they run (IFS=: read ...).
      if (SPECIAL_BUILTINS.has(name)) {
        for (const [k, v] of assigns) this.setVariable(k, v);
        return this.invoke(argv, [], io, signal, exec, search);
      }
      const saved = assigns.map(([k]) => [k, this.state.vars.get(k)] as const);
      for (const [k, v] of assigns) this.state.vars.set(k, v);
      try {
        return await this.invoke(argv, [], io, signal, exec, search);
      } finally {
        for (const [k, v] of saved) {
          if (v === undefined) this.state.vars.delete(k);
          else this.state.vars.set(k, v);
        }
      }
    }
    const builtin = await this.builtin(name, args, assigns, io, signal);
    if (builtin !== null) return builtin;
    const body = useFunctions ? this.state.functions.get(name) : undefined;
    if (body) return this.callFunction(body, args, io, signal);
    let lookup = name;
    if (name.includes('/')) {
      const path = normalizePath(name, this.state.cwd);
      if (!this.fs.exists(path)) {
        io.stderr.write(`${SHELL_NAME}: ${name}: inaccessible or not found\n`);
        return 127;
      }
      if (!/^\/(system|vendor|product|system_ext)\/(x?bin)\//.test(this.fs.realpath(path))) {
        io.stderr.write(`${SHELL_NAME}: ${name}: can't execute: Permission denied\n`);
        return 126;
      }
      lookup = basename(path);
    }
    const fn = this.commands.get(lookup);
    if (!fn && SYSTEM_BIN.includes(lookup)) {
      // The program is on the phone but the virtual phone does not run it: say so.
      io.stderr.write(
        `${SHELL_NAME}: ${name}: not modeled by the virtual phone (see docs/virtual-phone.md)\n`,
      );
      return 126;
    }
    if (!fn) {
      io.stderr.write(`${SHELL_NAME}: ${name}: inaccessible or not found\n`);
      this.device.log.debug('virtual shell: command not found', { command: name, args });
      return 127;
    }
    const env = this.environment();
    for (const [k, v] of assigns) env.set(k, v);
    const inProcess = IN_PROCESS.has(lookup) && !name.includes('/');
    // fork+exec, or exec in this very process (the shell's last command, a job, a stage).
    let proc: Process;
    if (inProcess) proc = this.proc;
    else if (exec) {
      proc = this.proc;
      proc.exec(argv);
      holdOutputs(proc, io);
    } else {
      proc = this.device.processes.spawn({
        parent: this.proc,
        argv,
        uid: this.state.cred.uid,
        user: userName(this.state.cred.uid),
      });
      holdOutputs(proc, io);
    }
    const stop = AbortSignal.any([signal, proc.terminated]);
    const ctx: CommandContext = {
      name: lookup,
      args,
      device: this.device,
      env,
      cwd: this.state.cwd,
      signal: stop,
      process: proc,
      cred: this.state.cred,
      fs: proc === this.proc ? this.fs : this.device.fs.as(this.state.cred, proc.pid, this.umask),
      // A terminated process reads nothing more: a command blocked on its input ends.
      stdin: untilAborted(io.stdin, stop),
      stdout: io.stdout,
      stderr: io.stderr,
      runShell: (source, childIo, options) => this.runShellIn(proc, env, source, childIo, signal, options),
      spawn: (source, childIo, options = {}) => {
        const child = this.device.processes.spawn({
          parent: proc,
          argv: proc.info.argv ?? [SHELL_NAME],
          uid: proc.info.uid ?? this.state.cred.uid,
          user: proc.info.user,
          newGroup: options.newGroup,
        });
        holdOutputs(child, childIo);
        const ran = this.runShellIn(child, env, source, childIo, signal, options);
        ran.catch(() => undefined);
        const done = Promise.race([ran, child.whenTerminated()]);
        void done.finally(() => child.exit()).catch(() => undefined);
        return { process: child, done };
      },
    };
    const finished = this.runCommand(fn, ctx, lookup, args, io).then((status) =>
      proc.termSignal !== null ? 128 + proc.termSignal : status,
    );
    finished.catch(() => undefined);
    // A process a signal terminated is gone at once, whatever its code still awaits.
    const result = Promise.race([finished, proc.whenTerminated()]);
    if (proc === this.proc) return result;
    void result.finally(() => proc.exit()).catch(() => undefined);
    this.foreground.add(proc);
    try {
      return await Promise.race([result, this.death]);
    } finally {
      this.foreground.delete(proc);
      if (proc.termSignal !== null) this.killedCommand = proc;
    }
  }

  /** The last forked command a signal ended (simple() says so, on the shell's own stderr). */
  private killedCommand: Process | null = null;

  /**
   * What mksh says of a job it waited for when a signal ended it: `Terminated `, `Killed `,
   * ... on the shell's stderr (not for SIGINT and SIGPIPE, the normal ends of a pipeline or
   * a ^C); a run of processes ended alike is said once.
   */
  private reportSignalled(processes: Process[], io: Io): void {
    let said = '';
    let last: number | null | undefined;
    for (const p of processes) {
      const sig = p.termSignal;
      if (sig === last) continue;
      last = sig;
      if (sig === null || sig === SIGINT || sig === SIGPIPE) continue;
      said += `${SIGNALS.find((s) => s.number === sig)?.description ?? 'Signalled'} `;
    }
    if (said !== '') io.stderr.write(`${said}\n`);
  }

  /** Runs a function in this shell with its own $1..., until it ends or returns. */
  private async callFunction(body: Command, args: string[], io: Io, signal: AbortSignal): Promise<number> {
    const saved = this.state.positional;
    this.state.positional = args;
    this.functionDepth++;
    const locals = new Map<string, SavedVariable>();
    this.locals.push(locals);
    try {
      return await this.command(body, io, signal, false);
    } catch (error) {
      if (error instanceof ReturnSignal) return (this.state.status = error.status);
      throw error;
    } finally {
      this.locals.pop();
      for (const [name, was] of locals) this.restoreVariable(name, was);
      this.functionDepth--;
      this.state.positional = saved;
    }
  }

  /** How many command substitutions this shell has run (a bare assignment takes the last one's status). */
  private substitutions = 0;

  /** Per function call, the variables its `local`/`typeset` hid, to put back when it returns. */
  private readonly locals: Map<string, SavedVariable>[] = [];

  /** `local NAME` in a function: the name is the function's own (unset) until it returns. */
  private localize(name: string): void {
    const frame = this.locals.at(-1);
    if (!frame || frame.has(name)) return;
    const { vars, exported, readonly, integer } = this.state;
    frame.set(name, {
      value: vars.get(name),
      elements: this.state.elements.get(name),
      exported: exported.has(name),
      readonly: readonly.has(name),
      integer: integer.has(name),
      format: this.state.formats.get(name),
    });
    this.forgetVariable(name);
  }

  private restoreVariable(name: string, was: SavedVariable): void {
    this.forgetVariable(name);
    if (was.value !== undefined) this.state.vars.set(name, was.value);
    if (was.elements !== undefined) this.state.elements.set(name, was.elements);
    if (was.exported) this.state.exported.add(name);
    if (was.readonly) this.state.readonly.add(name);
    if (was.integer) this.state.integer.add(name);
    if (was.format) this.state.formats.set(name, was.format);
  }

  /** `unset`: the value and every attribute go. */
  private forgetVariable(name: string): void {
    this.state.vars.delete(name);
    this.state.elements.delete(name);
    this.state.exported.delete(name);
    this.state.readonly.delete(name);
    this.state.integer.delete(name);
    this.state.formats.delete(name);
  }

  /**
   * An assignment (`x=1`, `for x`, `read x`, `${x:=1}`, arithmetic): refused for a read-only
   * variable as mksh refuses it (the shell ends, status 2); an integer variable's value is
   * computed.
   */
  private setVariable(name: string, value: string): void {
    if (this.state.readonly.has(name)) throw new ShellError(`read-only: ${name}`, 2);
    this.state.vars.set(name, this.assigned(name, value));
  }

  /** What an assignment stores: computed for an integer variable, then formatted (typeset -u -L ...). */
  private assigned(name: string, value: string): string {
    let v = this.state.integer.has(name)
      ? String(evaluateArithmetic(value, this.arithmeticVariables()))
      : value;
    const format = this.state.formats.get(name);
    if (format) {
      if (format.justify && format.width === 0) format.width = v.length;
      v = formatValue(v, format);
    }
    return v;
  }

  /**
   * An array element's assignment (`a[i]=x`, `set -A`, `read -A`): element 0 is the
   * variable's value. Indices wrap to 32 bits unsigned, as mksh's do (`a[-1]` is 4294967295).
   */
  private setElement(name: string, index: number, value: string): void {
    const at = index >>> 0;
    if (at === 0) return this.setVariable(name, value);
    if (this.state.readonly.has(name)) throw new ShellError(`read-only: ${name}[${at}]`, 2);
    let items = this.state.elements.get(name);
    if (!items) this.state.elements.set(name, (items = new Map()));
    items.set(at, this.assigned(name, value));
  }

  /** An array's elements, in index order: [index, value]. */
  private arrayElements(name: string): [number, string][] {
    const first = this.state.vars.get(name);
    const rest = [...(this.state.elements.get(name) ?? [])].sort((a, b) => a[0] - b[0]);
    return first === undefined ? rest : [[0, first], ...rest];
  }

  /** `NAME=(...)`, `set -A NAME ...`: the array holds these values from index 0, and nothing else. */
  private setArray(name: string, values: string[], append = false): void {
    if (this.state.readonly.has(name)) throw new ShellError(`read-only: ${name}`, 2);
    let from = 0;
    if (append) from = (this.arrayElements(name).at(-1)?.[0] ?? -1) + 1;
    else {
      this.state.vars.delete(name);
      this.state.elements.delete(name);
    }
    values.forEach((value, k) => this.setElement(name, from + k, value));
  }

  /** What a command gets as its environment: the exported variables. */
  private environment(): Map<string, string> {
    const env = new Map<string, string>();
    for (const name of this.state.exported) {
      const value = this.state.vars.get(name);
      if (value !== undefined) env.set(name, value);
    }
    return env;
  }

  /**
   * mksh's bi_errorf: a builtin's error is said; a special builtin's (export, shift, ...)
   * also ends a non-interactive shell.
   */
  private builtinError(builtin: string, message: string, io: Io): number {
    if (SPECIAL_BUILTINS.has(builtin)) throw new ShellError(`${builtin}: ${message}`, 1);
    io.stderr.write(`${SHELL_NAME}: ${builtin}: ${message}\n`);
    return 1;
  }

  /**
   * export, readonly, typeset and local: set attributes (-x exported, -r read-only, -i
   * integer) and values. In a function, typeset and local make a name the function's own.
   * Without names they list the variables (-p: as the commands that would set them again).
   */
  private declare(builtin: string, args: string[], io: Io): number {
    const declares = builtin === 'typeset' || builtin === 'local';
    const add = new Set<string>(builtin === 'export' ? ['x'] : builtin === 'readonly' ? ['r'] : []);
    const remove = new Set<string>();
    /** -L -R -Z and their widths (0: none given). */
    const widths = new Map<string, number>();
    let print = false;
    let i = 0;
    for (; i < args.length; i++) {
      const a = args[i]!;
      if (a === '--') {
        i++;
        break;
      }
      if (!/^[-+][A-Za-z0-9]+$/.test(a)) break;
      for (let k = 1; k < a.length; k++) {
        const f = a[k]!;
        if (f === 'p' && a[0] === '-') print = true;
        else if (declares && 'xriul'.includes(f)) (a[0] === '-' ? add : remove).add(f);
        else if (declares && 'LRZ'.includes(f)) {
          // A width is the rest of the argument when a digit follows (-L3, not -L3x).
          const rest = /^\d/.test(a[k + 1] ?? '') ? a.slice(k + 1) : '';
          if (!/^\d*$/.test(rest))
            return this.builtinError(builtin, `bad number: ${rest}: Invalid argument`, io);
          (a[0] === '-' ? add : remove).add(f);
          widths.set(f, Number(rest || 0));
          k += rest.length;
        } else if (declares && 'fFtnUTa'.includes(f))
          return this.builtinError(builtin, `-${f}: not modeled by the virtual phone`, io);
        else return this.builtinError(builtin, `${a[0]}${f}: unknown option`, io);
      }
    }
    const names = args.slice(i);
    if (names.length === 0) {
      const attribute = add.has('x') ? 'x' : add.has('r') ? 'r' : add.has('i') ? 'i' : null;
      this.listVariables(builtin, attribute, print || declares, io);
      return 0;
    }
    const { vars, exported, readonly, integer } = this.state;
    for (const arg of names) {
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg : arg.slice(0, eq);
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
        return this.builtinError(builtin, `${arg}: not an identifier`, io);
      if (declares && this.functionDepth > 0) this.localize(name);
      if (print && eq < 0) {
        if (vars.has(name)) io.stdout.write(`${this.declaration(builtin, name)}\n`);
        continue;
      }
      // Only export and readonly may be added to a read-only variable.
      if (readonly.has(name) && (eq >= 0 || remove.size > 0 || [...'iulLRZ'].some((f) => add.has(f))))
        throw new ShellError(`${builtin}: read-only: ${name}`, 2);
      if (add.has('i')) integer.add(name);
      if (remove.has('i')) integer.delete(name);
      const reformatted = this.changeFormat(name, add, remove, widths);
      if (eq >= 0) this.setVariable(name, arg.slice(eq + 1));
      else if (reformatted && vars.has(name)) vars.set(name, this.assigned(name, vars.get(name)!));
      if (add.has('x')) exported.add(name);
      if (remove.has('x')) exported.delete(name);
      if (add.has('r')) readonly.add(name);
    }
    return 0;
  }

  /** typeset's -u -l -L -R -Z (added) and +u ... (removed) for one variable; whether they changed anything. */
  private changeFormat(
    name: string,
    add: Set<string>,
    remove: Set<string>,
    widths: Map<string, number>,
  ): boolean {
    if (![...'ulLRZ'].some((f) => add.has(f) || remove.has(f))) return false;
    const format: VariableFormat = { ...(this.state.formats.get(name) ?? { width: 0 }) };
    if (add.has('u') || add.has('l')) format.case = add.has('u') ? 'u' : 'l';
    if (remove.has('u') || remove.has('l')) delete format.case;
    for (const f of ['L', 'R', 'Z']) {
      if (add.has(f)) {
        if (f === 'Z') format.zero = true;
        if (f !== 'Z' || !format.justify) format.justify = f === 'L' ? 'L' : 'R';
        if (widths.get(f) || !format.width) format.width = widths.get(f) ?? 0;
      }
      if (remove.has(f)) {
        if (f === 'Z') delete format.zero;
        else delete format.justify;
      }
    }
    if (!format.justify && !format.zero) format.width = 0;
    if (format.case || format.justify) this.state.formats.set(name, format);
    else this.state.formats.delete(name);
    return true;
  }

  /** The variables (with an attribute), by name: names only, or as the commands that set them. */
  private listVariables(builtin: string, attribute: string | null, withValues: boolean, io: Io): void {
    const { vars, exported, readonly, integer } = this.state;
    const has = { x: exported, r: readonly, i: integer } as Record<string, Set<string>>;
    const names = new Set([...vars.keys(), ...(attribute ? has[attribute]! : [])]);
    for (const name of [...names].sort()) {
      if (attribute && !has[attribute]!.has(name)) continue;
      if (builtin === 'typeset' && !attribute && !withValues) continue;
      io.stdout.write(withValues ? `${this.declaration(builtin, name)}\n` : `${name}\n`);
    }
  }

  /** `export NAME=value`, `readonly NAME`, `typeset -x -r NAME=value`: how -p shows a variable. */
  private declaration(builtin: string, name: string): string {
    const value = this.state.vars.get(name);
    const assigned = value === undefined ? name : `${name}=${shellQuote(value)}`;
    if (builtin === 'export' || builtin === 'readonly') return `${builtin} ${assigned}`;
    const format = this.state.formats.get(name);
    const flags = [
      this.state.integer.has(name) ? '-i ' : '',
      this.state.exported.has(name) ? '-x ' : '',
      this.state.readonly.has(name) ? '-r ' : '',
      format?.justify ? `-${format.justify}${format.width} ` : '',
      format?.zero ? '-Z ' : '',
      format?.case ? `-${format.case} ` : '',
    ].join('');
    return `typeset ${flags}${assigned}`;
  }

  /** What `exec >file` redirected for the rest of the shell. */
  private persistentIo: Io | null = null;

  /** How many function calls deep the shell is (`return` ends the innermost). */
  private functionDepth = 0;
  /** Where getopts stands: the next argument's number and the place in a group (-abc). */
  private getopts: { optind: number; p: number } | null = null;

  private async runCommand(
    fn: (ctx: CommandContext) => number | Promise<number>,
    ctx: CommandContext,
    lookup: string,
    args: string[],
    io: Io,
  ): Promise<number> {
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

  /** A command runs shell source in its own process (sh -c, xargs, env, nohup, run-as). */
  private async runShellIn(
    proc: Process,
    env: ReadonlyMap<string, string>,
    source: string,
    io: Io,
    signal: AbortSignal,
    options: RunShellOptions = {},
  ): Promise<number> {
    const cred = options.cred ?? this.state.cred;
    if (options.cred) {
      proc.info.uid = cred.uid;
      proc.info.user = userName(cred.uid);
    }
    const environment = options.env ?? env;
    // A new sh: the environment it was given, and the umask of the shell that started it.
    const state: ShellState = {
      ...startingState(new Map(environment), new Set(environment.keys()), cred, this.state.umask),
      cwd: options.cwd ?? this.state.cwd,
      positional: options.args ?? [],
      pid: proc.pid,
    };
    const shell = new Interpreter(this.device, this.commands, state, proc, {});
    return shell.script(source, io, signal, { exec: options.exec === true });
  }

  /**
   * Finds a job by `%N`, `%%`/`%+`, `%-`, `%PREFIX`, `%?TEXT` or by pid; reports a missing
   * or ambiguous job like mksh.
   */
  private findJob(spec: string, io: Io, builtin: string): Job | null | 'bad' {
    if (spec.startsWith('%')) {
      const rest = spec.slice(1);
      const numbered = this.jobs.filter((j) => j.id !== null);
      let job: Job | undefined;
      if (rest === '' || rest === '%' || rest === '+') job = numbered.at(-1);
      else if (rest === '-') job = numbered.at(-2);
      else if (/^\d+$/.test(rest)) job = numbered.find((j) => j.id === Number(rest));
      else {
        const text = rest.startsWith('?') ? rest.slice(1) : null;
        const matches = numbered.filter((j) =>
          text === null ? j.command.startsWith(rest) : j.command.includes(text),
        );
        if (matches.length > 1) {
          io.stderr.write(`${SHELL_NAME}: ${builtin}: ${spec}: ambiguous\n`);
          return 'bad';
        }
        job = matches[0];
      }
      if (!job) {
        io.stderr.write(`${SHELL_NAME}: ${builtin}: ${spec}: no such job\n`);
        return 'bad';
      }
      return job;
    }
    const pid = Number(spec);
    if (!/^\d+$/.test(spec)) {
      io.stderr.write(`${SHELL_NAME}: ${builtin}: ${spec}: argument must be %job or process id\n`);
      return 'bad';
    }
    return this.jobs.find((j) => j.process.pid === pid) ?? null;
  }

  /** Waits for `promise`, unless a trapped signal or an interrupt arrives first (mksh's wait). */
  /**
   * Waits for `promise`, unless a trapped signal or an interrupt arrives first (mksh's wait
   * and read), the shell is killed, or the caller stops it. Every listener it adds is
   * removed again, so a `while read` loop over a long input holds nothing per line.
   */
  private interruptible<T>(
    promise: Promise<T>,
    signal: AbortSignal,
  ): Promise<{ value: T } | { signal: number }> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const cleanup = () => {
        signal.removeEventListener('abort', onStop);
        this.proc.terminated.removeEventListener('abort', onStop);
        this.wakers.delete(onAttention);
      };
      const settle = (result: { value: T } | { signal: number }) => {
        if (settled) return;
        settled = true;
        cleanup();
        resolve(result);
      };
      const onStop = () => settle({ signal: this.proc.termSignal ?? SIGINT });
      const onAttention = () => {
        const pending = this.interrupt ?? this.pendingTraps[0];
        if (pending !== undefined) settle({ signal: pending });
      };
      if (signal.aborted || this.proc.terminated.aborted) return onStop();
      onAttention();
      if (settled) return;
      signal.addEventListener('abort', onStop, { once: true });
      this.proc.terminated.addEventListener('abort', onStop, { once: true });
      this.wakers.add(onAttention);
      promise.then(
        (value) => settle({ value }),
        (error: unknown) => {
          if (settled) return;
          settled = true;
          cleanup();
          reject(error);
        },
      );
    });
  }

  /**
   * mksh's `jobs [-l] [-p] [job...]`: `[N] + STATE COMMAND`, `+` on the newest job and `-`
   * on the one before. Ended jobs appear once, as Done, then leave the table.
   */
  private jobsBuiltin(args: string[], io: Io): number {
    const flags = new Set<string>();
    let i = 0;
    for (; i < args.length && /^-[lpnz]+$/.test(args[i]!); i++)
      for (const f of args[i]!.slice(1)) flags.add(f);
    let listed = this.jobs.filter((j) => j.id !== null);
    if (i < args.length) {
      const picked: Job[] = [];
      for (const spec of args.slice(i)) {
        const job = this.findJob(spec, io, 'jobs');
        if (job === 'bad') return 1;
        if (job) picked.push(job);
      }
      listed = picked;
    }
    const numbered = this.jobs.filter((j) => j.id !== null);
    for (const job of listed) {
      if (flags.has('p')) {
        io.stdout.write(`${job.process.pid}\n`);
        continue;
      }
      const mark = job === numbered.at(-1) ? '+' : job === numbered.at(-2) ? '-' : ' ';
      const state = this.jobState(job);
      const pid = flags.has('l') ? `${String(job.process.pid).padStart(5)} ` : '';
      io.stdout.write(`[${job.id}] ${mark} ${pid}${state.padEnd(20)} ${job.command}\n`);
    }
    for (const job of listed) if (job.status !== null) this.forgetJob(job);
    return 0;
  }

  /** A job's state as mksh words it: Running, Done, Done (N), or the signal that killed it. */
  private jobState(job: Job): string {
    if (job.status === null) return 'Running';
    if (job.status === 0) return 'Done';
    const signal = job.process.termSignal;
    const killed = signal !== null && job.status === 128 + signal;
    return killed
      ? (SIGNALS.find((s) => s.number === signal)?.description ?? 'Killed')
      : `Done (${job.status})`;
  }

  private async waitBuiltin(args: string[], io: Io, signal: AbortSignal): Promise<number> {
    const targets = args[0] === '--' ? args.slice(1) : args;
    if (targets.length === 0) {
      for (;;) {
        const running = this.jobs.filter((j) => j.status === null);
        if (running.length === 0) {
          this.jobs = [];
          return 0;
        }
        const r = await this.interruptible(Promise.race(running.map((j) => j.done)), signal);
        if ('signal' in r) return 128 + r.signal;
      }
    }
    let status = 127;
    for (const target of targets) {
      const job = this.findJob(target, io, 'wait');
      if (job === 'bad' || job === null) {
        status = 127;
        continue;
      }
      const r = await this.interruptible(job.done, signal);
      if ('signal' in r) return 128 + r.signal;
      status = r.value;
      this.reportSignalled([job.process], io);
      this.forgetJob(job);
    }
    return status;
  }

  /** mksh's kill builtin: jobs and pids, -s NAME, -NAME/-N, -l [status...]. */
  private killBuiltin(args: string[], io: Io): number {
    const err = (message: string) => io.stderr.write(`${SHELL_NAME}: kill: ${message}\n`);
    let sig = SIGTERM;
    let list = false;
    let i = 0;
    const first = args[0];
    if (first && /^-[0-9A-Z]/.test(first)) {
      // Old style -9 / -HUP / -SIGHUP: the name as given (mksh matches it case-sensitively).
      const spec = first.slice(1);
      const n = /^\d+$/.test(spec) ? Number(spec) : signalNumber(spec);
      const exact = /^\d+$/.test(spec) || SIGNALS.some((s) => s.name === spec.replace(/^SIG/, ''));
      if (n === null || !exact || n >= 65) {
        err(`bad signal '${spec}'`);
        return 1;
      }
      sig = n;
      i = args[1] === '--' ? 2 : 1;
    } else {
      for (; i < args.length; i++) {
        const a = args[i]!;
        if (a === '--') {
          i++;
          break;
        }
        if (a === '-l') list = true;
        else if (a === '-s' || (a.startsWith('-s') && a.length > 2)) {
          const spec = a === '-s' ? args[++i] : a.slice(2);
          const n = spec === undefined ? null : signalNumber(spec);
          if (spec === undefined) {
            err('-s: argument expected');
            return 1;
          }
          if (n === null) {
            err(`bad signal '${spec}'`);
            return 1;
          }
          sig = n;
        } else if (a.startsWith('-') && a !== '-') {
          err(`${a}: unknown option`);
          return 1;
        } else break;
      }
    }
    const targets = args.slice(i);
    if (list) {
      if (targets.length === 0) {
        io.stdout.write(mkshSignalTable());
        return 0;
      }
      for (const t of targets) {
        if (!/^-?\d+$/.test(t)) {
          err(`bad number: ${t}`);
          return 1;
        }
        let n = Number(t);
        if (n > 128 && n < 128 + 65) n -= 128;
        io.stdout.write(`${signalName(n) ?? n}\n`);
      }
      return 0;
    }
    if (targets.length === 0) {
      io.stderr.write(
        'usage:\tkill [-s signame | -signum | -signame] { job | pid | pgrp } ...\n\tkill -l [exit_status ...]\n',
      );
      return 1;
    }
    let status = 0;
    for (const t of targets) {
      const results: { pid: number; result: ReturnType<Device['processes']['signal']> }[] = [];
      if (t.startsWith('%')) {
        const job = this.findJob(t, io, 'kill');
        if (job === 'bad' || job === null) {
          status = 1;
          continue;
        }
        results.push({ pid: job.process.pid, result: job.process.deliver(sig) });
      } else if (/^-?\d+$/.test(t)) {
        const n = Number(t);
        const result =
          n < 0
            ? this.device.processes.signalGroup(-n, sig, this.state.cred)
            : this.device.processes.signal(n, sig, this.state.cred);
        results.push({ pid: n, result });
      } else {
        err(`${t}: arguments must be jobs or process IDs`);
        status = 1;
        continue;
      }
      for (const { result } of results) {
        if (result === 'ok') continue;
        status = 1;
        if (result === 'no-such-process') err(`${t}: No such process`);
        else if (result === 'not-permitted') err(`${t}: Operation not permitted`);
        else err(`${t}: the virtual phone does not stop or continue processes (SIG${signalName(sig)})`);
      }
    }
    return status;
  }

  /** set: positional parameters, and the options the shell models (-e -u -x -f, -o pipefail). */
  private setBuiltin(args: string[], io: Io): number {
    if (args.length === 0) {
      // An array's elements are listed one by one, a[0]=x a[1]=y, as mksh lists them.
      const names = [...new Set([...this.state.vars.keys(), ...this.state.elements.keys()])].sort();
      for (const name of names) {
        const items = this.arrayElements(name);
        if (items.length === 0) continue;
        if (!this.state.elements.get(name)?.size) io.stdout.write(`${name}=${shellQuote(items[0]![1])}\n`);
        else for (const [i, v] of items) io.stdout.write(`${name}[${i}]=${shellQuote(v)}\n`);
      }
      return 0;
    }
    if (args[0] === '-A' || args[0] === '+A') {
      // set -A NAME VALUE...: the array holds the values; +A: they replace its first elements.
      const name = args[1];
      if (name === undefined) return this.builtinError('set', `${args[0]}: requires an argument`, io);
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
        return this.builtinError('set', `${name}: not an identifier`, io);
      const values = args.slice(args[2] === '--' ? 3 : 2);
      if (args[0] === '-A') this.setArray(name, values);
      else values.forEach((value, k) => this.setElement(name, k, value));
      return 0;
    }
    const refuse = (option: string) => {
      io.stderr.write(`${SHELL_NAME}: set: ${option}: the virtual phone does not model this option\n`);
      return 1;
    };
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (a === '--' || a === '-') {
        this.state.positional = args.slice(i + 1);
        return 0;
      }
      if (a === '-o' || a === '+o') {
        const name = args[++i];
        const flag = name === undefined ? undefined : LONG_OPTIONS[name];
        if (flag === undefined) return refuse(name ?? '-o');
        if (a === '-o') this.state.options.add(flag);
        else this.state.options.delete(flag);
        continue;
      }
      if (/^[-+][a-zA-Z]+$/.test(a)) {
        for (const f of a.slice(1)) {
          if (!'efux'.includes(f)) return refuse(`-${f}`);
          if (a[0] === '-') this.state.options.add(f);
          else this.state.options.delete(f);
        }
        continue;
      }
      this.state.positional = args.slice(i);
      return 0;
    }
    return 0;
  }

  /** unset [-v] NAME... / unset -f NAME...: a read-only variable stays (status 1). */
  private unsetBuiltin(args: string[], io: Io): number {
    let functions = false;
    let i = 0;
    for (; i < args.length && /^-[fv]+$/.test(args[i]!); i++) functions = args[i]!.endsWith('f');
    if (args[i] === '--') i++;
    let status = 0;
    for (const name of args.slice(i)) {
      const element = functions ? null : /^([A-Za-z_][A-Za-z0-9_]*)\[(.*)\]$/.exec(name);
      if (functions) this.state.functions.delete(name);
      else if (this.state.readonly.has(element?.[1] ?? name)) {
        io.stderr.write(`${SHELL_NAME}: read-only: ${name}\n`);
        status = 1;
      } else if (element) {
        // unset a[i]: that element only (element 0 is the variable's value; attributes stay).
        const at = evaluateArithmetic(element[2]!, this.arithmeticVariables()) >>> 0;
        if (at === 0) this.state.vars.delete(element[1]!);
        else this.state.elements.get(element[1]!)?.delete(at);
      } else this.forgetVariable(name);
    }
    return status;
  }

  /** mksh's trap builtin: set, ignore ('') or reset (-) actions; list them without arguments. */
  private trapBuiltin(args: string[], io: Io): number {
    if (args[0]?.startsWith('-') && args[0] !== '-' && args[0] !== '--') {
      io.stderr.write(`${SHELL_NAME}: trap: ${args[0]}: unknown option\n`);
      return 1;
    }
    const rest = args[0] === '--' ? args.slice(1) : args;
    if (rest.length === 0) {
      const order: TrapKey[] = ['EXIT', ...SIGNALS.map((s) => s.number), 'ERR'];
      for (const key of order) {
        const action = this.state.traps.get(key);
        if (action === undefined) continue;
        const name = typeof key === 'number' ? signalName(key)! : key;
        io.stdout.write(`trap -- ${shellQuote(action)} ${name}\n`);
      }
      return 0;
    }
    let action: string | null;
    let conditions: string[];
    if (/^\d+$/.test(rest[0]!)) {
      action = null;
      conditions = rest;
    } else {
      action = rest[0] === '-' ? null : rest[0]!;
      conditions = rest.slice(1);
    }
    let status = 0;
    for (const c of conditions) {
      const key = trapKey(c);
      if (key === null) {
        io.stderr.write(`${SHELL_NAME}: trap: bad signal '${c}'\n`);
        status = 1;
        continue;
      }
      if (action === null) this.state.traps.delete(key);
      else this.state.traps.set(key, action);
      if (typeof key !== 'number') continue;
      this.proc.ignore(key, action === '');
      if (action !== null && action !== '') this.proc.handle(key, (s) => this.onSignal(s));
      else if (!SHELL_SIGNALS.includes(key)) this.proc.unhandle(key);
    }
    return status;
  }

  /**
   * What a name runs, as `command -v` and `type` say: a reserved word, a builtin (mksh's own
   * echo, test, true and false among them), a function, a program's path, or null.
   */
  private whence(name: string): 'reserved word' | 'builtin' | 'function' | string | null {
    if (RESERVED_WORDS.has(name)) return 'reserved word';
    if (SHELL_BUILTINS.has(name) || IN_PROCESS.has(name)) return 'builtin';
    if (this.state.functions.has(name)) return 'function';
    if (name.includes('/')) return this.fs.exists(normalizePath(name, this.state.cwd)) ? name : null;
    return this.programPath(name);
  }

  /** Where a program of this name is on the phone's PATH (/system/bin), or null. */
  private programPath(name: string): string | null {
    return this.commands.has(name) || SYSTEM_BIN.includes(name) ? `/system/bin/${name}` : null;
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
          const st = this.fs.stat(path);
          if (st.kind !== 'dir') throw new FsError('ENOTDIR', target);
          if (!this.fs.canAccess(path, { exec: true })) throw new FsError('EACCES', target);
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
      case 'typeset':
        return this.declare(name === 'local' ? 'typeset' : name, args, io);
      case 'integer':
        // mksh's alias for typeset -i.
        return this.declare('typeset', ['-i', ...args], io);
      case 'unset':
        return this.unsetBuiltin(args, io);
      case 'exit': {
        const status = args[0] === undefined ? this.state.status : Number(args[0]) & 0xff;
        this.exited = true;
        throw new ExitSignal(Number.isFinite(status) ? status : 2);
      }
      case 'return': {
        const status = args[0] === undefined ? this.state.status : Number(args[0]) & 0xff;
        if (this.functionDepth > 0) throw new ReturnSignal(status);
        throw new ExitSignal(status);
      }
      case 'break':
      case 'continue':
        throw new LoopSignal(name, Math.max(1, Number(args[0] ?? '1') || 1));
      case 'exec': {
        if (args.length === 0) return 0;
        // The command replaces the shell: when it ends, so does the shell.
        const status = await this.invoke(args, assigns, io, signal, true);
        this.exited = true;
        throw new ExitSignal(status);
      }
      case 'command':
      case 'builtin': {
        // command [-pvV] NAME...: -V says what type says (it wins over -v); -p (the default
        // PATH) changes nothing here, where PATH is the phone's.
        const leading = name === 'command' ? args.findIndex((a) => !/^-[pvV]+$/.test(a)) : 0;
        const optionCount = leading < 0 ? args.length : leading;
        const options = args.slice(0, optionCount).join('');
        const rest = args.slice(optionCount);
        if (options.includes('V')) return this.whenceBuiltin(['-v', '--', ...rest], io);
        if (options.includes('v')) {
          // Each name found, up to the first that is not (status 1 then).
          for (const n of rest) {
            const what = this.whence(n);
            if (!what) return 1;
            // A reserved word, a builtin or a function is its name; a program its path.
            io.stdout.write(`${what.startsWith('/') ? what : n}\n`);
          }
          return 0;
        }
        if (rest.length === 0) return 0;
        return this.invoke(rest, assigns, io, signal, false, { functions: false });
      }
      case ':':
        return 0;
      case 'set':
        return this.setBuiltin(args, io);
      case 'shift': {
        const n = args[0] === undefined ? 1 : Number(args[0]);
        if (!Number.isInteger(n) || n < 0) return this.builtinError('shift', `bad number: ${args[0]}`, io);
        if (n > this.state.positional.length) return this.builtinError('shift', 'nothing to shift', io);
        this.state.positional = this.state.positional.slice(n);
        return 0;
      }
      case 'read':
        return this.readBuiltin(args, io, signal);
      case 'eval':
        return this.evaluate(args.join(' '), io, signal);
      case '.':
      case 'source': {
        const path = normalizePath(args[0] ?? '', this.state.cwd);
        let text: string;
        try {
          text = this.fs.readFile(path).toString('utf8');
        } catch (error) {
          if (error instanceof FsError) {
            io.stderr.write(`${SHELL_NAME}: .: ${args[0] ?? ''}: ${error.reason}\n`);
            return 1;
          }
          throw error;
        }
        // `. FILE ARGS...`: the script's $1... while it runs.
        if (args.length < 2) return this.evaluate(text, io, signal);
        const positional = this.state.positional;
        this.state.positional = args.slice(1);
        try {
          return await this.evaluate(text, io, signal);
        } finally {
          this.state.positional = positional;
        }
      }
      case 'wait':
        return this.waitBuiltin(args, io, signal);
      case 'time': {
        // mksh's time keyword, for a simple command: real time, no CPU accounting.
        const started = this.device.now();
        const status = args.length > 0 ? await this.invoke(args, assigns, io, signal, false) : 0;
        const seconds = (this.device.now() - started) / 1000;
        const real = `${Math.floor(seconds / 60)}m${(seconds % 60).toFixed(2).padStart(5, '0')}s`;
        io.stderr.write(
          `${real.padStart(12)} real ${'0m00.00s'.padStart(12)} user ${'0m00.00s'.padStart(12)} system\n`,
        );
        return status;
      }
      case 'kill':
        return this.killBuiltin(args, io);
      case 'trap':
        return this.trapBuiltin(args, io);
      case 'jobs':
        return this.jobsBuiltin(args, io);
      case 'umask':
        return this.umaskBuiltin(args, io);
      case 'ulimit':
        return ulimitBuiltin(args, io);
      case 'fg':
      case 'bg':
        // mksh without a terminal has no job control; with one (`adb shell` with a PTY) it
        // would move jobs between foreground and background, which is not modeled.
        io.stderr.write(
          this.options.interactive
            ? `${SHELL_NAME}: ${name}: job control is not modeled by the virtual phone\n`
            : `${SHELL_NAME}: ${name}: job control not enabled\n`,
        );
        return 1;
      case 'alias':
      case 'unalias':
        // No aliases are defined; defining one would have to change how commands are read.
        if (args.length === 0) return 0;
        io.stderr.write(
          `${SHELL_NAME}: ${name}: aliases are not modeled by the virtual phone; use a function\n`,
        );
        return 1;
      case 'let':
        return this.letBuiltin(args, io);
      case 'getopts':
        return this.getoptsBuiltin(args, io);
      case 'print':
        return printBuiltin(args, io);
      case 'echo':
        return echoBuiltin(args, io);
      case 'test':
      case '[':
        return mkshTest(name, args, this.testShell(io), (message) =>
          io.stderr.write(`${SHELL_NAME}: ${message}\n`),
        );
      case 'whence':
        return this.whenceBuiltin(args, io);
      case 'type':
        return this.whenceBuiltin(['-v', '--', ...args], io);
      default:
        return null;
    }
  }

  /**
   * umask [-S] [MASK]: the shell's file creation mask, printed as mksh prints it (`%#3.3o`,
   * or -S `u=rwx,g=,o=`); set in octal or symbolically (`u=rwx,go=rx`, `g-w`).
   */
  private umaskBuiltin(args: string[], io: Io): number {
    const symbolic = args[0] === '-S';
    const mask = args[symbolic ? 1 : 0];
    if (mask === undefined) {
      const allowed = ~this.state.umask & 0o777;
      io.stdout.write(
        symbolic
          ? `${['u', 'g', 'o']
              .map(
                (who, k) =>
                  `${who}=${'rwx'
                    .split('')
                    .filter((_, b) => allowed & (0o400 >> (k * 3 + b)))
                    .join('')}`,
              )
              .join(',')}\n`
          : `${this.state.umask
              .toString(8)
              .padStart(3, '0')
              .replace(/^[1-7]/, '0$&')}\n`,
      );
      return 0;
    }
    if (/^[0-9]/.test(mask)) {
      if (!/^[0-7]+$/.test(mask)) return this.builtinError('umask', 'bad number', io);
      this.state.umask = Number.parseInt(mask, 8) & 0o777;
      return 0;
    }
    let allowed = ~this.state.umask & 0o777;
    for (const clause of mask.split(',')) {
      const m = /^([ugoa]*)([=+-])([rwx]*)$/.exec(clause);
      if (!m) return this.builtinError('umask', `bad mask`, io);
      const who = (m[1] || 'a').replace('a', 'ugo');
      let bits = 0;
      for (const w of who) {
        const shift = w === 'u' ? 6 : w === 'g' ? 3 : 0;
        for (const p of m[3]!) bits |= (p === 'r' ? 4 : p === 'w' ? 2 : 1) << shift;
      }
      let whole = 0;
      for (const w of who) whole |= 7 << (w === 'u' ? 6 : w === 'g' ? 3 : 0);
      if (m[2] === '=') allowed = (allowed & ~whole) | bits;
      else if (m[2] === '+') allowed |= bits;
      else allowed &= ~bits;
    }
    this.state.umask = ~allowed & 0o777;
    return 0;
  }

  /**
   * read [-r] [-A] [-d DELIM] [-n N | -N N] [-t SECONDS] [-u0] [NAME...]: a line (up to DELIM) of
   * standard input split at $IFS into the NAMEs, the last taking the rest (REPLY without
   * names; -A: every field an element of the array NAME). Without -r a backslash quotes the next character (and joins lines). -n stops after
   * N bytes, -N reads exactly N. Status 1 at the end of input or past -t's time, 2 for a usage
   * error; history and co-processes are refused.
   */
  private async readBuiltin(args: string[], io: Io, signal: AbortSignal): Promise<number> {
    const usage = (message: string) => {
      io.stderr.write(`${SHELL_NAME}: read: ${message}\n`);
      return 2;
    };
    let raw = false;
    let array = false;
    let input = io.stdin;
    let delimiter = '\n';
    let count: { bytes: number; exact: boolean } | null = null;
    let timeoutMs: number | null = null;
    let i = 0;
    for (; i < args.length && /^-./.test(args[i]!); i++) {
      const a = args[i]!;
      if (a === '--') {
        i++;
        break;
      }
      for (let k = 1; k < a.length; k++) {
        const f = a[k]!;
        if (f === 'r') raw = true;
        else if (f === 'A') array = true;
        else if ('dnNtu'.includes(f)) {
          const value = a.slice(k + 1) || args[++i];
          if (value === undefined) return usage(`-${f}: missing argument`);
          if (f === 'd') delimiter = value[0] ?? '\0';
          else if (f === 'u') {
            const fd = /^[0-9]$/.test(value) ? Number(value) : -1;
            const from = fd === 0 ? io.stdin : io.fds?.get(fd);
            if (!from || !('read' in from))
              return usage(`-u: ${value}: bad file descriptor: Bad file descriptor`);
            input = from;
          } else if (f === 't') {
            const seconds = Number(value);
            if (!(seconds >= 0)) return usage(`syntax error: Invalid argument '${value}'`);
            timeoutMs = seconds * 1000;
          } else {
            const n = Number(value);
            if (!Number.isInteger(n) || n < 0) return usage(`bad number: ${value}`);
            count = { bytes: n, exact: f === 'N' };
          }
          break;
        } else if ('aps'.includes(f)) return usage(`-${f}: not modeled by the virtual phone`);
        else return usage(`-${f}: unknown option`);
      }
    }
    const names = args.slice(i);
    if (names.length === 0) names.push('REPLY');
    const bad = names.find((n) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(n));
    if (bad !== undefined) return usage(`${bad}: is not an identifier`);
    const fixed = names.find((n) => this.state.readonly.has(n));
    if (fixed !== undefined) return usage(`read-only: ${fixed}`);

    let timedOut = false;
    const reading = readRecord(input, { delimiter, raw, count }, () => timedOut);
    let timer: NodeJS.Timeout | undefined;
    const timed =
      timeoutMs === null
        ? reading
        : Promise.race([
            reading,
            new Promise<null>(
              (resolve) =>
                (timer = setTimeout(() => {
                  timedOut = true;
                  resolve(null);
                }, timeoutMs)),
            ),
          ]);
    const r = await this.interruptible(timed, signal).finally(() => clearTimeout(timer));
    if ('signal' in r) return 128 + r.signal;
    const record = r.value ?? { text: '', quotedAt: new Set<number>(), complete: false };
    const fields = splitRead(
      record.text,
      record.quotedAt,
      this.state.vars.get('IFS') ?? ' \t\n',
      array ? Infinity : names.length,
    );
    // read -A NAME: every field, an element each.
    if (array) this.setArray(names[0]!, fields);
    else names.forEach((n, k) => this.setVariable(n, fields[k] ?? ''));
    // A last record without its delimiter is read, but read reports the end of input.
    return record.complete ? 0 : 1;
  }

  /** What `test` and `[` read of this shell. */
  private testShell(io: Io): TestShell {
    return {
      fs: this.fs,
      cwd: this.state.cwd,
      uid: this.state.cred.uid,
      gid: this.state.cred.gid,
      isSet: (name) => this.param(name) !== undefined,
      option: (name) => {
        const flag = LONG_OPTIONS[name];
        return flag === undefined ? null : this.state.options.has(flag);
      },
      arithmetic: (expression) => evaluateArithmetic(expression, this.arithmeticVariables()),
      isTerminal: (fd) => [io.stdin, io.stdout, io.stderr][fd]?.terminal !== undefined,
    };
  }

  /** What `$((...))` and `let` read and assign: the shell's variables. */
  private arithmeticVariables(): ArithmeticVariables {
    // An element is named `a[3]` here (see arith.ts).
    const element = (name: string) => /^([A-Za-z_][A-Za-z0-9_]*)\[(\d+)\]$/.exec(name);
    return {
      get: (name) => {
        const e = element(name);
        return e ? this.elementValue(e[1]!, Number(e[2])) : this.param(name);
      },
      set: (name, value) => {
        const e = element(name);
        if (e) this.setElement(e[1]!, Number(e[2]), value);
        else this.setVariable(name, value);
      },
      readonly: (name) => this.state.readonly.has(element(name)?.[1] ?? name),
    };
  }

  /** let EXPR...: 0 when the last expression is not zero, 1 when it is, 2 when one is wrong. */
  private letBuiltin(args: string[], io: Io): number {
    if (args.length === 0) {
      io.stderr.write(`${SHELL_NAME}: let: missing argument\n`);
      return 1;
    }
    let last = 0;
    for (const expression of args) {
      try {
        last = evaluateArithmetic(expression, this.arithmeticVariables());
      } catch (error) {
        if (!(error instanceof ShellSyntaxError)) throw error;
        io.stderr.write(`${SHELL_NAME}: ${error.message}\n`);
        return 2;
      }
    }
    return last === 0 ? 1 : 0;
  }

  /**
   * getopts OPTSTRING NAME [ARG...]: the next option of ARGs (the positional parameters
   * without), as mksh reads them: grouped (-ab), with their argument joined or next (-c10,
   * -c 10), `--` ends them, `+a` too (NAME is then `+a`). OPTIND is the next argument's
   * number; assigning it starts over. An unknown option or a missing argument sets NAME to
   * `?` and says so, unless OPTSTRING begins with `:` (then NAME is `?` or `:` and OPTARG
   * the option). Status 1 at the end of the options.
   */
  private getoptsBuiltin(args: string[], io: Io): number {
    const bad = (message: string) => {
      io.stderr.write(`${SHELL_NAME}: getopts: ${message}\n`);
      return 1;
    };
    const [spec, name, ...given] = args;
    if (spec === undefined) return bad('missing options argument');
    if (name === undefined) return bad('missing name argument');
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return bad(`${name}: is not an identifier`);
    const argv = [SHELL_NAME, ...(given.length > 0 ? given : this.state.positional)];
    // OPTIND as this builtin left it goes on where it was inside a group; any other value starts there.
    const optind = Number(this.state.vars.get('OPTIND') ?? '1');
    const state = this.getopts;
    if (!(state && String(state.optind) === this.state.vars.get('OPTIND'))) {
      this.getopts = { optind: Number.isInteger(optind) && optind >= 1 ? optind : 1, p: 0 };
    }
    const go = this.getopts!;
    if (go.optind > argv.length || (go.p !== 0 && go.p > (argv[go.optind - 1]?.length ?? 0))) {
      return bad('arguments changed since last call');
    }
    const silent = spec.startsWith(':');
    const finish = (value: string, optarg: string | null, status: number) => {
      if (optarg === null) this.state.vars.delete('OPTARG');
      else this.state.vars.set('OPTARG', optarg);
      this.state.vars.set('OPTIND', String(go.optind));
      if (this.state.readonly.has(name)) {
        io.stderr.write(`${SHELL_NAME}: read-only: ${name}\n`);
        return 2;
      }
      this.setVariable(name, value);
      return status;
    };
    let sign = '-';
    if (go.p === 0 || go.p >= argv[go.optind - 1]!.length) {
      const arg = argv[go.optind];
      go.p = 1;
      if (arg === '--') {
        go.optind++;
        go.p = 0;
        return finish('?', null, 1);
      }
      if (arg === undefined || (arg[0] !== '-' && arg[0] !== '+') || arg.length < 2) {
        go.p = 0;
        return finish('?', null, 1);
      }
      go.optind++;
    }
    const current = argv[go.optind - 1]!;
    sign = current[0]!;
    const c = current[go.p++]!;
    const at = '?:;,#'.includes(c) ? -1 : spec.indexOf(c, silent ? 1 : 0);
    if (at < 0) {
      if (silent) return finish('?', c, 0);
      io.stderr.write(`${SHELL_NAME}: -${c}: unknown option\n`);
      return finish('?', null, 0);
    }
    if (spec[at + 1] === ':') {
      let optarg: string | undefined;
      if (go.p < current.length) optarg = current.slice(go.p);
      else if (go.optind < argv.length) optarg = argv[go.optind++];
      go.p = 0;
      if (optarg === undefined) {
        if (silent) return finish(':', c, 0);
        io.stderr.write(`${SHELL_NAME}: -${c}: requires an argument\n`);
        return finish('?', null, 0);
      }
      return finish(sign === '+' ? `+${c}` : c, optarg, 0);
    }
    return finish(sign === '+' ? `+${c}` : c, null, 0);
  }

  /**
   * whence [-pv] NAME...: what each name runs as: its name for a builtin, function or
   * reserved word, a program's path (-v: in words, as `type`; -p: programs only).
   */
  private whenceBuiltin(args: string[], io: Io): number {
    let verbose = false;
    let pathOnly = false;
    let i = 0;
    for (; i < args.length && /^-[pv]+$/.test(args[i]!); i++) {
      verbose ||= args[i]!.includes('v');
      pathOnly ||= args[i]!.includes('p');
    }
    if (args[i] === '--') i++;
    else if (args[i]?.startsWith('-') && args[i] !== '-') {
      io.stderr.write(`${SHELL_NAME}: whence: ${args[i]}: unknown option\n`);
      return 1;
    }
    let status = 0;
    for (const name of args.slice(i)) {
      let what = this.whence(name);
      if (pathOnly && what !== null && !what.startsWith('/')) {
        what = this.programPath(name);
      }
      if (what === null) {
        if (verbose) io.stdout.write(`${name} not found\n`);
        status = 1;
      } else if (!verbose) io.stdout.write(`${what.startsWith('/') ? what : name}\n`);
      else if (what === 'builtin') io.stdout.write(`${name} is a shell builtin\n`);
      else if (what === 'function' || what === 'reserved word') io.stdout.write(`${name} is a ${what}\n`);
      else if (!name.includes('/')) io.stdout.write(`${name} is a tracked alias for ${what}\n`);
      else io.stdout.write(`${name} is ${what}\n`);
    }
    return status;
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
        return this.state.lastBackground === null ? '' : String(this.state.lastBackground);
      case '-':
        return 'h';
    }
    if (/^[1-9][0-9]*$/.test(name)) return this.state.positional[Number(name) - 1];
    if (name === 'PWD') return this.state.cwd;
    if (name === 'RANDOM') return String(Math.floor(Math.random() * 32768));
    // The shell's own process (a subshell's $$ and $PPID are its parent shell's, as in mksh).
    const shell = this.device.processes.byPid(this.state.pid);
    if (name === 'PPID' && shell) return String(shell.ppid);
    if (name === 'SECONDS' && shell && !this.state.vars.has('SECONDS'))
      return String(Math.floor((this.device.now() - shell.startedMs) / 1000));
    return this.state.vars.get(name);
  }

  /** An array subscript's value: its words expanded, then evaluated as arithmetic. */
  private async subscript(index: Word, io: Io, signal: AbortSignal): Promise<number> {
    return evaluateArithmetic(await this.expandString(index, io, signal), this.arithmeticVariables());
  }

  /** An array's element (element 0 is the variable itself). */
  private elementValue(name: string, index: number): string | undefined {
    const at = index >>> 0;
    return at === 0 ? this.param(name) : this.state.elements.get(name)?.get(at);
  }

  /**
   * A parameter's value: `${a[i]}` an element, `${a[@]}` and `${a[*]}` every element joined
   * (unset when there is none; `*` joins with IFS's first character).
   */
  private async paramValue(
    part: Extract<Word['parts'][number], { type: 'param' }>,
    io: Io,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    if (part.index === undefined) return this.param(part.name);
    if (typeof part.index !== 'string')
      return this.elementValue(part.name, await this.subscript(part.index, io, signal));
    const items = this.arrayElements(part.name);
    if (items.length === 0) return undefined;
    const separator = part.index === '*' ? (this.state.vars.get('IFS') ?? ' ').slice(0, 1) : ' ';
    return items.map(([, v]) => v).join(separator);
  }

  private async partValue(
    part: Exclude<Word['parts'][number], { type: 'lit' }>,
    io: Io,
    signal: AbortSignal,
  ): Promise<string> {
    if (part.type === 'arith') {
      const expression = await this.expandString(part.expression, io, signal);
      return String(evaluateArithmetic(expression, this.arithmeticVariables()));
    }
    if (part.type === 'cmdsub') {
      // $(<FILE) is the file's contents, read by the shell itself, as mksh reads it.
      const file = inputRedirectOnly(part.source);
      if (file) {
        this.substitutions++;
        const target = await this.expandString(file, io, signal);
        try {
          this.state.status = 0;
          return this.fs.readFile(normalizePath(target, this.state.cwd)).toString('utf8').replace(/\n+$/, '');
        } catch (error) {
          if (!(error instanceof FsError)) throw error;
          io.stderr.write(`${SHELL_NAME}: ${target}: can't open $(<...) file: ${error.reason}\n`);
          this.state.status = 1;
          return '';
        }
      }
      // $(...) runs in a forked subshell whose output is captured.
      this.substitutions++;
      const out = new BufferOutput();
      const subIo: Io = { ...io, stdout: out };
      const child = this.fork();
      holdOutputs(child.proc, subIo);
      this.foreground.add(child.proc);
      try {
        this.state.status = await this.runChild(child, subIo, signal, () =>
          child.run(part.source, subIo, signal),
        );
      } finally {
        this.foreground.delete(child.proc);
      }
      return out.text().replace(/\n+$/, '');
    }
    const value = await this.paramValue(part, io, signal);
    const unsetOrEmpty = value === undefined || (value === '' && part.op.startsWith(':'));
    const every = typeof part.index === 'string';
    switch (part.op) {
      case 'length':
        return String(every ? this.arrayElements(part.name).length : (value ?? '').length);
      case 'keys':
        return this.arrayElements(part.name)
          .map(([i]) => i)
          .join(' ');
      case ':': {
        // ${X:offset:length} (arithmetic; a negative offset counts from the end). For @ and *,
        // the positional parameters from $0 on.
        const list = part.name === '@' || part.name === '*' ? [SHELL_NAME, ...this.state.positional] : null;
        const size = list ? list.length : (value ?? '').length;
        let from = evaluateArithmetic(
          await this.expandString(part.arg!, io, signal),
          this.arithmeticVariables(),
        );
        if (from < 0) from = Math.max(0, size + from);
        const length = part.second
          ? evaluateArithmetic(await this.expandString(part.second, io, signal), this.arithmeticVariables())
          : size;
        // A negative length counts back from the end.
        const to = Math.min(size, length < 0 ? Math.max(from, size + length) : from + length);
        return list ? list.slice(from, to).join(' ') : (value ?? '').slice(from, to);
      }
      case '/':
      case '//':
      case '/#':
      case '/%': {
        const text = value ?? '';
        const pattern = part.arg ? await this.expandPattern(part.arg, io, signal) : '';
        const replacement = part.second ? await this.expandString(part.second, io, signal) : '';
        return substitutePattern(text, pattern, replacement, part.op);
      }
      case '%':
      case '%%':
      case '#':
      case '##': {
        // Pattern removal: the shortest (or longest, doubled) match of a glob at the end (%)
        // or the start (#).
        const pattern = part.arg ? await this.expandPattern(part.arg, io, signal) : '';
        return removePattern(value ?? '', pattern, part.op);
      }
      case ':?':
      case '?': {
        if (!unsetOrEmpty) return value ?? '';
        const message = part.arg
          ? await this.expandString(part.arg, io, signal)
          : 'parameter null or not set';
        io.stderr.write(`${SHELL_NAME}: ${part.name}: ${message}\n`);
        throw new ExitSignal(1);
      }
      case ':-':
      case '-':
        return unsetOrEmpty ? (part.arg ? await this.expandString(part.arg, io, signal) : '') : (value ?? '');
      case ':=':
      case '=': {
        if (!unsetOrEmpty) return value ?? '';
        const v = part.arg ? await this.expandString(part.arg, io, signal) : '';
        if (part.index !== undefined && typeof part.index !== 'string') {
          const index = await this.subscript(part.index, io, signal);
          this.setElement(part.name, index, v);
          return this.elementValue(part.name, index) ?? v;
        }
        this.setVariable(part.name, v);
        return this.state.vars.get(part.name) ?? v;
      }
      case ':+':
      case '+':
        return unsetOrEmpty ? '' : part.arg ? await this.expandString(part.arg, io, signal) : '';
      default:
        if (value === undefined && this.state.options.has('u') && !/^[@*]$/.test(part.name)) {
          const name =
            part.index === undefined || typeof part.index === 'string'
              ? part.name
              : `${part.name}[${(await this.subscript(part.index, io, signal)) >>> 0}]`;
          io.stderr.write(`${SHELL_NAME}: ${name}: parameter not set\n`);
          throw new ExitSignal(1);
        }
        return value ?? '';
    }
  }

  /** Expands a word into a glob pattern: quoted parts match literally. */
  private async expandPattern(word: Word, io: Io, signal: AbortSignal): Promise<string> {
    let out = '';
    for (const part of word.parts) {
      const text = part.type === 'lit' ? part.text : await this.partValue(part, io, signal);
      out += part.quoted ? text.replace(/[*?[\]\\]/g, '\\$&') : text;
    }
    return out;
  }

  /** Expands a word without field splitting or globbing (assignments, redirect targets). */
  async expandString(word: Word, io: Io, signal: AbortSignal): Promise<string> {
    let out = '';
    for (const part of word.parts)
      out += part.type === 'lit' ? part.text : await this.partValue(part, io, signal);
    return out;
  }

  /** The word of `${x:-word}` or `${x:+word}` when it is what the expansion gives; else null. */
  private chosenWord(part: Extract<Word['parts'][number], { type: 'param' }>): Word | null {
    // (An element's default, `${a[i]:-x}`, is expanded as a string: its subscript is arithmetic.)
    if (!part.arg || !['-', ':-', '+', ':+'].includes(part.op) || part.index !== undefined) return null;
    const value = this.param(part.name);
    const unsetOrEmpty = value === undefined || (value === '' && part.op.startsWith(':'));
    return part.op.endsWith('-') === unsetOrEmpty ? part.arg : null;
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
    // A delimiter is a run of IFS white space, or one other IFS character with the white
    // space around it: each of those ends a field, so `a::b` with IFS=: has an empty one.
    const white = escapeClass([...ifs].filter((c) => ' \t\n'.includes(c)).join(''));
    const other = escapeClass([...ifs].filter((c) => !' \t\n'.includes(c)).join(''));
    const around = white ? `[${white}]*` : '';
    const delimiter = new RegExp(
      `(${[other ? `${around}[${other}]${around}` : '', white ? `[${white}]+` : ''].filter(Boolean).join('|')})`,
    );
    const split = (value: string, glob: boolean) => {
      const pieces = value.split(delimiter);
      for (let k = 0; k < pieces.length; k += 2) {
        const piece = pieces[k]!;
        if (k > 0) {
          if (current) fields.push(current);
          else if (other && new RegExp(`[${other}]`).test(pieces[k - 1]!))
            fields.push({ text: '', pattern: '', glob: false, quoted: true });
          current = null;
        }
        if (piece !== '') {
          const f = cur();
          f.text += piece;
          f.pattern += glob ? piece : piece.replace(/[*?[\]\\]/g, '\\$&');
          if (glob && /[*?[]/.test(piece)) f.glob = true;
        }
      }
    };
    // The parts of an unquoted ${x:-word} that applies join the word's own parts: what the
    // word quotes stays one field (${x:-"a  b"}), what it does not is split and globbed.
    const parts: { part: Word['parts'][number]; inDefault: boolean }[] = word.parts.map((part) => ({
      part,
      inDefault: false,
    }));
    while (parts.length > 0) {
      const { part, inDefault } = parts.shift()!;
      if (part.type === 'lit' && inDefault && !part.quoted) {
        split(part.text, true);
        continue;
      }
      const chosen = part.type === 'param' && !part.quoted ? this.chosenWord(part) : null;
      if (chosen) {
        parts.unshift(...chosen.parts.map((p) => ({ part: p, inDefault: true })));
        continue;
      }
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
      if (
        part.type === 'param' &&
        part.quoted &&
        part.op === '' &&
        (part.index === '@' || (part.name === '@' && part.index === undefined))
      ) {
        // "$@": one field per positional parameter; "${a[@]}" one per element.
        const ps =
          part.index === '@' ? this.arrayElements(part.name).map(([, v]) => v) : this.state.positional;
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
      split(value, false);
    }
    if (current) fields.push(current);
    const out: string[] = [];
    for (const f of fields) {
      if (f.text === '' && !f.quoted) continue;
      if (f.glob && !this.state.options.has('f')) {
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
          if (this.fs.exists(normalizePath(path, this.state.cwd))) next.push(path);
          continue;
        }
        let entries: string[];
        try {
          entries = this.fs.readdir(dirPath).map((e) => e.name);
        } catch {
          continue;
        }
        const glob = Glob.compile(seg);
        for (const name of entries) {
          if (name.startsWith('.') && !seg.startsWith('.')) continue;
          if (glob.matches(name)) next.push(joinPath(base, name));
        }
      }
      candidates = next.sort();
      if (candidates.length === 0) return [];
    }
    return candidates;
  }
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

/**
 * mksh's brace expansion: `a{b,c}d` becomes `abd acd` (nested braces too). Only braces in
 * unquoted literal text, with a comma at their top level, expand.
 */
export function braceExpand(word: Word): Word[] {
  for (let p = 0; p < word.parts.length; p++) {
    const part = word.parts[p]!;
    if (part.type !== 'lit' || part.quoted) continue;
    const text = part.text;
    for (let open = text.indexOf('{'); open >= 0; open = text.indexOf('{', open + 1)) {
      let depth = 0;
      const commas: number[] = [];
      let close = -1;
      for (let k = open; k < text.length; k++) {
        const c = text[k];
        if (c === '{') depth++;
        else if (c === '}' && --depth === 0) {
          close = k;
          break;
        } else if (c === ',' && depth === 1) commas.push(k);
      }
      if (close < 0 || commas.length === 0) continue;
      const bounds = [open, ...commas, close];
      const out: Word[] = [];
      for (let k = 0; k + 1 < bounds.length; k++) {
        const piece = text.slice(bounds[k]! + 1, bounds[k + 1]);
        const lit = {
          type: 'lit' as const,
          quoted: false,
          text: text.slice(0, open) + piece + text.slice(close + 1),
        };
        out.push(...braceExpand({ parts: [...word.parts.slice(0, p), lit, ...word.parts.slice(p + 1)] }));
      }
      return out;
    }
  }
  return [word];
}

/** An input whose reads end (null) once `signal` aborts. */
function untilAborted(input: Io['stdin'], signal: AbortSignal): Io['stdin'] {
  const aborted = new Promise<null>((resolve) => {
    if (signal.aborted) resolve(null);
    else signal.addEventListener('abort', () => resolve(null), { once: true });
  });
  return {
    terminal: input.terminal,
    read: () => (signal.aborted ? Promise.resolve(null) : Promise.race([input.read(), aborted])),
    unread: (chunk) => input.unread?.(chunk),
  };
}

/**
 * A value quoted as mksh prints it (`set`, `export -p`, `trap`): bare unless it holds a blank
 * or a character the shell reads (`=`, `$`, quotes, `*`, ...); `'...'` then, with `\'` for a
 * quote; `$'...'` when it holds a control character.
 */
function shellQuote(value: string): string {
  if (value === '') return "''";
  if ([...value].some((c) => c.charCodeAt(0) < 0x20)) return cQuote(value);
  if (!/[ \t\n<>[\]=`#"'&();|*\\?$]/.test(value)) return value;
  let out = '';
  let open = false;
  for (const c of value) {
    if (c === "'") {
      if (open) out += "'";
      open = false;
      out += "\\'";
      continue;
    }
    if (!open) out += "'";
    open = true;
    out += c;
  }
  return open ? `${out}'` : out;
}

const C_QUOTED: Record<string, string> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '\x1b': '\\E',
  '\\': '\\\\',
  "'": '\\047',
};

/** mksh's `$'...'` form: C escapes, octal for other control characters, \uXXXX past ASCII. */
function cQuote(value: string): string {
  let out = "$'";
  for (const c of value) {
    const code = c.codePointAt(0)!;
    if (c in C_QUOTED) out += C_QUOTED[c];
    else if (code < 0x20 || code === 0x7f) out += `\\${code.toString(8).padStart(3, '0')}`;
    else if (code >= 0x80) out += `\\u${code.toString(16).toUpperCase().padStart(4, '0')}`;
    else out += c;
  }
  return `${out}'`;
}

/** A trap condition: EXIT (or 0), ERR, or a signal by number or name in any case. */
function trapKey(spec: string): TrapKey | null {
  const upper = spec.toUpperCase();
  if (upper === 'EXIT' || spec === '0') return 'EXIT';
  if (upper === 'ERR') return 'ERR';
  const n = signalNumber(spec);
  return n === null || n === 0 ? null : n;
}

/**
 * `kill -l` as mksh prints it: "N NAME Description" in columns across an 80-column line
 * (its output is not a terminal), numbers down each column.
 */
function mkshSignalTable(): string {
  const numWidth = 2;
  const nameWidth = Math.max(...SIGNALS.map((s) => s.name.length));
  const entries = SIGNALS.map(
    (s) => `${String(s.number).padStart(numWidth)} ${s.name.padStart(nameWidth)} ${s.description}`,
  );
  const maxCol = numWidth + 1 + nameWidth + 1 + Math.max(...SIGNALS.map((s) => s.description.length));
  const width = 80;
  let cols = Math.floor((width + 1) / (maxCol + 2));
  if (cols < 2) return `${entries.join('\n')}\n`;
  let rows = Math.ceil(entries.length / cols);
  if (cols > rows) {
    cols = rows;
    rows = Math.ceil(entries.length / cols);
  }
  const space = Math.max(2, Math.floor((width - maxCol * cols) / cols));
  const lines: string[] = [];
  for (let r = 0; r < rows; r++) {
    let line = '';
    for (let c = 0; c < cols; c++) {
      const i = c * rows + r;
      if (i >= entries.length) break;
      line += i + rows >= entries.length ? entries[i]! : entries[i]!.padEnd(maxCol) + ' '.repeat(space);
    }
    lines.push(line);
  }
  return `${lines.join('\n')}\n`;
}

/** A record `read` took: its text (backslashes resolved), which characters were quoted, and whether its delimiter ended it. */
interface ReadRecord {
  text: string;
  quotedAt: Set<number>;
  complete: boolean;
}

/**
 * Reads one record for `read`, byte by byte from chunks (what follows stays for the next
 * reader): up to `delimiter`, or `count` bytes. Without `raw`, a backslash quotes the next
 * character and a backslash-newline joins lines. Null at the end of input with nothing read.
 */
async function readRecord(
  input: Io['stdin'],
  options: { delimiter: string; raw: boolean; count: { bytes: number; exact: boolean } | null },
  /** True once nobody waits for this record (read -t ran out): what comes is left for the next reader. */
  abandoned: () => boolean = () => false,
): Promise<ReadRecord | null> {
  const bytes: number[] = [];
  const quoted: number[] = [];
  const delimiter = Buffer.from(options.delimiter)[0] ?? 0;
  let escaped = false;
  let taken = 0;
  const done = () => options.count !== null && taken >= options.count.bytes;
  const record = (complete: boolean): ReadRecord => {
    // Offsets of quoted bytes become offsets of characters (UTF-16 units) in the decoded
    // text, in one pass: a UTF-8 lead byte begins a character, four-byte ones take two units.
    const text = Buffer.from(bytes).toString('utf8');
    const quotedAt = new Set<number>();
    let unit = -1;
    for (let at = 0, q = 0; at < bytes.length && q < quoted.length; at++) {
      const b = bytes[at]!;
      if ((b & 0xc0) !== 0x80) unit += b >= 0xf0 ? 2 : 1;
      if (quoted[q] === at) {
        quotedAt.add(unit);
        q++;
      }
    }
    return { text, quotedAt, complete };
  };
  if (done()) return record(true);
  const chunks: Buffer[] = [];
  for (;;) {
    const chunk = await input.read();
    if (abandoned()) {
      // Given back whole, with what this record had taken: the next read starts there.
      const back = Buffer.concat(chunk ? [...chunks, chunk] : chunks);
      if (back.length > 0) input.unread?.(back);
      return null;
    }
    if (chunk === null) return bytes.length === 0 && !escaped ? null : record(false);
    chunks.push(chunk);
    for (let k = 0; k < chunk.length; k++) {
      const b = chunk[k]!;
      taken++;
      if (escaped) {
        escaped = false;
        if (b !== 0x0a) {
          quoted.push(bytes.length);
          bytes.push(b);
        }
      } else if (!options.raw && b === 0x5c) escaped = true;
      else if (b === delimiter && !options.count?.exact) {
        input.unread?.(chunk.subarray(k + 1));
        return record(true);
      } else bytes.push(b);
      if (done()) {
        input.unread?.(chunk.subarray(k + 1));
        return record(true);
      }
    }
  }
}

/**
 * Splits what `read` took into `count` fields at $IFS, as mksh does: IFS white space
 * (space, tab, newline) around the text is dropped and runs of it separate once; any other
 * IFS character separates one field from the next; quoted characters never separate. The
 * last field keeps the rest of the text, separators included.
 */
function splitRead(text: string, quotedAt: Set<number>, ifs: string, count: number): string[] {
  const isWhite = (k: number) => !quotedAt.has(k) && ifs.includes(text[k]!) && ' \t\n'.includes(text[k]!);
  const isSep = (k: number) => !quotedAt.has(k) && ifs.includes(text[k]!);
  let start = 0;
  let end = text.length;
  while (start < end && isWhite(start)) start++;
  while (end > start && isWhite(end - 1)) end--;
  const fields: string[] = [];
  let k = start;
  while (fields.length < count - 1 && k < end) {
    let field = '';
    while (k < end && !isSep(k)) field += text[k++]!;
    fields.push(field);
    // One separator: IFS white space around at most one other IFS character.
    while (k < end && isWhite(k)) k++;
    if (k < end && isSep(k) && !isWhite(k)) {
      k++;
      while (k < end && isWhite(k)) k++;
    }
  }
  if (count === Infinity) return fields;
  // What is left goes to the last name; a single field and one separator after it (a:b: for
  // two names) drops the separator, as mksh does.
  let last = end;
  let tail = k;
  while (tail < end && !isSep(tail)) tail++;
  if (tail < end) {
    let after = tail;
    while (after < end && isWhite(after)) after++;
    if (after < end && isSep(after) && !isWhite(after)) after++;
    while (after < end && isWhite(after)) after++;
    if (after === end) last = tail;
  }
  fields.push(text.slice(k, last));
  return fields;
}

/** mksh's reserved words: `type` says "reserved word"; `command -v` prints the word. */
const RESERVED_WORDS = new Set(
  '! { } [[ ]] case do done elif else esac fi for function if in select then time until while'.split(' '),
);

/**
 * The builtins this shell runs itself (see Interpreter.builtin); echo, test, [, true and false
 * are builtins too (see IN_PROCESS).
 */
const SHELL_BUILTINS = new Set([
  'cd',
  'pwd',
  'export',
  'readonly',
  'local',
  'typeset',
  'integer',
  'echo',
  'test',
  '[',
  'unset',
  'exit',
  'return',
  'break',
  'continue',
  'exec',
  'command',
  'builtin',
  ':',
  'set',
  'shift',
  'read',
  'eval',
  '.',
  'source',
  'wait',
  'kill',
  'trap',
  'jobs',
  'umask',
  'ulimit',
  'alias',
  'unalias',
  'fg',
  'bg',
  'type',
  'whence',
  'let',
  'getopts',
  'print',
]);

/** POSIX's special builtins: assignments before them stay after them. */
const SPECIAL_BUILTINS = new Set([
  ':',
  '.',
  'source',
  'break',
  'continue',
  'eval',
  'exit',
  'export',
  'readonly',
  'return',
  'set',
  'shift',
  'trap',
  'unset',
]);

/** Builtins that run another command and hand it the assignments (its environment). */
const PASSES_ASSIGNMENTS = new Set(['exec', 'command', 'builtin', 'time']);

/**
 * The resource limits of a shell on Android 14, as mksh's ulimit shows them (soft and hard
 * alike): flag, name in `ulimit -a`, value.
 */
const LIMITS: readonly [string, string, string][] = [
  ['t', 'time(cpu-seconds)', 'unlimited'],
  ['f', 'file(blocks)', 'unlimited'],
  ['c', 'coredump(blocks)', '0'],
  ['d', 'data(kbytes)', 'unlimited'],
  ['s', 'stack(kbytes)', '8192'],
  ['l', 'lockedmem(kbytes)', '65536'],
  ['n', 'nofiles(descriptors)', '32768'],
  ['p', 'processes', '29560'],
  ['i', 'sigpending', '29560'],
  ['q', 'msgqueue(bytes)', '819200'],
  ['e', 'maxnice', '40'],
  ['r', 'maxrtprio', '0'],
  ['m', 'resident-set(kbytes)', 'unlimited'],
  ['v', 'address-space(kbytes)', 'unlimited'],
];

/**
 * mksh's ulimit: shows limits (`-a` all, `-n` and the others one; the file size limit
 * without a flag). Setting one is refused: the virtual phone does not enforce limits, and
 * pretending to would be a silent success.
 */
/**
 * mksh's print [-nre] [-uN] [--] ARG...: the arguments, a space apart, and a newline (-n:
 * none), with backslash escapes (\\n, \\t, \\0NNN, \\c ends the output) unless -r; to fd N
 * with -u (1 or 2). `print -R` is BSD echo: only -n may follow, and no escapes. Options that
 * need history or a co-process are refused.
 */
function printBuiltin(args: string[], io: Io): number {
  let newline = true;
  let escapes = true;
  let out: Output = io.stdout;
  let i = 0;
  const refuse = (message: string) => {
    io.stderr.write(`${SHELL_NAME}: print: ${message}\n`);
    return 1;
  };
  if (args[0] === '-R') {
    escapes = false;
    i = 1;
    if (args[i] === '-n') {
      newline = false;
      i++;
    }
  } else {
    for (; i < args.length; i++) {
      const a = args[i]!;
      if (a === '-' || a === '--') {
        i++;
        break;
      }
      if (!a.startsWith('-') || a.length < 2) break;
      for (let k = 1; k < a.length; k++) {
        const f = a[k]!;
        if (f === 'n') newline = false;
        else if (f === 'r') escapes = false;
        else if (f === 'e') escapes = true;
        else if (f === 'u') {
          const fd = a.slice(k + 1) || '1';
          const to = fd === '1' ? io.stdout : fd === '2' ? io.stderr : io.fds?.get(Number(fd));
          if (!/^[0-9]$/.test(fd) || !to || !('write' in to)) return refuse(`-u${fd}: bad file descriptor`);
          out = to;
          break;
        } else if ('psclA'.includes(f)) return refuse(`-${f}: not modeled by the virtual phone`);
        else return refuse(`-${f}: unknown option`);
      }
    }
  }
  let text = args.slice(i).join(' ');
  if (escapes) {
    const u = unescapeBackslashes(text);
    text = u.text;
    if (u.stop) newline = false;
  }
  out.write(newline ? `${text}\n` : text);
  return 0;
}

/**
 * mksh's echo (Android's, unlike toybox's /system/bin/echo): backslash sequences are read as
 * print reads them unless -E; leading arguments made only of -e, -E and -n are options
 * (`echo -nq` prints `-nq`); `\c` ends the output there.
 */
function echoBuiltin(args: string[], io: Io): number {
  io.stdout.write(echoText(args, true));
  return 0;
}

function ulimitBuiltin(args: string[], io: Io): number {
  const flags = args.filter((a) => a.startsWith('-')).flatMap((a) => [...a.slice(1)]);
  const values = args.filter((a) => !a.startsWith('-'));
  const which = flags.filter((f) => f !== 'H' && f !== 'S');
  const unknown = which.find((f) => f !== 'a' && !LIMITS.some(([flag]) => flag === f));
  if (unknown !== undefined) {
    io.stderr.write(`${SHELL_NAME}: ulimit: -${unknown}: unknown option\n`);
    return 1;
  }
  if (values.length > 0) {
    io.stderr.write(`${SHELL_NAME}: ulimit: setting limits is not modeled by the virtual phone\n`);
    return 1;
  }
  if (which.includes('a')) {
    for (const [, label, value] of LIMITS) io.stdout.write(`${label.padEnd(21)}${value}\n`);
    return 0;
  }
  const shown = which.length > 0 ? which : ['f'];
  for (const flag of shown) {
    const [, label, value] = LIMITS.find(([f]) => f === flag)!;
    io.stdout.write(shown.length > 1 ? `${label.padEnd(21)}${value}\n` : `${value}\n`);
  }
  return 0;
}
