/**
 * Edge cases found in review: each test fails without its fix.
 */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openGateway } from '../../src/adb/gateway.js';
import { endAndConfirm } from '../../src/end-session.js';
import { startSession } from '../../src/lease/start.js';
import { PhoneAdb, PhoneSessionClient, RunLedger, ServerError, type FetchLike } from '../../src/index.js';
import type { AdbTunnel as AdbTunnelType } from '../../src/adb/tunnel.js';
import { silentLogger } from '../../src/util/log.js';
import { trackedServer } from '../support/tcp.js';
import { tempDir } from './helpers.js';
import { quietPort } from '../support/ports.js';

const BASE = 'http://phonelease.test';
const globalFetch: FetchLike = (url, init) => globalThis.fetch(url, init);
const client = (env: NodeJS.ProcessEnv = {}) =>
  new PhoneSessionClient({
    baseUrl: BASE,
    apiKey: 'pck_test',
    fetch: globalFetch,
    env,
    retry: { minDelayMs: 1, maxDelayMs: 20 },
  });

beforeAll(() => nock.disableNetConnect());
afterEach(() => nock.cleanAll());
afterAll(() => nock.enableNetConnect());

describe('client', () => {
  it('never retries a create whose idempotency key is empty (a retry could start a second phone)', async () => {
    const scope = nock(BASE).post('/sessions').reply(500, { error: 'boom', code: 'internal' });
    await expect(client().createSession({}, { idempotencyKey: '' })).rejects.toBeInstanceOf(ServerError);
    expect(scope.isDone()).toBe(true);
    expect(nock.pendingMocks()).toEqual([]);
  });

  it('redacts a long debug body before cutting it, so no secret prefix survives the cut', async () => {
    const secret = 'SECRETCODE0123456789abcdefghijklmnop';
    // Put the unlock code across the 2000-character cut of the debug line.
    const pad = 'x'.repeat(1985 - '{"pad":"","adb":{"code":"'.length);
    nock(BASE)
      .get('/sessions/ses_1')
      .reply(200, `{"pad":"${pad}","adb":{"code":"${secret}"}}`, { 'content-type': 'application/json' });
    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      await client({ DEBUG: 'phonelease:http' })
        .getSession('ses_1')
        .catch(() => undefined);
    } finally {
      process.stderr.write = write;
    }
    const out = lines.join('');
    expect(out).toContain('<- 200');
    expect(out).not.toContain(secret.slice(0, 5));
  });
});

describe('ending', () => {
  it('reports a DELETE that succeeded as cleanup_pending, not failed, when the confirmation cannot be read', async () => {
    nock(BASE).delete('/sessions/ses_1').reply(202, { released: false, cleanup_pending: true });
    nock(BASE).get('/sessions/requests/key_0123456789abcdef').times(5).replyWithError('socket hang up');
    const result = await endAndConfirm(
      client(),
      { sessionId: 'ses_1', requestKey: 'key_0123456789abcdef' },
      { confirmMs: 200 },
    );
    expect(result.outcome).toBe('cleanup_pending');
    expect(result.cleanupConfirmed).toBe(false);
  });

  it('keeps a lease whose end failed open in the ledger, for endLeftovers()', () => {
    const ledger = RunLedger.open({ dir: tempDir('phonelease-ledger-'), runId: 'review-run' });
    const at = new Date().toISOString();
    for (const [key, outcome] of [
      ['k_failed', 'failed'],
      ['k_unresolved', 'start_unresolved'],
      ['k_released', 'released'],
      ['k_pending', 'cleanup_pending'],
      ['k_start', 'start_failed'],
    ]) {
      ledger.append({ event: 'start', request_key: key!, base_url: BASE, pid: 1, at });
      ledger.append({ event: 'end', request_key: key!, session_id: null, outcome: outcome!, at });
    }
    expect(
      ledger
        .open()
        .map((l) => l.requestKey)
        .sort(),
    ).toEqual(['k_failed', 'k_pending', 'k_unresolved']);
  });
});

