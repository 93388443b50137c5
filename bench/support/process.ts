/**
 * Processes the benchmarks start: the built `phonelease` command line (`npm run build`
 * first), and programs that print one JSON line with their URL once they listen.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

/**
 * Starts `node ARGS` and resolves with the URL of the first stdout line
 * (`{"url": ...}`, as `phonelease server --json` prints it); rejects if it exits first.
 */
export function startJsonProcess(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ url: string; line: Record<string, string>; child: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) {
        const line = JSON.parse(out.split('\n')[0]!) as Record<string, string>;
        resolve({ url: line.url ?? '', line, child });
      }
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`${args.join(' ')} exited (${code ?? signal}) before listening`)),
    );
  });
}

/** Runs `phonelease ARGS` to completion and resolves with its stdout. */
export function runCli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`phonelease ${args[0]} exited ${code}`)),
    );
  });
}

/**
 * The processes one benchmark started (`phonelease` commands, or `node ARGS` with
 * startNode), killed together when it ends, whatever happened.
 */
export class BenchProcesses {
  readonly #children: ChildProcess[] = [];

  constructor(
    /** Environment of every process it starts (default: quiet logs). */
    private readonly env: NodeJS.ProcessEnv = { PHONELEASE_LOG_LEVEL: 'error' },
  ) {}

  /** `phonelease ARGS` (one that prints its JSON line once ready, e.g. with --json). */
  cli(args: string[], env: NodeJS.ProcessEnv = {}): ReturnType<typeof startJsonProcess> {
    return this.startNode([CLI, ...args], env);
  }

  /** `phonelease server` on SQLite under `data`, on a free port, with `args` on top. */
  sqliteServer(
    data: string,
    args: string[],
    env: NodeJS.ProcessEnv = {},
  ): ReturnType<typeof startJsonProcess> {
    return this.cli(['server', '--port', '0', '--json', '--data', data, ...args], env);
  }

  /** `node ARGS` that prints a JSON line with its URL once it listens. */
  async startNode(args: string[], env: NodeJS.ProcessEnv = {}): ReturnType<typeof startJsonProcess> {
    const started = await startJsonProcess(args, { ...this.env, ...env });
    this.#children.push(started.child);
    return started;
  }

  killAll(): void {
    for (const child of this.#children) child.kill('SIGKILL');
  }
}
