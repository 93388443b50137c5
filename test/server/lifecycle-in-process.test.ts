/**
 * Lifecycle contract tests that need the server in this process: an injected clock (eta
 * estimates, deadlines) or a device backend whose shutdown is slow. The rest of the
 * lifecycle contract is in lifecycle.test.ts, which also runs against a deployment.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock.js';
import { slowShutdownBackend } from '../support/backends.js';
import { newKey, serverPerTest } from '../support/server.js';

const server = serverPerTest();

describe('provisioning (injected clock)', () => {
  it('estimates eta_seconds from the boots in progress and the queue ahead', async () => {
    const clock = new ManualClock();
    const t = await server({ clock, bootSlots: 1, bootMs: 2_000 });
    const [a, b, c] = [
      (await t.api.post('/sessions')).body,
      (await t.api.post('/sessions')).body,
      (await t.api.post('/sessions')).body,
    ];
    expect([a.location, b.location, c.location]).toEqual(['booting', 'queued', 'queued']);
    // a has 2 s to go; b boots after it, c after b.
    expect([a.eta_seconds, b.eta_seconds, c.eta_seconds]).toEqual([2, 4, 6]);
    await clock.advance(1_500);
    const eta = async (id: string) => (await t.api.get(`/sessions/${id}`)).body.eta_seconds as number;
    expect([await eta(a.id), await eta(b.id), await eta(c.id)]).toEqual([1, 3, 5]);
  });
});

describe('ending (slow cleanup)', () => {
  it('holds the slot while cleanup is pending (202), listing the session as closing', async () => {
    const t = await server({ backend: slowShutdownBackend(2500), account: { sessionLimit: 1 } });
    const a = (await t.api.post('/sessions')).body;
    await t.api.waitFor(a.id, ['ready']);
    const r = await t.api.delete(`/sessions/${a.id}`);
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ released: false, cleanup_pending: true });
    const closing = (await t.api.get(`/sessions/${a.id}`)).body;
    expect(closing).toMatchObject({ state: 'closing', cleanup_pending: true, cleanup_status: 'pending' });
    expect(Number.isInteger(closing.close_requested)).toBe(true);
    expect(closing).not.toHaveProperty('adb');
    expect((await t.api.get('/sessions')).body.map((s: { state: string }) => s.state)).toEqual(['closing']);
    expect((await t.api.get('/me')).body).toMatchObject({
      active_session_count: 1,
      available_session_slots: 0,
    });
    expect((await t.api.get(`/sessions/${a.id}/frame.png`)).status).toBe(409);
    expect((await t.api.get(`/sessions/${a.id}/owner-viewer`)).status).toBe(409);
    const refused = await t.api.post('/sessions', { headers: { 'idempotency-key': newKey() } });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      code: 'session_limit',
      session_limit: 1,
      active_session_count: 1,
      available_session_slots: 0,
    });
    await t.api.waitGone(a.id);
    expect((await t.api.get('/me')).body.active_session_count).toBe(0);
    expect((await t.api.post('/sessions')).status).toBe(202);
  });
});

describe('deadlines (injected clock)', () => {
  it('a session past expires_at ends with end_reason expired', async () => {
    const clock = new ManualClock();
    const t = await server({ clock });
    const a = (await t.api.post('/sessions', { body: { timeout_seconds: 30 } })).body;
    await t.api.waitFor(a.id, ['ready']);
    await clock.advance(29_000);
    expect((await t.api.get(`/sessions/${a.id}`)).body.state).toBe('ready');
    await clock.advance(1_000);
    await t.api.waitGone(a.id);
    const [h] = (await t.api.get('/history')).body;
    expect(h).toMatchObject({ sid: a.id, end_reason: 'expired', ended: a.expires_at });
  });

  it('the deadline includes provisioning: a queued session can expire before it is ready', async () => {
    const clock = new ManualClock();
    const t = await server({ clock });
    t.server.runtime.pause();
    const key = newKey();
    const r = await t.api.post('/sessions', {
      body: { timeout_seconds: 5 },
      headers: { 'idempotency-key': key },
    });
    expect(r.status).toBe(503);
    await clock.advance(5_000);
    await t.api.waitGone(r.body.id);
    const [h] = (await t.api.get('/history')).body;
    expect(h).toMatchObject({ sid: r.body.id, end_reason: 'expired', ready: null, usage_minutes: 0 });
    expect((await t.api.get(`/sessions/requests/${key}`)).body.cleanup_complete).toBe(true);
    t.server.runtime.resume();
  });
});
