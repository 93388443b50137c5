/**
 * Watching a test server's warm pool through GET /metrics (the server must run with
 * `metrics: true`), parsed with the strict Prometheus text parser.
 */
import { expect } from 'vitest';
import { parsePrometheusText, sampleValue, type Family } from './prometheus.js';
import type { TestServer } from './server.js';

export async function scrape(t: TestServer): Promise<Map<string, Family>> {
  const r = await t.api.as(null).get('/metrics');
  expect(r.status).toBe(200);
  expect(String(r.headers['content-type'])).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(r.raw.toString('utf8'));
}

/** Waits (by scraping) until the pool has `ready` warm phones and none booting. */
export async function poolSettled(t: TestServer, ready: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const m = await scrape(t);
    const warm = sampleValue(m, 'phonelease_pool_phones', { state: 'ready' });
    const booting = sampleValue(m, 'phonelease_pool_phones', { state: 'booting' });
    if (warm === ready && booting === 0) return;
    if (Date.now() > deadline)
      throw new Error(`pool did not settle at ${ready}: ready ${warm}, booting ${booting}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
