/**
 * Before a test run: removes the inline project directories (`.inline/NAME-PID-...`) left
 * by earlier runs whose process is gone. A run keeps its own until the next run, so a
 * failure can still be looked at; concurrent runs (tests and a benchmark) keep theirs.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const INLINE = fileURLToPath(new URL('../../.inline', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export default function setup(): void {
  let entries: string[];
  try {
    entries = readdirSync(INLINE);
  } catch {
    return;
  }
  for (const entry of entries) {
    // inlineDir() names: `${name}-${pid}-${time}-${counter}`.
    const pid = Number(entry.split('-').at(-3));
    if (Number.isInteger(pid) && pid > 0 && alive(pid)) continue;
    rmSync(join(INLINE, entry), { recursive: true, force: true });
  }
}
