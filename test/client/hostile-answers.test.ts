/**
 * Answers a real phonelease server never gives but the wire can: a Retry-After of 0 or -1,
 * an empty or HTML 200, a redirect, a gateway's 400 after a create whose answer was lost,
 * an API error without its JSON content type. Each comes from a small real HTTP server on
 * port 0 scripted per test, in front of nothing; the client and the lease are the real ones.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  ConfigurationError,
  InvalidRequestError,
  PhoneSessionClient,
  PhonesBusyError,
  SessionLimitError,
  endAndConfirm,
  leasePhone,
  parseRetryAfter,
  retryDelay,
  summarizeBody,
  DEFAULT_RETRY,
} from '../../src/index.js';
import { eventually, recordingLogger, tempDir } from './helpers.js';

interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
}

type Handler = (req: Seen, res: http.ServerResponse) => void;

/** A server on port 0 that answers with `handler` and records every request. */
async function scripted(handler: Handler): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const entry = { method: req.method ?? '', path: req.url ?? '', headers: req.headers };
      seen.push(entry);
      handler(entry, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const json = (
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: http.OutgoingHttpHeaders = {},
) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

/** A session the fake service admitted, its receipt, and the answers that go with it. */
function fakeSession(id = 'ses_fake1') {
  let ended = false;
  const session = () => ({ id, state: ended ? 'closing' : 'ready', provider: 'fake', created_at: 1 });
  const receipt = (key: string) => ({
    id,
    request_key: key,
    provider: 'fake',
    state: ended ? 'closing' : 'provisioning',
    cleanup_complete: ended,
    cleanup_pending: false,
  });
  /** Answers GET /sessions/{id}, DELETE /sessions/{id} and the receipt; false for anything else. */
  const answer = (req: Seen, res: http.ServerResponse): boolean => {
    if (req.path.startsWith(`/sessions/${id}`) && req.method === 'GET')
      return (json(res, 200, session()), true);
    if (req.path === `/sessions/${id}` && req.method === 'DELETE') {
      ended = true;
      return (json(res, 200, { id, released: true }), true);
    }
    const key = /^\/sessions\/requests\/([^/?]+)/.exec(req.path)?.[1];
    if (key) return (json(res, 200, receipt(decodeURIComponent(key))), true);
    return false;
  };
  return { answer, ended: () => ended };
}

const lease = (url: string, startTimeoutMs = 5000) => ({
  baseUrl: url,
  apiKey: `pck_${randomBytes(16).toString('hex')}`,
  logger: recordingLogger(),
  ledger: { dir: tempDir('phonelease-ledger-') },
  reaper: false as const,
  handleSignals: false,
  startTimeoutMs,
});

const isCreate = (r: Seen) => r.method === 'POST' && r.path === '/sessions';

describe('Retry-After that means "now"', () => {
  it('reads 0, negative, decimal and past Retry-After values as no advice', () => {
    for (const value of ['0', '-1', '-5', '1.5', '0.5', new Date(Date.now() - 60_000).toUTCString()])
      expect(parseRetryAfter(value), value).toBeNull();
    // A real date still counts, in any of HTTP's three date forms.
    expect(parseRetryAfter('Sunday, 06-Nov-44 08:49:37 GMT', Date.UTC(2044, 10, 6, 8, 49, 27))).toBe(10_000);
    expect(
      new PhonesBusyError('busy', { body: { error: 'busy', code: 'phones_busy', retry_after_seconds: 0 } })
        .retryAfterMs,
    ).toBe(1000);
  });

  it('never waits less than the minimum delay, whatever Retry-After says', () => {
    const policy = { ...DEFAULT_RETRY, minDelayMs: 250 };
    expect(retryDelay(policy, 0, 0, () => 0)).toBeGreaterThanOrEqual(125);
    expect(retryDelay(policy, 0, 1, () => 0)).toBe(250);
  });

  it('does not flood a busy service that answers Retry-After: -1', async () => {
    const { url, seen } = await scripted((req, res) =>
      json(
        res,
        503,
        { error: 'all phones are busy', code: 'phones_busy', retry_after_seconds: 0 },
        { 'retry-after': '-1' },
      ),
    );
    await expect(leasePhone(lease(url, 2000))).rejects.toBeInstanceOf(PhonesBusyError);
    // At least 500 ms apart: a handful in 2 s (the unfixed loop sent over a thousand).
    expect(seen.filter(isCreate).length).toBeLessThanOrEqual(8);
  });

  it('does not flood a rate limiter that answers a DELETE with 429 Retry-After: 0', async () => {
    const { url, seen } = await scripted((req, res) => {
      res.writeHead(429, { 'retry-after': '0', 'content-type': 'text/plain' });
      res.end('slow down');
    });
    const client = new PhoneSessionClient({ baseUrl: url, apiKey: 'pck_test1234567890' });
    const result = await endAndConfirm(client, { sessionId: 'ses_x' }, { retryMs: 2000, confirmMs: 0 });
    expect(result.outcome).toBe('failed');
    expect(seen.filter((r) => r.method === 'DELETE').length).toBeLessThanOrEqual(16);
  });
});

describe('a create answered with something that is not a session', () => {
  it.each([
    ['an empty 202', 'application/json', ''],
    ['a JSON null', 'application/json', 'null'],
    ['an HTML 200', 'text/html', '<html><body>Dashboard</body></html>'],
  ])('ends the phone of %s through its receipt, and says what answered', async (_what, type, body) => {
    const phone = fakeSession();
    let receiptAsked = 0;
    const { url, seen } = await scripted((req, res) => {
      if (isCreate(req)) {
        res.writeHead(202, { 'content-type': type });
        return void res.end(body);
      }
      // The first lookup comes before the session is recorded; later ones find it.
      if (req.path.startsWith('/sessions/requests/') && receiptAsked++ === 0) {
        return json(res, 404, { error: 'no such request', code: 'not_found' });
      }
      if (!phone.answer(req, res)) json(res, 404, { error: 'not found', code: 'not_found' });
    });
    const error = await leasePhone(lease(url)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(/not the phonelease API/);
    expect((error as Error).message).toContain(url);
    expect(seen.filter(isCreate)).toHaveLength(1);
    expect(phone.ended()).toBe(true);
  });

  it('carries on with the session its receipt names', async () => {
    const phone = fakeSession();
    const { url } = await scripted((req, res) => {
      if (isCreate(req)) return void res.writeHead(202).end();
      if (!phone.answer(req, res)) json(res, 404, { error: 'not found', code: 'not_found' });
    });
    const leased = await leasePhone(lease(url));
    expect(leased.id).toBe('ses_fake1');
    expect(leased.startStats.recoveredFromReceipt).toBe(true);
    await leased.end();
    expect(phone.ended()).toBe(true);
  });
});

describe('a create whose outcome was unknown', () => {
  it("still ends the key's phone when a later resend is refused by a gateway's 400", async () => {
    const phone = fakeSession();
    let creates = 0;
    let landed = false;
    const { url } = await scripted((req, res) => {
      if (isCreate(req)) {
        // The first create lands behind a gateway that times out; the resend is refused
        // by the gateway itself, which knows nothing of the key.
        if (creates++ === 0) {
          setTimeout(() => (landed = true), 300);
          res.writeHead(504, { 'content-type': 'text/html' });
          return void res.end('<h1>504 Gateway Time-out</h1>');
        }
        return json(res, 400, { error: 'Bad Request' });
      }
      if (req.path.startsWith('/sessions/requests/') && !landed)
        return json(res, 404, { error: 'none', code: 'not_found' });
      if (!phone.answer(req, res)) json(res, 404, { error: 'not found', code: 'not_found' });
    });
    await expect(leasePhone(lease(url))).rejects.toBeInstanceOf(InvalidRequestError);
    expect(creates).toBe(2);
    expect(phone.ended()).toBe(true);
  });
});

describe('answers from something else at the address', () => {
  it('names a 2xx HTML page as not the API instead of a SyntaxError', async () => {
    const { url } = await scripted((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><title>Grafana</title><body>Welcome</body></html>');
    });
    const client = new PhoneSessionClient({ baseUrl: url, apiKey: 'pck_test1234567890' });
    const error = await client.me().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(
      new RegExp(`${url}.*HTTP 200 \\(text/html: "Grafana Welcome"\\).*not the phonelease API`),
    );
  });

  it('takes an empty 2xx for a tap, whose answer nobody reads', async () => {
    const { url } = await scripted((req, res) => void res.writeHead(204).end());
    const client = new PhoneSessionClient({ baseUrl: url, apiKey: 'pck_test1234567890' });
    await expect(client.tap('ses_1', 1, 2)).resolves.toBeUndefined();
    await expect(client.me()).rejects.toBeInstanceOf(ConfigurationError);
  });

  it('never follows a redirect: names where it goes (without its query) and keeps the key home', async () => {
    const other = await scripted((req, res) => json(res, 200, []));
    const { url, seen } = await scripted((req, res) => {
      res.writeHead(req.method === 'POST' ? 301 : 307, {
        location: `${other.url}/api/sessions?token=s3cr3tvalue`,
      });
      res.end();
    });
    const client = new PhoneSessionClient({ baseUrl: url, apiKey: 'pck_test1234567890', retry: false });
    for (const call of [() => client.listSessions(), () => client.createSession({})]) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigurationError);
      const message = (error as Error).message;
      expect(message).toContain(`${other.url}/api/sessions`);
      expect(message).toMatch(/Set PHONELEASE_BASE_URL \(or baseUrl\) to the final address/);
      expect(message).not.toContain('s3cr3tvalue');
    }
    expect(other.seen).toEqual([]);
    expect(seen.map((r) => r.method)).toEqual(['GET', 'POST']);
  });

  it("reads the API's error without a JSON content type as the API's error", async () => {
    for (const type of [undefined, 'text/plain']) {
      const { url } = await scripted((req, res) => {
        res.writeHead(409, type ? { 'content-type': type } : {});
        res.end(JSON.stringify({ error: 'session limit reached', code: 'session_limit' }));
      });
      const client = new PhoneSessionClient({ baseUrl: url, apiKey: 'pck_test1234567890' });
      const error = await client.createSession({}).catch((e: unknown) => e);
      expect(error, String(type)).toBeInstanceOf(SessionLimitError);
    }
  });
});

