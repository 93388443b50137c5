/**
 * A real phonelease server on a free port for contract tests, and a thin HTTP helper over
 * undici that returns status, headers and the parsed body.
 */
import { request } from 'undici';
import { afterEach } from 'vitest';
import { startServer, type RunningServer, type ServerOptions } from '../../server/main.js';
import type { CreatedAccount, NewAccount } from '../../server/runtime/accounts.js';

export interface Reply<T = unknown> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: T;
  raw: Buffer;
}

export interface CallOptions {
  body?: unknown;
  /** Sent as-is (for malformed bodies). */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** Bearer credential; null sends none. Defaults to the client's key. */
  auth?: string | null;
}

export class Api {
  constructor(
    readonly url: string,
    readonly key: string | null,
  ) {}

  as(key: string | null): Api {
    return new Api(this.url, key);
  }

  async call<T = any>(method: string, path: string, opts: CallOptions = {}): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    const auth = opts.auth === undefined ? this.key : opts.auth;
    if (auth) headers.authorization = `Bearer ${auth}`;
    let body: string | Buffer | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await request(this.url + path, { method: method as 'GET', headers, body });
    const raw = Buffer.from(await res.body.arrayBuffer());
    const type = String(res.headers['content-type'] ?? '');
    const parsed = type.includes('json') && raw.length > 0 ? JSON.parse(raw.toString('utf8')) : raw;
    return { status: res.statusCode, headers: res.headers, body: parsed as T, raw };
  }

  get = <T = any>(path: string, opts?: CallOptions) => this.call<T>('GET', path, opts);
  post = <T = any>(path: string, opts?: CallOptions) => this.call<T>('POST', path, opts);
  delete = <T = any>(path: string, opts?: CallOptions) => this.call<T>('DELETE', path, opts);

  /** Polls GET /sessions/{sid} until the state is one of `states`. */
  async waitFor(sid: string, states: string[], timeoutMs = 20_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await this.get(`/sessions/${sid}`);
      if (r.status === 200 && states.includes(r.body.state)) return r.body;
      if (Date.now() > deadline)
        throw new Error(
          `session ${sid} did not reach ${states.join('|')}: ${r.status} ${JSON.stringify(r.body)}`,
        );
      await new Promise((res) => setTimeout(res, 20));
    }
  }

  /** Polls until the session is gone from the live list (cleanup confirmed). */
  async waitGone(sid: string, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((await this.get(`/sessions/${sid}`)).status !== 404) {
      if (Date.now() > deadline) throw new Error(`session ${sid} still live`);
      await new Promise((res) => setTimeout(res, 20));
    }
  }
}

export interface TestServer {
  server: RunningServer;
  url: string;
  account: CreatedAccount;
  api: Api;
  /** A second account on the same server. */
  other(opts?: NewAccount): { account: CreatedAccount; api: Api };
  close(): Promise<void>;
}

export async function startTestServer(
  opts: ServerOptions & { account?: NewAccount } = {},
): Promise<TestServer> {
  const { account: accountOpts, ...serverOpts } = opts;
  const server = await startServer({ bootMs: 50, log: 'warn', ...serverOpts });
  const account = server.createAccount({ billingMode: 'disabled', ...accountOpts });
  return {
    server,
    url: server.url,
    account,
    api: new Api(server.url, account.key),
    other(o = {}) {
      const a = server.createAccount({ billingMode: 'disabled', ...o });
      return { account: a, api: new Api(server.url, a.key) };
    },
    close: () => server.close(),
  };
}

/** A fresh valid idempotency key. */
export const newKey = (): string =>
  `k${Math.random().toString(36).slice(2)}${Date.now().toString(36)}xxxxxxxx`.slice(0, 40);

/**
 * A starter for servers that live for one test: every server it started is closed after
 * each test of the file (call it at the top level of a test file).
 */
export function serverPerTest(): (opts?: Parameters<typeof startTestServer>[0]) => Promise<TestServer> {
  const servers: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((t) => t.close()));
  });
  return async (opts = {}) => {
    const t = await startTestServer(opts);
    servers.push(t);
    return t;
  };
}
