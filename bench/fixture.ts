/**
 * Per-test overhead of the Playwright `phone` fixture beyond the phone's boot time.
 *
 * Runs the same 40-test suite twice under the real Playwright runner (one worker, so tests
 * run back to back): once with the `phone` fixture against a real server whose virtual
 * phones boot in BOOT_MS, and once without it (the baseline). Overhead per test =
 * (phone suite - baseline suite) / 40 - BOOT_MS: lease, readiness, teardown and cleanup
 * confirmation, everything the fixture adds except the boot itself.
 *
 * Run: npm run build && npx tsx bench/fixture.ts [--boot-ms 300] [--tests 40]
 */
import { parseArgs } from 'node:util';
import { startServer } from '../server/main.js';
import { runInlineTest } from '../test/support/playwright-inline.js';

const { values } = parseArgs({
  options: { 'boot-ms': { type: 'string', default: '300' }, tests: { type: 'string', default: '40' } },
});
const bootMs = Number(values['boot-ms']);
const count = Number(values.tests);

const config = `
import { defineConfig } from '@playwright/test';
export default defineConfig({ workers: 1, timeout: 60_000, outputDir: './test-results' });
`;
const suite = (withPhone: boolean) => `
import { test, expect } from ${withPhone ? "'phonelease/playwright'" : "'@playwright/test'"};
for (let i = 0; i < ${count}; i++) {
  test('t' + i, async (${withPhone ? '{ phone }' : '{}'}) => {
    expect(${withPhone ? 'phone.id' : "'x'"}).toBeTruthy();
  });
}
`;

/** Sum of the tests' durations as the runner measured them (fixtures included). */
function testTime(report: any): number {
  let total = 0;
  const walk = (s: any) => {
    for (const spec of s.specs ?? [])
      for (const t of spec.tests) for (const r of t.results) total += r.duration;
    for (const c of s.suites ?? []) walk(c);
  };
  for (const s of report.suites) walk(s);
  return total;
}

const server = await startServer({ bootMs, phones: 50, log: 'warn' });
try {
  const { key } = server.createAccount({ billingMode: 'disabled' });
  const env = { PHONELEASE_BASE_URL: server.url, PHONELEASE_API_KEY: key };
  const base = await runInlineTest(
    'bench-baseline',
    { 'playwright.config.ts': config, 'a.spec.ts': suite(false) },
    { env },
  );
  const phone = await runInlineTest(
    'bench-phone',
    { 'playwright.config.ts': config, 'a.spec.ts': suite(true) },
    { env },
  );
  if (base.exitCode !== 0 || phone.exitCode !== 0)
    throw new Error(`a suite failed:\n${phone.stdout}\n${phone.stderr}`);
  const baseMs = testTime(base.report);
  const phoneMs = testTime(phone.report);
  const perTest = (phoneMs - baseMs) / count;
  const overhead = perTest - bootMs;
  console.log(
    `phonelease Playwright fixture benchmark: ${count} tests, 1 worker, virtual phones booting in ${bootMs} ms`,
  );
  console.log(
    `baseline suite (no phone):     ${baseMs.toFixed(0)} ms of test time (${(baseMs / count).toFixed(1)} ms per test)`,
  );
  console.log(
    `suite with a phone per test:   ${phoneMs.toFixed(0)} ms of test time (${(phoneMs / count).toFixed(1)} ms per test)`,
  );
  console.log(
    `phone per test:                ${perTest.toFixed(1)} ms = boot ${bootMs} ms + fixture overhead ${overhead.toFixed(1)} ms`,
  );
  console.log(`overhead / boot time:          ${(overhead / bootMs).toFixed(2)}`);
} finally {
  await server.close();
}
