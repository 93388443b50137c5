/**
 * Billing with the server's time injected: minutes debited as the clock advances. What needs
 * no injected clock is in billing.test.ts, which also runs against a deployment.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock.js';
import { serverPerTest, type TestServer } from '../support/server.js';

const server = serverPerTest();

async function metered(balanceCents: number, priceCentsPerMinute = 10) {
  const clock = new ManualClock();
  const t = await server({ clock, account: { billingMode: 'metered', balanceCents, priceCentsPerMinute } });
  return { t, clock };
}

const balance = async (t: TestServer) => (await t.api.get('/me')).body.balance_cents as number;

describe('billing (injected clock)', () => {
  it('debits each started minute from readiness to closure; usage rounds up', async () => {
    const { t, clock } = await metered(1000);
    // Provisioning is not billed, however long it takes: hold the phone back for 10 s.
    t.server.runtime.pause();
    const s = (await t.api.post('/sessions')).body;
    expect((await t.api.get('/me')).body.active_session_billing_mode).toBe('metered');
    await clock.advance(10_000);
    expect(await balance(t)).toBe(1000);
    t.server.runtime.resume();
    const ready = await t.api.waitFor(s.id, ['ready']);
    expect(ready.billing_mode).toBe('metered');
    expect(await balance(t)).toBe(1000);
    await clock.advance(1_000); // minute 1 has started
    expect(await balance(t)).toBe(990);
    await clock.advance(59_000); // still minute 1
    expect(await balance(t)).toBe(990);
    await clock.advance(1_000); // minute 2
    expect(await balance(t)).toBe(980);
    await clock.advance(9_000); // 70 s after readiness
    const del = await t.api.delete(`/sessions/${s.id}`);
    expect(del.status).toBe(200);
    expect(await balance(t)).toBe(980);
    const [h] = (await t.api.get('/history')).body;
    const readyAt = h.ready as number;
    expect(h).toMatchObject({
      sid: s.id,
      billing_mode: 'metered',
      usage_minutes: 2,
      billable_minutes: 2,
      cost_cents: 20,
      end_reason: 'released',
    });
    expect(h.ended - readyAt).toBe(70);
    // Billing stops at the recorded closure.
    await clock.advance(300_000);
    expect(await balance(t)).toBe(980);
  });

  it('ends the session with credit_exhausted when the next minute cannot be paid', async () => {
    const { t, clock } = await metered(30);
    const s = (await t.api.post('/sessions', { body: { timeout_seconds: 3600 } })).body;
    await t.api.waitFor(s.id, ['ready']);
    await clock.advance(181_000); // minutes 1-3 paid (30 cents), minute 4 cannot be
    await t.api.waitGone(s.id);
    expect(await balance(t)).toBe(0);
    const [h] = (await t.api.get('/history')).body;
    expect(h).toMatchObject({
      end_reason: 'credit_exhausted',
      cost_cents: 30,
      usage_minutes: 3,
      billable_minutes: 3,
    });
    expect(h.ended - h.ready).toBe(180);
    // And a new start is refused until credit is added.
    expect((await t.api.post('/sessions')).body.code).toBe('insufficient_credit');
  });

  it('disabled billing debits nothing', async () => {
    const clock = new ManualClock();
    const t = await server({ clock, account: { billingMode: 'disabled', balanceCents: 0 } });
    const s = (await t.api.post('/sessions')).body;
    expect(s.billing_mode).toBe('disabled');
    await t.api.waitFor(s.id, ['ready']);
    await clock.advance(125_000);
    await t.api.delete(`/sessions/${s.id}`);
    const [h] = (await t.api.get('/history')).body;
    expect(h).toMatchObject({
      billing_mode: 'disabled',
      cost_cents: 0,
      usage_minutes: 3,
      billable_minutes: 0,
    });
    expect(await balance(t)).toBe(0);
  });
});
