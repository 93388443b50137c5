/**
 * Access contract tests that need the server in this process: the frame cache under an
 * injected clock, a backend whose screen has no image yet, and a server on a wildcard
 * address. The rest of the access contract is in access.test.ts, which also runs against a
 * deployment.
 */
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock.js';
import { unlock } from '../support/adb-wire.js';
import { blankScreenBackend } from '../support/backends.js';
import { Api, startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let sid: string;
const clock = new ManualClock();

beforeAll(async () => {
  t = await startTestServer({ clock });
  sid = (await t.api.post('/sessions', { body: { timeout_seconds: 600 } })).body.id;
  await t.api.waitFor(sid, ['ready']);
});
afterAll(() => t.close());

describe('frame.png', () => {
  it('captures at most once per 2 s per session and serves the cached image in between', async () => {
    await clock.advance(2_500);
    const first = await t.api.get(`/sessions/${sid}/frame.png`);
    // Change the screen: open the first app on the home screen.
    const apps = (await t.api.post(`/sessions/${sid}/ops/apps.list`)).body;
    expect(apps.length).toBeGreaterThan(0);
    // The Settings icon: the screen now shows another app.
    await t.api.post(`/sessions/${sid}/ops/input.tap`, { body: { x: 102, y: 360 } });
    await clock.advance(1_000);
    const cached = await t.api.get(`/sessions/${sid}/frame.png`);
    expect(cached.raw.equals(first.raw)).toBe(true);
    await clock.advance(1_100);
    const fresh = await t.api.get(`/sessions/${sid}/frame.png`);
    expect(fresh.status).toBe(200);
    PNG.sync.read(fresh.raw);
    expect(fresh.raw.equals(first.raw)).toBe(false);
    await t.api.post(`/sessions/${sid}/ops/nav.home`);
  });
});

describe('frame.png before the first frame', () => {
  it('answers 503 no_frame while the phone has no image yet, then the frame', async () => {
    const { backend, ready } = blankScreenBackend();
    const own = await startTestServer({ backend });
    try {
      const s = (await own.api.post('/sessions')).body;
      await own.api.waitFor(s.id, ['ready']);
      const early = await own.api.get(`/sessions/${s.id}/frame.png`);
      expect(early.status).toBe(503);
      expect(early.body).toMatchObject({ code: 'no_frame' });
      ready();
      const later = await own.api.get(`/sessions/${s.id}/frame.png`);
      expect(later.status).toBe(200);
      expect(later.headers['content-type']).toBe('image/png');
    } finally {
      await own.close();
    }
  });
});

describe('a server on a wildcard address', () => {
  it('hands out URLs and an ADB host that name the address the client used', async () => {
    const wide = await startTestServer({ host: '0.0.0.0', bootMs: 0 });
    try {
      // 127.0.0.2 reaches 0.0.0.0 like another machine's address would.
      const port = new URL(wide.url).port;
      const api = new Api(`http://127.0.0.2:${port}`, wide.account.key);
      const s = (await api.post('/sessions')).body;
      expect(s.watch_url.startsWith(`http://127.0.0.2:${port}/watch/`)).toBe(true);
      const ready = await api.waitFor(s.id, ['ready']);
      expect(ready.adb.host).toBe('127.0.0.2');
      const viewer = (await api.get(`/sessions/${s.id}/owner-viewer`)).body;
      expect(viewer.url.startsWith(`http://127.0.0.2:${port}/v/`)).toBe(true);
      // The gateway answers there too.
      const gate = await unlock(ready.adb.port, ready.adb.code, ready.adb.host);
      expect(gate.line).toBe('OK');
      gate.socket.destroy();
      // A Host header that is not a plain host[:port] falls back to the listening URL.
      const odd = await new Api(wide.url, wide.account.key).get(`/sessions/${s.id}`, {
        headers: { host: 'under_score.example' },
      });
      expect(odd.body.watch_url.startsWith(`${wide.url}/watch/`)).toBe(true);
    } finally {
      await wide.close();
    }
  });
});
