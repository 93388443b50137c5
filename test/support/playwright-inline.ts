/**
 * Runs the real Playwright Test runner on a project written for the test (like Playwright's
 * own runInlineTest): files go to a fresh directory inside this package (so specs can
 * import `phonelease/playwright` by the package's own name), the runner is spawned with
 * the JSON reporter, and the parsed report comes back.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PW_CLI = join(ROOT, 'node_modules', '@playwright', 'test', 'cli.js');

export interface JsonAttachment {
  name: string;
  contentType: string;
  path?: string;
  body?: string;
}
export interface JsonResult {
  status: 'passed' | 'failed' | 'timedOut' | 'skipped' | 'interrupted';
  retry: number;
  workerIndex: number;
  /** When the test started (ISO), its fixtures' setup included. */
  startTime: string;
  /** How long it ran, in ms, as the runner reports it. */
  duration: number;
  annotations?: Array<{ type: string; description?: string }>;
  errors: Array<{ message?: string }>;
  attachments: JsonAttachment[];
  stdout: Array<{ text?: string }>;
  stderr: Array<{ text?: string }>;
  /** test.step steps (the JSON reporter leaves out other categories). */
  steps?: unknown[];
}
export interface JsonTest {
  title: string;
  results: JsonResult[];
  status: string;
}
export interface FlatTest extends JsonTest {
  file: string;
}

export interface InlineRun {
  dir: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  report: any;
  /** Every test of the report, flattened. */
  tests: FlatTest[];
}

export interface InlineOptions {
  env?: NodeJS.ProcessEnv;
  args?: string[];
  /** Called once the runner is spawned, e.g. to interrupt it. */
  onSpawn?(child: ChildProcess, dir: string): void;
  timeoutMs?: number;
}

let counter = 0;

export function inlineDir(name: string): string {
  // Inside the package (so specs resolve `phonelease/...`), outside any runner's output dir.
  const dir = join(
    ROOT,
    '.inline',
    `${name.replace(/\W+/g, '-')}-${process.pid}-${Date.now().toString(36)}-${counter++}`,
  );
  mkdirSync(dir, { recursive: true });
  return dir;
}

export const DEFAULT_CONFIG = `
import { defineConfig } from '@playwright/test';
export default defineConfig({ timeout: 60_000, reporter: 'json', workers: 1 });
`;

export async function runInlineTest(
  name: string,
  files: Record<string, string>,
  opts: InlineOptions = {},
): Promise<InlineRun> {
  const dir = inlineDir(name);
  const all = { 'playwright.config.ts': DEFAULT_CONFIG, ...files };
  for (const [file, content] of Object.entries(all)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), content);
  }
  const reportFile = join(dir, 'report.json');
  const child = spawn(
    process.execPath,
    [PW_CLI, 'test', '-c', dir, '--reporter=json', ...(opts.args ?? [])],
    {
      cwd: dir,
      // Its own process group, so a test can interrupt the runner and its workers at once, as Ctrl-C does.
      detached: true,
      env: {
        ...process.env,
        PLAYWRIGHT_JSON_OUTPUT_NAME: reportFile,
        FORCE_COLOR: '0',
        // Virtual phones unless a test asks otherwise: a machine with an SDK and KVM would
        // otherwise run these projects on emulators (device 'auto').
        PHONELEASE_DEVICE: 'virtual',
        PW_TEST_HTML_REPORT_OPEN: 'never',
        ...opts.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  opts.onSpawn?.(child, dir);
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 240_000);
  const [exitCode, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('close', (code, sig) => resolve([code, sig])),
  );
  clearTimeout(timer);
  const report = existsSync(reportFile) ? JSON.parse(readFileSync(reportFile, 'utf8')) : null;
  return { dir, exitCode, signal, stdout, stderr, report, tests: report ? flatten(report) : [] };
}

function flatten(report: any): FlatTest[] {
  const out: FlatTest[] = [];
  const walk = (suite: any) => {
    for (const spec of suite.specs ?? []) {
      for (const test of spec.tests ?? []) out.push({ ...test, title: spec.title, file: spec.file });
    }
    for (const child of suite.suites ?? []) walk(child);
  };
  for (const suite of report.suites ?? []) walk(suite);
  return out;
}
