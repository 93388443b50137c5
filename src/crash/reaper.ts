/**
 * The lease process's end of the reaper (see reaper-main.ts): spawns it once, detached and
 * unref'd, so it neither keeps this process alive nor dies with it, and writes register /
 * unregister messages to its stdin. The pipe closing is the signal: nothing needs to run
 * in this process when it is killed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { pruneOlderThan } from './ledger.js';
import type { ReaperMessage } from './reaper-protocol.js';

export interface ReaperLinkOptions {
  /** Where the reaper writes its log (default $TMPDIR/phonelease/reaper/<pid>.log). */
  logDir?: string;
}

export class ReaperLink {
  #child: ChildProcess | null = null;
  #broken = false;
  readonly logPath: string;

  constructor(options: ReaperLinkOptions = {}) {
    this.logPath = join(options.logDir ?? join(tmpdir(), 'phonelease', 'reaper'), `${process.pid}.log`);
  }

  /** The reaper's pid once spawned (tests and diagnostics). */
  get pid(): number | null {
    return this.#child?.pid ?? null;
  }

  send(message: ReaperMessage): void {
    const child = this.#child ?? this.#spawn();
    if (!child?.stdin || this.#broken) return;
    child.stdin.write(JSON.stringify(message) + '\n');
  }

  #spawn(): ChildProcess | null {
    if (this.#broken) return null;
    try {
      mkdirSync(dirname(this.logPath), { recursive: true, mode: 0o700 });
      pruneOlderThan(dirname(this.logPath), LOG_MAX_AGE_MS, '.log');
      const { command, args } = reaperCommand();
      // The key travels over the pipe only: drop it from the reaper's environment. The log
      // path is no secret; the reaper creates the file only if it has something to say.
      const env: NodeJS.ProcessEnv = { ...process.env, PHONELEASE_REAPER_LOG: this.logPath };
      delete env.PHONELEASE_API_KEY;
      const child = spawn(command, args, {
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
        env,
        windowsHide: true,
      });
      child.on('error', () => {
        this.#broken = true;
      });
      child.stdin?.on('error', () => {
        // The reaper died early; leases still end normally and on signals.
        this.#broken = true;
      });
      // Neither the child nor the pipe may keep this process alive.
      child.unref();
      (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
      this.#child = child;
      return child;
    } catch {
      this.#broken = true;
      return null;
    }
  }
}

/** Reaper logs of runs long gone are pruned when a new reaper starts. */
const LOG_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

/**
 * How to start reaper-main next to this file: plain node for the built package; under a
 * TypeScript runner (tests, tsx) the .ts source with tsx's loader.
 */
function reaperCommand(): { command: string; args: string[] } {
  const here = fileURLToPath(import.meta.url);
  const ext = extname(here);
  const main = join(dirname(here), `reaper-main${ext}`);
  if (ext !== '.ts') return { command: process.execPath, args: [main] };
  const tsx = createRequire(import.meta.url).resolve('tsx');
  return { command: process.execPath, args: ['--import', pathToFileURL(tsx).href, main] };
}
