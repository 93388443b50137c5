/**
 * Runs the real WebdriverIO runner (with real Appium started by @wdio/appium-service) on
 * a project written for the test, inside this package so `phonelease/wdio` resolves.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inlineDir } from './playwright-inline.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WDIO_CLI = join(ROOT, 'node_modules', '@wdio', 'cli', 'bin', 'wdio.js');

export interface WdioRun {
  dir: string;
  exitCode: number | null;
  output: string;
}

/**
 * A wdio.conf.ts for an inline project. Appium gets an explicit free port: two runs in
 * parallel test files must not both take @wdio/appium-service's default (4723) after
 * each found it free.
 */
export function wdioConfig(opts: {
  service?: string;
  specs?: string;
  maxInstances?: number;
  appiumPort: number;
}): string {
  return `
import PhoneleaseService from 'phonelease/wdio';
export const config: WebdriverIO.Config = {
  runner: 'local',
  specs: ['${opts.specs ?? './specs/*.e2e.ts'}'],
  maxInstances: ${opts.maxInstances ?? 1},
  capabilities: [{ platformName: 'Android', 'appium:automationName': 'UiAutomator2' }],
  services: [[PhoneleaseService, ${opts.service ?? '{}'}], ['appium', { args: { address: '127.0.0.1', port: ${opts.appiumPort} }, logPath: './logs' }]],
  framework: 'mocha',
  mochaOpts: { ui: 'bdd', timeout: 120000 },
  reporters: ['spec'],
  outputDir: './out',
  logLevel: 'warn',
  connectionRetryCount: 0,
};
`;
}

export async function runWdio(
  name: string,
  files: Record<string, string>,
  opts: {
    env?: NodeJS.ProcessEnv;
    onSpawn?(child: ChildProcess, dir: string): void;
    timeoutMs?: number;
  } = {},
): Promise<WdioRun> {
  const dir = inlineDir(name);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), content);
  }
  const child = spawn(process.execPath, [WDIO_CLI, 'run', join(dir, 'wdio.conf.ts')], {
    cwd: dir,
    detached: true,
    // Virtual phones unless a test asks otherwise: a machine with an SDK and KVM would
    // otherwise run these specs on emulators (device 'auto').
    env: { ...process.env, FORCE_COLOR: '0', PHONELEASE_DEVICE: 'virtual', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  opts.onSpawn?.(child, dir);
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), opts.timeoutMs ?? 240_000);
  const exitCode = await new Promise<number | null>((resolve) =>
    child.once('close', (code) => resolve(code)),
  );
  clearTimeout(timer);
  return { dir, exitCode, output };
}
