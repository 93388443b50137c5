/**
 * Runs the built `phonelease` command (dist/, built by `npm test` before vitest) as a
 * child process, the way users and other programs run it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

function requireBuild(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (npm test does).`);
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, input?: string): Promise<CliResult> {
  requireBuild();
  return runNode([CLI, ...args], { env: { ...process.env, ...env } }, input);
}

/** Runs `node ...args` to its end and collects its output; `input` is written to its stdin. */
export function runNode(
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string },
  input = '',
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

export interface CliProcess<T> {
  child: ChildProcess;
  /** The JSON line it printed once ready. */
  line: T;
  stdout: () => string;
  stderr: () => string;
  /** Sends a signal and waits for the process to exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface ServerProcess extends CliProcess<{ url: string }> {
  url: string;
}

/** Starts `phonelease server --json --port 0 ...` and waits for its URL line. */
export async function startServerProcess(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<ServerProcess> {
  const p = await startJsonProcess<{ url: string }>(['server', '--port', '0', '--json', ...args], env);
  return { ...p, url: p.line.url };
}

/** Starts a `phonelease` command that prints one JSON line once ready (--json) and waits for it. */
export function startJsonProcess<T>(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliProcess<T>> {
  requireBuild();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, PHONELEASE_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        try {
          const line = JSON.parse(out.slice(0, nl)) as T;
          resolve({
            child,
            line,
            stdout: () => out,
            stderr: () => err,
            stop: async (signal = 'SIGTERM') => {
              if (child.exitCode === null && child.signalCode === null) child.kill(signal);
              return exited;
            },
          });
        } catch (e) {
          reject(
            new Error(`${args[0]} printed something other than its JSON line: ${out}\n${err}`, { cause: e }),
          );
        }
      }
    });
    child.once('exit', (code) =>
      reject(new Error(`${args[0]} exited (${code}) before it was ready:\n${err}`)),
    );
  });
}
