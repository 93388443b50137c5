/**
 * The warm pool over a real server and real virtual phones: pooled phones are handed to new
 * temporary sessions ready at once, never twice, refilled, never given to profile sessions,
 * never the cause of phones_busy, and drained on close. The pool is watched through
 * GET /metrics, which is itself checked with a strict Prometheus text parser.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runServerCommand, UsageError } from '../../server/cli.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import type { DeviceBackend } from '../../server/devices/types.js';
import { startServer } from '../../server/main.js';
import { delegatePhone, wrapBackend } from '../support/backends.js';
import { startServerProcess } from '../support/cli.js';
import { poolSettled, scrape } from '../support/pool.js';
import { sampleValue } from '../support/prometheus.js';
import { Api, serverPerTest, type TestServer } from '../support/server.js';

const server = serverPerTest();

/** Virtual phones numbered in boot order (the number is in the label), remembering which run. */
function numberedPhones(bootMs: number): {
  backend: DeviceBackend;
  running: Set<string>;
  /** Each phone's ADB port (opened as it boots, so that the drain must close it). */
  adbPorts: Array<Promise<number>>;
} {
  const running = new Set<string>();
  const adbPorts: Array<Promise<number>> = [];
  let n = 0;
  const backend = wrapBackend(createVirtualBackend({ bootMs }), (phone) => {
    const label = `Phone #${++n}`;
    running.add(label);
    adbPorts.push(phone.adbEndpoint().then((a) => a.port));
    return delegatePhone(phone, {
      label,
      async shutdown(options) {
        await phone.shutdown(options);
        running.delete(label);
      },
    });
  });
  return { backend, running, adbPorts };
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

/**
 * Creates a temporary session that a warm phone serves: the 202 says provisioning, as the
 * contract has every new session, with nothing left to wait for; the next read finds it
 * ready from the pool. Resolves with that read.
 */
async function createFromPool(api: Api) {
  const r = await api.post('/sessions');
  expect(r.status).toBe(202);
  expect(r.body).toMatchObject({ state: 'provisioning', location: 'booting', eta_seconds: 0, device: null });
  const read = await api.get(`/sessions/${r.body.id}`);
  expect(read.body).toMatchObject({ state: 'ready', startup: { source: 'pool' } });
  expect(read.body.adb).toMatchObject({ code: expect.stringMatching(/^pau_/) });
  return read.body;
}

describe('the warm pool', () => {
  it('hands ready phones to temporary sessions, never the same phone twice, and refills', async () => {
    // Boots long enough that the third create surely comes while the replacements boot.
    const phones = numberedPhones(1000);
    const t = await server({ backend: phones.backend, phones: 6, pool: 2, bootSlots: 2, metrics: true });
    await poolSettled(t, 2);

    const a = await createFromPool(t.api);
    const b = await createFromPool(t.api);
    expect(a.device).not.toBe(b.device);

    // The pool is empty and refilling: the next session adopts a warming phone's boot.
    const c = await t.api.post('/sessions');
    expect(c.body).toMatchObject({ state: 'provisioning', location: 'booting' });
    // Booting already, with an estimate; how many seconds depends on how fast this machine
    // boots right now (a moving average), so the figure itself is not asserted.
    expect(c.body.eta_seconds).toEqual(expect.any(Number));
    const cReady = await t.api.waitFor(c.body.id, ['ready']);
    expect(cReady.startup).toEqual({ source: 'cold' });

    // Refilled: a later create gets a pooled phone again, one no session had.
    await poolSettled(t, 2);
    const d = await createFromPool(t.api);
    const devices = [a, b, d].map((r) => r.device).concat(cReady.device);
    expect(new Set(devices).size).toBe(4);

    // The phone works like any other.
    const frame = await t.api.post(`/sessions/${d.id}/ops/screen.capture`);
    expect(frame.status).toBe(200);
    expect(frame.raw.subarray(1, 4).toString()).toBe('PNG');
  });

  it('never gives a pooled phone to a profile session, and never refuses a create for the pool', async () => {
    const phones = numberedPhones(200);
    // Every phone of the server is in the pool.
    const t = await server({ backend: phones.backend, phones: 2, pool: 2, metrics: true });
    await poolSettled(t, 2);
    const pooled = new Set(phones.running);

    const p = await t.api.post('/sessions', { body: { profile_id: t.account.profile_id } });
    expect(p.status).toBe(202);
    expect(p.body.state).toBe('provisioning');
    const ready = await t.api.waitFor(p.body.id, ['ready']);
    expect(ready.startup).toEqual({ source: 'cold' });
    expect(pooled.has(ready.device)).toBe(false);

    // The profile phone took a pooled phone's place; the one left is handed out at once.
    const temp = await createFromPool(t.api);
    expect(pooled.has(temp.device)).toBe(true);
    // Now the server's two phones are sessions'.
    const busy = await t.api.post('/sessions');
    expect(busy.status).toBe(503);
    expect(busy.body.code).toBe('phones_busy');
    expect(phones.running.size).toBe(2);

    const m = await scrape(t);
    expect(sampleValue(m, 'phonelease_admission_refusals_total', { code: 'phones_busy' })).toBe(1);
    expect(sampleValue(m, 'phonelease_phone_starts_total', { source: 'pool' })).toBe(1);
    expect(sampleValue(m, 'phonelease_phone_starts_total', { source: 'cold' })).toBe(1);
  });

  it('is drained on close: no phone is left running', async () => {
    const phones = numberedPhones(100);
    const s = await startServer({ backend: phones.backend, phones: 4, pool: 3, log: 'warn', metrics: true });
    const t = { api: new Api(s.url, null) } as TestServer;
    await poolSettled(t, 3);
    const api = new Api(s.url, s.createAccount({ billingMode: 'disabled' }).key);
    await createFromPool(api);
    // One phone in a session, three pooled (one of them still booting its replacement).
    await s.close();
    expect(phones.running.size).toBe(0);
    for (const port of phones.adbPorts) expect(await refused(await port)).toBe(true);
  });

  it('refuses a pool larger than --phones, saying what to change', async () => {
    await expect(startServer({ phones: 2, pool: 3, log: 'silent' })).rejects.toThrow(
      /pool 3 is more than phones 2.*lower the pool or raise phones/,
    );
    const cli = runServerCommand(['--port', '0', '--phones', '2', '--pool', '3']);
    await expect(cli).rejects.toBeInstanceOf(UsageError);
    await expect(cli).rejects.toThrow(/--pool 3 is more than --phones 2.*lower --pool or raise --phones/);
  });
});

describe('GET /metrics', () => {
  it('serves the Prometheus text format with the expected series, without an API key', async () => {
    const t = await server({ bootMs: 50, phones: 3, pool: 1, metrics: true });
    await poolSettled(t, 1);
    const pooled = await t.api.post('/sessions');
    const booted = await t.api.post('/sessions', { body: { profile_id: t.account.profile_id } });
    await t.api.waitFor(booted.body.id, ['ready']);
    const key = 'k-metrics-aaaaaaaaaaaaaaaa';
    const keyed = await t.api.post('/sessions', { headers: { 'idempotency-key': key } });
    expect(keyed.status).toBe(202);
    expect((await t.api.post('/sessions', { headers: { 'idempotency-key': key } })).status).toBe(202);
    expect((await t.api.post('/sessions')).body.code).toBe('phones_busy');
    await t.api.waitFor(keyed.body.id, ['ready']);
    await t.api.delete(`/sessions/${pooled.body.id}`);
    const m = await scrape(t);
    expect(m.get('phonelease_admissions_total')?.type).toBe('counter');
    expect(m.get('phonelease_boot_duration_seconds')?.type).toBe('histogram');
    expect(m.get('phonelease_lease_to_ready_seconds')?.type).toBe('histogram');
    expect(m.get('phonelease_sessions')?.type).toBe('gauge');
    const v = (name: string, labels: Record<string, string> = {}) => sampleValue(m, name, labels);
    expect(v('phonelease_admissions_total', { outcome: 'admitted' })).toBe(3);
    expect(v('phonelease_admissions_total', { outcome: 'replayed' })).toBe(1);
    expect(v('phonelease_admissions_total', { outcome: 'refused' })).toBe(1);
    expect(v('phonelease_admission_refusals_total', { code: 'phones_busy' })).toBe(1);
    // The first create took the pooled phone; the keyed one took the refill or its boot.
    const fromPool = v('phonelease_phone_starts_total', { source: 'pool' })!;
    expect(fromPool).toBeGreaterThanOrEqual(1);
    expect(fromPool + v('phonelease_phone_starts_total', { source: 'cold' })!).toBe(3);
    expect(v('phonelease_phone_starts_total', { source: 'snapshot' })).toBe(0);
    expect(v('phonelease_lease_to_ready_seconds_count', { source: 'pool' })).toBe(fromPool);
    // A pooled handout is ready within milliseconds, well inside the 50 ms bucket.
    expect(v('phonelease_lease_to_ready_seconds_bucket', { source: 'pool', le: '0.05' })).toBe(fromPool);
    // Boots: the first pooled phone and at least the profile phone (plus refills).
    expect(
      v('phonelease_boot_duration_seconds_count', { source: 'cold', purpose: 'pool' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      v('phonelease_boot_duration_seconds_count', { source: 'cold', purpose: 'session' }),
    ).toBeGreaterThanOrEqual(1);
    expect(v('phonelease_sessions', { state: 'ready' })).toBe(2);
    expect(v('phonelease_sessions', { state: 'queued' })).toBe(0);
    expect(v('phonelease_pool_target')).toBe(1);
    expect(v('phonelease_phones_capacity')).toBe(3);
    // Nothing per account or session in any label.
    const text = (await t.api.as(null).get('/metrics')).raw.toString('utf8');
    expect(text).not.toContain(t.account.uid);
    expect(text).not.toMatch(/ses_|pck_|pau_|pvg_/);
  });

  it('is served by `phonelease server --metrics`, with the pool of --pool', async () => {
    const data = mkdtempSync(join(tmpdir(), 'phonelease-metrics-'));
    const server = await startServerProcess(['--data', data, '--pool', '2', '--phones', '3', '--metrics']);
    try {
      const t = { api: new Api(server.url, null) } as TestServer;
      await poolSettled(t, 2);
      const m = await scrape(t);
      expect(sampleValue(m, 'phonelease_pool_target')).toBe(2);
      expect(sampleValue(m, 'phonelease_phones_capacity')).toBe(3);
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0);
      rmSync(data, { recursive: true, force: true });
    }
  });

  it('is not served without --metrics', async () => {
    const t = await server({ bootMs: 0 });
    const r = await t.api.get('/metrics');
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('not_found');
  });
});
