/**
 * Retry edge cases a real server cannot produce on demand (nock): Retry-After capping, a
 * 5xx then success, what is and is not retried, the total budget.
 */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ConnectionError,
  DEFAULT_RETRY,
  PhoneSessionClient,
  PhonesBusyError,
  ServerError,
  parseRetryAfter,
  retryDelay,
  type FetchLike,
  type RetryOptions,
} from '../../src/index.js';

const BASE = 'http://phonelease.test';
// nock patches the global fetch; look it up at call time so the patch is what runs.
const globalFetch: FetchLike = (url, init) => globalThis.fetch(url, init);
const client = (retry: RetryOptions = {}) =>
  new PhoneSessionClient({
    baseUrl: BASE,
    apiKey: 'pck_test',
    fetch: globalFetch,
    retry: { minDelayMs: 1, maxDelayMs: 50, ...retry },
  });

const me = { uid: 'acc_1', email: 'a@b', name: 'n' };

beforeAll(() => nock.disableNetConnect());
afterEach(() => nock.cleanAll());
afterAll(() => nock.enableNetConnect());

describe('retry policy', () => {
  it('caps Retry-After at maxDelayMs and adds at most 10% jitter', () => {
    const policy = { ...DEFAULT_RETRY, maxDelayMs: 5000 };
    expect(retryDelay(policy, 0, 3_600_000, () => 1)).toBe(5000);
    expect(retryDelay(policy, 0, 2000, () => 0)).toBe(2000);
    expect(retryDelay(policy, 0, 2000, () => 1)).toBe(2200);
  });

  it('backs off exponentially with equal jitter', () => {
    const policy = { ...DEFAULT_RETRY, minDelayMs: 100, factor: 2, maxDelayMs: 1000 };
    expect([0, 1, 2, 3, 4].map((r) => retryDelay(policy, r, null, () => 0))).toEqual([
      50, 100, 200, 400, 500,
    ]);
    expect([0, 1, 2, 3, 4].map((r) => retryDelay(policy, r, null, () => 1))).toEqual([
      100, 200, 400, 800, 1000,
    ]);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(
      parseRetryAfter(new Date(Date.UTC(2030, 0, 1, 0, 0, 10)).toUTCString(), Date.UTC(2030, 0, 1)),
    ).toBe(10_000);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(null)).toBeNull();
  });
});

describe('client retries (nock)', () => {
  it('retries a GET after a 500 and returns the later success', async () => {
    const scope = nock(BASE)
      .get('/me')
      .reply(500, { error: 'boom', code: 'internal' })
      .get('/me')
      .reply(200, me);
    expect(await client().me()).toMatchObject(me);
    expect(scope.isDone()).toBe(true);
  });

  it('honours a huge Retry-After only up to the cap', async () => {
    const scope = nock(BASE)
      .get('/me')
      .reply(503, { error: 'maintenance', code: 'unavailable' }, { 'retry-after': '3600' })
      .get('/me')
      .reply(200, me);
    // Uncapped, this would wait an hour (and the test would time out).
    expect(await client({ maxDelayMs: 20 }).me()).toMatchObject(me);
    expect(scope.isDone()).toBe(true);
  });

  it('retries 429 and dropped connections', async () => {
    const scope = nock(BASE)
      .get('/sessions')
      .reply(429, { error: 'slow down', code: 'rate_limited' }, { 'retry-after': '0' })
      .get('/sessions')
      .replyWithError({ code: 'ECONNRESET', message: 'socket hang up' })
      .get('/sessions')
      .reply(200, []);
    expect(await client().listSessions()).toEqual([]);
    expect(scope.isDone()).toBe(true);
  });

  it('never retries a POST without an idempotency key', async () => {
    const scope = nock(BASE)
      .post('/me/keys')
      .reply(500, { error: 'boom', code: 'internal' })
      .post('/me/keys')
      .reply(200, { key: 'pck_new' });
    const error = await client()
      .createKey('x')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ status: 500, retryable: true });
    expect(scope.pendingMocks()).toHaveLength(1);
  });

  it('retries a keyed create with the same key and the same body', async () => {
    const seen: Array<{ key: string | undefined; body: unknown }> = [];
    const scope = nock(BASE)
      .post('/sessions')
      .times(2)
      .reply(function (_uri, body) {
        seen.push({ key: this.req.headers['idempotency-key'] as string | undefined, body });
        return seen.length === 1
          ? [502, { error: 'bad gateway', code: 'bad_gateway' }]
          : [202, { id: 'ses_1', state: 'provisioning' }];
      });
    const s = await client().createSession(
      { timeout_seconds: 77 },
      { idempotencyKey: 'key_0123456789abcdef' },
    );
    expect(s.id).toBe('ses_1');
    expect(scope.isDone()).toBe(true);
    expect(seen).toEqual([
      { key: 'key_0123456789abcdef', body: { timeout_seconds: 77 } },
      { key: 'key_0123456789abcdef', body: { timeout_seconds: 77 } },
    ]);
  });

  it('leaves phones_busy to the caller, with Retry-After in ms', async () => {
    const scope = nock(BASE)
      .post('/sessions')
      .reply(
        503,
        { error: 'All phones are in use', code: 'phones_busy', retry_after_seconds: 4 },
        { 'retry-after': '3' },
      );
    const error = await client()
      .createSession({}, { idempotencyKey: 'key_0123456789abcdef' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PhonesBusyError);
    // The header wins over the body's figure.
    expect(error).toMatchObject({ code: 'phones_busy', status: 503, retryAfterMs: 3000, retryable: true });
    expect(scope.isDone()).toBe(true);
  });

  it('stops when the next wait would overrun the budget', async () => {
    const scope = nock(BASE)
      .get('/me')
      .reply(500, { error: 'boom', code: 'internal' }, { 'retry-after': '1' })
      .get('/me')
      .reply(200, me);
    const error = await client({ maxRetries: 10, maxDelayMs: 5000, budgetMs: 300 })
      .me()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(scope.pendingMocks()).toHaveLength(1);
  });

  it('gives up after maxRetries with the last error', async () => {
    const scope = nock(BASE).get('/me').times(3).replyWithError({ code: 'ECONNREFUSED', message: 'refused' });
    const error = await client({ maxRetries: 2 })
      .me()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(scope.isDone()).toBe(true);
  });

  it('keeps the request id of the failing attempt and sends a new one per attempt', async () => {
    const ids: string[] = [];
    nock(BASE)
      .get('/me')
      .times(2)
      .reply(function () {
        ids.push(this.req.headers['x-request-id'] as string);
        return [500, { error: 'boom', code: 'internal' }];
      });
    const error = await client({ maxRetries: 1 })
      .me()
      .catch((e: unknown) => e);
    expect(ids).toHaveLength(2);
    expect(ids[0]).not.toBe(ids[1]);
    expect((error as ServerError).requestId).toBe(ids[1]);
  });
});
