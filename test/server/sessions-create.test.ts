import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey } from '../support/server.js';
import { useTargets, type Target } from '../support/target.js';

const targets = useTargets();
let t: Target;
beforeAll(async () => {
  t = await targets.start({ bootMs: 30, phones: 40 });
});
afterAll(() => t.close());

async function liveCount(): Promise<number> {
  return (await t.api.get('/sessions')).body.length;
}

async function endAll(): Promise<void> {
  for (const s of (await t.api.get('/sessions')).body) await t.api.delete(`/sessions/${s.id}`);
}

describe('POST /sessions', () => {
  it('admits a session in provisioning with every Session field', async () => {
    const before = Math.floor(Date.now() / 1000);
    const r = await t.api.post('/sessions', { body: { timeout_seconds: 120 } });
    expect(r.status).toBe(202);
    const s = r.body;
    expect(s).toMatchObject({
      state: 'provisioning',
      provider: 'shlut',
      device: null,
      close_requested: null,
      cleanup_pending: false,
      cleanup_status: null,
      billing_mode: 'disabled',
      phone: null,
      screen: null,
      ready_age_s: 0,
      timeout_seconds: 120,
      profile_id: null,
      platform: 'android',
      kind: 'emulator',
      ops: ['screen.capture', 'screen.bounds', 'nav.home', 'input.tap', 'apps.list'],
    });
    expect(s.id).toMatch(/^ses_/);
    expect(['queued', 'booting']).toContain(s.location);
    expect(Number.isInteger(s.eta_seconds)).toBe(true);
    expect(s.expires_at).toBeGreaterThanOrEqual(before + 120);
    expect(s.expires_at).toBeLessThanOrEqual(before + 122);
    // The watch page is on the server (or API node) that answered.
    const [page, grant] = s.watch_url.split('?token=');
    expect(t.urls.map((u) => `${u}/watch/${s.id}`)).toContain(page);
    expect(grant).toMatch(/^pvg_/);
    expect(s).not.toHaveProperty('adb');
    expect(s).not.toHaveProperty('request_key');

    const ready = await t.api.waitFor(s.id, ['ready']);
    expect(ready.device).toMatch(/Android/);
    expect(ready.screen).toEqual({ w: expect.any(Number), h: expect.any(Number) });
    expect(ready.adb).toMatchObject({
      host: '127.0.0.1',
      port: expect.any(Number),
      code: expect.any(String),
      expires_at: s.expires_at,
    });
    expect(ready.startup).toEqual({ source: 'cold' });
    expect(ready).not.toHaveProperty('location');
    await t.api.delete(`/sessions/${s.id}`);
  });

  it('lives at least timeout_seconds from admission, even one second, and is private', async () => {
    const before = Date.now();
    const r = await t.api.post('/sessions', { body: { timeout_seconds: 1 } });
    expect(r.status).toBe(202);
    // Whole seconds, rounded up: admitted at x.93 s, it is not due 70 ms later.
    expect(r.body.expires_at * 1000).toBeGreaterThanOrEqual(before + 1000);
    // It carries secrets (watch_url): no cache may keep it, nor any read or list of it.
    expect(r.headers['cache-control']).toBe('private, no-store');
    expect((await t.api.get('/sessions')).headers['cache-control']).toBe('private, no-store');
    const read = await t.api.get(`/sessions/${r.body.id}`);
    if (read.status === 200) expect(read.headers['cache-control']).toBe('private, no-store');
    await t.api.delete(`/sessions/${r.body.id}`);
  });

  it('takes an empty body of any content type as no body; other bodies must be JSON', async () => {
    // What `fetch(url, { method: 'POST', body: '' })` and `curl -d ''` send.
    for (const type of ['text/plain;charset=UTF-8', 'application/x-www-form-urlencoded']) {
      const r = await t.api.post('/sessions', { rawBody: '', headers: { 'content-type': type } });
      expect(r.status, type).toBe(202);
      expect(r.body.timeout_seconds).toBe(300);
      await t.api.delete(`/sessions/${r.body.id}`);
    }
    const text = await t.api.post('/sessions', {
      rawBody: 'timeout_seconds=60',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(text.status).toBe(400);
    expect(text.body).toEqual({
      error: expect.stringContaining('application/json'),
      code: 'invalid_request',
    });
    expect((await t.api.get('/sessions')).body).toEqual([]);
  });

  it('defaults timeout_seconds to 300 and accepts no body at all', async () => {
    const r = await t.api.post('/sessions');
    expect(r.status).toBe(202);
    expect(r.body.timeout_seconds).toBe(300);
    expect(r.body.expires_at - Math.floor(Date.now() / 1000)).toBeGreaterThanOrEqual(298);
    await t.api.delete(`/sessions/${r.body.id}`);
  });

  it('refuses bad input with the error body and creates nothing', async () => {
    const key = newKey();
    const cases: Array<{
      body?: unknown;
      rawBody?: string;
      headers?: Record<string, string>;
      code: string;
      unsupported?: boolean;
    }> = [
      { body: { timeout_seconds: 0 }, code: 'invalid_request' },
      { body: { timeout_seconds: -5 }, code: 'invalid_request' },
      { body: { timeout_seconds: 1.5 }, code: 'invalid_request' },
      { body: { timeout_seconds: '300' }, code: 'invalid_request' },
      { body: { timeout_seconds: null }, code: 'invalid_request' },
      { body: { timeout_seconds: 253402300799 }, code: 'invalid_request' },
      { rawBody: '{"timeout_seconds": 1e400}', code: 'invalid_request' },
      { body: { provider: 'other' }, code: 'invalid_request' },
      { body: { provider: 7 }, code: 'invalid_request' },
      { body: { profile_id: 42 }, code: 'invalid_request' },
      { body: { profile_id: 'prof_someoneelse' }, code: 'invalid_request' },
      { body: { capabilities: { 'appium:app': 'x' } }, code: 'unsupported', unsupported: true },
      { body: { cpu: 4, memory_mb: 4096 }, code: 'unsupported', unsupported: true },
      { body: [], code: 'invalid_request' },
      { body: null, rawBody: 'null', code: 'invalid_request' },
      { rawBody: '{"timeout_seconds": 30', code: 'invalid_request' },
      { rawBody: 'not json', code: 'invalid_request' },
      { rawBody: '{}', headers: { 'content-type': 'text/plain' }, code: 'invalid_request' },
    ];
    for (const c of cases) {
      const headers = { 'idempotency-key': key, 'content-type': 'application/json', ...c.headers };
      const r = await t.api.post('/sessions', {
        ...(c.rawBody !== undefined ? { rawBody: c.rawBody } : { body: c.body }),
        headers,
      });
      expect(r.status, JSON.stringify(c)).toBe(400);
      expect(r.body.code, JSON.stringify(c)).toBe(c.code);
      expect(typeof r.body.error).toBe('string');
      if (c.unsupported) expect(r.body.unsupported).toBe(true);
    }
    expect(await liveCount()).toBe(0);
    // A refusal records no receipt, so the same key can still start a session later.
    expect((await t.api.get(`/sessions/requests/${key}`)).status).toBe(404);
    const ok = await t.api.post('/sessions', { body: {}, headers: { 'idempotency-key': key } });
    expect(ok.status).toBe(202);
    await endAll();
  });

  it('refuses bodies over 64 KiB with 413 and creates nothing', async () => {
    const r = await t.api.post('/sessions', {
      rawBody: JSON.stringify({ pad: 'x'.repeat(70_000) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(413);
    expect(r.body.code).toBe('body_too_large');
    expect(await liveCount()).toBe(0);
  });

  it('refuses malformed idempotency keys', async () => {
    for (const bad of ['short', 'has space in it 1234567', 'x'.repeat(129), 'bad/char/aaaaaaaaaaaaaa']) {
      const r = await t.api.post('/sessions', { body: {}, headers: { 'idempotency-key': bad } });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('invalid_request');
    }
    expect(await liveCount()).toBe(0);
    // Nothing was recorded under them: their lookups find nothing.
    expect((await t.api.get('/sessions/requests/short')).status).toBe(404);
  });
});

describe('idempotency', () => {
  it('replays the same key and body (key order and whitespace do not matter)', async () => {
    const key = newKey();
    const a = await t.api.post('/sessions', {
      rawBody: '{"timeout_seconds":60,"provider":"shlut"}',
      headers: { 'idempotency-key': key, 'content-type': 'application/json' },
    });
    const b = await t.api.post('/sessions', {
      rawBody: '{ "provider" : "shlut",\n "timeout_seconds" : 60 }',
      headers: { 'idempotency-key': key, 'content-type': 'application/json' },
    });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body.id).toBe(a.body.id);
    expect(a.body.request_key).toBe(key);
    expect(b.body.request_key).toBe(key);
    expect(await liveCount()).toBe(1);

    const conflict = await t.api.post('/sessions', {
      body: { timeout_seconds: 61 },
      headers: { 'idempotency-key': key },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe('idempotency_key_reused');
    expect(await liveCount()).toBe(1);

    const receipt = await t.api.get(`/sessions/requests/${key}`);
    expect(receipt.status).toBe(200);
    expect(receipt.body).toEqual({
      id: a.body.id,
      request_key: key,
      provider: 'shlut',
      state: expect.any(String),
      cleanup_complete: false,
      cleanup_pending: false,
    });

    // After cleanup the key is spent: 410, and the receipt confirms the cleanup.
    expect((await t.api.delete(`/sessions/${a.body.id}`)).status).toBe(200);
    const gone = await t.api.post('/sessions', {
      rawBody: '{"timeout_seconds":60,"provider":"shlut"}',
      headers: { 'idempotency-key': key, 'content-type': 'application/json' },
    });
    expect(gone.status).toBe(410);
    expect(gone.body).toMatchObject({
      code: 'request_completed',
      id: a.body.id,
      request_key: key,
      cleanup_complete: true,
    });
    const after = await t.api.get(`/sessions/requests/${key}`);
    expect(after.body).toMatchObject({ id: a.body.id, cleanup_complete: true, cleanup_pending: false });
    expect(await liveCount()).toBe(0);
  });

  it('scopes keys to the account', async () => {
    const key = newKey();
    const mine = await t.api.post('/sessions', { body: {}, headers: { 'idempotency-key': key } });
    const other = await t.other();
    const theirs = await other.api.post('/sessions', { body: {}, headers: { 'idempotency-key': key } });
    expect(theirs.status).toBe(202);
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect((await other.api.get(`/sessions/requests/${key}`)).body.id).toBe(theirs.body.id);
    await other.api.delete(`/sessions/${theirs.body.id}`);
    await t.api.delete(`/sessions/${mine.body.id}`);
  });

  it('20 parallel creates with one key give one session', async () => {
    const key = newKey();
    const replies = await Promise.all(
      Array.from({ length: 20 }, () =>
        t.api.post('/sessions', { body: { timeout_seconds: 90 }, headers: { 'idempotency-key': key } }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(202));
    const ids = new Set(replies.map((r) => r.body.id));
    expect(ids.size).toBe(1);
    const live = (await t.api.get('/sessions')).body;
    expect(live.map((s: { id: string }) => s.id)).toEqual([...ids]);
    await endAll();
  });

  it('unknown receipts answer 404, also for a key no create could have used', async () => {
    for (const key of [newKey(), 'short', 'x'.repeat(300)]) {
      const r = await t.api.get(`/sessions/requests/${key}`);
      expect(r.status, key).toBe(404);
      expect(r.body.code).toBe('not_found');
    }
  });
});

describe('GET /openapi.json', () => {
  it('serves the OpenAPI document without an API key, from every server or API node', async () => {
    for (const url of t.urls) {
      const r = await fetch(`${url}/openapi.json`);
      expect(r.status).toBe(200);
      const doc = (await r.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
      expect(doc.openapi).toMatch(/^3\.1\./);
      expect(doc.paths['/sessions']?.post).toBeDefined();
      expect(doc.paths['/sessions/{sid}']?.delete).toBeDefined();
    }
  });
});