describe("the gist of a page that is not the API's", () => {
  const secret = randomBytes(24).toString('base64url');
  it.each([
    ['a key hidden behind a decimal entity', `<p>key pck&#95;${secret}</p>`],
    ['a key hidden behind a hex entity', `<p>key pck&#x5F;${secret}</p>`],
    ['a viewer path the cut would split', `<p>${'x'.repeat(80)} open /v/${secret}${secret}</p>`],
  ])('shows no part of %s', (_what, page) => {
    const gist = summarizeBody(page);
    expect(gist).not.toContain(secret.slice(0, 8));
    expect(gist).toContain('[redacted]');
  });
});

describe('an end whose cleanup stays pending', () => {
  it('is handed to the reaper, which asks again until the cleanup is confirmed', async () => {
    const id = 'ses_pending1';
    let handedBack = false;
    let deletesAfterEnd = 0;
    let confirmationsRead = 0;
    const { url } = await scripted((req, res) => {
      if (isCreate(req)) return json(res, 202, { id, state: 'ready', provider: 'fake', created_at: 1 });
      if (req.path.startsWith('/sessions/requests/')) {
        const key = decodeURIComponent(req.path.split('/')[3]!.split('?')[0]!);
        if (handedBack && deletesAfterEnd > 0) confirmationsRead++;
        // Cleanup is confirmed only once the lease has given up waiting for it.
        return json(res, 200, {
          id,
          request_key: key,
          provider: 'fake',
          state: 'closing',
          cleanup_complete: handedBack,
          cleanup_pending: !handedBack,
        });
      }
      if (req.method === 'DELETE') {
        if (handedBack) deletesAfterEnd++;
        return json(res, 202, { id, released: false, cleanup_pending: true });
      }
      json(res, 200, { id, state: 'ready', provider: 'fake', created_at: 1 });
    });
    const leased = await leasePhone({ ...lease(url), reaper: true });
    const ended = await leased.end();
    handedBack = true;
    expect(ended.outcome).toBe('cleanup_pending');
    expect(ended.handedToReaper).toBe(true);
    // The reaper, a process of its own, sends the DELETE again and reads the confirmation
    // (until it has, it would go on asking a service this test is about to close).
    await eventually(
      async () => [deletesAfterEnd, confirmationsRead],
      ([deletes, confirmations]) => deletes! > 0 && confirmations! > 0,
    );
  }, 40_000);
});