describe('start', () => {
  it('paces readiness polls in its last second instead of polling back to back', async () => {
    const session = { id: 'ses_slow', state: 'provisioning', location: 'booting', eta_seconds: 30 };
    nock(BASE).post('/sessions').reply(202, session);
    let polls = 0;
    nock(BASE)
      .get('/sessions/ses_slow')
      .query(true)
      .times(1000)
      .reply(() => {
        polls++;
        return [200, session];
      });
    nock(BASE).delete('/sessions/ses_slow').reply(200, { released: true, cleanup_pending: false });
    nock(BASE)
      .get(/\/sessions\/requests\/.*/)
      .reply(200, {
        id: 'ses_slow',
        request_key: 'x',
        provider: 'shlut',
        state: 'closing',
        cleanup_complete: true,
        cleanup_pending: false,
      });
    await expect(
      startSession({
        client: client(),
        body: {},
        requestKey: 'key_pacing_0123456789',
        budgetMs: 900,
        logger: silentLogger,
      }),
    ).rejects.toMatchObject({ name: 'ReadyTimeoutError' });
    // Paced at 100 ms or more, a 0.9 s budget allows about nine polls; back to back, hundreds.
    expect(polls).toBeGreaterThan(0);
    expect(polls).toBeLessThanOrEqual(15);
  });
});

describe('ADB gateway', () => {
  it('hands over bytes the phone sent right behind OK', async () => {
    const gw = await trackedServer((s) => s.once('data', () => s.write('OK\nHELLO')));
    try {
      const socket = await openGateway({ host: '127.0.0.1', port: gw.port, code: 'c0de' });
      // The socket comes back paused; a consumer (pipe(), the packet reader) resumes it.
      const first = await new Promise<string>((resolve) => {
        socket.once('data', (d: Buffer) => resolve(d.toString()));
        socket.resume();
      });
      expect(first).toBe('HELLO');
      socket.destroy();
    } finally {
      await gw.close();
    }
  });

  it('gives up on a phone that never answers the ADB handshake', async () => {
    const gw = await trackedServer((s) => s.once('data', () => s.write('OK\n')));
    try {
      await expect(
        PhoneAdb.connect({ host: '127.0.0.1', port: gw.port, code: 'c0de' }, { serial: 'x', timeoutMs: 300 }),
      ).rejects.toMatchObject({
        code: 'adb_failed',
      });
    } finally {
      await gw.close();
    }
  });
});

describe('stock adb', () => {
  it('connects two phones at once on an adb server that is not running yet', async () => {
    const { startTestServer } = await import('../support/server.js');
    const { AdbTunnel, adbConnect, runAdb } = await import('../../src/index.js');
    nock.enableNetConnect('127.0.0.1');
    const t = await startTestServer({ bootMs: 0 });
    const tunnels: AdbTunnelType[] = [];
    try {
      for (const _ of [0, 1]) {
        const s = (await t.api.post('/sessions')).body;
        await t.api.waitFor(s.id, ['ready']);
        tunnels.push(await AdbTunnel.open((await t.api.get(`/sessions/${s.id}/adb`)).body));
      }
      // Each round on a fresh adb server port, both connects at the same instant: both
      // find no server and race to start one.
      for (let round = 0; round < 3; round++) {
        const serverPort = await quietPort();
        try {
          await Promise.all(tunnels.map((tunnel) => adbConnect(tunnel.serial, { serverPort })));
          for (const tunnel of tunnels) {
            expect((await runAdb(['-s', tunnel.serial, 'get-state'], { serverPort })).stdout.trim()).toBe(
              'device',
            );
          }
        } finally {
          await runAdb(['kill-server'], { serverPort }).catch(() => undefined);
        }
      }
    } finally {
      for (const tunnel of tunnels) await tunnel.close();
      await t.close();
      nock.disableNetConnect();
    }
  }, 120_000);
});
