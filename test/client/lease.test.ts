/**
 * leasePhone() against the real server: waiting for a free phone, recovering lost and
 * recorded creates through the receipt, failing fast, ending idempotently.
 */
import http from 'node:http';
import type net from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  ConfigurationError,
  ConnectionError,
  Lease,
  LeaseEndedError,
  PhoneSessionClient,
  ProfileRunningError,
  ReadyTimeoutError,
  RequestCompletedError,
  RunLedger,
  SessionFailedError,
  SessionLimitError,
  leasePhone,
  newIdempotencyKey,
} from '../../src/index.js';
import { serverPerTest } from '../support/server.js';
import { CutProxy, eventually, leaseOptions, liveIds, recordingLogger, tempDir } from './helpers.js';
import { quietPort } from '../support/ports.js';

const server = serverPerTest();

describe('leasePhone', () => {
  it('starts a ready phone, reports progress and ends it with cleanup confirmed', async () => {
    const t = await server({ bootMs: 200 });
    const opts = leaseOptions(t);
    const phone = await leasePhone(opts);
    expect(phone).toBeInstanceOf(Lease);
    expect(phone.session.state).toBe('ready');
    expect(phone.session.adb?.code).toEqual(expect.any(String));
    expect(phone.startStats).toMatchObject({ createAttempts: 1, busyWaits: 0, recoveredFromReceipt: false });
    expect(await liveIds(t)).toEqual([phone.id]);
    // The server's deadline backs up the client: the start budget plus use plus a margin.
    expect(phone.session.timeout_seconds).toBe(180 + 900 + 30);
    expect(
      opts.logger.lines.some((l) => new RegExp(`^info ${phone.id}: .*ready in [\\d.]+m?s$`).test(l)),
    ).toBe(true);

    const ended = await phone.end();
    expect(ended).toEqual({
      sessionId: phone.id,
      outcome: 'released',
      cleanupConfirmed: true,
      handedToReaper: false,
    });
    expect(await liveIds(t)).toEqual([]);
    const receipt = (await t.api.get(`/sessions/requests/${phone.requestKey}`)).body;
    expect(receipt).toMatchObject({ id: phone.id, cleanup_complete: true });
  });

  it('never shows secrets when a lease is inspected or serialised', async () => {
    const t = await server();
    const phone = await leasePhone(leaseOptions(t));
    const { inspect } = await import('node:util');
    for (const text of [
      inspect(phone),
      JSON.stringify(phone),
      String(inspect(new PhoneSessionClient({ baseUrl: t.url, apiKey: t.account.key }))),
    ]) {
      expect(text).not.toContain(t.account.key);
      expect(text).not.toContain(phone.session.adb!.code);
      expect(text).not.toContain('pvg_');
    }
    await phone.end();
  });

  it('end() is idempotent and never throws, also on a session already ended elsewhere', async () => {
    const t = await server();
    const a = await leasePhone(leaseOptions(t));
    const first = a.end();
    const second = a.end();
    expect(second).toBe(first);
    expect((await first).outcome).toBe('released');
    expect(await a.end()).toEqual(await first);
    await expect(a.shell('true')).rejects.toBeInstanceOf(LeaseEndedError);

    const b = await leasePhone(leaseOptions(t));
    expect((await t.api.delete(`/sessions/${b.id}`)).status).toBe(200);
    const ended = await b.end();
    expect(ended).toMatchObject({ sessionId: b.id, outcome: 'already_ended', cleanupConfirmed: true });
  });

  it('end() reports a failure instead of throwing when the service is gone', async () => {
    const t = await server();
    const opts = leaseOptions(t, { retry: { maxRetries: 1, budgetMs: 500 }, endRetryMs: 500 });
    const phone = await leasePhone(opts);
    await t.close();
    const ended = await phone.end();
    expect(ended.outcome).toBe('failed');
    expect(ended.cleanupConfirmed).toBe(false);
    // No reaper in these tests: nothing took the session over.
    expect(ended.handedToReaper).toBe(false);
    const warning = opts.logger.lines.find((l) => l.startsWith(`warn could not end session ${phone.id}`));
    expect(warning).toMatch(/within 500ms: .*ECONNREFUSED.*; it ends at its deadline at the latest/);
    // The cause's own period and the warning's do not meet.
    expect(warning).not.toMatch(/\.\./);
  });

  it('works with await using: the phone ends when the scope exits', async () => {
    const t = await server();
    let id = '';
    {
      await using phone = await leasePhone(leaseOptions(t));
      id = phone.id;
      expect(await liveIds(t)).toEqual([id]);
    }
    expect(id).toMatch(/^ses_/);
    expect(await liveIds(t)).toEqual([]);
    expect((await t.api.get('/history')).body[0]).toMatchObject({ sid: id, end_reason: 'released' });
  });

  it('waits for a free phone when all phones are busy and gets it when the first lease ends', async () => {
    const t = await server({ phones: 1, bootMs: 50 });
    const first = await leasePhone(leaseOptions(t));
    const opts = leaseOptions(t);
    const second = leasePhone(opts);
    // The second start is refused with phones_busy and waits; end the first once it did.
    await eventually(
      async () => opts.logger.lines,
      (lines) => lines.some((l) => l.includes('all phones are busy')),
    );
    expect(await liveIds(t)).toEqual([first.id]);
    await first.end();
    const phone = await second;
    expect(phone.id).not.toBe(first.id);
    expect(phone.startStats.busyWaits).toBeGreaterThanOrEqual(1);
    expect(phone.startStats.createAttempts).toBe(phone.startStats.busyWaits + 1);
    expect(await liveIds(t)).toEqual([phone.id]);
    await phone.end();
  });

  it('resolves a create whose answer was lost through its receipt: one session, not two', async () => {
    const t = await server();
    const proxy = await CutProxy.start(t.url);
    try {
      proxy.cutNextCreates(1);
      const opts = leaseOptions(t, { baseUrl: proxy.url });
      const phone = await leasePhone(opts);
      expect(proxy.cut).toBe(1);
      expect(phone.startStats).toMatchObject({ createAttempts: 1, recoveredFromReceipt: true });
      expect(phone.startStats.receiptLookups).toBeGreaterThanOrEqual(1);
      expect(await liveIds(t)).toEqual([phone.id]);
      expect((await t.api.get('/me')).body.active_session_count).toBe(1);
      expect(opts.logger.lines.some((l) => l.includes(`its receipt names session ${phone.id}`))).toBe(true);
      await phone.end();
      expect(await liveIds(t)).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('waits out create_request_recorded (runtime paused) and gets the recorded session', async () => {
    const t = await server();
    t.server.runtime.pause();
    const opts = leaseOptions(t);
    const starting = leasePhone(opts);
    // The create is recorded (a provisioning session exists) while the runtime is unavailable.
    const [sid] = await eventually(
      () => liveIds(t),
      (ids) => ids.length === 1,
    );
    await eventually(
      async () => opts.logger.lines,
      (lines) => lines.some((l) => l.includes('recorded while')),
    );
    t.server.runtime.resume();
    const phone = await starting;
    expect(phone.id).toBe(sid);
    expect(phone.session.state).toBe('ready');
    expect(phone.startStats.recoveredFromReceipt).toBe(true);
    expect(await liveIds(t)).toEqual([sid]);
    await phone.end();
  });

  it('fails with SessionLimitError carrying the counts when the account is full', async () => {
    const t = await server({ account: { sessionLimit: 1 } });
    const first = await leasePhone(leaseOptions(t));
    const error = await leasePhone(leaseOptions(t)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionLimitError);
    expect(error).toMatchObject({
      status: 409,
      code: 'session_limit',
      sessionLimit: 1,
      activeSessionCount: 1,
      availableSessionSlots: 0,
      retryable: false,
    });
    expect((error as SessionLimitError).requestId).toMatch(/^req_/);
    await first.end();
  });

  it('fails with RequestCompletedError (410) when a finished start is replayed with its key', async () => {
    const t = await server();
    const key = newIdempotencyKey();
    const first = await leasePhone(leaseOptions(t, { idempotencyKey: key }));
    await first.end();
    const error = await leasePhone(leaseOptions(t, { idempotencyKey: key })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestCompletedError);
    expect(error).toMatchObject({
      status: 410,
      code: 'request_completed',
      sessionId: first.id,
      requestKey: key,
    });
    expect(await liveIds(t)).toEqual([]);
  });

  it('replays a live start with the same key: the same session, not a second one', async () => {
    const t = await server();
    const key = newIdempotencyKey();
    const a = await leasePhone(leaseOptions(t, { idempotencyKey: key }));
    const b = await leasePhone(leaseOptions(t, { idempotencyKey: key }));
    expect(b.id).toBe(a.id);
    expect(await liveIds(t)).toEqual([a.id]);
    await a.end();
    expect((await b.end()).outcome).toBe('already_ended');
  });

  it('fails fast with SessionFailedError when the phone cannot start, and ends the session', async () => {
    const saved = process.env.ANDROID_HOME;
    process.env.ANDROID_HOME = '/nonexistent-sdk';
    try {
      const t = await server({ device: 'emulator' });
      const error = await leasePhone(leaseOptions(t, { startTimeoutMs: 60_000 })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SessionFailedError);
      const failed = error as SessionFailedError;
      expect(failed.failure.code).toBe('emulator_unavailable');
      expect(failed.message).toMatch(/--device virtual/);
      expect(await liveIds(t)).toEqual([]);
      expect((await t.api.get('/history')).body[0]).toMatchObject({
        sid: failed.sessionId,
        end_reason: 'failed',
      });
    } finally {
      if (saved === undefined) delete process.env.ANDROID_HOME;
      else process.env.ANDROID_HOME = saved;
    }
  });

  it('gives up with ReadyTimeoutError past its start budget and ends the session', async () => {
    const t = await server({ bootMs: 10_000 });
    const error = await leasePhone(leaseOptions(t, { startTimeoutMs: 1500 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReadyTimeoutError);
    expect(error).toMatchObject({ code: 'ready_timeout', lastState: 'provisioning' });
    expect(await liveIds(t)).toEqual([]);
  });

  it('cancels with an AbortSignal and ends what it started', async () => {
    const t = await server({ bootMs: 10_000 });
    const controller = new AbortController();
    const opts = leaseOptions(t, { signal: controller.signal });
    const starting = leasePhone(opts);
    // Wait on the lease's own progress, not by polling the API: a poll competing for the
    // connection pool would make undici open a socket the aborted request never uses, and
    // the server's close then waits for that socket to time out.
    await eventually(
      async () => opts.logger.lines,
      (lines) => lines.some((l) => l.endsWith(': booting')),
    );
    controller.abort(new Error('test is over'));
    await expect(starting).rejects.toThrow('test is over');
    expect(await liveIds(t)).toEqual([]);
  });

  it('gives 20 concurrent leases 20 distinct phones and ends them all', async () => {
    const t = await server({ phones: 20, bootMs: 100 });
    const phones = await Promise.all(Array.from({ length: 20 }, () => leasePhone(leaseOptions(t))));
    expect(new Set(phones.map((p) => p.id)).size).toBe(20);
    expect(new Set(phones.map((p) => p.session.adb!.code)).size).toBe(20);
    expect((await liveIds(t)).sort()).toEqual(phones.map((p) => p.id).sort());
    const ended = await Promise.all(phones.map((p) => p.end()));
    expect(ended.every((e) => e.outcome === 'released' && e.cleanupConfirmed)).toBe(true);
    expect(await liveIds(t)).toEqual([]);
  });

  it('starts the account profile phone with profile: true', async () => {
    const t = await server();
    const phone = await leasePhone(leaseOptions(t, { profile: true }));
    expect(phone.session.profile_id).toBe(t.account.profile_id);
    expect((await t.api.get('/me')).body.profile.session).toBe(phone.id);
    await phone.end();
  });
});

describe('Lease operations through the service', () => {
  it('service screenshot, tap, apps and the owner viewer', async () => {
    const t = await server();
    await using phone = await leasePhone(leaseOptions(t));
    const shot = await phone.serviceScreenshot();
    expect(shot.contentType).toBe('image/png');
    expect(shot.data.subarray(1, 4).toString()).toBe('PNG');
    await phone.tap(10, 10);
    const apps = await phone.apps();
    expect(apps.length).toBeGreaterThan(0);
    expect(apps[0]).toEqual({ package: expect.any(String), label: expect.any(String) });
    const viewer = await phone.ownerViewer();
    expect(viewer.url.startsWith(`${t.url}/v/`)).toBe(true);
    const refreshed = await phone.refresh();
    expect(refreshed.id).toBe(phone.id);
  });

  it('keeps the deprecated snapshot() and home() working for 0.x users', async () => {
    const t = await server();
    await using phone = await leasePhone(leaseOptions(t));
    await phone.shell('am start -n com.phonelease.login/.LoginActivity');
    const front = async () => (await phone.shell('dumpsys activity activities')).stdout;
    expect(await front()).toMatch(/mResumedActivity: .*com\.phonelease\.login/);
    await phone.home();
    expect(await front()).toMatch(/mResumedActivity: .*com\.android\.launcher3/);
    const shot = await phone.snapshot();
    expect(shot.data.subarray(1, 4).toString()).toBe('PNG');
  });

  it("keeps the UI engine out of the Lease's type and the package's exports", async () => {
    const t = await server();
    await using phone = await leasePhone(leaseOptions(t));
    // @ts-expect-error -- the fixtures reach the engine through uiEngineOf(); tests use locators.
    expect(phone.ui).toBeUndefined();
    expect(Object.keys(await import('../../src/index.js'))).not.toContain('uiEngineOf');
    // The engine is there behind the locators all the same.
    await phone.launch('com.phonelease.login');
    expect(await phone.getById('username').isVisible()).toBe(true);
  });
});

describe('a service that is not there', () => {
  it('gives up soon on an address where nothing listens, saying so, and leaves nothing open', async () => {
    const port = await quietPort();
    const ledgerDir = tempDir('phonelease-ledger-');
    const logger = recordingLogger();
    const failure = await leasePhone({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: 'pck_unreachable_test_key',
      logger,
      ledger: { dir: ledgerDir },
      reaper: false,
      handleSignals: false,
      startTimeoutMs: 60_000,
    }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ConnectionError);
    expect((failure as ConnectionError).message).toMatch(/ECONNREFUSED.*start gave up/s);
    expect((failure as ConnectionError).requestMayHaveArrived).toBe(false);
    expect(logger.lines.some((l) => l.startsWith('info cannot reach the phone-session service'))).toBe(true);
    // No create ever arrived, so there is nothing to end and nothing to warn about.
    expect(logger.lines.filter((l) => l.startsWith('warn'))).toEqual([]);
    expect(RunLedger.open({ dir: ledgerDir }).open()).toEqual([]);
  });

  it('fails at once, without the page, when another program answers at the address', async () => {
    const web = http.createServer((_req, res) => {
      res.writeHead(501, { 'content-type': 'text/html' });
      res.end('<!DOCTYPE HTML><html><body><h1>Error response</h1>Error code: 501</body></html>');
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    let requests = 0;
    web.on('request', () => requests++);
    try {
      const { port } = web.address() as net.AddressInfo;
      const failure = await leasePhone({
        baseUrl: `http://127.0.0.1:${port}`,
        apiKey: 'pck_wrong_service_test_key',
        logger: recordingLogger(),
        ledger: { dir: tempDir('phonelease-ledger-') },
        reaper: false,
        handleSignals: false,
      }).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(ConfigurationError);
      expect((failure as Error).message).toContain(
        'HTTP 501 (text/html: "Error response Error code: 501"), which is not the phonelease API',
      );
      expect((failure as Error).message).not.toContain('<');
      expect(requests).toBe(1);
    } finally {
      await new Promise((resolve) => web.close(resolve));
    }
  });

  it('says which key setting to fix when the key is refused, with the advice intact', async () => {
    const t = await server();
    const failure = await new PhoneSessionClient({ baseUrl: t.url, apiKey: 'pck_not_a_real_key_at_all' })
      .me()
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(AuthenticationError);
    const message = (failure as Error).message;
    expect(message).toContain('"Authorization: Bearer pck_..."');
    expect(message).toContain('Check PHONELEASE_API_KEY');
    expect(message).not.toContain('pck_not_a_real_key_at_all');
  });

  it('names the session holding the profile phone and how to run profile tests', async () => {
    const t = await server();
    const holder = await leasePhone(leaseOptions(t, { profile: true }));
    const failure = await leasePhone(leaseOptions(t, { profile: true })).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ProfileRunningError);
    expect((failure as ProfileRunningError).holdingSession).toBe(holder.id);
    expect((failure as Error).message).toContain(`held by session ${holder.id}`);
    expect((failure as Error).message).toContain('workers: 1');
    await holder.end();
  });
});
