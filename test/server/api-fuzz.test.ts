/**
 * API fuzzing with fast-check: arbitrary methods, ids, credentials, headers, queries and
 * bodies over every route. Whatever is sent, the server answers below 500, every refusal
 * carries the error body ({error, code}), and a refused request changes nothing an account
 * can see (sessions, account, history, keys, the receipt of its key). fast-check prints the
 * seed and the shrunk request of a failure; rerun it with `seed` in fc.assert.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock.js';
import { buildTestApp, type InProcessApp } from '../support/app.js';

/** Every route of the API, as OpenAPI names it; a test below keeps this list complete. */
const ROUTES = [
  ['POST', '/sessions'],
  ['GET', '/sessions'],
  ['GET', '/sessions/{sid}'],
  ['DELETE', '/sessions/{sid}'],
  ['GET', '/sessions/requests/{request_key}'],
  ['GET', '/sessions/{sid}/frame.png'],
  ['GET', '/sessions/{sid}/owner-viewer'],
  ['GET', '/sessions/{sid}/viewer'],
  ['GET', '/sessions/{sid}/adb'],
  ['DELETE', '/sessions/{sid}/adb'],
  ['POST', '/sessions/{sid}/ops/screen.capture'],
  ['POST', '/sessions/{sid}/ops/screen.bounds'],
  ['POST', '/sessions/{sid}/ops/nav.home'],
  ['POST', '/sessions/{sid}/ops/input.tap'],
  ['POST', '/sessions/{sid}/ops/apps.list'],
  ['POST', '/sessions/{sid}/ops/{op}'],
  ['GET', '/me'],
  ['POST', '/me/keys'],
  ['GET', '/me/keys'],
  ['DELETE', '/me/keys/{key_hash}'],
  ['POST', '/me/profile/reset'],
  ['GET', '/history'],
  ['GET', '/history/page'],
  ['GET', '/watch/{sid}'],
  ['GET', '/v/{token}'],
  ['GET', '/v/{token}/frame.png'],
  ['GET', '/openapi.json'],
  ['POST', '/dashboard/api/sign-in'],
  ['POST', '/dashboard/api/sign-out'],
  ['GET', '/dashboard/api/fleet'],
] as const;

/** Browser pages answer a dead link with an HTML page, not the API's error body. */
const HTML_PAGES = /^\/(watch\/[^/]*|v\/[^/]*)$/;

let t: InProcessApp;
let other: { key: string; uid: string };
/** Values the arbitraries draw from: real ids, keys and grants of both accounts. */
const real = { sidA: '', sidB: '', grantA: '', grantB: '', spareHash: '', viewer: '' };

/** The UTF-8 bytes of `s`, percent-encoded except the characters `keep` matches (any string). */
const percentEncode = (s: string, keep: RegExp) =>
  [...Buffer.from(s, 'utf8')]
    .map((b) =>
      keep.test(String.fromCharCode(b)) && b !== 0x2f && b !== 0x3f && b !== 0x23
        ? String.fromCharCode(b)
        : `%${b.toString(16).padStart(2, '0')}`,
    )
    .join('');
const json = (body: string): unknown => JSON.parse(body);

async function get(url: string, key: string): Promise<unknown> {
  const r = await t.call({ method: 'GET', url, auth: key });
  return r.statusCode === 200 ? json(r.body) : r.statusCode;
}

/** What each account can see; a refused request must leave all of it as it was. */
async function snapshot(requestKey: string | undefined): Promise<unknown> {
  const out: Record<string, unknown> = {};
  for (const [who, key] of [
    ['a', t.account.key],
    ['b', other.key],
  ] as const) {
    for (const path of ['/sessions', '/me', '/history', '/me/keys'])
      out[`${who} ${path}`] = await get(path, key);
    if (requestKey !== undefined && /^[A-Za-z0-9_-]{16,128}$/.test(requestKey))
      out[`${who} receipt`] = await get(`/sessions/requests/${requestKey}`, key);
  }
  return out;
}

/** Waits until no session is booting or cleaning up, so snapshots only differ by requests. */
async function settle(): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const lists = [await get('/sessions', t.account.key), await get('/sessions', other.key)];
    const moving = lists
      .flatMap((l) => (Array.isArray(l) ? (l as Array<{ state: string }>) : []))
      .some((s) => s.state === 'provisioning' || s.state === 'closing');
    if (!moving) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('sessions did not settle');
}

/** A ready session for account A (a fuzzed request may have ended the last one) and a spare key. */
async function ensureFixture(): Promise<void> {
  await settle();
  const list = (await get('/sessions', t.account.key)) as Array<{
    id: string;
    state: string;
    watch_url: string;
  }>;
  let ready = list.find((s) => s.state === 'ready');
  if (!ready) {
    const created = await t.call({ method: 'POST', url: '/sessions' });
    expect(created.statusCode, created.body).toBe(202);
    await settle();
    const id = (json(created.body) as { id: string }).id;
    ready = (await get(`/sessions/${id}`, t.account.key)) as { id: string; state: string; watch_url: string };
  }
  real.sidA = ready.id;
  real.grantA = new URL(ready.watch_url).searchParams.get('token')!;
  const keys = (await get('/me/keys', t.account.key)) as Array<{ key_hash: string; revoked: number | null }>;
  if (!keys.some((k) => k.key_hash === real.spareHash && k.revoked === null)) {
    const spare = json((await t.call({ method: 'POST', url: '/me/keys', payload: { label: 'spare' } })).body);
    real.spareHash = (spare as { key_hash: string }).key_hash;
  }
  const viewer = await t.call({ method: 'GET', url: `/sessions/${real.sidA}/owner-viewer` });
  if (viewer.statusCode === 200)
    real.viewer = new URL((json(viewer.body) as { url: string }).url).pathname.slice(3);
}

