/**
 * The processes on this machine whose command line mentions a text (Linux /proc), to check
 * that a run left nothing behind: a test names something unique to its run, such as its
 * inline directory.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessInfo {
  pid: number;
  args: string[];
}

export function processesMentioning(text: string): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue; // it exited while we looked
    }
    if (args.some((a) => a.includes(text))) found.push({ pid, args });
  }
  return found;
}

/** The embedded server processes started for a project in `dir`. */
export const embeddedServers = (dir: string) =>
  processesMentioning(dir).filter((p) => p.args.some((a) => a.endsWith('embedded-main.js')));
