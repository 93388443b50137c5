/**
 * A device host's warm pool (`phonelease host --pool N`), started through the CLI: claimed
 * temporary sessions take warm phones (startup source `pool`, distinct phones), the next one
 * boots, the pool refills, the phones work through an API node and the host's own ADB
 * gateway, a host with warm phones is preferred to one that would cold-boot, and the pool's
 * phones stop with the host (emulator processes included).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHostCommand, runServerCommand, UsageError } from '../../server/cli.js';
import { connectAdb } from '../support/adb.js';
import { Deployment, type HostProcess } from '../support/deployment.js';
import { makeFakeSdk, type FakeSdk } from '../support/fake-sdk/index.js';
import { postgresMissing, sql, startPostgres, type PostgresCluster } from '../support/postgres.js';
import { processesMentioning } from '../support/processes.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the host pool tests: ${missing}`);

/** Waits until the host has published `warm` warm pooled phones with its heartbeat. */
async function waitWarm(d: Deployment, host: HostProcess, warm: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await sql<{ warm: number }>(d.store, 'SELECT warm FROM hosts WHERE id = $1', [
      host.line.host,
    ]);
    if (Number(row?.warm) === warm) return;
    if (Date.now() > deadline)
      throw new Error(`host ${host.line.host} has ${row?.warm} warm phones, not ${warm}\n${d.logs()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(missing !== null)('a device host with a warm pool', () => {
  let cluster: PostgresCluster;
  let d: Deployment;
  let pooled: HostProcess;
  let cold: HostProcess;

  beforeAll(async () => {
    cluster = await startPostgres();
    d = await Deployment.start(cluster, { nodes: 1 });
    pooled = await d.startHost(['--phones', '5', '--pool', '2', '--boot-ms', '1000']);
    // A second host without a pool, free to claim everything: the warm host must still win.
    cold = await d.startHost(['--phones', '5', '--boot-ms', '1000']);
  }, 120_000);
  afterAll(async () => {
    await d?.stop();
    await cluster?.stop();
  });

  it('hands warm phones to temporary sessions, boots the next, refills, and the phones work', async () => {
    await waitWarm(d, pooled, 2);
    const account = await d.account();
    const api = d.api(0, account.key);
    const create = () => api.post('/sessions', { body: { timeout_seconds: 120 } });
    const [a, b] = await Promise.all([create(), create()]);
    expect([a.status, b.status]).toEqual([202, 202]);
    const ready = await Promise.all([a, b].map((r) => api.waitFor(r.body.id, ['ready'])));
    for (const s of ready) expect(s.startup).toEqual({ source: 'pool' });
    const rows = await sql<{ host_id: string }>(d.store, 'SELECT host_id FROM sessions WHERE id = ANY($1)', [
      ready.map((s) => s.id),
    ]);
    expect(rows.map((r) => r.host_id)).toEqual([pooled.line.host, pooled.line.host]);
    expect(new Set(ready.map((s) => `${s.adb.host}:${s.adb.port}`)).size).toBe(1);

    // The pool is spent: the third boots, adopts a refill's boot, or (when a busy machine took
    // longer than a boot to get here) takes a refill that is already warm. Either way it gets
    // a phone of its own, which the marks below show.
    const third = await create();
    const thirdReady = await api.waitFor(third.body.id, ['ready']);
    expect(['cold', 'snapshot', 'pool']).toContain(thirdReady.startup.source);

    // The pool refills within the host's room (5 phones, 3 of them or fewer in use there).
    await waitWarm(d, pooled, 2);

    // A pooled phone works like any other: its frame through the API node, stock adb through
    // the host. Each session marks its phone, and finds no other session's mark: three phones.
    for (const s of [...ready, thirdReady]) {
      const frame = await api.get(`/sessions/${s.id}/frame.png`);
      expect(frame.status).toBe(200);
      expect(frame.raw.subarray(1, 4).toString()).toBe('PNG');
      const adb = await connectAdb(api, s.id);
      try {
        expect(await adb.adb('shell', 'ls', '/sdcard/')).not.toContain('pool-mark');
        await adb.adb('shell', 'touch', '/sdcard/pool-mark');
        expect(await adb.adb('shell', 'ls', '/sdcard/')).toContain('pool-mark');
      } finally {
        await adb.close();
      }
    }

    for (const s of [...ready, thirdReady]) await api.delete(`/sessions/${s.id}`);
    for (const s of [...ready, thirdReady]) await d.waitGone(api, s.id);
    const history = await api.get('/history');
    expect(history.body.map((h: { end_reason: string }) => h.end_reason)).toEqual([
      'released',
      'released',
      'released',
    ]);
  });

  it('a profile session takes a phone of its own, never a pooled one', async () => {
    await waitWarm(d, pooled, 2);
    const account = await d.account();
    const api = d.api(0, account.key);
    const created = await api.post('/sessions', {
      body: { timeout_seconds: 60, profile_id: account.profile_id },
    });
    expect(created.status).toBe(202);
    const ready = await api.waitFor(created.body.id, ['ready']);
    expect(ready.startup.source).not.toBe('pool');
    await api.delete(`/sessions/${ready.id}`);
    await d.waitGone(api, ready.id);
  });

  it('stops its pooled phones when it stops', async () => {
    await waitWarm(d, pooled, 2);
    expect(await pooled.stop('SIGTERM')).toBe(0);
    const [row] = await sql<{ state: string }>(d.store, 'SELECT state FROM hosts WHERE id = $1', [
      pooled.line.host,
    ]);
    expect(row?.state).toBe('stopped');
    // The cold host serves what comes next.
    const account = await d.account();
    const api = d.api(0, account.key);
    const created = await api.post('/sessions', { body: { timeout_seconds: 60 } });
    const ready = await api.waitFor(created.body.id, ['ready']);
    expect(ready.startup.source).not.toBe('pool');
    const [placed] = await sql<{ host_id: string }>(d.store, 'SELECT host_id FROM sessions WHERE id = $1', [
      ready.id,
    ]);
    expect(placed?.host_id).toBe(cold.line.host);
    await api.delete(`/sessions/${ready.id}`);
    await d.waitGone(api, ready.id);
  });
});

describe.skipIf(missing !== null)('a host whose every phone is pooled', () => {
  let cluster: PostgresCluster;
  let d: Deployment;
  let host: HostProcess;

  beforeAll(async () => {
    cluster = await startPostgres();
    d = await Deployment.start(cluster, { nodes: 1 });
    host = await d.startHost(['--phones', '2', '--pool', '2']);
  }, 120_000);
  afterAll(async () => {
    await d?.stop();
    await cluster?.stop();
  });

  it('serves as many sessions as it has phones: the pool gives way, never causes phones_busy', async () => {
    await waitWarm(d, host, 2);
    const account = await d.account();
    const api = d.api(0, account.key);
    const temporary = await api.post('/sessions', { body: { timeout_seconds: 60 } });
    expect(temporary.status).toBe(202);
    expect((await api.waitFor(temporary.body.id, ['ready'])).startup).toEqual({ source: 'pool' });
    // A profile phone needs a boot of its own, in the room a pooled phone held.
    const profile = await api.post('/sessions', {
      body: { timeout_seconds: 60, profile_id: account.profile_id },
    });
    expect(profile.status).toBe(202);
    const ready = await api.waitFor(profile.body.id, ['ready']);
    expect(ready.startup.source).not.toBe('pool');
    // The host holds no pooled phone beside its two sessions (one was stopped to make room).
    const health = (await (await fetch(`${host.line.url}/healthz`)).json()) as {
      phones: number;
      pool: { warm: number; warming: number };
    };
    expect(health).toMatchObject({ phones: 2, pool: { warm: 0, warming: 0 } });
    // Both phones are in sessions now: the next create is refused for capacity, not for the pool.
    const third = await api.post('/sessions', { body: { timeout_seconds: 60 } });
    expect(third.status).toBe(503);
    expect(third.body.code).toBe('phones_busy');
    for (const sid of [temporary.body.id as string, ready.id as string]) {
      await api.delete(`/sessions/${sid}`);
      await d.waitGone(api, sid);
    }
  });
});

describe.skipIf(missing !== null)('an emulator host with a warm pool', () => {
  let cluster: PostgresCluster;
  let d: Deployment;
  let sdk: FakeSdk;

  beforeAll(async () => {
    cluster = await startPostgres();
    sdk = await makeFakeSdk();
    await sdk.startAdbServer();
    // Every process finds the fake SDK, its AVD and its adb server as a user's would.
    d = await Deployment.start(cluster, {
      nodes: 1,
      env: { ...sdk.env, XDG_CACHE_HOME: join(sdk.root, 'cache') },
    });
  }, 120_000);
  afterAll(async () => {
    await d?.stop();
    await sdk?.close();
    await cluster?.stop();
  });

  /** The fake emulators running from this test's SDK. */
  const emulators = () =>
    processesMentioning(sdk.root).filter((p) => p.args.some((a) => a.endsWith('/emulator/emulator')));

  it('leaves no emulator running after SIGTERM: neither a session phone nor a pooled one', async () => {
    const host = await d.startHost(['--device', 'emulator', '--phones', '3', '--pool', '2']);
    await waitWarm(d, host, 2, 90_000);
    const account = await d.account();
    const api = d.api(0, account.key);
    const created = await api.post('/sessions', { body: { timeout_seconds: 120 } });
    const ready = await api.waitFor(created.body.id, ['ready'], 90_000);
    expect(ready.startup).toEqual({ source: 'pool' });
    // The session's emulator, and the pool's two (one of them still warming, perhaps).
    await expect.poll(() => emulators().length, { timeout: 30_000 }).toBe(3);

    expect(await host.stop('SIGTERM')).toBe(0);
    expect(emulators()).toEqual([]);
    // Its session went with the host, as any host's does when it stops.
    const [row] = await sql<{ end_reason: string }>(
      d.store,
      'SELECT end_reason FROM sessions WHERE id = $1',
      [ready.id],
    );
    expect(row?.end_reason).toBe('lost');
  }, 180_000);
});

describe('--pool on the nodes of a deployment', () => {
  // Refused before anything connects: no database is needed (nothing listens on port 1).
  const store = 'postgres://nobody@127.0.0.1:1/none';

  it('refuses a host pool larger than --phones, saying what to change', async () => {
    const cli = runHostCommand(['--store', store, '--phones', '2', '--pool', '3']);
    await expect(cli).rejects.toBeInstanceOf(UsageError);
    await expect(cli).rejects.toThrow(/--pool 3 is more than --phones 2.*lower --pool or raise --phones/);
  });

  it('refuses a pool on an API node that runs no phones of its own', async () => {
    const cli = runServerCommand(['--store', store, '--port', '0', '--pool', '2']);
    await expect(cli).rejects.toBeInstanceOf(UsageError);
    await expect(cli).rejects.toThrow(/phonelease host --pool 2/);
  });
});
