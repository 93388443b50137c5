import { describe, expect, it } from 'vitest';
import { newKey } from '../support/server.js';
import { useTargets } from '../support/target.js';

// What needs the server in this process (an injected clock, a slow backend) is in
// lifecycle-in-process.test.ts.
const targets = useTargets();
const server = targets.perTest;

describe('provisioning', () => {
  it('queues phones beyond the boot slots, then boots them in order', async () => {
    const t = await server({ bootSlots: 1, bootMs: 1_000 });
    const a = (await t.api.post('/sessions')).body;
    const b = (await t.api.post('/sessions')).body;
    expect(a.location).toBe('booting');
    expect(b.location).toBe('queued');
    const listed = (await t.api.get('/sessions')).body as Array<{
      id: string;
      state: string;
      eta_seconds: number;
    }>;
    expect(listed.map((s) => [s.id, s.state])).toEqual([
      [a.id, 'provisioning'],
      [b.id, 'provisioning'],
    ]);
    // Estimated in one answer, at one moment (a deployment's typical boot time moves between
    // answers): the queued session is not expected sooner than the one booting ahead of it.
    expect(listed[1]!.eta_seconds).toBeGreaterThanOrEqual(listed[0]!.eta_seconds);
    await t.api.waitFor(a.id, ['ready']);
    const bNow = (await t.api.get(`/sessions/${b.id}`)).body;
    expect(['booting', undefined]).toContain(bNow.location);
    const bReady = await t.api.waitFor(b.id, ['ready']);
    expect(bReady.state).toBe('ready');
  });

  it('a long poll on a queued session answers when its phone starts booting', async () => {
    const t = await server({ bootSlots: 1, bootMs: 1_000 });
    const a = (await t.api.post('/sessions')).body;
    const b = (await t.api.post('/sessions')).body;
    expect(b.location).toBe('queued');
    const next = (await t.api.get(`/sessions/${b.id}?wait=20`)).body;
    expect(next).toMatchObject({ state: 'provisioning', location: 'booting' });
    expect((await t.api.get(`/sessions/${a.id}`)).body.state).toBe('ready');
  });

  it('long-polls with ?wait= until the state changes', async () => {
    // The shape of the tests above (a deployment starts one per shape).
    const t = await server({ bootSlots: 1, bootMs: 1_000 });
    const a = (await t.api.post('/sessions')).body;
    let s = (await t.api.get(`/sessions/${a.id}?wait=10`)).body;
    while (s.state === 'provisioning') s = (await t.api.get(`/sessions/${a.id}?wait=10`)).body;
    expect(s.state).toBe('ready');
    expect((await t.api.get(`/sessions/${a.id}?wait=31`)).status).toBe(400);
    // A ready session is not in transition: the long poll answers at once instead of
    // waiting the whole 30 s for a change (10 s leaves a wide margin on a busy machine).
    const answered = await Promise.race([
      t.api.get(`/sessions/${a.id}?wait=30`).then((r) => r.body.state as string),
      new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), 10_000)),
    ]);
    expect(answered).toBe('ready');
  });

  it('a startup failure gives state error with a public failure, listed until ended', async () => {
    const saved = process.env.ANDROID_HOME;
    process.env.ANDROID_HOME = '/nonexistent-sdk';
    try {
      const t = await server({ device: 'emulator' });
      const a = (await t.api.post('/sessions', { body: { timeout_seconds: 60 } })).body;
      const failed = await t.api.waitFor(a.id, ['error']);
      expect(failed.failure.code).toBe('emulator_unavailable');
      expect(failed.failure.message).toMatch(/--device virtual/);
      expect(failed).not.toHaveProperty('adb');
      expect((await t.api.get('/sessions')).body.map((s: { state: string }) => s.state)).toEqual(['error']);
      expect((await t.api.get('/me')).body.active_session_count).toBe(1);
      expect((await t.api.get(`/sessions/${a.id}/frame.png`)).status).toBe(409);
      expect((await t.api.delete(`/sessions/${a.id}`)).status).toBe(200);
      const [h] = (await t.api.get('/history')).body;
      expect(h).toMatchObject({
        sid: a.id,
        end_reason: 'failed',
        ready: null,
        usage_minutes: 0,
        cost_cents: 0,
      });
    } finally {
      if (saved === undefined) delete process.env.ANDROID_HOME;
      else process.env.ANDROID_HOME = saved;
    }
  });
});

