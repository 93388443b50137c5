/** What a shell command (an applet like `ls` or a service tool like `pm`) gets to work with. */
import type { Device } from '../device.js';
import { normalizePath } from '../fs.js';
import type { Input, Output } from './io.js';

export interface Io {
  stdin: Input;
  stdout: Output;
  stderr: Output;
}

export interface CommandContext extends Io {
  /** argv[0] as invoked (basename, e.g. `ls`). */
  name: string;
  /** Arguments after the name. */
  args: string[];
  device: Device;
  env: ReadonlyMap<string, string>;
  cwd: string;
  /** Aborted when the caller went away (stream closed, pipe reader exited). */
  signal: AbortSignal;
  /** Runs shell source in a child shell (sh -c, xargs, run-as). */
  runShell(source: string, io: Io, options?: { cwd?: string; args?: string[] }): Promise<number>;
}

export type CommandFn = (ctx: CommandContext) => number | Promise<number>;

export type CommandTable = ReadonlyMap<string, CommandFn>;

export function resolvePath(ctx: Pick<CommandContext, 'cwd'>, path: string): string {
  return normalizePath(path, ctx.cwd);
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
): { flags: Set<string>; values: Map<string, string>; operands: string[]; unknown: string[] } {
  const flags = new Set<string>();
  const values = new Map<string, string>();
  const operands: string[] = [];
  const unknown: string[] = [];
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
          values.set(f, rest.length > 0 ? rest : (args[++i] ?? ''));
          break;
        }
        flags.add(f);
      }
      continue;
    }
    operands.push(a);
  }
  return { flags, values, operands, unknown };
}
