import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A_CNXN, closed, hostCnxn, readPacket, unlock } from '../support/adb-wire.js';
import { useTargets, type Target } from '../support/target.js';

// What needs the server in this process (an injected clock, a custom backend, a wildcard
// listening address) is in access-in-process.test.ts.
const targets = useTargets();
let t: Target;
let sid: string;
let grant: string;

beforeAll(async () => {
  t = await targets.start({ dashboardOrigin: 'https://dash.example.com' });
  const s = (await t.api.post('/sessions', { body: { timeout_seconds: 600 } })).body;
  sid = s.id;
  grant = new URL(s.watch_url).searchParams.get('token')!;
  await t.api.waitFor(sid, ['ready']);
});
afterAll(() => t.close());

describe('frame.png', () => {
  it('returns a PNG of the screen, private and not cached', async () => {
    const r = await t.api.get(`/sessions/${sid}/frame.png`);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('image/png');
    expect(r.headers['cache-control']).toBe('private, no-store');
    const png = PNG.sync.read(r.raw);
    const session = (await t.api.get(`/sessions/${sid}`)).body;
    expect([png.width, png.height]).toEqual([session.screen.w, session.screen.h]);
  });

  it('is 409 while the session is not ready', async () => {
    // A phone that takes half a minute to boot: the session stays provisioning meanwhile.
    const slow = await targets.perTest({ bootMs: 30_000 });
    const booting = (await slow.api.post('/sessions')).body;
    const r = await slow.api.get(`/sessions/${booting.id}/frame.png`);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: 'session_not_ready', state: 'provisioning', id: booting.id });
    for (const path of ['owner-viewer', 'viewer', 'adb'])
      expect((await slow.api.get(`/sessions/${booting.id}/${path}`)).status).toBe(409);
    await slow.api.delete(`/sessions/${booting.id}`);
  });
});

describe('view grants', () => {
  it('read their own session, its frame and its viewer, by header or query; never the adb object', async () => {
    const byQuery = await t.api.get(`/sessions/${sid}?token=${grant}`, { auth: null });
    expect(byQuery.status).toBe(200);
    expect(byQuery.body.id).toBe(sid);
    expect(byQuery.body).not.toHaveProperty('adb');
    const byHeader = await t.api.get(`/sessions/${sid}`, { auth: grant });
    expect(byHeader.status).toBe(200);
    expect(byHeader.body).not.toHaveProperty('adb');
    expect(
      (await t.api.get(`/sessions/${sid}/frame.png?token=${grant}`, { auth: null })).headers['content-type'],
    ).toBe('image/png');
    const viewer = await t.api.get(`/sessions/${sid}/viewer?token=${grant}`, { auth: null });
    expect(viewer.status).toBe(200);
    // An opaque token in one URL-safe path segment (a deployment's is signed, in base64url).
    expect(viewer.body.url).toMatch(/\/v\/[A-Za-z0-9_-]+$/);
  });

  it('cannot call owner-only endpoints', async () => {
    for (const [method, path] of [
      ['GET', `/sessions/${sid}/owner-viewer`],
      ['GET', `/sessions/${sid}/adb`],
      ['DELETE', `/sessions/${sid}/adb`],
      ['DELETE', `/sessions/${sid}`],
      ['GET', '/sessions'],
      ['GET', '/me'],
      ['POST', `/sessions/${sid}/ops/nav.home`],
    ] as const) {
      const r = await t.api.call(method, path, { auth: grant });
      expect(r.status, path).toBe(403);
      expect(r.body.code).toBe('forbidden');
    }
    // The same grant in the query is the same credential: 403, not "no credential" (401).
    for (const path of [`/sessions/${sid}/owner-viewer`, `/sessions/${sid}/adb`, '/me']) {
      const r = await t.api.get(`${path}?token=${grant}`, { auth: null });
      expect(r.status, path).toBe(403);
      expect(r.body.code).toBe('forbidden');
    }
    expect((await t.api.get(`/sessions/${sid}`)).body.state).toBe('ready');
    expect((await t.api.get(`/sessions/${sid}/adb`)).body.enabled).toBe(true);
  });

  it('do not open another session', async () => {
    const other = (await t.api.post('/sessions')).body;
    const r = await t.api.get(`/sessions/${other.id}?token=${grant}`, { auth: null });
    expect(r.status).toBe(404);
    expect((await t.api.get(`/sessions/${other.id}/frame.png`, { auth: grant })).status).toBe(404);
    await t.api.delete(`/sessions/${other.id}`);
  });

  it('are 401 when forged, by header, by query and on owner-only endpoints', async () => {
    const forged = grant.slice(0, 10) + (grant[10] === 'A' ? 'B' : 'A') + grant.slice(11);
    for (const r of [
      await t.api.get(`/sessions/${sid}`, { auth: forged }),
      await t.api.get(`/sessions/${sid}?token=${forged}`, { auth: null }),
      await t.api.get(`/sessions/${sid}/frame.png?token=pvg_garbage`, { auth: null }),
      await t.api.get('/me', { auth: forged }),
      await t.api.delete(`/sessions/${sid}`, { auth: forged }),
    ]) {
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('unauthenticated');
      expect(r.raw.toString()).not.toContain(grant.slice(4, 20));
    }
    expect((await t.api.get(`/sessions/${sid}`)).body.state).toBe('ready');
  });

  it('refuse account keys in URLs', async () => {
    const r = await t.api.get(`/sessions/${sid}?token=${t.account.key}`, { auth: null });
    expect(r.status).toBe(401);
    expect(r.raw.toString()).not.toContain(t.account.key);
  });
});

