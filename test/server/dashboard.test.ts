/**
 * The dashboard's server side over HTTP, on a real server on port 0: signing in with a
 * one-time link or an API key, the session token (a JWT) as an owner credential on the API,
 * signing out, the fleet for operators, the pages and assets with their headers, and no
 * secret of any of it in the server's log.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock.js';
import { createLogger } from '../../server/log.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus.js';
import { Api, serverPerTest, startTestServer, type TestServer } from '../support/server.js';

/** The token of a sign-in link (its fragment). */
const linkToken = (url: string) => new URL(url).hash.replace(/^#token=/, '');

async function signIn(t: { url: string }, body: unknown) {
  return new Api(t.url, null).post('/dashboard/api/sign-in', { body });
}

const lines: string[] = [];
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({
    metrics: true,
    account: { email: 'qa@example.com', name: 'QA' },
    log: createLogger({ level: 'debug', write: (l) => lines.push(l) }),
  });
});
afterAll(() => t.close());

describe('sign-in', () => {
  it('a link signs in once; a reuse is refused with sign_in_link_used', async () => {
    const link = await t.server.signInLink(t.account.uid);
    expect(link).toMatch(new RegExp(`^${t.url}/dashboard/sign-in#token=psl_[A-Za-z0-9]{43}$`));
    const first = await signIn(t, { link: linkToken(link) });
    expect(first.status).toBe(200);
    expect(first.headers['cache-control']).toBe('private, no-store');
    expect(first.body).toMatchObject({
      account: { uid: t.account.uid, email: 'qa@example.com', name: 'QA', operator: false },
    });
    expect(first.body.expires_at - Math.floor(Date.now() / 1000)).toBeGreaterThan(12 * 3600 - 60);
    const again = await signIn(t, { link: linkToken(link) });
    expect(again.status).toBe(401);
    expect(again.body.code).toBe('sign_in_link_used');
    expect(again.body.error).toMatch(/phonelease dashboard --email/);
  });

  it('an unknown link, a bad key and a malformed body are refused and sign nobody in', async () => {
    const unknown = await signIn(t, { link: 'psl_' + 'x'.repeat(43) });
    expect(unknown.status).toBe(401);
    expect(unknown.body.code).toBe('unauthenticated');
    const badKey = await signIn(t, { key: 'pck_' + 'y'.repeat(40) });
    expect(badKey.status).toBe(401);
    expect(badKey.body.code).toBe('unauthenticated');
    for (const body of [{}, { link: 'a', key: 'b' }, { link: 5 }, { token: 'x' }, []]) {
      const r = await signIn(t, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body).toMatchObject({ code: 'invalid_request', error: expect.stringContaining('"link"') });
    }
  });

  it('a key signs in; the token is an owner credential on the whole API', async () => {
    const { body } = await signIn(t, { key: t.account.key });
    const jwt = new Api(t.url, body.token as string);
    expect((await jwt.get('/me')).body).toMatchObject({ uid: t.account.uid, operator: false });

    const created = await jwt.post('/sessions', { body: { timeout_seconds: 120 } });
    expect(created.status).toBe(202);
    const sid = created.body.id as string;
    expect((await jwt.get('/sessions')).body.map((s: { id: string }) => s.id)).toContain(sid);
    await jwt.waitFor(sid, ['ready']);
    expect((await jwt.get(`/sessions/${sid}/frame.png`)).headers['content-type']).toBe('image/png');
    expect((await jwt.get(`/sessions/${sid}/adb`)).body.code).toMatch(/^pau_/);
    const inUrl = await jwt.get(`/sessions/${sid}?token=${body.token as string}`, { auth: null });
    expect(inUrl.status).toBe(401);
    expect(inUrl.body.error).toMatch(/Never put a dashboard session token in a URL/);

    const key = await jwt.post('/me/keys', { body: { label: 'from the dashboard' } });
    expect(key.status).toBe(200);
    expect((await new Api(t.url, key.body.key as string).get('/me')).status).toBe(200);
    expect((await jwt.get('/me/keys')).body.map((k: { label: string }) => k.label)).toContain(
      'from the dashboard',
    );
    expect((await jwt.delete(`/me/keys/${key.body.key_hash}`)).body).toEqual({ revoked: true });

    expect((await jwt.delete(`/sessions/${sid}`)).status).toBe(200);
    await jwt.waitGone(sid);
  });

  it("another account's session answers 404 to a token, as to a key", async () => {
    const other = t.other();
    const sid = (await other.api.post('/sessions', { body: { timeout_seconds: 60 } })).body.id as string;
    const { body } = await signIn(t, { key: t.account.key });
    const jwt = new Api(t.url, body.token as string);
    for (const [method, path] of [
      ['GET', `/sessions/${sid}`],
      ['GET', `/sessions/${sid}/frame.png`],
      ['GET', `/sessions/${sid}/adb`],
      ['DELETE', `/sessions/${sid}`],
    ] as const) {
      const viaJwt = await jwt.call(method, path);
      const viaKey = await t.api.call(method, path);
      expect(viaJwt.status, path).toBe(404);
      expect(viaJwt.body, path).toEqual(viaKey.body);
    }
    expect((await other.api.get(`/sessions/${sid}`)).status).toBe(200);
    await other.api.delete(`/sessions/${sid}`);
  });

  it('sign-out ends the token everywhere; forged, altered and alg-none tokens answer 401', async () => {
    const { body } = await signIn(t, { key: t.account.key });
    const token = body.token as string;
    const jwt = new Api(t.url, token);
    expect((await jwt.get('/me')).status).toBe(200);

    const [header, payload, mac] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const other = t.other().account.uid;
    const forged = [
      // Another account's uid under the same signature.
      `${header}.${b64({ ...claims, sub: other })}.${mac}`,
      // alg none, with and without a signature.
      `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`,
      `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.${mac}`,
      // Signed with a key of the forger's choosing.
      `${header}.${payload}.${createHmac('sha256', 'guess').update(`${header}.${payload}`).digest('base64url')}`,
      // A later expiry under the old signature.
      `${header}.${b64({ ...claims, exp: (claims.exp as number) + 3600 })}.${mac}`,
    ];
    for (const f of forged) {
      const r = await jwt.as(f).get('/me');
      expect(r.status, f).toBe(401);
      expect(r.body.code).toBe('unauthenticated');
    }

    const out = await jwt.post('/dashboard/api/sign-out');
    expect(out.status).toBe(204);
    for (const path of ['/me', '/sessions', '/me/keys', '/history/page']) {
      const r = await jwt.get(path);
      expect(r.status, path).toBe(401);
      expect(r.body.error).toMatch(/sign in again/);
    }
    expect((await jwt.post('/dashboard/api/sign-out')).status).toBe(401);
    // A key is not a dashboard session: it is revoked through /me/keys instead.
    expect((await t.api.post('/dashboard/api/sign-out')).status).toBe(400);
  });
});

