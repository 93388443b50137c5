/**
 * Route wiring driven in-process with app.inject (no port): credentials per route, typed
 * op routes with their schemas, and the OpenAPI document built from them.
 */
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PHONE_OPS } from '../../src/api/schemas.js';
import { installAuth } from '../../server/api/auth.js';
import { buildTestApp, type InProcessApp } from '../support/app.js';

let t: InProcessApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

const json = (body: string) => JSON.parse(body) as Record<string, unknown>;

describe('credentials', () => {
  it('are checked on the HEAD routes fastify adds for GET routes too', async () => {
    expect((await t.call({ method: 'HEAD', url: '/me', auth: null })).statusCode).toBe(401);
    expect((await t.call({ method: 'HEAD', url: '/me' })).statusCode).toBe(200);
  });

  it('come before the body of an op: 401 for a bad key, whatever the body', async () => {
    const r = await t.call({
      method: 'POST',
      url: '/sessions/nope/ops/input.tap',
      auth: 'pck_x',
      payload: '{',
    });
    expect(r.statusCode).toBe(401);
    expect(json(r.body)).toMatchObject({ code: 'unauthenticated' });
  });

  it('a route that declares none is refused when it is added', async () => {
    const app = Fastify();
    installAuth(app, t.deps);
    expect(() => app.get('/open', async () => 'x')).toThrow(/declares no config\.auth/);
    await app.close();
  });
});

describe('keys and hashes in requests', () => {
  it('are validated by their route schemas, each with a message that says the shape it needs', async () => {
    const badKey = await t.call({
      method: 'POST',
      url: '/sessions',
      headers: { 'idempotency-key': 'short' },
    });
    expect(badKey.statusCode).toBe(400);
    expect(json(badKey.body)).toEqual({
      code: 'invalid_request',
      error: expect.stringContaining('Idempotency-Key must match'),
    });
    // A key no create could have used has no receipt: 404, as the lookup's contract has it.
    const receipt = await t.call({ method: 'GET', url: '/sessions/requests/not%20a%20key' });
    expect(receipt.statusCode).toBe(404);
    expect(json(receipt.body)).toMatchObject({ code: 'not_found' });
    const hash = await t.call({ method: 'DELETE', url: '/me/keys/ABC' });
    expect(json(hash.body)).toMatchObject({ error: expect.stringContaining('key_hash must be the 64') });
  });

  it('a create with an unsupported field and a bad key is refused for the field first', async () => {
    const r = await t.call({
      method: 'POST',
      url: '/sessions',
      headers: { 'idempotency-key': 'short' },
      payload: { capabilities: {} },
    });
    expect(json(r.body)).toMatchObject({ code: 'unsupported', unsupported: true });
    expect((await t.call({ method: 'GET', url: '/sessions' })).json()).toEqual([]);
  });
});

describe('phone operations', () => {
  it('validate the tap body with its schema and say the shape it needs', async () => {
    for (const payload of [{ x: -1, y: 1 }, { x: 1 }, { x: 1, y: 2, z: 3 }, { x: '1', y: 2 }, [1, 2]]) {
      const r = await t.call({ method: 'POST', url: '/sessions/ses_unknown/ops/input.tap', payload });
      expect(r.statusCode, JSON.stringify(payload)).toBe(400);
      expect(json(r.body)).toEqual({
        code: 'invalid_request',
        error: expect.stringContaining('{"x": integer >= 0'),
      });
    }
    // A valid body on an unknown session is the session's 404.
    const unknown = await t.call({
      method: 'POST',
      url: '/sessions/ses_unknown/ops/input.tap',
      payload: { x: 1, y: 1 },
    });
    expect(unknown.statusCode).toBe(404);
  });

  it('an operation that is not advertised is 404 with where to find the advertised ones', async () => {
    const r = await t.call({ method: 'POST', url: '/sessions/ses_unknown/ops/reboot' });
    expect(r.statusCode).toBe(404);
    expect(json(r.body)).toMatchObject({
      code: 'not_found',
      error: expect.stringContaining("session's ops"),
    });
  });

  it('every advertised operation has its route in the OpenAPI document; input.tap documents its body', async () => {
    const doc = (await t.call({ method: 'GET', url: '/openapi.json', auth: null })).json<{
      paths: Record<string, Record<string, { requestBody?: unknown }>>;
    }>();
    for (const op of PHONE_OPS) expect(doc.paths[`/sessions/{sid}/ops/${op}`]?.post, op).toBeDefined();
    expect(doc.paths['/sessions/{sid}/ops/input.tap']!.post!.requestBody).toBeDefined();
  });
});
