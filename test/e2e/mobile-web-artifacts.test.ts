/**
 * Playwright's own artifacts with phonePage: `use: { trace, video, screenshot }` in the
 * project's config cover the page in the phone's Chrome as they cover a desktop page. The
 * trace holds the page's actions and DOM snapshots, a failure attaches the page's screenshot
 * next to the phone's screen, and video never fails the test.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInlineTest, type JsonAttachment, type JsonResult } from '../support/playwright-inline.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  t = await startTestServer({ bootMs: 50, phones: 10, account: { sessionLimit: 20 } });
  env = { PHONELEASE_BASE_URL: t.url, PHONELEASE_API_KEY: t.account.key };
});
afterAll(() => t.close());

/** The trace events of every browser context in a trace.zip (`N-trace.trace`, not test.trace). */
function contextTraceEvents(zip: string): Array<{ type: string; method?: string }> {
  const names = execFileSync('unzip', ['-Z1', zip], { encoding: 'utf8' }).split('\n');
  return names
    .filter((name) => /^\d+-trace\.trace$/.test(name))
    .flatMap((name) =>
      execFileSync('unzip', ['-p', zip, name], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { type: string; method?: string }),
    );
}

function png(attachment: JsonAttachment): PNG {
  return PNG.sync.read(
    attachment.path ? readFileSync(attachment.path) : Buffer.from(attachment.body!, 'base64'),
  );
}

const named = (result: JsonResult, name: string) => result.attachments.filter((a) => a.name === name);

describe('phonePage and Playwright artifacts', () => {
  it('traces the page, screenshots it on failure next to the phone screen, and records video when it can', async () => {
    const run = await runInlineTest(
      'mobile-web-artifacts',
      {
        'playwright.config.ts': `
import { defineConfig } from '@playwright/test';
export default defineConfig({ timeout: 60_000, workers: 1, outputDir: './test-results',
  use: { trace: 'on', video: 'on', screenshot: 'only-on-failure' } });
`,
        'shop.spec.ts': `
import { test, expect } from 'phonelease/playwright';
const SHOP = '<meta name="viewport" content="width=device-width"><button onclick="this.textContent=\\'Thank you\\'">Buy</button>';
test('buys', async ({ phonePage }) => {
  await phonePage.setContent(SHOP);
  await phonePage.getByRole('button', { name: 'Buy' }).click();
  await expect(phonePage.getByRole('button')).toHaveText('Thank you');
});
test('fails to buy', async ({ phonePage }) => {
  await phonePage.setContent(SHOP);
  await expect(phonePage.getByText('Sold out')).toBeVisible({ timeout: 500 });
});`,
      },
      { env },
    );
    expect(run.tests.map((x) => [x.title, x.results[0]!.status])).toEqual([
      ['buys', 'passed'],
      ['fails to buy', 'failed'],
    ]);
    const [passed, failed] = run.tests.map((x) => x.results[0]!);

    // The trace has the phone page's context: its actions, with DOM snapshots to show them.
    for (const result of [passed!, failed!]) {
      const [trace] = named(result, 'trace');
      expect(trace?.path).toBeTruthy();
      const events = contextTraceEvents(trace!.path!);
      expect(events.filter((e) => e.type === 'frame-snapshot').length).toBeGreaterThan(0);
      expect(events.some((e) => e.type === 'before' && e.method === 'setContent')).toBe(true);
    }
    const passedEvents = contextTraceEvents(named(passed!, 'trace')[0]!.path!);
    expect(passedEvents.some((e) => e.type === 'before' && e.method === 'click')).toBe(true);

    // The failure: Playwright's screenshot of the phone page (phone-sized, 360 CSS px at 2x),
    // the phone's own screen, and no second copy of the page under phonelease's name.
    expect(named(passed!, 'screenshot')).toEqual([]);
    expect(named(failed!, 'screenshot').some((a) => png(a).width === 720)).toBe(true);
    expect(named(failed!, 'phone-screen')).toHaveLength(1);
    expect(named(failed!, 'phone-page')).toEqual([]);

    // Video: the page's recording when Playwright can encode it (its ffmpeg), else a note;
    // either way the tests' outcomes above are their own.
    const recorded = named(passed!, 'video');
    if (recorded.length === 0) expect(run.stderr + run.stdout).toContain('no video of the phone page');
    else expect(recorded[0]!.contentType).toBe('video/webm');
  });
});
