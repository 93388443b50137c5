/**
 * The Playwright fixture through a faulty proxy: what a CI job behind nginx, a CDN or a
 * corporate proxy sees. Eight tests lease through 15% random faults of every kind (HTML
 * 429s with and without Retry-After, 502/504 pages after the server answered, lost
 * answers, delays); every test passes, every phone is handed back, none is duplicated.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../support/fault-proxy.js';
import { runInlineTest } from '../support/playwright-inline.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let proxy: FaultProxy;

beforeAll(async () => {
  t = await startTestServer({ bootMs: 50, phones: 20, account: { sessionLimit: 20 } });
  proxy = await FaultProxy.start(t.url, { seed: 8 });
});
afterAll(async () => {
  await proxy.close();
  await t.close();
});

const TESTS = 8;

describe('phone fixture through a faulty proxy', () => {
  it(`passes ${TESTS} of ${TESTS} tests through 15% random faults and leaves nothing live`, async () => {
    proxy.random(0.15);
    const run = await runInlineTest(
      'through-proxy',
      {
        'playwright.config.ts': `
        import { defineConfig } from '@playwright/test';
        export default defineConfig({ timeout: 90_000, workers: 2, fullyParallel: true, outputDir: './test-results' });
        `,
        'a.spec.ts': `
        import { test, expect } from 'phonelease/playwright';
        for (let n = 1; n <= ${TESTS}; n++) {
          test('phone ' + n, async ({ phone }) => {
            console.log('phone=' + phone.id);
            expect(phone.session.state).toBe('ready');
            await phone.refresh();
            const { stdout } = await phone.shell('echo ' + n);
            expect(stdout.trim()).toBe(String(n));
          });
        }`,
      },
      { env: { PHONELEASE_BASE_URL: proxy.url, PHONELEASE_API_KEY: t.account.key } },
    );
    proxy.clear();
    const context = `seed ${proxy.seed}\n${run.stdout}\n${run.stderr}`;
    expect(
      run.tests.map((x) => x.results.at(-1)?.status),
      context,
    ).toEqual(Array(TESTS).fill('passed'));
    // No retry needed: every test passed on its first run.
    expect(run.tests.every((x) => x.results.length === 1)).toBe(true);
    expect(run.exitCode, context).toBe(0);
    // The faults really happened.
    expect(proxy.log.filter((e) => e.fault !== null).length).toBeGreaterThan(0);

    // Nothing live afterwards, and every session maps to exactly one key the fixture used.
    expect((await t.api.get('/sessions')).body).toEqual([]);
    const keys = new Set(
      proxy.log.flatMap((e) =>
        e.method === 'POST' && e.path === '/sessions' && e.idempotencyKey ? [e.idempotencyKey] : [],
      ),
    );
    const sids: string[] = [];
    for (const key of keys) {
      const r = await t.api.get(`/sessions/requests/${key}`);
      if (r.status === 200) sids.push((r.body as { id: string }).id);
    }
    const history = (await t.api.get('/history')).body as Array<{ sid: string; end_reason: string }>;
    expect(history).toHaveLength(TESTS);
    expect(new Set(sids)).toEqual(new Set(history.map((h) => h.sid)));
    expect(sids).toHaveLength(TESTS);
    expect(history.map((h) => h.end_reason)).toEqual(Array(TESTS).fill('released'));
    // No page reached the test output.
    expect(run.stdout + run.stderr).not.toMatch(/<\s*[a-z!/]|DOCTYPE/i);
  }, 300_000);
});
