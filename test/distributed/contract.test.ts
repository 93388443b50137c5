/**
 * The API contract across API nodes, each request to the other node than the one before:
 * keys (a revocation holds everywhere at once), refusals with the error body, the profile
 * hold and reset, history and its pages, receipts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Deployment, type CreatedAccountLine } from '../support/deployment.js';
import type { Api } from '../support/server.js';
import { newKey } from '../support/server.js';
import { postgresMissing, startPostgres, type PostgresCluster } from '../support/postgres.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the deployment contract tests: ${missing}`);

describe.skipIf(missing !== null)('the API contract across API nodes', () => {
  let cluster: PostgresCluster;
  let d: Deployment;
  let account: CreatedAccountLine;
  let turn = 0;
  /** The next API node in turn. */
  const next = (key = account.key): Api => d.api(turn++, key);

  beforeAll(async () => {
    cluster = await startPostgres();
    d = await Deployment.start(cluster, { nodes: 2, hosts: [['--phones', '6']] });
    account = await d.account();
  }, 120_000);
  afterAll(async () => {
    await d?.stop();
    await cluster?.stop();
  });

  it('creates, lists and revokes keys; a revoked key fails on every node at once', async () => {
    const created = await next().post('/me/keys', { body: { label: 'ci' } });
    expect(created.status).toBe(200);
    expect(created.headers['cache-control']).toBe('private, no-store');
    const { key, key_hash } = created.body as { key: string; key_hash: string };
    expect((await next(key).get('/me')).status).toBe(200);
    const listed = (await next().get('/me/keys')).body as Array<{ key_hash: string; label: string }>;
    expect(listed.map((k) => k.key_hash)).toContain(key_hash);
    expect(JSON.stringify(listed)).not.toContain(key);
    expect((await next().delete(`/me/keys/${key_hash}`)).body).toEqual({ revoked: true });
    for (let i = 0; i < 2; i++) {
      const r = await next(key).get('/me');
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('unauthenticated');
    }
    expect((await next().delete(`/me/keys/${key_hash}`)).status).toBe(404);
  });

  it('refuses bad requests with the error body, creating nothing', async () => {
    const cases: Array<{
      r: Promise<{ status: number; body: { code?: string } }>;
      status: number;
      code: string;
    }> = [
      { r: next().as(null).get('/me'), status: 401, code: 'unauthenticated' },
      { r: next().post('/sessions', { body: { timeout_seconds: 0 } }), status: 400, code: 'invalid_request' },
      { r: next().post('/sessions', { body: { provider: 'other' } }), status: 400, code: 'invalid_request' },
      { r: next().post('/sessions', { body: { cpu: 4 } }), status: 400, code: 'unsupported' },
      {
        r: next().post('/sessions', { rawBody: '{', headers: { 'content-type': 'application/json' } }),
        status: 400,
        code: 'invalid_request',
      },
      {
        r: next().post('/sessions', { headers: { 'idempotency-key': 'short' } }),
        status: 400,
        code: 'invalid_request',
      },
      { r: next().get(`/sessions/requests/${newKey()}`), status: 404, code: 'not_found' },
      { r: next().get('/sessions/ses_nope'), status: 404, code: 'not_found' },
      { r: next().post('/sessions/ses_nope/ops/screen.rotate'), status: 404, code: 'not_found' },
      { r: next().get('/history/page?cursor=nope'), status: 400, code: 'invalid_request' },
    ];
    for (const c of cases) {
      const r = await c.r;
      expect({ status: r.status, code: r.body.code }).toEqual({ status: c.status, code: c.code });
    }
    expect((await next().get('/sessions')).body).toEqual([]);
  });

  it('holds the profile phone for one session; reset is refused while it is held', async () => {
    const me = (await next().get('/me')).body as { profile: { id: string } };
    const first = await next().post('/sessions', {
      body: { profile_id: me.profile.id, timeout_seconds: 60 },
    });
    expect(first.status).toBe(202);
    expect(first.body.profile_id).toBe(me.profile.id);
    const second = await next().post('/sessions', {
      body: { profile_id: me.profile.id, timeout_seconds: 60 },
    });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: 'profile_running', session: first.body.id });
    const reset = await next().post('/me/profile/reset');
    expect(reset.status).toBe(409);
    expect(reset.body.code).toBe('profile_running');
    expect((await next().get('/me')).body.profile.session).toBe(first.body.id);
    await next().waitFor(first.body.id, ['ready']);
    await next().delete(`/sessions/${first.body.id}`);
    await d.waitGone(next(), first.body.id);
    expect((await next().get('/me')).body.profile).toMatchObject({ session: null, state: 'stored' });
    expect((await next().post('/me/profile/reset')).body).toEqual({ id: me.profile.id, reset: true });
    expect((await next().get('/me')).body.profile.state).toBe('empty');
  });

  it('pages history newest first without gaps or repeats, and keeps receipts after cleanup', async () => {
    const keys: string[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const key = newKey();
      const r = await next().post('/sessions', {
        body: { timeout_seconds: 60 },
        headers: { 'idempotency-key': key },
      });
      keys.push(key);
      ids.push(r.body.id);
      await next().delete(`/sessions/${r.body.id}`);
    }
    for (const id of ids) await d.waitGone(next(), id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = (await next().get(`/history/page?limit=2${cursor ? `&cursor=${cursor}` : ''}`)).body as {
        items: Array<{ sid: string; created: number }>;
        next_cursor: string | null;
      };
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((h) => h.sid));
      cursor = page.next_cursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining(ids));
    expect((await next().get('/history')).body.map((h: { sid: string }) => h.sid)).toEqual(seen);
    for (let i = 0; i < keys.length; i++) {
      const receipt = await next().get(`/sessions/requests/${keys[i]}`);
      expect(receipt.body).toMatchObject({ id: ids[i], cleanup_complete: true, cleanup_pending: false });
    }
  });
});
