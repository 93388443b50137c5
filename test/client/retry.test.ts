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
  ConfigurationError,
  RateLimitedError,
  ServerError,
  errorFromResponse,
  parseRetryAfter,
  summarizeBody,
  retryDelay,
  type FetchLike,
  type RetryOptions,
} from '../../src/index.js';
import { ERROR_REGISTRY } from '../../src/api/errors.js';

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

  it('hands phones_busy to a caller that retries itself, with Retry-After in ms', async () => {
    const scope = nock(BASE)
      .post('/sessions')
      .reply(
        503,
        { error: 'All phones are in use', code: 'phones_busy', retry_after_seconds: 4 },
        { 'retry-after': '3' },
      );
    // The lease sends its creates with retry: false and waits for a phone with progress shown.
    const error = await client()
      .createSession({}, { idempotencyKey: 'key_0123456789abcdef', retry: false })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PhonesBusyError);
    // The header wins over the body's figure.
    expect(error).toMatchObject({ code: 'phones_busy', status: 503, retryAfterMs: 3000, retryable: true });
    expect(scope.isDone()).toBe(true);
  });

  it('sends a create refused as phones_busy again after its Retry-After (nothing was processed)', async () => {
    const scope = nock(BASE)
      .post('/sessions')
      .reply(503, { error: 'All phones are in use', code: 'phones_busy' }, { 'retry-after': '0' })
      .post('/sessions')
      .reply(202, { id: 'ses_1', state: 'provisioning' });
    expect((await client().createSession({}, { idempotencyKey: 'key_0123456789abcdef' })).id).toBe('ses_1');
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

describe("answers that are not the API's", () => {
  const NGINX_429 =
    '<html>\r\n<head><title>429 Too Many Requests</title></head>\r\n<body>\r\n<center><h1>429 Too Many Requests</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';
  const NGINX_502 =
    '<!DOCTYPE html><html><head><title>502 Bad Gateway</title><style>body{color:red}</style></head><body><h1>502 Bad Gateway</h1><p>nginx/1.25.3</p></body></html>';

  it("retries a DELETE refused by a rate limiter's HTML 429, and a GET behind a proxy's HTML 502", async () => {
    const scope = nock(BASE)
      .delete('/sessions/ses_1')
      .reply(429, NGINX_429, { 'content-type': 'text/html', 'retry-after': '0' })
      .delete('/sessions/ses_1')
      .reply(200, { released: true, cleanup_pending: false })
      .get('/me')
      .reply(502, NGINX_502, { 'content-type': 'text/html' })
      .get('/me')
      .reply(200, me);
    expect(await client().endSession('ses_1')).toEqual({ released: true, cleanup_pending: false });
    expect(await client().me()).toMatchObject(me);
    expect(scope.isDone()).toBe(true);
  });

  it('sends a tap refused by a 429 again, but never a tap whose outcome a 502 hid', async () => {
    const scope = nock(BASE)
      .post('/sessions/ses_1/ops/input.tap')
      .reply(429, '', { 'retry-after': '0' })
      .post('/sessions/ses_1/ops/input.tap')
      .reply(502, NGINX_502, { 'content-type': 'text/html' })
      .post('/sessions/ses_1/ops/input.tap')
      .reply(200, { ok: true });
    const error = await client()
      .tap('ses_1', 1, 2)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ status: 502, retry: 'transient', retryable: true });
    expect(scope.pendingMocks()).toHaveLength(1);
  });

  it('classifies by status: 429 rate limited, 5xx transient, anything else a configuration error', () => {
    const html = { contentType: 'text/html', what: 'GET /me', service: BASE };
    const limited = errorFromResponse({ status: 429, body: NGINX_429, retryAfter: '2', ...html });
    expect(limited).toBeInstanceOf(RateLimitedError);
    expect(limited).toMatchObject({ code: 'rate_limited', retry: 'after_retry_after', retryAfterMs: 2000 });
    const json429 = errorFromResponse({
      status: 429,
      body: { message: 'slow down' },
      contentType: 'application/json',
    });
    expect(json429).toBeInstanceOf(RateLimitedError);
    expect(json429.message).toContain('HTTP 429 (application/json: "slow down")');
    // An older server's HTTP-layer refusal (fastify's own body, no code) is still the API's.
    const fastify = errorFromResponse({
      status: 431,
      body: { statusCode: 431, error: 'Request Header Fields Too Large', message: 'headers too large' },
      contentType: 'application/json',
    });
    expect(fastify).not.toBeInstanceOf(ConfigurationError);
    expect(fastify).toMatchObject({ code: 'http_431', retryable: false });
    const empty503 = errorFromResponse({ status: 503, body: '' });
    expect(empty503).toMatchObject({ code: 'http_503', retry: 'transient', retryable: true });
    const other = errorFromResponse({ status: 404, body: '<html><body>Not Found</body></html>', ...html });
    expect(other).toBeInstanceOf(ConfigurationError);
    expect(other.retryable).toBe(false);
    expect(other.message).toContain('PHONELEASE_BASE_URL');
  });

  it('quotes status, content type and a short plain-text gist, never the page', () => {
    const error = errorFromResponse({
      status: 502,
      body: NGINX_502 + '<p>' + 'padding '.repeat(100) + '</p>',
      contentType: 'text/html; charset=utf-8',
      what: 'DELETE /sessions/ses_1',
      service: BASE,
    });
    expect(error.message).toContain('HTTP 502 (text/html: "502 Bad Gateway nginx/1.25.3 padding');
    expect(error.message).not.toMatch(/[<>]|DOCTYPE|color:red/);
    expect(summarizeBody(NGINX_502 + 'x'.repeat(500)).length).toBeLessThanOrEqual(100);
    expect(summarizeBody(NGINX_429)).toBe('429 Too Many Requests nginx');
  });

  it('derives retryable from the registry rule of every API code', () => {
    for (const [code, spec] of Object.entries(ERROR_REGISTRY)) {
      const error = errorFromResponse({ status: spec.status, body: { error: 'x', code } });
      expect(error.code).toBe(code);
      expect(error.retry).toBe(spec.retry);
      expect(error.retryable).toBe(spec.retry !== 'never');
    }
  });
});
