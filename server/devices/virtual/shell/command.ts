/** What a shell command (an applet like `ls` or a service tool like `pm`) gets to work with. */
import type { Device } from '../device.js';
import { FsError, normalizePath } from '../fs.js';
import type { Credentials, FsView } from '../fs.js';
import type { Process } from '../processes.js';
import { openInput } from './io.js';
import type { Input, Output } from './io.js';

export interface Io {
  stdin: Input;
  stdout: Output;
  stderr: Output;
  /** The shell's descriptors 3 to 9 (`exec 3>file`, `4<file`, `cmd 3>&1`): the shell's own, not a command's. */
  fds?: ReadonlyMap<number, Input | Output>;
}

export interface RunShellOptions {
  cwd?: string;
  /** $1, $2 ... of the script. */
  args?: string[];
  /**
   * The source is one command to exec(2) in this process (nohup, env, run-as, timeout):
   * a simple command then replaces the caller instead of running as its child.
   */
  exec?: boolean;
  /** Runs as someone else (run-as: the app's uid). */
  cred?: Credentials;
  /** The environment, instead of the caller's (`env -i`, `env -u NAME`). */
  env?: ReadonlyMap<string, string>;
}

export interface CommandContext extends Io {
  /** argv[0] as invoked (basename, e.g. `ls`). */
  name: string;
  /** Arguments after the name. */
  args: string[];
  device: Device;
  env: ReadonlyMap<string, string>;
  cwd: string;
  /**
   * Aborted when the command's process is terminated by a signal (kill, a hang-up, a pipe
   * whose reader exited) or the phone shuts down. Long-running commands stop when it aborts;
   * to react to a signal instead (finish a file on SIGINT), register with process.handle().
   */
  signal: AbortSignal;
  /** The command's process: its pid, and the signals it handles. */
  process: Process;
  /** Who runs the command (uid 2000 `shell`, or an app's uid under run-as). */
  cred: Credentials;
  /** The filesystem as this command's user sees it: every access checked. */
  fs: FsView;
  /** Runs shell source in this process, as sh does (sh -c, xargs, run-as, nohup). */
  runShell(source: string, io: Io, options?: RunShellOptions): Promise<number>;
  /**
   * fork+exec: runs shell source in a child process of this command (timeout, xargs); a
   * simple command is exec'd in the child. newGroup puts it in a process group of its own.
   */
  spawn(source: string, io: Io, options?: RunShellOptions & { newGroup?: boolean }): ChildProcess;
}

export interface ChildProcess {
  process: Process;
  /** The child's exit status (128+N if a signal ended it). */
  done: Promise<number>;
}

/** A toybox usage error: `NAME: MESSAGE (see "NAME --help")`, status 1. */
export function usageError(ctx: Pick<CommandContext, 'name' | 'stderr'>, message: string): number {
  ctx.stderr.write(`${ctx.name}: ${message} (see "${ctx.name} --help")\n`);
  return 1;
}

export type CommandFn = (ctx: CommandContext) => number | Promise<number>;

export type CommandTable = ReadonlyMap<string, CommandFn>;

export function resolvePath(ctx: Pick<CommandContext, 'cwd'>, path: string): string {
  return normalizePath(path, ctx.cwd);
}

/**
 * What Android's ShellCommand prints when the command threw (`am`, `pm`, `cmd ...`): a blank
 * line, then the exception on stderr (its first line: the stack trace's frames are not
 * modeled), status 255.
 */
export function shellException(
  ctx: CommandContext,
  verb: string,
  exception: string,
  message: string,
): number {
  ctx.stderr.write(`\nException occurred while executing '${verb}':\n${exception}: ${message}\n`);
  return 255;
}

/** Integer.parseInt's idea of an int: an optional sign and decimal digits, in 32 bits; null otherwise. */
export function javaInt(value: string): number | null {
  if (!/^[+-]?\d+$/.test(value)) return null;
  const n = Number(value);
  return n >= -(2 ** 31) && n < 2 ** 31 ? n : null;
}

