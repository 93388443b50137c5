import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTargets, type Target } from '../support/target.js';

// What needs the server in this process (its data directory, an account option the CLI
// has no flag for) is in accounts-in-process.test.ts.
const targets = useTargets();
let t: Target;
beforeAll(async () => {
  t = await targets.start({
    account: {
      email: 'qa@example.com',
      name: 'QA team',
      balanceCents: 5000,
      priceCentsPerMinute: 7,
      sessionLimit: 3,
      billingMode: 'metered',
    },
  });
});
afterAll(() => t.close());

describe('GET /me', () => {
  it('returns every Account field and the documented extras', async () => {
    const r = await t.api.get('/me');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      uid: t.account.uid,
      email: 'qa@example.com',
      name: 'QA team',
      balance_cents: 5000,
      price_cents_per_minute: 7,
      environment: 'local',
      billing_mode: 'metered',
      active_session_billing_mode: null,
      session_create_idempotency: 'v1',
      default_provider: 'shlut',
      session_limit: 3,
      active_session_count: 0,
      available_session_slots: 3,
      can_rent: true,
      // A new profile's state (empty) was stored when the account was created.
      profile: {
        id: t.account.profile_id,
        state: 'empty',
        session: null,
        exact: true,
        saved_at: r.body.created,
      },
      default_start: { platform: 'android', kind: 'emulator' },
      startable: [{ platform: 'android', kind: 'emulator' }],
    });
    expect(Number.isInteger(r.body.created)).toBe(true);
    expect(r.body).not.toHaveProperty('rent_blocked_reason');
  });

  it('refuses sessions to an account that cannot rent', async () => {
    const { api } = await t.other({ canRent: false });
    expect((await api.get('/me')).body.can_rent).toBe(false);
    const create = await api.post('/sessions');
    expect(create.status).toBe(403);
    expect(create.body.code).toBe('rental_unavailable');
    expect((await api.get('/sessions')).body).toEqual([]);
  });
});

describe('authentication', () => {
  it('401 without a credential, with an unknown key, and with a malformed header', async () => {
    for (const auth of [null, 'pck_not-the-real-key', 'garbage']) {
      const r = await t.api.get('/me', { auth });
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('unauthenticated');
      expect(typeof r.body.error).toBe('string');
    }
    const r = await t.api.get('/me', { auth: null, headers: { authorization: 'Basic abc' } });
    expect(r.status).toBe(401);
  });

  it('never echoes the credential it refused', async () => {
    const bad = 'pck_wrong-wrong-wrong';
    const r = await t.api.get('/me', { auth: bad });
    expect(r.raw.toString()).not.toContain(bad);
  });
});

describe('API keys', () => {
  it('creates a key shown once, lists only its hash and hint, and revokes it', async () => {
    const created = await t.api.post('/me/keys', { body: { label: 'ci runner' } });
    expect(created.status).toBe(200);
    const key: string = created.body.key;
    expect(key).toMatch(/^pck_[A-Za-z0-9]{40}$/);
    expect(created.headers['cache-control']).toBe('private, no-store');
    const hash = createHash('sha256').update(key).digest('hex');
    expect(created.body.key_hash).toBe(hash);

    // The new key authenticates as the same account.
    const me = await t.api.as(key).get('/me');
    expect(me.body.uid).toBe(t.account.uid);

    const list = await t.api.get('/me/keys');
    expect(list.status).toBe(200);
    const entry = list.body.find((k: { key_hash: string }) => k.key_hash === hash);
    expect(entry).toMatchObject({ key_hash: hash, label: 'ci runner', revoked: null });
    expect(entry.hint).not.toContain(key.slice(4, 20));
    expect(list.raw.toString()).not.toContain(key);
    for (const k of list.body) expect(k.key_hash).toMatch(/^[a-f0-9]{64}$/);

    const revoked = await t.api.delete(`/me/keys/${hash}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ revoked: true });
    expect((await t.api.as(key).get('/me')).status).toBe(401);
    const after = await t.api.get('/me/keys');
    expect(after.body.some((k: { key_hash: string }) => k.key_hash === hash)).toBe(false);
    // Revoking again: no active key with that hash.
    expect((await t.api.delete(`/me/keys/${hash}`)).status).toBe(404);
  });

  it('refuses bad labels and bad hashes with the error body, changing nothing', async () => {
    const before = (await t.api.get('/me/keys')).body.length;
    for (const body of [{}, { label: '' }, { label: 5 }, { label: 'x', extra: true }]) {
      const r = await t.api.post('/me/keys', { body });
      expect(r.status).toBe(400);
      expect(r.body.code).toMatch(/invalid_request|unsupported/);
    }
    expect((await t.api.delete('/me/keys/not-a-hash')).status).toBe(400);
    expect((await t.api.get('/me/keys')).body.length).toBe(before);
  });

  it("cannot revoke another account's key", async () => {
    const other = await t.other();
    const hash = createHash('sha256').update(other.account.key).digest('hex');
    expect((await t.api.delete(`/me/keys/${hash}`)).status).toBe(404);
    expect((await other.api.get('/me')).status).toBe(200);
  });
});

describe('errors', () => {
  it('unknown routes answer 404 with the error body', async () => {
    const r = await t.api.get('/nope');
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: 'not_found' });
  });
});
