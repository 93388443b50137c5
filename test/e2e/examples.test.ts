/**
 * The example suites, run exactly as the README says a user runs them: the Playwright
 * example on the embedded server (no PHONELEASE_BASE_URL), and the WebdriverIO example with
 * real Appium. The README's main job must keep working.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { quietPort } from '../support/ports.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Runs a test runner as a user does, but with an adb server of its own (on a free port),
 * ended afterwards: the suites start one, which would otherwise outlive the test.
 */
async function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const adbPort = String(await quietPort());
  try {
    return await new Promise((resolve) => {
      const child = spawn(process.execPath, args, {
        cwd: ROOT,
        env: { ...process.env, FORCE_COLOR: '0', ANDROID_ADB_SERVER_PORT: adbPort, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      child.once('close', (code) => resolve({ code, output }));
    });
  } finally {
    await new Promise((resolve) => {
      const kill = spawn('adb', ['-P', adbPort, 'kill-server'], { stdio: 'ignore' });
      kill.once('close', resolve);
      kill.once('error', resolve);
    });
  }
}

describe('examples', () => {
  it('npx playwright test -c examples/playwright passes on the embedded server, with the phone in the report', async () => {
    const report = join(ROOT, 'examples', 'playwright', 'test-results', 'report.json');
    rmSync(report, { force: true });
    const { code, output } = await run(
      [
        join(ROOT, 'node_modules', '@playwright', 'test', 'cli.js'),
        'test',
        '-c',
        'examples/playwright',
        '--reporter=json',
      ],
      { PHONELEASE_BASE_URL: '', PHONELEASE_API_KEY: '', PLAYWRIGHT_JSON_OUTPUT_NAME: report, CI: '' },
    );
    expect(code, output.slice(-3000)).toBe(0);
    expect(existsSync(report)).toBe(true);
    const json = JSON.parse(readFileSync(report, 'utf8'));
    expect(json.stats).toMatchObject({ expected: 8, unexpected: 0, flaky: 0 });
    const specs: any[] = [];
    const walk = (s: any) => {
      specs.push(...(s.specs ?? []));
      (s.suites ?? []).forEach(walk);
    };
    json.suites.forEach(walk);
    const mobileWeb = specs.find((s) => s.title === 'checkout works on a phone');
    expect(mobileWeb?.tests[0].results[0].status).toBe('passed');
    const failing = specs.find((s) => s.title === 'a failing login shows the phone in the report');
    const result = failing.tests[0].results[0];
    expect(result.status).toBe('failed');
    expect(result.attachments.map((a: { name: string }) => a.name)).toEqual(
      expect.arrayContaining(['phone-screen', 'phone-logcat', 'phone-ui.xml']),
    );
  }, 180_000);

  it('npx wdio run examples/wdio/wdio.conf.ts passes with real Appium', async () => {
    const { code, output } = await run(
      [join(ROOT, 'node_modules', '@wdio', 'cli', 'bin', 'wdio.js'), 'run', 'examples/wdio/wdio.conf.ts'],
      { PHONELEASE_BASE_URL: '', PHONELEASE_API_KEY: '' },
    );
    expect(code, output.slice(-3000)).toBe(0);
    expect(output).toMatch(/Spec Files:\s+2 passed, 2 total/);
  }, 240_000);
});
