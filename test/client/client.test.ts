/**
 * PhoneSessionClient against the real server: one typed method per endpoint, errors mapped
 * to their classes with the request id kept, configuration errors that say what to set,
 * and debug output without secrets.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { PhoneleaseError } from '../../src/index.js';
import {
  AuthenticationError,
  ConfigurationError,
  ConnectionError,
  IdempotencyConflictError,
  InsufficientCreditError,
  InvalidRequestError,
  NotFoundError,
  PermissionError,
  PhoneSessionClient,
  ProfileRunningError,
  SessionNotReadyError,
  newIdempotencyKey,
  type Session,
} from '../../src/index.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let client: PhoneSessionClient;
beforeAll(async () => {
  t = await startTestServer({ bootMs: 30 });
  client = new PhoneSessionClient({ baseUrl: t.url, apiKey: t.account.key });
});
afterAll(() => t.close());

async function ready(): Promise<Session> {
  const s = await client.createSession({ timeout_seconds: 120 });
  for (;;) {
    const now = await client.getSession(s.id, { waitSeconds: 1 });
    if (now.state === 'ready') return now;
  }
}

describe('configuration', () => {
  it('names both environment variables when the base URL or key is missing', () => {
    for (const env of [{}, { PHONELEASE_BASE_URL: 'http://127.0.0.1:1' }, { PHONELEASE_API_KEY: 'pck_x' }]) {
      let error: unknown;
      try {
        new PhoneSessionClient({ env });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toContain('PHONELEASE_BASE_URL');
      expect((error as Error).message).toContain('PHONELEASE_API_KEY');
    }
  });

  it('reads both from the environment and refuses a key in the URL', async () => {
    const fromEnv = new PhoneSessionClient({
      env: { PHONELEASE_BASE_URL: `${t.url}/`, PHONELEASE_API_KEY: t.account.key },
    });
    expect(fromEnv.baseUrl).toBe(t.url);
    expect((await fromEnv.me()).uid).toBe(t.account.uid);
    expect(
      () => new PhoneSessionClient({ baseUrl: `${t.url}/?key=${t.account.key}`, apiKey: t.account.key }),
    ).toThrow(ConfigurationError);
    expect(() => new PhoneSessionClient({ baseUrl: 'ftp://example.com', apiKey: 'pck_x' })).toThrow(/http/);
  });
});

describe('sessions', () => {
  it('creates, lists, reads (long poll), ends and confirms through the receipt', async () => {
    const key = newIdempotencyKey();
    const created = await client.createSession({ timeout_seconds: 90 }, { idempotencyKey: key });
    expect(created).toMatchObject({ state: 'provisioning', timeout_seconds: 90, request_key: key });
    const replay = await client.createSession({ timeout_seconds: 90 }, { idempotencyKey: key });
    expect(replay.id).toBe(created.id);
    expect((await client.listSessions()).map((s) => s.id)).toEqual([created.id]);

    let s = await client.getSession(created.id, { waitSeconds: 1 });
    while (s.state !== 'ready') s = await client.getSession(created.id, { waitSeconds: 1 });
    expect(s.adb).toMatchObject({ host: '127.0.0.1', port: expect.any(Number), code: expect.any(String) });

    expect((await client.getReceipt(key)).id).toBe(created.id);
    const release = await client.endSession(created.id);
    expect(release).toEqual({ released: true, cleanup_pending: false });
    expect(await client.getReceipt(key)).toMatchObject({
      id: created.id,
      cleanup_complete: true,
      cleanup_pending: false,
    });
    await expect(client.getSession(created.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.endSession(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('reads frames, viewers and ADB access; revokes ADB', async () => {
    const s = await ready();
    const frame = await client.frame(s.id);
    expect(frame.contentType).toBe('image/png');
    expect(frame.data.subarray(1, 4).toString()).toBe('PNG');

    const owner = await client.ownerViewer(s.id);
    expect(owner.url).toMatch(new RegExp(`^${t.url}/v/`));
    expect(owner.expires_at).toBeGreaterThan(Date.now() / 1000);
    const grant = new URL(s.watch_url).searchParams.get('token')!;
    expect(grant).toMatch(/^pvg_/);
    const viewOnly = await client.viewer(s.id, { token: grant });
    expect(viewOnly.url).not.toBe(owner.url);
    // A view grant as the client's credential reads its own session only.
    const watcher = new PhoneSessionClient({ baseUrl: t.url, apiKey: grant });
    expect((await watcher.getSession(s.id)).id).toBe(s.id);
    expect((await watcher.getSession(s.id)).adb).toBeUndefined();
    await expect(watcher.ownerViewer(s.id)).rejects.toBeInstanceOf(PermissionError);

    const adb = await client.adb(s.id);
    expect(adb).toMatchObject({ enabled: true, transport: 'adb', code: s.adb!.code });
    expect(await client.revokeAdb(s.id)).toEqual({ revoked: true });
    expect(await client.adb(s.id)).toEqual({ enabled: false });
    await client.endSession(s.id);
  });

  it('performs the advertised phone operations', async () => {
    const s = await ready();
    const bounds = await client.bounds(s.id);
    expect(bounds).toEqual(s.screen);
    await client.tap(s.id, 5, 5);
    await client.home(s.id);
    const capture = await client.capture(s.id);
    expect(capture.contentType).toBe('image/png');
    expect((await client.apps(s.id)).length).toBeGreaterThan(0);
    await expect(client.tap(s.id, bounds.w + 10, 0)).rejects.toBeInstanceOf(InvalidRequestError);
    await client.endSession(s.id);
  });
});

describe('errors', () => {
  it('maps each refusal to its class with status, code, request id and retryable', async () => {
    const bad = new PhoneSessionClient({ baseUrl: t.url, apiKey: 'pck_not-a-real-key' });
    const auth = await bad.me().catch((e: unknown) => e);
    expect(auth).toBeInstanceOf(AuthenticationError);
    expect(auth).toMatchObject({ status: 401, code: 'unauthenticated', retryable: false });
    expect((auth as PhoneleaseError).requestId).toMatch(/^req_/);
    expect((auth as Error).message).toContain((auth as PhoneleaseError).requestId);
    expect((auth as Error).message).not.toContain('pck_notarealkey');

    const unsupported = await client.createSession({ cpu: 4 } as never).catch((e: unknown) => e);
    expect(unsupported).toBeInstanceOf(InvalidRequestError);
    expect(unsupported).toMatchObject({ status: 400, code: 'unsupported', unsupported: true });
    const invalid = await client.createSession({ timeout_seconds: 0 }).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ status: 400, code: 'invalid_request', unsupported: false });

    const missing = await client.getSession('ses_nope').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).toMatchObject({ status: 404 });

    const key = newIdempotencyKey();
    const first = await client.createSession({ timeout_seconds: 60 }, { idempotencyKey: key });
    const reused = await client
      .createSession({ timeout_seconds: 61 }, { idempotencyKey: key })
      .catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(IdempotencyConflictError);
    expect(reused).toMatchObject({
      status: 409,
      code: 'idempotency_key_reused',
      requestKey: key,
      retryable: false,
    });

    await client.endSession(first.id);
    // A session still provisioning (the runtime is held) cannot give a frame yet.
    t.server.runtime.pause();
    const waiting = await client
      .createSession({ timeout_seconds: 60 }, { idempotencyKey: newIdempotencyKey() })
      .catch((e: unknown) => e);
    expect(waiting).toMatchObject({ code: 'create_request_recorded', status: 503, retryable: true });
    const sid = (waiting as { sessionId: string }).sessionId;
    const notReady = await client.frame(sid).catch((e: unknown) => e);
    t.server.runtime.resume();
    expect(notReady).toBeInstanceOf(SessionNotReadyError);
    expect(notReady).toMatchObject({
      status: 409,
      code: 'session_not_ready',
      state: 'provisioning',
      sessionId: sid,
    });
    await client.endSession(sid);
  });

  it('ProfileRunningError names the session that holds the profile', async () => {
    const s = await client.createSession({ profile_id: t.account.profile_id });
    const reset = await client.resetProfile().catch((e: unknown) => e);
    expect(reset).toBeInstanceOf(ProfileRunningError);
    expect(reset).toMatchObject({ status: 409, code: 'profile_running', holdingSession: s.id });
    const second = await client.createSession({ profile_id: t.account.profile_id }).catch((e: unknown) => e);
    expect(second).toMatchObject({ code: 'profile_running', holdingSession: s.id });
    await client.endSession(s.id);
    await expect.poll(async () => (await client.me()).profile.session, { timeout: 10_000 }).toBeNull();
    expect(await client.resetProfile()).toEqual({ id: t.account.profile_id, reset: true });
  });

  it('InsufficientCreditError carries the balance; PermissionError for accounts that cannot rent', async () => {
    const poor = t.other({ billingMode: 'metered', balanceCents: 5, priceCentsPerMinute: 10 });
    const poorClient = new PhoneSessionClient({ baseUrl: t.url, apiKey: poor.account.key });
    const credit = await poorClient.createSession().catch((e: unknown) => e);
    expect(credit).toBeInstanceOf(InsufficientCreditError);
    expect(credit).toMatchObject({ status: 403, code: 'insufficient_credit', balanceCents: 5 });

    const blocked = t.other({ canRent: false });
    const blockedClient = new PhoneSessionClient({ baseUrl: t.url, apiKey: blocked.account.key });
    const denied = await blockedClient.createSession().catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(PermissionError);
    expect(denied).toMatchObject({ status: 403, code: 'rental_unavailable' });
  });

  it('ConnectionError when nothing listens, with the base URL and what to check', async () => {
    const nowhere = new PhoneSessionClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'pck_x', retry: false });
    const error = await nowhere.me().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ code: 'connection_failed', status: null, retryable: true });
    expect((error as Error).message).toMatch(/http:\/\/127\.0\.0\.1:9.*PHONELEASE_BASE_URL/);
    expect((error as PhoneleaseError).requestId).toMatch(/^req_/);
  });
});

describe('account, keys and history', () => {
  it('reads the account', async () => {
    const me = await client.me();
    expect(me).toMatchObject({
      uid: t.account.uid,
      session_create_idempotency: 'v1',
      default_provider: 'shlut',
    });
    expect(me.profile.id).toBe(t.account.profile_id);
  });

  it('creates, lists and revokes keys; a revoked key stops working', async () => {
    const created = await client.createKey('ci runner');
    expect(created.key).toMatch(/^pck_/);
    expect(created.key_hash).toBe(createHash('sha256').update(created.key).digest('hex'));
    const listed = await client.listKeys();
    expect(listed.map((k) => k.key_hash)).toContain(created.key_hash);
    expect(JSON.stringify(listed)).not.toContain(created.key);
    const other = new PhoneSessionClient({ baseUrl: t.url, apiKey: created.key });
    expect((await other.me()).uid).toBe(t.account.uid);
    expect(await client.revokeKey(created.key_hash)).toEqual({ revoked: true });
    await expect(other.me()).rejects.toBeInstanceOf(AuthenticationError);
    await expect(client.revokeKey(created.key_hash)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('lists history, pages through it and iterates all of it', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await client.createSession({ timeout_seconds: 60 });
      await client.endSession(s.id);
      ids.push(s.id);
    }
    const history = await client.history();
    expect(history.map((h) => h.sid)).toEqual(expect.arrayContaining(ids));
    const page = await client.historyPage({ limit: 2 });
    expect(page.items).toHaveLength(2);
    expect(page.next_cursor).toEqual(expect.any(String));
    const all: string[] = [];
    for await (const record of client.iterateHistory({ pageSize: 2 })) all.push(record.sid);
    expect(all).toEqual(history.map((h) => h.sid));
    expect(new Set(all).size).toBe(all.length);
  });
});

describe('debug output', () => {
  it('DEBUG=phonelease:http prints the exchange without a key, grant or unlock code', async () => {
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      const debugging = new PhoneSessionClient({
        baseUrl: t.url,
        apiKey: t.account.key,
        env: { DEBUG: 'phonelease:*' },
      });
      const s = await debugging.createSession({ timeout_seconds: 60 });
      let now = s;
      while (now.state !== 'ready') now = await debugging.getSession(s.id, { waitSeconds: 1 });
      await debugging.createKey('debug check');
      await debugging.endSession(s.id);
      const text = written.join('');
      expect(text).toMatch(/phonelease:http -> POST \/sessions req_/);
      expect(text).toMatch(/phonelease:http <- 202 POST \/sessions req_\S+ \d+ms/);
      expect(text).not.toContain(t.account.key);
      expect(text).not.toContain(now.adb!.code);
      expect(text).not.toMatch(/pvg_[A-Za-z0-9]/);
      expect(text).not.toMatch(/"key":"pck_/);
    } finally {
      spy.mockRestore();
    }
    // Without DEBUG nothing is printed.
    const quiet: string[] = [];
    const spy2 = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      quiet.push(String(chunk));
      return true;
    });
    try {
      await new PhoneSessionClient({ baseUrl: t.url, apiKey: t.account.key, env: {} }).me();
    } finally {
      spy2.mockRestore();
    }
    expect(quiet.join('')).not.toContain('phonelease:http');
  });
});