describe('ending', () => {
  it('DELETE confirms cleanup with 200, then the session is only in history', async () => {
    const t = await server();
    const a = (await t.api.post('/sessions')).body;
    await t.api.waitFor(a.id, ['ready']);
    const r = await t.api.delete(`/sessions/${a.id}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ released: true, cleanup_pending: false });
    expect((await t.api.get(`/sessions/${a.id}`)).status).toBe(404);
    expect((await t.api.delete(`/sessions/${a.id}`)).status).toBe(404);
    expect((await t.api.get('/sessions')).body).toEqual([]);
    const [h] = (await t.api.get('/history')).body;
    expect(h).toMatchObject({ sid: a.id, end_reason: 'released', uid: t.account.uid, provider: 'shlut' });
  });

  it("answers another account's session exactly as an unknown one", async () => {
    const t = await server();
    const a = (await t.api.post('/sessions')).body;
    await t.api.waitFor(a.id, ['ready']);
    const other = await t.other();
    for (const [method, path] of [
      ['GET', `/sessions/${a.id}`],
      ['DELETE', `/sessions/${a.id}`],
      ['GET', `/sessions/${a.id}/frame.png`],
      ['GET', `/sessions/${a.id}/owner-viewer`],
      ['GET', `/sessions/${a.id}/viewer`],
      ['GET', `/sessions/${a.id}/adb`],
      ['DELETE', `/sessions/${a.id}/adb`],
      ['POST', `/sessions/${a.id}/ops/nav.home`],
    ] as const) {
      const theirs = await other.api.call(method, path);
      const unknown = await other.api.call(method, path.replace(a.id, 'ses_doesnotexist000000000'));
      expect(theirs.status, path).toBe(404);
      expect(theirs.body, path).toEqual(unknown.body);
    }
    expect((await other.api.get('/sessions')).body).toEqual([]);
    expect((await t.api.get(`/sessions/${a.id}`)).body.state).toBe('ready');
  });
});

describe('capacity', () => {
  it('503 phones_busy beyond the shared capacity, with Retry-After, creating nothing', async () => {
    const t = await server({ phones: 2 });
    const other = await t.other();
    await t.api.post('/sessions');
    await other.api.post('/sessions');
    const key = newKey();
    const r = await t.api.post('/sessions', { headers: { 'idempotency-key': key } });
    expect(r.status).toBe(503);
    expect(r.body.code).toBe('phones_busy');
    expect(r.body.retry_after_seconds).toBeGreaterThanOrEqual(1);
    expect(r.headers['retry-after']).toBe(String(r.body.retry_after_seconds));
    expect((await t.api.get('/sessions')).body.length).toBe(1);
    expect((await t.api.get(`/sessions/requests/${key}`)).status).toBe(404);
    // Once a phone is handed back, the same key succeeds.
    const [mine] = (await t.api.get('/sessions')).body;
    await t.api.delete(`/sessions/${mine.id}`);
    await t.api.waitGone(mine.id);
    expect((await t.api.post('/sessions', { headers: { 'idempotency-key': key } })).status).toBe(202);
  });

  it('409 session_limit with the counts at the account limit', async () => {
    const t = await server({ account: { sessionLimit: 2 } });
    await t.api.post('/sessions');
    await t.api.post('/sessions');
    const r = await t.api.post('/sessions');
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({
      code: 'session_limit',
      session_limit: 2,
      active_session_count: 2,
      available_session_slots: 0,
    });
    expect((await t.api.get('/sessions')).body.length).toBe(2);
  });
});
