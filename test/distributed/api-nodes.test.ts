/**
 * API nodes over one PostgreSQL store, started through the CLI: the contract holds across
 * nodes (idempotency, session_limit, the shared capacity of live hosts, history, BOLA), and
 * a session admitted on one node becomes ready on a device host and is ADB-reachable through
 * that host's own gateway with stock adb.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAdb } from '../support/adb.js';
import { Deployment } from '../support/deployment.js';
import { Api, newKey } from '../support/server.js';
import { postgresMissing, startPostgres, type PostgresCluster } from '../support/postgres.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the API node tests: ${missing}`);

describe.skipIf(missing !== null)('API nodes and device hosts on PostgreSQL', () => {
  let cluster: PostgresCluster;
  let d: Deployment;

  beforeAll(async () => {
    cluster = await startPostgres();
    // Two API nodes without phones, two hosts of 2 phones each: a capacity of 4.
    d = await Deployment.start(cluster, {
      nodes: 2,
      hosts: [
        ['--phones', '2'],
        ['--phones', '2'],
      ],
    });
  }, 120_000);
  afterAll(async () => {
    await d?.stop();
    await cluster?.stop();
  });

  it('20 same-key creates spread over both nodes make one session', async () => {
    const account = await d.account();
    const key = newKey();
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        d
          .api(i, account.key)
          .post('/sessions', { body: { timeout_seconds: 60 }, headers: { 'idempotency-key': key } }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(202));
    const ids = new Set(replies.map((r) => r.body.id as string));
    expect(ids.size).toBe(1);
    const [sid] = [...ids];
    for (const i of [0, 1]) {
      const list = await d.api(i, account.key).get('/sessions');
      expect(list.body.map((s: { id: string }) => s.id)).toEqual([sid]);
    }
    const receipt = await d.api(1, account.key).get(`/sessions/requests/${key}`);
    expect(receipt.body).toMatchObject({ id: sid, request_key: key, cleanup_complete: false });
    // Same key, another body: refused on either node.
    const reused = await d.api(1, account.key).post('/sessions', {
      body: { timeout_seconds: 61 },
      headers: { 'idempotency-key': key },
    });
    expect(reused.status).toBe(409);
    expect(reused.body.code).toBe('idempotency_key_reused');
    await d.api(0, account.key).delete(`/sessions/${sid}`);
    await d.api(1, account.key).waitGone(sid!);
    const done = await d.api(0, account.key).post('/sessions', {
      body: { timeout_seconds: 60 },
      headers: { 'idempotency-key': key },
    });
    expect(done.status).toBe(410);
    expect(done.body.code).toBe('request_completed');
  });

  it('a session admitted on one node is ready on a host, and stock adb reaches it through that host', async () => {
    const account = await d.account();
    const key = newKey();
    const create = (i: number) =>
      d
        .api(i, account.key)
        .post('/sessions', { body: { timeout_seconds: 120 }, headers: { 'idempotency-key': key } });
    const created = await create(0);
    expect(created.status).toBe(202);
    expect(created.body.state).toBe('provisioning');
    expect(['queued', 'booting']).toContain(created.body.location);
    expect(Number.isInteger(created.body.eta_seconds)).toBe(true);
    const ready = await d.api(1, account.key).waitFor(created.body.id, ['ready']);
    // A replay on the other node answers the ready session as a read does, gateway included.
    const replay = await create(1);
    expect(replay.body).toMatchObject({ id: ready.id, state: 'ready', adb: ready.adb });
    expect(ready.device).toMatch(/Android/);
    const hostGateways = await Promise.all(d.hosts.map(async (h) => new URL(h.line.url).hostname));
    expect(hostGateways).toContain(ready.adb.host);

    // The frame and an operation are served by the host that holds the phone, through either node.
    const frame = await d.api(0, account.key).get(`/sessions/${ready.id}/frame.png`);
    expect(frame.status).toBe(200);
    expect(frame.headers['content-type']).toBe('image/png');
    expect(frame.raw.subarray(1, 4).toString()).toBe('PNG');
    const bounds = await d.api(1, account.key).post(`/sessions/${ready.id}/ops/screen.bounds`);
    expect(bounds.body).toEqual(ready.screen);
    const outside = await d.api(1, account.key).post(`/sessions/${ready.id}/ops/input.tap`, {
      body: { x: ready.screen.w + 5, y: 1 },
    });
    expect(outside.status).toBe(400);

    // Stock adb, through a tunnel to the gateway the adb object names: the host's own.
    const adb = await connectAdb(d.api(0, account.key), ready.id);
    try {
      expect((await adb.adb('shell', 'echo', 'through-the-host')).trim()).toBe('through-the-host');
    } finally {
      await adb.close();
    }

    // BOLA: another account sees nothing of it, on either node.
    const stranger = await d.account();
    for (const i of [0, 1]) {
      expect((await d.api(i, stranger.key).get(`/sessions/${ready.id}`)).status).toBe(404);
      expect((await d.api(i, stranger.key).get(`/sessions/${ready.id}/frame.png`)).status).toBe(404);
      expect((await d.api(i, stranger.key).delete(`/sessions/${ready.id}`)).status).toBe(404);
    }
    // The watch_url grant reads the session on the other node too (one shared secret).
    const grant = new URL(ready.watch_url).searchParams.get('token')!;
    const viaGrant = await d.api(1, account.key).get(`/sessions/${ready.id}?token=${grant}`);
    expect(viaGrant.status).toBe(200);
    expect(viaGrant.body).not.toHaveProperty('adb');

    const end = await d.api(1, account.key).delete(`/sessions/${ready.id}`);
    expect([200, 202]).toContain(end.status);
    await d.api(0, account.key).waitGone(ready.id);
    const history = await d.api(0, account.key).get('/history');
    expect(history.body[0]).toMatchObject({
      sid: ready.id,
      end_reason: 'released',
      ready: ready.ready ?? expect.any(Number),
    });
  });

  it('cleans up sessions ended at every point of their boot, whichever node ends them', async () => {
    const account = await d.account();
    // Ended at once or a little later, so the end lands while queued, while a host claims
    // it, while it boots, or just as it becomes ready; 4 at a time (the deployment's phones).
    const ids: string[] = [];
    for (let round = 0; round < 6; round++) {
      const batch = await Promise.all(
        [0, 1, 2, 3].map(async (i) => {
          const r = await d.api(i, account.key).post('/sessions', { body: { timeout_seconds: 60 } });
          expect(r.status).toBe(202);
          await new Promise((res) => setTimeout(res, (round * 4 + i) * 4));
          const end = await d.api(i + 1, account.key).delete(`/sessions/${r.body.id}`);
          expect([200, 202]).toContain(end.status);
          return r.body.id as string;
        }),
      );
      for (const id of batch) await d.waitGone(d.api(0, account.key), id);
      ids.push(...batch);
    }
    const history = (await d.api(1, account.key).get('/history')).body as Array<{
      sid: string;
      end_reason: string;
    }>;
    for (const id of ids) expect(history.find((h) => h.sid === id)?.end_reason).toBe('released');
  });

  it('enforces the account session_limit across nodes', async () => {
    const account = await d.account(['--billing-mode', 'disabled', '--session-limit', '1']);
    const replies = await Promise.all(
      [0, 1, 0, 1].map((i) => d.api(i, account.key).post('/sessions', { body: { timeout_seconds: 30 } })),
    );
    const admitted = replies.filter((r) => r.status === 202);
    expect(admitted).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 202)) {
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ code: 'session_limit', session_limit: 1 });
    }
    const me = await d.api(1, account.key).get('/me');
    expect(me.body).toMatchObject({ active_session_count: 1, available_session_slots: 0 });
    const end = await d.api(1, account.key).delete(`/sessions/${admitted[0]!.body.id}`);
    expect([200, 202], JSON.stringify(end.body)).toContain(end.status);
    await d
      .api(0, account.key)
      .waitGone(admitted[0]!.body.id)
      .catch((err: unknown) => {
        throw new Error(`${String(err)}\n${d.logs()}`);
      });
  });

  it('answers 503 phones_busy with Retry-After once the phones of every live host are taken', async () => {
    const accounts = [await d.account(), await d.account()];
    // 4 phones over 2 hosts; 8 creates from two accounts race over both nodes.
    const tries = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const owner = accounts[i % 2]!;
        return { owner, r: await d.api(i, owner.key).post('/sessions', { body: { timeout_seconds: 60 } }) };
      }),
    );
    const admitted = tries.filter((t) => t.r.status === 202);
    const busy = tries.filter((t) => t.r.status === 503);
    expect(admitted).toHaveLength(4);
    expect(busy).toHaveLength(4);
    for (const { r } of busy) {
      expect(r.body.code).toBe('phones_busy');
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(r.body.retry_after_seconds).toBe(Number(r.headers['retry-after']));
    }
    // Every admitted session gets a phone, and the two hosts share them.
    const ready = await Promise.all(
      admitted.map((t, i) => d.api(i, t.owner.key).waitFor(t.r.body.id, ['ready'])),
    );
    expect(new Set(ready.map((s) => s.adb.port)).size).toBe(2);

    // A freed phone is admitted again.
    const [first, ...rest] = admitted;
    await d.api(0, first!.owner.key).delete(`/sessions/${first!.r.body.id}`);
    await d.api(1, first!.owner.key).waitGone(first!.r.body.id);
    const again = await d.api(1, first!.owner.key).post('/sessions', { body: { timeout_seconds: 60 } });
    expect(again.status).toBe(202);
    for (const t of [...rest, { owner: first!.owner, r: again }]) {
      await d.api(0, t.owner.key).delete(`/sessions/${t.r.body.id}`);
    }
  });

  it('a node on a wildcard address names the address the client used, and only when its Host header is a plain host[:port]', async () => {
    const wide = await d.startNode(['--host', '0.0.0.0']);
    const owner = await d.account();
    // 127.0.0.2 reaches 0.0.0.0 like another machine's address would.
    const port = new URL(wide.url).port;
    const api = new Api(`http://127.0.0.2:${port}`, owner.key);
    const s = (await api.post('/sessions', { body: { timeout_seconds: 60 } })).body;
    expect(s.watch_url.startsWith(`http://127.0.0.2:${port}/watch/`)).toBe(true);
    // Any other Host header never reaches a URL handed out: the node's own URL stands there.
    for (const host of ['under_score.example', 'evil.example:80@other', `127.0.0.2:${port}/x?`]) {
      const odd = await new Api(wide.url, owner.key).get(`/sessions/${s.id}`, { headers: { host } });
      expect(odd.body.watch_url.startsWith(`${wide.url}/watch/`)).toBe(true);
    }
    await api.delete(`/sessions/${s.id}`);
  });
});
