import { describe, expect, it } from 'vitest';
import { useTargets } from '../support/target.js';

// Debits over time need the server's clock injected: billing-in-process.test.ts.
const server = useTargets().perTest;

describe('billing', () => {
  it('refuses to start below two minutes of credit, with the balance', async () => {
    const t = await server({
      account: { billingMode: 'metered', balanceCents: 19, priceCentsPerMinute: 10 },
    });
    const r = await t.api.post('/sessions');
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: 'insufficient_credit', balance_cents: 19 });
    expect((await t.api.get('/sessions')).body).toEqual([]);
  });

  it('debits the started minute of a ready session and bills it in history', async () => {
    const t = await server({
      account: { billingMode: 'metered', balanceCents: 1000, priceCentsPerMinute: 10 },
    });
    const s = (await t.api.post('/sessions', { body: { timeout_seconds: 600 } })).body;
    expect(s.billing_mode).toBe('metered');
    const ready = await t.api.waitFor(s.id, ['ready']);
    expect(ready.billing_mode).toBe('metered');
    expect((await t.api.get('/me')).body.active_session_billing_mode).toBe('metered');
    // The first minute is paid once it has started (at most a second after readiness).
    const deadline = Date.now() + 20_000;
    while ((await t.api.get('/me')).body.balance_cents !== 990) {
      if (Date.now() > deadline) throw new Error('the first minute was not debited');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await t.api.delete(`/sessions/${s.id}`)).status).toBe(200);
    const [h] = (await t.api.get('/history')).body;
    // Well under a minute passed: exactly the one started minute, on whichever node asked.
    expect(h).toMatchObject({
      sid: s.id,
      billing_mode: 'metered',
      usage_minutes: 1,
      billable_minutes: 1,
      cost_cents: 10,
      end_reason: 'released',
    });
    expect((await t.api.get('/me')).body.balance_cents).toBe(990);
  });
});