describe('tokens and links expire', () => {
  const fresh = serverPerTest();

  it('a link older than 10 minutes is refused with sign_in_link_expired; a token after 12 hours', async () => {
    const clock = new ManualClock();
    const s = await fresh({ clock });
    const old = await s.server.signInLink(s.account.uid);
    const token = (await signIn(s, { link: linkToken(await s.server.signInLink(s.account.uid)) })).body
      .token as string;
    await clock.advance(10 * 60 * 1000 + 1000);
    // A newer link (which tidies old ones away) leaves the old one saying why it fails.
    await s.server.signInLink(s.account.uid);
    const expired = await signIn(s, { link: linkToken(old) });
    expect(expired.status).toBe(401);
    expect(expired.body.code).toBe('sign_in_link_expired');
    expect(expired.body.error).toMatch(/10 minutes.*phonelease dashboard/);

    const jwt = new Api(s.url, token);
    await clock.advance(12 * 3600 * 1000 - 10 * 60 * 1000 - 2000);
    expect((await jwt.get('/me')).status).toBe(200);
    await clock.advance(1000);
    expect((await jwt.get('/me')).status).toBe(401);
  });
});

describe('fleet', () => {
  it('answers operators with the figures /metrics serves, and 404 to anyone else', async () => {
    const operator = t.other({ operator: true });
    const token = (await signIn(t, { key: operator.account.key })).body.token as string;
    expect((await signIn(t, { key: operator.account.key })).body.account.operator).toBe(true);
    const sid = (await operator.api.post('/sessions', { body: { timeout_seconds: 60 } })).body.id as string;
    await operator.api.waitFor(sid, ['ready']);

    const fleet = await new Api(t.url, token).get('/dashboard/api/fleet');
    expect(fleet.status).toBe(200);
    const metrics = parsePrometheusText((await t.api.get('/metrics', { auth: null })).raw.toString());
    const gauge = (name: string, labels: Record<string, string> = {}) => sampleValue(metrics, name, labels);
    for (const state of ['queued', 'booting', 'ready', 'error', 'closing'])
      expect(fleet.body.phones[state], state).toBe(gauge('phonelease_sessions', { state }));
    expect(fleet.body.phones.ready).toBeGreaterThanOrEqual(1);
    expect(fleet.body.capacity).toBe(gauge('phonelease_phones_capacity'));
    expect(fleet.body.pool).toEqual({
      target: gauge('phonelease_pool_target'),
      ready: gauge('phonelease_pool_phones', { state: 'ready' }),
      booting: gauge('phonelease_pool_phones', { state: 'booting' }),
    });
    expect(fleet.body.queue).toMatchObject({ queued: fleet.body.phones.queued, boot_slots: 4 });
    for (const source of ['cold', 'snapshot', 'pool']) {
      const count = gauge('phonelease_lease_to_ready_seconds_count', { source });
      expect(fleet.body.boot_times[source].count, source).toBe(count ?? 0);
    }
    expect(fleet.body.boot_times.cold.count).toBeGreaterThanOrEqual(1);
    expect(fleet.body.boot_times.cold.p50_ms).toBeGreaterThan(0);
    expect(fleet.body.boot_times.cold.p95_ms).toBeGreaterThanOrEqual(fleet.body.boot_times.cold.p50_ms);
    expect(fleet.body.hosts).toBeNull();

    // Not an operator: the fleet does not exist, whichever credential asks.
    const plain = (await signIn(t, { key: t.account.key })).body.token as string;
    for (const api of [new Api(t.url, plain), t.api]) {
      const r = await api.get('/dashboard/api/fleet');
      expect(r.status).toBe(404);
      expect(r.body.code).toBe('not_found');
    }
    expect((await t.api.get('/dashboard/api/fleet', { auth: null })).status).toBe(401);
    await operator.api.delete(`/sessions/${sid}`);
  });
});

