/**
 * Billing across kill -9: whenever the process dies, history, debits and balances agree
 * after the restart (server/store/audit.ts says what "agree" means).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { auditBooks } from '../../server/stores/sqlite/audit.js';
import { historyView } from '../../server/api/views.js';
import { RuntimeWorld, settle } from '../support/runtime-world.js';

const worlds: RuntimeWorld[] = [];
afterEach(async () => {
  await Promise.all(worlds.splice(0).map((w) => w.close()));
});

async function meteredSession(balanceCents = 1000, price = 7) {
  const w = new RuntimeWorld();
  worlds.push(w);
  const account = w.createAccount({ billingMode: 'metered', balanceCents, priceCentsPerMinute: price });
  const { session: live } = await w.directory.admit(account.uid, {}, null);
  await settle();
  expect(live.row.state).toBe('ready');
  return { w, account, sid: live.row.id, opening: new Map([[account.uid, balanceCents]]) };
}

describe('kill -9 with a metered session', () => {
  it('after the first minute is debited at ready + 1 s: history shows that minute', async () => {
    const { w, account, sid, opening } = await meteredSession();
    await w.advance(1000); // minute 1 starts and is debited; the heartbeat has not run since ready
    expect(w.store.account(account.uid)!.balance_cents).toBe(993);
    await w.crash();
    const row = w.store.session(sid)!;
    const h = historyView(row, 'phone');
    expect(h).toMatchObject({ end_reason: 'lost', cost_cents: 7, usage_minutes: 1, billable_minutes: 1 });
    expect(h.ended).toBeGreaterThan(row.ready!);
    expect(auditBooks(w.store.db, opening)).toEqual([]);
  });

  it('at any moment of the first three minutes, the books agree after the restart', async () => {
    for (const ms of [0, 999, 1000, 1500, 2000, 59_000, 61_000, 61_500, 121_000, 150_000]) {
      const { w, opening } = await meteredSession();
      await w.advance(ms);
      await w.crash();
      expect(auditBooks(w.store.db, opening), `killed at ready + ${ms} ms`).toEqual([]);
    }
  });

  it('when the credit ran out while the process was down, the session ends where the paid minutes end', async () => {
    // 3 minutes of credit; the process was alive 4 minutes in but debited only minute 1.
    const { w, opening, sid } = await meteredSession(21, 7);
    await w.advance(1000);
    w.store.setMeta('last_alive', String(w.store.session(sid)!.ready! + 240));
    await w.crash(300_000);
    const row = w.store.session(sid)!;
    expect(row.end_reason).toBe('credit_exhausted');
    expect(auditBooks(w.store.db, opening)).toEqual([]);
  });
});
