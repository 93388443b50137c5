/**
 * The Playwright fixture against a deployment on PostgreSQL: the real Playwright runner on
 * an inline project leases from an API node; the phone runs on a device host, the test's
 * shell goes through that host's ADB gateway, and a failing test's screen comes from the
 * host through the API node.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Deployment, type CreatedAccountLine } from '../support/deployment.js';
import { runInlineTest } from '../support/playwright-inline.js';
import { postgresMissing, startPostgres, type PostgresCluster } from '../support/postgres.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the deployment fixture test: ${missing}`);

describe.skipIf(missing !== null)('the Playwright fixture on a deployment', () => {
  let cluster: PostgresCluster;
  let d: Deployment;
  let account: CreatedAccountLine;

  beforeAll(async () => {
    cluster = await startPostgres();
    d = await Deployment.start(cluster, { nodes: 2, hosts: [['--phones', '4']] });
    account = await d.account();
  }, 120_000);
  afterAll(async () => {
    await d?.stop();
    await cluster?.stop();
  });

  it('runs a passing and a failing test on phones of a device host', async () => {
    const run = await runInlineTest(
      'deployment',
      {
        'playwright.config.ts': `
import { defineConfig } from '@playwright/test';
export default defineConfig({ timeout: 60_000, workers: 1, outputDir: './test-results' });
`,
        'a.spec.ts': `
        import { test, expect } from 'phonelease/playwright';
        test('passes', async ({ phone }) => {
          console.log('phone=' + phone.id);
          const { stdout } = await phone.shell('echo on-a-host');
          expect(stdout.trim()).toBe('on-a-host');
        });
        test('fails', async ({ phone }) => {
          console.log('phone=' + phone.id);
          expect('shown').toBe('not shown');
        });`,
      },
      { env: { PHONELEASE_BASE_URL: d.nodes[1]!.url, PHONELEASE_API_KEY: account.key } },
    );
    expect(run.exitCode).toBe(1);
    const byTitle = new Map(run.tests.map((t) => [t.title, t.results[0]!]));
    expect(byTitle.get('passes')?.status).toBe('passed');
    const failed = byTitle.get('fails')!;
    expect(failed.status).toBe('failed');
    const screen = failed.attachments.find((a) => a.name === 'phone-screen');
    expect(screen?.contentType).toBe('image/png');
    const bytes = screen!.body ? Buffer.from(screen!.body, 'base64') : readFileSync(screen!.path!);
    expect(bytes.subarray(1, 4).toString()).toBe('PNG');

    // Both phones were handed back: history on the other node shows them released.
    const ids = run.tests.flatMap((t) =>
      t.results.flatMap((r) =>
        r.stdout.flatMap((s) => [...(s.text ?? '').matchAll(/phone=(ses_\w+)/g)].map((m) => m[1]!)),
      ),
    );
    expect(ids).toHaveLength(2);
    const api = d.api(0, account.key);
    for (const id of ids) await api.waitGone(id);
    const history = (await api.get('/history')).body as Array<{ sid: string; end_reason: string }>;
    for (const id of ids) expect(history.find((h) => h.sid === id)?.end_reason).toBe('released');
  });
});
