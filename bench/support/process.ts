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
