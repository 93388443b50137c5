/**
 * The Playwright fixtures under the real Playwright runner: inline projects are written to
 * disk, the runner is spawned with the JSON reporter, and the outcome is checked both in
 * the report and on the real server the run leased from.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInlineTest, type FlatTest } from '../support/playwright-inline.js';
import { embeddedServers, type ProcessInfo } from '../support/processes.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  t = await startTestServer({ bootMs: 50, phones: 100, account: { sessionLimit: 200 } });
  env = { PHONELEASE_BASE_URL: t.url, PHONELEASE_API_KEY: t.account.key };
});
afterAll(() => t.close());

const config = (extra = '') => `
import { defineConfig } from '@playwright/test';
export default defineConfig({ timeout: 60_000, workers: 1, outputDir: './test-results', ${extra} });
`;

/** Phone ids the specs printed (each spec logs "phone=<id>"). */
function phoneIds(tests: FlatTest[]): string[] {
  return tests.flatMap((x) =>
    x.results.flatMap((r) =>
      r.stdout.flatMap((s) => [...(s.text ?? '').matchAll(/phone=(ses_\w+)/g)].map((m) => m[1]!)),
    ),
  );
}

async function expectNoLiveSessions(timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let live: Array<{ id: string; state: string }> = [];
  while (Date.now() < deadline) {
    live = (await t.api.get('/sessions')).body;
    if (live.length === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`sessions still live after ${timeoutMs} ms: ${JSON.stringify(live)}`);
}

async function history(): Promise<Map<string, { end_reason: string }>> {
  const rows = (await t.api.get('/history')).body as Array<{ sid: string; end_reason: string }>;
  return new Map(rows.map((r) => [r.sid, r]));
}

describe('phone fixture', () => {
  it('gives a passing test a ready phone and hands it back, attaching nothing', async () => {
    const run = await runInlineTest(
      'pass',
      {
        'playwright.config.ts': config(),
        'a.spec.ts': `
        import { test, expect } from 'phonelease/playwright';
        test('passes', async ({ phone }) => {
          console.log('phone=' + phone.id);
          expect(phone.session.state).toBe('ready');
          const { stdout, exitCode } = await phone.shell('echo hello');
          expect(exitCode).toBe(0);
          expect(stdout.trim()).toBe('hello');
        });`,
      },
      { env },
    );
    expect(run.exitCode, run.stdout + run.stderr).toBe(0);
    const [test] = run.tests;
    expect(test!.results[0]!.status).toBe('passed');
    expect(test!.results[0]!.attachments.filter((a) => a.name.startsWith('phone-'))).toEqual([]);
    const [id] = phoneIds(run.tests);
    expect((await history()).get(id!)?.end_reason).toBe('released');
    // Progress is visible in the test's output.
    expect(test!.results[0]!.stderr.map((s) => s.text).join('')).toMatch(/ready in \d/);
    await expectNoLiveSessions();
  });

  it('attaches the phone screen (a real PNG), the UI tree and the whole log when a test fails', async () => {
    const run = await runInlineTest(
      'fail',
      {
        'playwright.config.ts': config(),
        'a.spec.ts': `
        import { test, expect } from 'phonelease/playwright';
        test('fails', async ({ phone }) => {
          console.log('phone=' + phone.id);
          await phone.shell('am start -n com.phonelease.login/.LoginActivity');
          expect('shown').toBe('not shown');
        });`,
      },
      { env },
    );
    expect(run.exitCode).toBe(1);
    const result = run.tests[0]!.results[0]!;
    expect(result.status).toBe('failed');
    const screen = result.attachments.find((a) => a.name === 'phone-screen');
    expect(screen?.contentType).toBe('image/png');
    // The JSON reporter inlines attachments given as bytes (base64) and links those given as files.
    const bytes = screen!.body ? Buffer.from(screen!.body, 'base64') : readFileSync(screen!.path!);
    expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const png = PNG.sync.read(bytes);
    expect([png.width, png.height]).toEqual([720, 1280]);
    const logcat = result.attachments.find((a) => a.name === 'phone-logcat');
    expect(logcat?.contentType).toBe('text/plain');
    const logText = logcat!.body
      ? Buffer.from(logcat!.body, 'base64').toString()
      : readFileSync(logcat!.path!, 'utf8');
    expect(logText).toContain('com.phonelease.login');
    const tree = result.attachments.find((a) => a.name === 'phone-ui.xml');
    expect(tree?.contentType).toBe('application/xml');
    const xml = tree!.body ? Buffer.from(tree!.body, 'base64').toString() : readFileSync(tree!.path!, 'utf8');
    expect(xml).toMatch(/<hierarchy[\s\S]*package="com\.phonelease\.login"/);
    await expectNoLiveSessions();
  });

  it('hands the phone back without the evidence a stalled UI server cannot give, and says what was skipped', async () => {
    const run = await runInlineTest(
      'stalled-evidence',
      {
        'playwright.config.ts': config(),
        'a.spec.ts': `
        import { test, expect } from 'phonelease/playwright';
        // The fixtures' own module (the package exports no way to the UI engine).
        import { uiEngineOf } from '../../dist/src/lease/lease.js';
        test('fails', async ({ phone }) => {
          console.log('phone=' + phone.id);
          // What a phone whose UI server stalled does: the tree never comes.
          uiEngineOf(phone).treeXml = () => new Promise(() => {});
          expect('shown').toBe('not shown');
        });`,
      },
      // Without the budget, teardown waits for the fixture's own 240 s timeout.
      { env },
    );
    expect(run.exitCode).toBe(1);
    const result = run.tests[0]!.results[0]!;
    expect(result.status).toBe('failed');
    expect(result.attachments.map((a) => a.name)).toContain('phone-screen');
    expect(result.attachments.map((a) => a.name)).not.toContain('phone-ui.xml');
    expect(run.stderr).toMatch(/skipped phone evidence phone-ui\.xml: not read within 5 s/);
    const [id] = phoneIds(run.tests);
    expect((await history()).get(id!)?.end_reason).toBe('released');
    await expectNoLiveSessions();
  }, 90_000);

  it('ends the phone when the test times out', async () => {
    const run = await runInlineTest(
      'timeout',
      {
        'playwright.config.ts': config(),
        'a.spec.ts': `
        import { test } from 'phonelease/playwright';
        test('hangs', async ({ phone }) => {
          test.setTimeout(3000);
          console.log('phone=' + phone.id);
          await new Promise((r) => setTimeout(r, 30_000));
        });`,
      },
      { env },
    );
    const result = run.tests[0]!.results[0]!;
    expect(result.status).toBe('timedOut');
    expect(result.attachments.some((a) => a.name === 'phone-screen')).toBe(true);
    const [id] = phoneIds(run.tests);
    expect((await history()).get(id!)?.end_reason).toBe('released');
    await expectNoLiveSessions();
  });

  it('ends the phone when a fixture built on it throws', async () => {
    const run = await runInlineTest(
      'fixture-error',
      {
        'playwright.config.ts': config(),
        'a.spec.ts': `
        import { test as base } from 'phonelease/playwright';
        const test = base.extend<{ loggedIn: void }>({
          loggedIn: async ({ phone }, use) => {
            console.log('phone=' + phone.id);
            throw new Error('login fixture broke');
          },
        });
        test('uses the broken fixture', async ({ loggedIn }) => {});`,
      },
      { env },
    );
    const result = run.tests[0]!.results[0]!;
    expect(result.status).toBe('failed');
    expect(result.errors.map((e) => e.message).join('\n')).toContain('login fixture broke');
    const [id] = phoneIds(run.tests);
    expect((await history()).get(id!)?.end_reason).toBe('released');
    await expectNoLiveSessions();
  });

  it('ends the phone when the worker crashes (process.exit inside a test)', async () => {
    const run = await runInlineTest(
      'worker-crash',
      {
        'playwright.config.ts': config(),
        'a.spec.ts': `
        import { test } from 'phonelease/playwright';
        test('crashes', async ({ phone }) => {
          console.log('phone=' + phone.id);
          process.exit(3);
        });`,
      },
      { env },
    );
    expect(run.exitCode).toBe(1);
    expect(run.tests[0]!.results[0]!.status).toBe('failed');
    await expectNoLiveSessions(15_000);
  });

  it('ends, in the global teardown, the phone of a worker SIGKILLed mid-test, and names it', async () => {
    const run = await runInlineTest(
      'worker-sigkill',
      {
        // What a user writes is globalTeardown: 'phonelease/playwright/teardown'; Playwright
        // resolves that from node_modules, and this inline project reaches the package by
        // self-reference, which only import resolution follows.
        'playwright.config.ts':
          "import { fileURLToPath } from 'node:url';\n" +
          config(`globalTeardown: fileURLToPath(import.meta.resolve('phonelease/playwright/teardown'))`),
        'a.spec.ts': `
        import { writeFileSync } from 'node:fs';
        import { join } from 'node:path';
        import { test } from 'phonelease/playwright';
        test('is killed holding its phone', async ({ phone }) => {
          writeFileSync(join(test.info().project.testDir, 'ready'), phone.id);
          process.kill(process.pid, 'SIGKILL');
        });`,
      },
      // No reaper: the run's teardown is what ends the phone.
      { env: { ...env, PHONELEASE_REAPER: '0' } },
    );
    expect(existsSync(join(run.dir, 'ready')), run.stdout + run.stderr).toBe(true);
    const id = readFileSync(join(run.dir, 'ready'), 'utf8');
    expect(run.exitCode).toBe(1);
    expect(run.tests[0]!.results[0]!.status).toBe('failed');
    expect(run.stderr).toContain(`[phonelease] ended 1 phone(s) left by workers that did not finish (${id})`);
    expect((await history()).get(id)?.end_reason).toBe('released');
    await expectNoLiveSessions();
  });

  it('ends the phones when the runner gets SIGINT (Ctrl-C)', async () => {
    const run = await runInlineTest(
      'sigint',
      {
        'playwright.config.ts': config(`workers: 2, fullyParallel: true`),
        'a.spec.ts': `
        import { test } from 'phonelease/playwright';
        import { writeFileSync } from 'node:fs';
        for (const n of [1, 2]) {
          test('waits ' + n, async ({ phone }) => {
            writeFileSync('ready-' + n, phone.id);
            await new Promise((r) => setTimeout(r, 60_000));
          });
        }`,
      },
      {
        env,
        onSpawn(child, dir) {
          const poll = setInterval(() => {
            if (existsSync(join(dir, 'ready-1')) && existsSync(join(dir, 'ready-2'))) {
              clearInterval(poll);
              // Ctrl-C signals the whole foreground process group: the runner and its workers.
              process.kill(-child.pid!, 'SIGINT');
            }
          }, 100);
          child.once('close', () => clearInterval(poll));
        },
      },
    );
    expect(run.exitCode).not.toBe(0);
    const ids = ['1', '2'].map((n) => readFileSync(join(run.dir, `ready-${n}`), 'utf8'));
    await expectNoLiveSessions(15_000);
    const h = await history();
    for (const id of ids) expect(h.has(id), id).toBe(true);
  });

  it('gives 4 workers x 20 tests distinct phones and leaks none', async () => {
    const specs: Record<string, string> = {
      'playwright.config.ts': config(`workers: 4, fullyParallel: true`),
    };
    for (let f = 0; f < 4; f++) {
      specs[`s${f}.spec.ts`] = `
        import { test, expect } from 'phonelease/playwright';
        for (let i = 0; i < 5; i++) {
          test('phone ' + i, async ({ phone }) => {
            console.log('phone=' + phone.id);
            expect((await phone.shell('echo ok')).stdout.trim()).toBe('ok');
          });
        }`;
    }
    const run = await runInlineTest('many', specs, { env, args: ['--repeat-each', '4'] });
    expect(run.exitCode, run.stderr.slice(-2000)).toBe(0);
    const ids = phoneIds(run.tests);
    expect(ids).toHaveLength(80);
    expect(new Set(ids).size).toBe(80);
    const workers = new Set(run.tests.flatMap((x) => x.results.map((r) => r.workerIndex)));
    expect(workers.size).toBeGreaterThanOrEqual(4);
    const h = await history();
    for (const id of ids) expect(h.get(id)?.end_reason, id).toBe('released');
    await expectNoLiveSessions();
  }, 240_000);

  it('gives a retried test a fresh phone', async () => {
    const run = await runInlineTest(
      'retries',
      {
        'playwright.config.ts': config(`retries: 2`),
        'a.spec.ts': `
        import { test, expect } from 'phonelease/playwright';
        test('flaky', async ({ phone }) => {
          console.log('phone=' + phone.id);
          expect(test.info().retry).toBe(2);
        });`,
      },
      { env },
    );
    expect(run.exitCode).toBe(0);
    expect(run.tests[0]!.status).toBe('flaky');
    const ids = phoneIds(run.tests);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
    await expectNoLiveSessions();
  });
});

describe('embedded default', () => {
  it('with no PHONELEASE_BASE_URL, one embedded server serves every worker and stops with the run', async () => {
    // The embedded processes seen while the run goes (there must be exactly one).
    const seen = new Map<number, ProcessInfo>();
    const run = await runInlineTest(
      'embedded',
      {
        'playwright.config.ts': config(`workers: 2, fullyParallel: true`),
        'a.spec.ts': `
        import { test, expect } from 'phonelease/playwright';
        for (const n of [1, 2, 3, 4]) {
          test('phone ' + n, async ({ phone, phoneleaseService }) => {
            console.log('phone=' + phone.id + ' server=' + phoneleaseService.baseUrl + ' embedded=' + phoneleaseService.embedded);
            // Code in the test reaches the same server through the environment.
            console.log('env=' + process.env.PHONELEASE_BASE_URL);
            expect((await phone.shell('getprop ro.product.model')).exitCode).toBe(0);
          });
        }`,
      },
      {
        env: { PHONELEASE_BASE_URL: '', PHONELEASE_API_KEY: '' },
        onSpawn(child, dir) {
          const poll = setInterval(() => {
            for (const p of embeddedServers(dir)) seen.set(p.pid, p);
          }, 100);
          child.once('close', () => clearInterval(poll));
        },
      },
    );
    expect(run.exitCode, run.stderr.slice(-2000)).toBe(0);
    const out = run.tests
      .flatMap((x) => x.results.flatMap((r) => r.stdout.map((s) => s.text ?? '')))
      .join('');
    const servers = new Set([...out.matchAll(/server=(\S+)/g)].map((m) => m[1]));
    expect(servers.size).toBe(1);
    expect(out).toContain('embedded=true');
    expect(new Set([...out.matchAll(/env=(\S+)/g)].map((m) => m[1]))).toEqual(servers);
    expect(new Set(run.tests.flatMap((x) => x.results.map((r) => r.workerIndex))).size).toBe(2);
    // One process for the whole run, its warm pool sized to the run's 2 workers.
    expect([...seen.values()]).toHaveLength(1);
    const [server] = [...seen.values()];
    expect(server!.args.join(' ')).toContain('--workers 2');
    // Its data lives under the test output directory, and it stopped when the run ended.
    const log = join(run.dir, 'test-results', '.phonelease-server', 'server.log');
    await expect
      .poll(() => (existsSync(log) ? readFileSync(log, 'utf8') : ''), { timeout: 10_000 })
      .toContain('embedded server stopping');
    expect(readFileSync(log, 'utf8')).toMatch(/phonelease server listening .* phones=16 pool=2/);
    const [url] = [...servers];
    await expect
      .poll(
        async () =>
          fetch(url!).then(
            () => 'up',
            () => 'down',
          ),
        { timeout: 10_000 },
      )
      .toBe('down');
    await expect.poll(() => embeddedServers(run.dir), { timeout: 10_000 }).toEqual([]);
  });
});