describe('pages and assets', () => {
  const CSP = /script-src 'self';/;

  it('every page path answers the shell with private, nosniff, no-referrer and a CSP without inline script', async () => {
    const api = new Api(t.url, null);
    const redirect = await api.get('/dashboard');
    expect(redirect.status).toBe(302);
    expect(redirect.headers.location).toBe('/dashboard/sessions');
    const shell = await api.get('/dashboard/sessions');
    for (const path of [
      '/dashboard/sign-in',
      '/dashboard/sessions',
      '/dashboard/sessions/ses_abc',
      '/dashboard/history',
      '/dashboard/keys',
      '/dashboard/profile',
      '/dashboard/account',
      '/dashboard/fleet',
    ]) {
      const r = await api.get(path);
      expect(r.status, path).toBe(200);
      expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(r.raw.equals(shell.raw)).toBe(true);
    }
    // Every answer under /dashboard, refusals and redirects included.
    const answers = [
      redirect,
      shell,
      await api.get('/dashboard/nope'),
      await api.get('/dashboard/api/nope'),
      await api.get('/dashboard/assets/missing.js'),
      await api.post('/dashboard/api/sign-in', { body: { key: 'pck_bad' } }),
      await api.get('/dashboard/api/fleet'),
    ];
    for (const r of answers) {
      expect(r.headers['cache-control'], String(r.status)).toBe('private, no-store');
      expect(r.headers['x-content-type-options']).toBe('nosniff');
      expect(r.headers['referrer-policy']).toBe('no-referrer');
      const csp = String(r.headers['content-security-policy']);
      expect(csp).toMatch(CSP);
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
    }
    const [, , page404, api404] = answers;
    expect(page404!.status).toBe(404);
    expect(page404!.raw.toString()).toContain('Page not found');
    expect(api404!.status).toBe(404);
    expect(api404!.body.code).toBe('not_found');
  });

  it('serves the files of its folder with their types, and nothing outside it', async () => {
    const api = new Api(t.url, null);
    const index = await api.get('/dashboard/assets/index.html');
    expect(index.status).toBe(200);
    for (const path of [
      '/dashboard/assets/../../package.json',
      '/dashboard/assets/%2e%2e/%2e%2e/package.json',
      '/dashboard/assets/..%2f..%2fpackage.json',
      '/dashboard/assets/.hidden',
      '/dashboard/assets/',
      '/dashboard/assets//etc/passwd',
    ]) {
      const r = await api.get(path);
      expect(r.status, path).toBe(404);
      expect(r.raw.toString(), path).not.toContain('"name": "phonelease"');
    }
  });

  it("the viewers may be framed by the dashboard's origin", async () => {
    const sid = (await t.api.post('/sessions', { body: { timeout_seconds: 60 } })).body.id as string;
    await t.api.waitFor(sid, ['ready']);
    const viewer = (await t.api.get(`/sessions/${sid}/owner-viewer`)).body.url as string;
    const page = await new Api(viewer.replace(/\/v\/.*/, ''), null).get(new URL(viewer).pathname);
    expect(page.status).toBe(200);
    expect(String(page.headers['content-security-policy'])).toMatch(/frame-ancestors 'self';/);
    await t.api.delete(`/sessions/${sid}`);
  });
});

describe('the log', () => {
  it('holds no link token, session token or key after signing in, using the token and signing out', async () => {
    const link = await t.server.signInLink(t.account.uid);
    const { body } = await signIn(t, { link: linkToken(link) });
    const jwt = new Api(t.url, body.token as string);
    await jwt.get('/me');
    await jwt.get('/sessions?token=' + (body.token as string));
    await signIn(t, { link: linkToken(link) });
    await jwt.post('/dashboard/api/sign-out');
    await jwt.get('/me');
    const log = lines.join('\n');
    expect(log).toContain('/dashboard/api/sign-out');
    for (const secret of [linkToken(link), body.token as string, t.account.key]) {
      expect(log).not.toContain(secret);
      expect(log).not.toContain(secret.slice(4));
    }
    expect(log).not.toContain((body.token as string).split('.')[2]);
  });
});
