/**
 * Who uses the AVD directories in the backend's work dir, so that leftovers (a golden cut
 * short, a profile copy of a server that was killed, lock files of an emulator that is gone)
 * can be removed without touching what a running emulator, or a server still making it,
 * uses. An emulator runs an AVD named on its command line (`-avd NAME` or `@NAME`) from the
 * AVD home of its environment; both are read from /proc. Where /proc is not there (macOS),
 * nothing can be told safely and the callers leave everything in place.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { avdHomeOf } from './sdk.js';

/** The AVD a command line runs, or null. */
export function avdOfCommandLine(args: readonly string[]): string | null {
  const at = args.indexOf('-avd');
  if (at >= 0 && args[at + 1]) return args[at + 1]!;
  const short = args.slice(1).find((a) => a.startsWith('@') && a.length > 1);
  return short ? short.slice(1) : null;
}

function environOf(pid: string): Record<string, string> | null {
  try {
    const env: Record<string, string> = {};
    for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
      const eq = entry.indexOf('=');
      if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
    }
    return env;
  } catch {
    return null;
  }
}

/**
 * Names of the AVDs in `avdHome` that running processes run, or null when this machine
 * cannot tell. A process whose environment cannot be read (another user's) counts when its
 * AVD name matches: better to leave a folder than to pull it from under an emulator.
 */
export function avdsInUse(avdHome: string): Set<string> | null {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return null;
  }
  const home = resolve(avdHome);
  const names = new Set<string>();
  for (const pid of pids) {
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // ended while we looked
    }
    const name = avdOfCommandLine(args);
    if (!name) continue;
    const env = environOf(pid);
    if (env === null || resolve(avdHomeOf(env)) === home) names.add(name);
  }
  return names;
}

/** Whether a process with this id runs (one of another user counts as running). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