/** Writes `name: message` to stderr and returns the exit status. */
export function fail(ctx: CommandContext, message: string, status = 1): number {
  ctx.stderr.write(`${ctx.name}: ${message}\n`);
  return status;
}

/**
 * Minimal getopt for toybox-style applets: single-letter flags that may be grouped (`-la`),
 * options listed in `withValue` take the next argument (or the rest of the group).
 * `--` ends options; `-` alone is an operand.
 */
export function getopt(
  args: string[],
  withValue = '',
): {
  flags: Set<string>;
  /** Each option's last value. */
  values: Map<string, string>;
  /** Each option's values, in order (`grep -e a -e b`). */
  lists: Map<string, string[]>;
  operands: string[];
  unknown: string[];
  /** The first option that wanted a value and had none left. */
  missing: string | null;
} {
  const flags = new Set<string>();
  const values = new Map<string, string>();
  const lists = new Map<string, string[]>();
  const operands: string[] = [];
  const unknown: string[] = [];
  let missing: string | null = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith('--')) {
      unknown.push(a);
      continue;
    }
    if (a.startsWith('-') && a.length > 1) {
      for (let j = 1; j < a.length; j++) {
        const f = a[j]!;
        if (withValue.includes(f)) {
          const rest = a.slice(j + 1);
          const value = rest.length > 0 ? rest : args[++i];
          if (value === undefined) missing ??= f;
          values.set(f, value ?? '');
          lists.set(f, [...(lists.get(f) ?? []), value ?? '']);
          break;
        }
        flags.add(f);
      }
      continue;
    }
    operands.push(a);
  }
  return { flags, values, lists, operands, unknown, missing };
}

/**
 * A toybox applet's arguments through getopt, each value option keeping every value given
 * (`grep -e a -e b`), or the status after saying what is wrong as toybox says it: a missing
 * value, a long option (`longOptions`: the applet has long options the virtual phone does
 * not model; else toybox's `Unknown option`), a letter outside `modeled`. `status` is the
 * applet's ARGFAIL (grep's and sort's are 2).
 */
export function toyboxArgs(
  ctx: CommandContext,
  valued: string,
  modeled: string,
  options: { status?: number; longOptions?: boolean } = {},
): { flags: Set<string>; values: Map<string, string[]>; operands: string[] } | number {
  const status = options.status ?? 1;
  const { flags, lists, operands, unknown, missing } = getopt(ctx.args, valued);
  const usage = (message: string) => fail(ctx, `${message} (see "${ctx.name} --help")`, status);
  if (missing !== null) return usage(`Missing argument to -${missing}`);
  const other = [...flags].find((f) => !modeled.includes(f));
  if (other !== undefined) return fail(ctx, `-${other}: not modeled by the virtual phone`, status);
  if (unknown[0] !== undefined)
    return options.longOptions
      ? fail(ctx, `${unknown[0]}: not modeled by the virtual phone`, status)
      : usage(`Unknown option '${unknown[0].slice(2)}'`);
  return { flags, values: lists, operands };
}

/**
 * Opens an operand for reading, as toybox's loopfiles does: `-` is stdin, a file its bytes,
 * a device its stream. On failure writes `NAME: OPERAND: reason` and returns null.
 */
export function openOperand(ctx: CommandContext, operand: string): Input | null {
  if (operand === '-') return ctx.stdin;
  try {
    return openInput(ctx.fs, resolvePath(ctx, operand), ctx.stdin);
  } catch (error) {
    ctx.stderr.write(`${ctx.name}: ${operand}: ${error instanceof FsError ? error.reason : String(error)}\n`);
    return null;
  }
}

/** Quotes a word for the shell (`it's` becomes `'it'\''s'`), to run argv as source. */
export function quoteWord(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** argv as shell source that runs exactly that command. */
export function commandSource(argv: readonly string[]): string {
  return argv.map(quoteWord).join(' ');
}