describe('credentials come first', () => {
  it('a missing or bad credential is 401 whatever is wrong with the path, query or body', async () => {
    for (const r of [
      await t.api.get(`/sessions/${'x'.repeat(150)}`, { auth: null }),
      await t.api.get(`/sessions/${sid}?wait=abc`, { auth: null }),
      await t.api.get('/sessions/requests/not%20a%20key', { auth: 'pck_unknown' }),
      await t.api.post('/sessions', {
        rawBody: '{not json',
        auth: 'pck_unknown',
        headers: { 'content-type': 'application/json' },
      }),
      await t.api.post('/sessions', { body: { capabilities: {} }, auth: null }),
    ]) {
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('unauthenticated');
    }
  });

  it('URLs the router cannot take get the error body without the URL echoed', async () => {
    const long = await t.api.get(`/sessions/${'y'.repeat(5000)}`);
    expect(long.status).toBe(414);
    // Its own code: the registry gives every code one status (invalid_request is 400).
    expect(long.body.code).toBe('uri_too_long');
    expect(long.raw.toString()).not.toContain('yyyy');
    const bad = await t.api.get('/sessions/%zz');
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: expect.any(String), code: 'invalid_request' });
  });

  it('an id no session can have is 404 for the owner, like any unknown session', async () => {
    for (const length of [150, 250, 4000]) {
      const id = 'x'.repeat(length);
      const r = await t.api.get(`/sessions/${id}`);
      expect(r.status, `${length} characters`).toBe(404);
      expect(r.body.code).toBe('not_found');
      expect((await t.api.delete(`/sessions/${id}`)).status).toBe(404);
      // And without a credential, 401 like any other request.
      expect((await t.api.get(`/sessions/${id}`, { auth: null })).status).toBe(401);
    }
    const r = await t.api.get(`/sessions/${'x'.repeat(150)}`);
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('not_found');
  });
});

describe('viewer capabilities', () => {
  it('owner-viewer and viewer give expiring, private URLs to pages with restrictive headers', async () => {
    const owner = await t.api.get(`/sessions/${sid}/owner-viewer`);
    expect(owner.status).toBe(200);
    expect(owner.headers['cache-control']).toBe('private, no-store');
    const session = (await t.api.get(`/sessions/${sid}`)).body;
    expect(owner.body.expires_at).toBeLessThanOrEqual(session.expires_at);
    expect(owner.body.expires_at).toBeGreaterThan(Math.floor(Date.now() / 1000));
    const viewer = await t.api.get(`/sessions/${sid}/viewer`);
    expect(viewer.body.url).not.toBe(owner.body.url);
    const page = await t.api.get(new URL(owner.body.url).pathname, { auth: null });
    expect(page.status).toBe(200);
    expect(page.headers['cache-control']).toBe('private, no-store');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['content-security-policy']).toContain(
      "frame-ancestors 'self' https://dash.example.com",
    );
  });

  it('the watch page needs the right grant', async () => {
    const ok = await t.api.get(`/watch/${sid}?token=${grant}`, { auth: null });
    expect(ok.status).toBe(200);
    expect(ok.raw.toString()).toContain('frame.png');
    expect((await t.api.get(`/watch/${sid}?token=pvg_wrong`, { auth: null })).status).toBe(404);
  });
});

