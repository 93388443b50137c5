/**
 * The phone's Chromium never outlives the process that started it: stopped, its whole
 * process group ends; and when that process dies without stopping it (kill -9), the
 * browser goes too instead of running on, orphaned, on the test machine.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ChromiumProcess } from '../../server/devices/virtual/browser/chromium.js';
import { CHROMIUM } from '../support/chromium.js';

const dir = mkdtempSync(join(tmpdir(), 'phonelease-chromium-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const OPTIONS = {
  executable: CHROMIUM,
  cssWidth: 360,
  cssHeight: 640,
  scale: 2,
  userAgent: 'phonelease-test',
  // Nothing listens there: the page is about:blank and needs no network.
  proxyPort: 9,
  url: 'about:blank',
};

/** Whether any process is still in process group `pgid`. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Processes whose command line holds `text`. */
function processesWith(text: string): string[] {
  return execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(text));
}

describe.skipIf(!existsSync(CHROMIUM))(`Chromium of the virtual phone (needs ${CHROMIUM})`, () => {
  it('ends its whole process group, and its watchdog, when stopped', async () => {
    const browser = await ChromiumProcess.launch(OPTIONS);
    const pgid = browser.pid!;
    expect(groupAlive(pgid)).toBe(true);
    expect(processesWith(`kill -9 -${pgid}`)).toHaveLength(1);
    await browser.stop();
    await vi.waitFor(() => expect(groupAlive(pgid)).toBe(false), { timeout: 10_000 });
    expect(processesWith(`kill -9 -${pgid}`)).toEqual([]);
  });

  it('goes when the process that started it is killed with kill -9', async () => {
    const script = join(dir, 'launch.mts');
    const module = pathToFileURL(join(process.cwd(), 'server/devices/virtual/browser/chromium.ts')).href;
    writeFileSync(
      script,
      `import { ChromiumProcess } from ${JSON.stringify(module)};
const browser = await ChromiumProcess.launch(${JSON.stringify(OPTIONS)});
console.log(browser.pid);
setInterval(() => {}, 1000);
`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pgid = await new Promise<number>((resolve, reject) => {
      child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
      child.once('exit', (code) =>
        reject(new Error(`the launcher exited (${code}) before Chromium started`)),
      );
    });
    expect(groupAlive(pgid)).toBe(true);
    child.kill('SIGKILL');
    await vi.waitFor(() => expect(groupAlive(pgid)).toBe(false), { timeout: 10_000, interval: 100 });
  }, 60_000);
});
