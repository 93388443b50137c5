/**
 * History and its pages over finished sessions (created within the same seconds, so the
 * order is the contract's tie-break: newest first, then by id). The 100-record cap under an
 * injected clock is in history-in-process.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTargets, type Target } from '../support/target.js';
import { expectReleasedRecord } from '../support/history.js';

interface HistoryRecord {
  sid: string;
  uid: string;
  created: number;
  ended: number;
}

const targets = useTargets();
let t: Target;
const ids: string[] = [];

beforeAll(async () => {
  t = await targets.start({ bootMs: 0 });
  for (let i = 0; i < 7; i++) {
    const s = (await t.api.post('/sessions')).body;
    ids.push(s.id);
    if (i % 3 === 0) await t.api.waitFor(s.id, ['ready']);
    await t.api.delete(`/sessions/${s.id}`);
  }
  for (const id of ids) await t.api.waitGone(id);
});
afterAll(() => t.close());

/** Newest first; among sessions created in the same second, the greater id first. */
const contractOrder = (records: HistoryRecord[]): string[] =>
  [...records]
    .sort((a, b) => b.created - a.created || (a.sid < b.sid ? 1 : a.sid > b.sid ? -1 : 0))
    .map((h) => h.sid);

describe('GET /history', () => {
  it('lists the finished sessions newest first, with every record field', async () => {
    const r = await t.api.get<HistoryRecord[]>('/history');
    expect(r.status).toBe(200);
    expect(r.body.map((h) => h.sid).sort()).toEqual([...ids].sort());
    expect(r.body.map((h) => h.sid)).toEqual(contractOrder(r.body));
    for (const h of r.body) expectReleasedRecord(h, t.account.uid);
    expect((await t.api.get('/sessions')).body).toEqual([]);
  });

  it('is per account', async () => {
    const other = await t.other();
    expect((await other.api.get('/history')).body).toEqual([]);
  });
});

describe('GET /history/page', () => {
  it('pages through every record exactly once, in the order of GET /history', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r: { status: number; body: { items: Array<{ sid: string }>; next_cursor: string | null } } =
        await t.api.get(`/history/page?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.items.length).toBeLessThanOrEqual(3);
      seen.push(...r.body.items.map((h) => h.sid));
      cursor = r.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual((await t.api.get<HistoryRecord[]>('/history')).body.map((h) => h.sid));
  });

  it('ignores query parameters it does not know (a cache-buster breaks no paging)', async () => {
    const plain = await t.api.get('/history/page?limit=2');
    const busted = await t.api.get('/history/page?limit=2&_=1700000000&utm_source=ci');
    expect(busted.status).toBe(200);
    expect(busted.body).toEqual(plain.body);
  });

  it('refuses bad limits and cursors', async () => {
    expect((await t.api.get('/history/page?limit=0')).status).toBe(400);
    expect((await t.api.get('/history/page?limit=abc')).status).toBe(400);
    expect((await t.api.get('/history/page?cursor=%%%')).status).toBe(400);
    expect((await t.api.get('/history/page?cursor=bm90LWpzb24')).body.code).toBe('invalid_request');
  });
});