describe('phone operations', () => {
  it('bounds, apps, tap validation and unknown ops', async () => {
    const bounds = await t.api.post(`/sessions/${sid}/ops/screen.bounds`);
    const session = (await t.api.get(`/sessions/${sid}`)).body;
    expect(bounds.body).toEqual(session.screen);
    const apps = await t.api.post(`/sessions/${sid}/ops/apps.list`);
    for (const a of apps.body) expect(a).toEqual({ package: expect.any(String), label: expect.any(String) });
    expect((await t.api.post(`/sessions/${sid}/ops/input.tap`, { body: { x: -1, y: 5 } })).status).toBe(400);
    expect((await t.api.post(`/sessions/${sid}/ops/input.tap`, { body: { x: 1 } })).status).toBe(400);
    expect((await t.api.post(`/sessions/${sid}/ops/input.tap`, { body: { x: 99999, y: 1 } })).status).toBe(
      400,
    );
    expect((await t.api.post(`/sessions/${sid}/ops/input.tap`, { body: { x: 10, y: 10 } })).body).toEqual({
      ok: true,
    });
    const capture = await t.api.post(`/sessions/${sid}/ops/screen.capture`);
    expect(capture.headers['content-type']).toBe('image/png');
    expect((await t.api.post(`/sessions/${sid}/ops/reboot`)).status).toBe(404);
  });
});

describe('ADB access and the gateway', () => {
  it('unlocks with the code and relays raw ADB bytes to the phone', async () => {
    const adb = await t.api.get(`/sessions/${sid}/adb`);
    expect(adb.status).toBe(200);
    expect(adb.body).toMatchObject({
      enabled: true,
      transport: 'adb',
      host: '127.0.0.1',
      port: expect.any(Number),
      code: expect.any(String),
    });
    expect(adb.headers['cache-control']).toBe('private, no-store');
    const { socket, line, rest } = await unlock(adb.body.port, adb.body.code);
    expect(line).toBe('OK');
    socket.write(hostCnxn());
    const reply = await readPacket(socket, rest);
    expect(reply.command).toBe(A_CNXN);
    expect(reply.payload.toString()).toMatch(/^device::.*ro\.product\.model=/);
    socket.destroy();
  });

  it('denies wrong codes', async () => {
    const adb = (await t.api.get(`/sessions/${sid}/adb`)).body;
    const { line } = await unlock(adb.port, adb.code.slice(0, -1) + (adb.code.endsWith('a') ? 'b' : 'a'));
    expect(line).toBe('DENIED');
  });

  it('revoking stops the code and cuts open relays, without ending the phone', async () => {
    const s = (await t.api.post('/sessions')).body;
    await t.api.waitFor(s.id, ['ready']);
    const adb = (await t.api.get(`/sessions/${s.id}/adb`)).body;
    const open = await unlock(adb.port, adb.code);
    expect(open.line).toBe('OK');
    const r = await t.api.delete(`/sessions/${s.id}/adb`);
    expect(r.body).toEqual({ revoked: true });
    await closed(open.socket);
    expect((await unlock(adb.port, adb.code)).line).toBe('DENIED');
    expect((await t.api.get(`/sessions/${s.id}/adb`)).body).toEqual({ enabled: false });
    const after = (await t.api.get(`/sessions/${s.id}`)).body;
    expect(after.state).toBe('ready');
    expect(after).not.toHaveProperty('adb');
    // Closing the session: the code stays dead and ADB revoke of a removed session is 404.
    await t.api.delete(`/sessions/${s.id}`);
    expect((await t.api.delete(`/sessions/${s.id}/adb`)).status).toBe(404);
  });

  it('codes stop working when the session closes', async () => {
    const s = (await t.api.post('/sessions')).body;
    await t.api.waitFor(s.id, ['ready']);
    const adb = (await t.api.get(`/sessions/${s.id}/adb`)).body;
    const open = await unlock(adb.port, adb.code);
    await t.api.delete(`/sessions/${s.id}`);
    await closed(open.socket);
    expect((await unlock(adb.port, adb.code)).line).toBe('DENIED');
  });
});
