/**
 * History under an injected clock: 105 finished sessions one second apart, so that creation
 * order is unambiguous, the 100-record cap of GET /history and paging through all of them.
 * The contract that needs no clock is in history.test.ts, which also runs against a
 * deployment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { expectReleasedRecord } from '../support/history.js';

let t: TestServer;
const clock = new ManualClock();
const ids: string[] = [];

beforeAll(async () => {
  t = await startTestServer({ clock, bootMs: 0, phones: 200, account: { sessionLimit: 200 } });
  // 105 finished sessions, one per second, so creation order is unambiguous.
  for (let i = 0; i < 105; i++) {
    const s = (await t.api.post('/sessions')).body;
    ids.push(s.id);
    if (i % 3 === 0) await t.api.waitFor(s.id, ['ready']);
    await t.api.delete(`/sessions/${s.id}`);
    await clock.advance(1000);
  }
}, 120_000);
afterAll(() => t.close());

describe('GET /history', () => {
  it('lists at most 100 finished sessions, newest first, with every record field', async () => {
    const r = await t.api.get('/history');
    expect(r.status).toBe(200);
    expect(r.body.length).toBe(100);
    expect(r.body.map((h: { sid: string }) => h.sid)).toEqual(ids.slice(5).reverse());
    for (const h of r.body) expectReleasedRecord(h, t.account.uid);
    const created = r.body.map((h: { created: number }) => h.created);
    expect([...created].sort((a, b) => b - a)).toEqual(created);
    expect((await t.api.get('/sessions')).body).toEqual([]);
  });
});

describe('GET /history/page', () => {
  it('pages through every record exactly once', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r: { status: number; body: { items: Array<{ sid: string }>; next_cursor: string | null } } =
        await t.api.get(`/history/page?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(r.status).toBe(200);
      seen.push(...r.body.items.map((h) => h.sid));
      cursor = r.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(6);
    expect(seen).toEqual([...ids].reverse());
  });
});