beforeAll(async () => {
  t = await buildTestApp({ clock: new ManualClock(), account: { sessionLimit: 3 } });
  const b = t.createAccount({ sessionLimit: 2 });
  other = { key: b.key, uid: b.uid };
  const created = await t.call({ method: 'POST', url: '/sessions', auth: other.key });
  real.sidB = (json(created.body) as { id: string }).id;
  await settle();
  const view = (await get(`/sessions/${real.sidB}`, other.key)) as { watch_url: string };
  real.grantB = new URL(view.watch_url).searchParams.get('token')!;
  await ensureFixture();
});
afterAll(() => t.close());

const text = (maxLength = 40) => fc.string({ unit: 'grapheme-ascii', maxLength });
const lazy = (pick: () => string) => fc.constant(null).map(pick);

// The caller's own ready session and key weigh more, so accepted requests are common too.
const id = fc.oneof(
  { arbitrary: lazy(() => real.sidA), weight: 6 },
  lazy(() => real.sidB),
  fc.stringMatching(/^ses_[A-Za-z0-9]{20}$/),
  text(),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer({ min: 190, max: 260 }).map((n) => 'x'.repeat(n)),
  lazy(() => real.spareHash),
  fc.stringMatching(/^[a-f0-9]{64}$/),
  lazy(() => real.viewer),
  fc.constantFrom('input.tap', 'nav.home', 'reboot', '..', '%zz', '%00'),
);

const credential = fc.oneof(
  fc.constant(null),
  { arbitrary: lazy(() => t.account.key), weight: 6 },
  lazy(() => other.key),
  lazy(() => real.grantA),
  lazy(() => real.grantB),
  lazy(() => real.grantA.slice(0, 10) + (real.grantA[10] === 'A' ? 'B' : 'A') + real.grantA.slice(11)),
  text().map((s) => `pck_${s}`),
  text().map((s) => `pvg_${s}`),
  text(),
);

const body = fc.oneof(
  fc.constant(undefined),
  fc.json({ maxDepth: 2 }),
  text(60),
  fc
    .record(
      {
        timeout_seconds: fc.oneof(fc.integer({ min: -5, max: 400_000_000_000 }), fc.double(), text(5)),
        profile_id: fc.oneof(text(), fc.integer()),
        provider: fc.oneof(fc.constant('shlut'), text()),
        label: fc.oneof(text(), fc.constant('')),
        x: fc.oneof(fc.integer({ min: -10, max: 5000 }), text(3)),
        y: fc.oneof(fc.integer({ min: -10, max: 5000 }), fc.constant(null)),
        capabilities: fc.object({ maxDepth: 1 }),
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
);

const request = fc.record({
  route: fc.constantFrom(...ROUTES),
  method: fc.option(fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'OPTIONS', 'HEAD'), { freq: 4 }),
  id,
  encode: fc.boolean(),
  credential,
  authScheme: fc.constantFrom('Bearer ', 'bearer  ', 'Basic ', ''),
  queryToken: fc.option(credential.filter((c) => c !== null)),
  wait: fc.option(fc.oneof(fc.integer({ min: -1, max: 2 }), text(3))),
  query: fc.option(fc.dictionary(fc.constantFrom('limit', 'cursor', 'x', 'token'), text(12), { maxKeys: 2 })),
  contentType: fc.option(
    fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/xml'),
  ),
  idempotencyKey: fc.option(fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{16,40}$/), text(20))),
  body,
});

describe('API fuzzing', () => {
  it('ROUTES names every route the server has', async () => {
    const doc = json((await t.call({ method: 'GET', url: '/openapi.json', auth: null })).body) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const served = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(served.sort()).toEqual(ROUTES.map(([m, p]) => `${m} ${p}`).sort());
  });

  it('no 5xx, the error body on every refusal, and no state change from a refused request', async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        await ensureFixture();
        const segment = percentEncode(r.id, r.encode ? /[A-Za-z0-9_.~-]/ : /[\x21-\x7e]/);
        const path = r.route[1].replace(/\{[a-z_]+\}/, segment);
        const params = new URLSearchParams(r.query ?? {});
        if (r.queryToken) params.set('token', r.queryToken);
        if (r.wait !== null) params.set('wait', String(r.wait));
        const url = params.size > 0 ? `${path}?${params}` : path;
        const method = r.method ?? r.route[0];
        const headers: Record<string, string> = {};
        if (r.credential !== null) headers.authorization = `${r.authScheme}${r.credential}`;
        if (r.contentType) headers['content-type'] = r.contentType;
        if (r.idempotencyKey !== null) headers['idempotency-key'] = r.idempotencyKey;

        const before = await snapshot(r.idempotencyKey ?? undefined);
        const res = await t.app.inject({
          method,
          url,
          headers,
          ...(r.body !== undefined && method !== 'GET' && method !== 'HEAD' ? { payload: r.body } : {}),
        });
        const what = `${method} ${url} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
        expect(res.statusCode, what).toBeLessThan(500);
        if (res.statusCode < 400) return;
        if (method !== 'HEAD') {
          const type = String(res.headers['content-type']);
          if (type.startsWith('text/html')) {
            expect(HTML_PAGES.test(path) && method === 'GET', what).toBe(true);
          } else {
            expect(type, what).toMatch(/^application\/json/);
            const error = json(res.body) as Record<string, unknown>;
            expect(typeof error.error, what).toBe('string');
            expect(typeof error.code, what).toBe('string');
          }
        }
        await settle();
        expect(await snapshot(r.idempotencyKey ?? undefined), what).toEqual(before);
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
    );
  }, 60_000);
});
