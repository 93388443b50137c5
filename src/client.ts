/**
 * PhoneSessionClient: one typed method per endpoint of the phone-session API (the seed
 * contract plus phonelease's documented decisions: key revocation, paged history, phone
 * operations, the long-poll on GET /sessions/{sid}).
 *
 * Every call gets its own request id (sent as x-request-id and kept on any error), is
 * retried by one rule (mayRetry in retry.ts, read from the error registry: a request
 * refused before it was processed always, an unknown outcome only when the request is
 * idempotent: GET, DELETE, a create with an Idempotency-Key), and
 * can be watched with DEBUG=phonelease:http without a secret ever being printed.
 */
import { fetch as undiciFetch } from 'undici';
import {
  type Account,
  type AdbAccess,
  type ApiKeyMeta,
  type AppEntry,
  type CreateReceipt,
  type CreateSessionBody,
  type CreatedKey,
  type HistoryPage,
  type HistoryRecord,
  type Release,
  type Session,
  type ViewerCapability,
} from './api/schemas.js';
import {
  CONNECT_FAILURE_CODES,
  ConfigurationError,
  ConnectionError,
  errorFromResponse,
  redirected,
  unexpectedSuccess,
} from './errors.js';
import { mayRetry, retryPolicy, withRetry, type RetryOptions, type RetryPolicy } from './retry.js';
import { newRequestId } from './util/ids.js';
import { createDebug } from './util/log.js';
import { redact } from './util/redact.js';
import { messageOf } from './util/message.js';

/** The part of a fetch Response the client reads. */
export interface FetchResponseLike {
  status: number;
  headers: { get(name: string): string | null };
  arrayBuffer(): Promise<ArrayBuffer>;
}

export interface FetchInitLike {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  /** Always 'manual': a redirect is a configuration error, never followed (see #attempt). */
  redirect: 'manual';
}

/** Any fetch: undici's (the default), the global one, or a test double. */
export type FetchLike = (url: string, init: FetchInitLike) => Promise<FetchResponseLike>;

export interface PhoneSessionClientOptions {
  /** Service address, e.g. http://127.0.0.1:8080. Default: PHONELEASE_BASE_URL. */
  baseUrl?: string;
  /** Account key (`pck_...`) or a view grant (`pvg_...`, read-only). Default: PHONELEASE_API_KEY. */
  apiKey?: string;
  /** Retry policy for idempotent and keyed calls; false turns retries off. */
  retry?: RetryOptions | false;
  /** Per-attempt timeout in ms (default 30 000; long polls add their wait). */
  timeoutMs?: number;
  /** The fetch to use (default undici's). */
  fetch?: FetchLike;
  /** Where PHONELEASE_* and DEBUG are read from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Overrides the client's retry policy for this call. */
  retry?: RetryOptions | false;
}

export interface CreateSessionOptions extends CallOptions {
  /** One stable key per logical start; retries reuse it with the same body. */
  idempotencyKey?: string;
}

export interface GetSessionOptions extends CallOptions {
  /** Long-poll: answer as soon as the state changes, or after this many seconds (max 30). */
  waitSeconds?: number;
}

export interface Image {
  data: Buffer;
  /** image/png from this service; compatible providers may send image/jpeg. */
  contentType: string;
}

interface RequestSpec {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * Safe to process twice: GET, DELETE, keyed creates. Decides whether an unknown outcome
   * (5xx, a cut answer) is retried; a request refused before it was processed (429) is
   * retried either way.
   */
  idempotent: boolean;
  binary?: boolean;
  timeoutMs?: number;
  call?: CallOptions;
  /** An empty 2xx is fine: the caller reads nothing of it (a tap; a provider may answer 204). */
  emptyOk?: boolean;
  /** The shape a 2xx answer must have, named for the message when it has not. */
  expect?: { what: string; check(body: unknown): boolean };
}

/** What a session (POST /sessions, GET /sessions/{sid}) or a create receipt always has. */
const SESSION_SHAPE = {
  what: 'a session (JSON with an id and a state)',
  check: (body: unknown): boolean =>
    typeof body === 'object' &&
    body !== null &&
    typeof (body as { id?: unknown }).id === 'string' &&
    typeof (body as { state?: unknown }).state === 'string',
};

interface Answer {
  data: Buffer;
  contentType: string;
  status: number;
  requestId: string;
  what: string;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const LONG_POLL_MAX_S = 30;

/** The service address and key from options or the environment, checked. */
export function resolveConfig(options: Pick<PhoneSessionClientOptions, 'baseUrl' | 'apiKey' | 'env'> = {}): {
  baseUrl: string;
  apiKey: string;
} {
  const env = options.env ?? process.env;
  const baseUrl = options.baseUrl ?? env.PHONELEASE_BASE_URL;
  const apiKey = options.apiKey ?? env.PHONELEASE_API_KEY;
  const missing = [
    !baseUrl && 'the base URL (PHONELEASE_BASE_URL)',
    !apiKey && 'the API key (PHONELEASE_API_KEY)',
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new ConfigurationError(
      `Missing ${missing.join(' and ')}: pass { baseUrl, apiKey } to the client, or set PHONELEASE_BASE_URL and PHONELEASE_API_KEY.`,
    );
  }
  let url: URL;
  try {
    url = new URL(baseUrl!);
  } catch {
    throw new ConfigurationError(
      `The base URL "${redact(baseUrl!)}" is not a URL; set PHONELEASE_BASE_URL to e.g. http://127.0.0.1:8080.`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigurationError(
      `The base URL must be http(s), not ${url.protocol}; set PHONELEASE_BASE_URL to e.g. http://127.0.0.1:8080.`,
    );
  }
  if (url.username || url.password || url.search) {
    throw new ConfigurationError(
      'The base URL must not carry credentials or a query; pass the key as apiKey / PHONELEASE_API_KEY.',
    );
  }
  return { baseUrl: url.href.replace(/\/+$/, ''), apiKey: apiKey! };
}

export class PhoneSessionClient {
  readonly baseUrl: string;
  readonly #apiKey: string;
  readonly #retry: RetryPolicy;
  readonly #timeoutMs: number;
  readonly #fetch: FetchLike;
  readonly #debug: ((line: string) => void) | null;

  constructor(options: PhoneSessionClientOptions = {}) {
    const { baseUrl, apiKey } = resolveConfig(options);
    this.baseUrl = baseUrl;
    this.#apiKey = apiKey;
    this.#retry = retryPolicy(options.retry);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#fetch = options.fetch ?? (undiciFetch as unknown as FetchLike);
    this.#debug = createDebug('phonelease:http', options.env ?? process.env);
  }

  /**
   * @internal The key, read only by leasePhone() to hand it to the crash-safety reaper over
   * a private pipe. Not enumerable and never printed (see toJSON and inspect below).
   */
  get apiKey(): string {
    return this.#apiKey;
  }

  /** Never show the key when a client is logged or inspected. */
  toJSON(): { baseUrl: string } {
    return { baseUrl: this.baseUrl };
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `PhoneSessionClient { baseUrl: '${this.baseUrl}' }`;
  }

  // -------------------------------------------------------------------------------------
  // Sessions

  /**
   * POST /sessions. 202: admitted (provisioning) or replayed. An unknown outcome (5xx, a cut
   * answer) is retried only when keyed; a refusal before processing (429, phones_busy) always.
   */
  createSession(body: CreateSessionBody = {}, options: CreateSessionOptions = {}): Promise<Session> {
    const key = options.idempotencyKey;
    return this.#json<Session>({
      method: 'POST',
      path: '/sessions',
      body,
      headers: key ? { 'idempotency-key': key } : {},
      // Without a key, sending a create whose outcome is unknown again can start a second phone.
      idempotent: Boolean(key),
      // An answer without a session id is an unknown outcome (the lease asks the receipt).
      expect: SESSION_SHAPE,
      call: options,
    });
  }

  /** GET /sessions: live sessions (provisioning, ready, error, closing). */
  listSessions(options: CallOptions = {}): Promise<Session[]> {
    return this.#json<Session[]>({ method: 'GET', path: '/sessions', idempotent: true, call: options });
  }

  /** GET /sessions/{sid}; with waitSeconds, a long poll that answers when the state changes. */
  getSession(sid: string, options: GetSessionOptions = {}): Promise<Session> {
    const wait =
      options.waitSeconds === undefined
        ? undefined
        : Math.max(0, Math.min(LONG_POLL_MAX_S, Math.floor(options.waitSeconds)));
    return this.#json<Session>({
      method: 'GET',
      path: `/sessions/${enc(sid)}`,
      query: { wait: wait || undefined },
      idempotent: true,
      expect: SESSION_SHAPE,
      timeoutMs: this.#timeoutMs + (wait ?? 0) * 1000,
      call: options,
    });
  }

  /** DELETE /sessions/{sid}: released true (cleanup confirmed, 200) or cleanup_pending (202). */
  endSession(sid: string, options: CallOptions = {}): Promise<Release> {
    return this.#json<Release>({
      method: 'DELETE',
      path: `/sessions/${enc(sid)}`,
      idempotent: true,
      call: options,
    });
  }

  /** GET /sessions/requests/{key}: the durable receipt of a keyed create (also after cleanup). */
  getReceipt(requestKey: string, options: CallOptions = {}): Promise<CreateReceipt> {
    return this.#json<CreateReceipt>({
      method: 'GET',
      path: `/sessions/requests/${enc(requestKey)}`,
      idempotent: true,
      expect: SESSION_SHAPE,
      call: options,
    });
  }

  /** GET /sessions/{sid}/frame.png: a still snapshot (captured at most every two seconds). */
  frame(sid: string, options: CallOptions = {}): Promise<Image> {
    return this.#image({
      method: 'GET',
      path: `/sessions/${enc(sid)}/frame.png`,
      idempotent: true,
      binary: true,
      call: options,
    });
  }

  /** GET /sessions/{sid}/owner-viewer: an interactive viewer URL (secret). */
  ownerViewer(sid: string, options: CallOptions = {}): Promise<ViewerCapability> {
    return this.#json<ViewerCapability>({
      method: 'GET',
      path: `/sessions/${enc(sid)}/owner-viewer`,
      idempotent: true,
      call: options,
    });
  }

  /** GET /sessions/{sid}/viewer: a view-only viewer URL (secret); `token` is a view grant. */
  viewer(sid: string, options: CallOptions & { token?: string } = {}): Promise<ViewerCapability> {
    return this.#json<ViewerCapability>({
      method: 'GET',
      path: `/sessions/${enc(sid)}/viewer`,
      query: { token: options.token },
      idempotent: true,
      call: options,
    });
  }

  /** GET /sessions/{sid}/adb: the ADB gateway endpoint and unlock code (secret). */
  adb(sid: string, options: CallOptions = {}): Promise<AdbAccess> {
    return this.#json<AdbAccess>({
      method: 'GET',
      path: `/sessions/${enc(sid)}/adb`,
      idempotent: true,
      call: options,
    });
  }

  /** DELETE /sessions/{sid}/adb: revokes ADB access; the phone keeps running. */
  revokeAdb(sid: string, options: CallOptions = {}): Promise<{ revoked: boolean }> {
    return this.#json<{ revoked: boolean }>({
      method: 'DELETE',
      path: `/sessions/${enc(sid)}/adb`,
      idempotent: true,
      call: options,
    });
  }

  // -------------------------------------------------------------------------------------
  // Phone operations (POST /sessions/{sid}/ops/{op}); a tap must not happen twice, so it is
  // sent again only when it was refused before it was processed (429)

  async tap(sid: string, x: number, y: number, options: CallOptions = {}): Promise<void> {
    await this.#json({
      method: 'POST',
      path: `/sessions/${enc(sid)}/ops/input.tap`,
      body: { x, y },
      idempotent: false,
      emptyOk: true,
      call: options,
    });
  }

  async home(sid: string, options: CallOptions = {}): Promise<void> {
    await this.#json({
      method: 'POST',
      path: `/sessions/${enc(sid)}/ops/nav.home`,
      idempotent: false,
      emptyOk: true,
      call: options,
    });
  }

  /** The screen as an image (screen.capture); reading it twice is harmless, so it is retried. */
  capture(sid: string, options: CallOptions = {}): Promise<Image> {
    return this.#image({
      method: 'POST',
      path: `/sessions/${enc(sid)}/ops/screen.capture`,
      idempotent: true,
      binary: true,
      call: options,
    });
  }

  bounds(sid: string, options: CallOptions = {}): Promise<{ w: number; h: number }> {
    return this.#json({
      method: 'POST',
      path: `/sessions/${enc(sid)}/ops/screen.bounds`,
      idempotent: true,
      call: options,
    });
  }

  apps(sid: string, options: CallOptions = {}): Promise<AppEntry[]> {
    return this.#json({
      method: 'POST',
      path: `/sessions/${enc(sid)}/ops/apps.list`,
      idempotent: true,
      call: options,
    });
  }

  // -------------------------------------------------------------------------------------
  // Account, keys, profile, history

  me(options: CallOptions = {}): Promise<Account> {
    return this.#json<Account>({ method: 'GET', path: '/me', idempotent: true, call: options });
  }

  /** POST /me/keys: the raw key is in this response only. Not retried (it would make two keys). */
  createKey(label: string, options: CallOptions = {}): Promise<CreatedKey> {
    return this.#json<CreatedKey>({
      method: 'POST',
      path: '/me/keys',
      body: { label },
      idempotent: false,
      call: options,
    });
  }

  listKeys(options: CallOptions = {}): Promise<ApiKeyMeta[]> {
    return this.#json<ApiKeyMeta[]>({ method: 'GET', path: '/me/keys', idempotent: true, call: options });
  }

  /** DELETE /me/keys/{key_hash} (key_hash from listKeys, the sha256 of the key). */
  revokeKey(keyHash: string, options: CallOptions = {}): Promise<{ revoked: boolean }> {
    return this.#json<{ revoked: boolean }>({
      method: 'DELETE',
      path: `/me/keys/${enc(keyHash)}`,
      idempotent: true,
      call: options,
    });
  }

  /** POST /me/profile/reset: forgets the saved profile phone (409 profile_running while held). */
  resetProfile(options: CallOptions = {}): Promise<{ id: string; reset: boolean }> {
    return this.#json({ method: 'POST', path: '/me/profile/reset', idempotent: false, call: options });
  }

  /** GET /history: the latest 100 finished sessions, newest first. */
  history(options: CallOptions = {}): Promise<HistoryRecord[]> {
    return this.#json<HistoryRecord[]>({ method: 'GET', path: '/history', idempotent: true, call: options });
  }

  /** GET /history/page: one page; pass next_cursor back unchanged for the next one. */
  historyPage(
    page: { limit?: number; cursor?: string | null } = {},
    options: CallOptions = {},
  ): Promise<HistoryPage> {
    return this.#json<HistoryPage>({
      method: 'GET',
      path: '/history/page',
      query: { limit: page.limit, cursor: page.cursor ?? undefined },
      idempotent: true,
      call: options,
    });
  }

  /** Every finished session, newest first, fetched a page at a time. */
  async *iterateHistory(options: CallOptions & { pageSize?: number } = {}): AsyncGenerator<HistoryRecord> {
    let cursor: string | null = null;
    do {
      const page: HistoryPage = await this.historyPage({ limit: options.pageSize ?? 100, cursor }, options);
      yield* page.items;
      cursor = page.next_cursor;
    } while (cursor);
  }

  // -------------------------------------------------------------------------------------
  // The HTTP exchange

  /**
   * A JSON answer. Every 2xx of the API is JSON (of the expected shape, where the spec
   * names one): anything else comes from another program at the address, and says so.
   */
  async #json<T>(spec: RequestSpec): Promise<T> {
    const answer = await this.#send(spec);
    const text = answer.data.toString('utf8');
    if (spec.emptyOk && text.trim() === '') return undefined as T;
    let body: unknown;
    let parsed = false;
    if (text.trim() !== '') {
      try {
        body = JSON.parse(text);
        parsed = true;
      } catch {
        // not JSON: reported below
      }
    }
    if (!parsed || (spec.expect && !spec.expect.check(body))) {
      throw unexpectedSuccess({
        status: answer.status,
        body: parsed ? body : text,
        requestId: answer.requestId,
        what: answer.what,
        service: this.baseUrl,
        contentType: answer.contentType,
        expected: spec.expect?.what ?? 'JSON',
      });
    }
    return body as T;
  }

  async #image(spec: RequestSpec): Promise<Image> {
    const { data, contentType } = await this.#send(spec);
    return { data, contentType };
  }

  #send(spec: RequestSpec): Promise<Answer> {
    const policy = spec.call?.retry === undefined ? this.#retry : retryPolicy(spec.call.retry);
    return withRetry(() => this.#attempt(spec), {
      policy,
      shouldRetry: (error) => mayRetry(error, spec),
      signal: spec.call?.signal,
      onRetry: (error, retry, delay) =>
        this.#debug?.(
          `retry ${retry} of ${spec.method} ${spec.path} in ${Math.round(delay)}ms: ${messageOf(error)}`,
        ),
    });
  }

  async #attempt(spec: RequestSpec): Promise<Answer> {
    const requestId = newRequestId();
    const url = new URL(this.baseUrl + spec.path);
    for (const [k, v] of Object.entries(spec.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#apiKey}`,
      'x-request-id': requestId,
      accept: spec.binary ? 'image/png, image/jpeg, application/json' : 'application/json',
      ...spec.headers,
    };
    let body: string | undefined;
    if (spec.body !== undefined) {
      body = JSON.stringify(spec.body);
      headers['content-type'] = 'application/json';
    }
    const what = `${spec.method} ${spec.path}`;
    const timeoutMs = spec.timeoutMs ?? this.#timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = spec.call?.signal ? AbortSignal.any([spec.call.signal, timeout]) : timeout;
    const started = performance.now();
    this.#debug?.(`-> ${what}${url.search} ${requestId}${body ? ` ${body}` : ''}`);

    let status: number;
    let data: Buffer;
    let res: FetchResponseLike;
    try {
      res = await this.#fetch(url.href, {
        method: spec.method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal,
        redirect: 'manual',
      });
      status = res.status;
      data = Buffer.from(await res.arrayBuffer());
    } catch (error) {
      // The caller's own abort is not a connection problem: hand its reason back as is.
      if (spec.call?.signal?.aborted) throw spec.call.signal.reason;
      const timedOut = timeout.aborted;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const detail = cause?.code ?? cause?.message ?? messageOf(error);
      this.#debug?.(`<- ${what} ${requestId} failed: ${detail}`);
      throw new ConnectionError(
        timedOut
          ? `${what} got no answer within ${timeoutMs} ms from ${this.baseUrl}; check that the service is up, or raise timeoutMs.`
          : `Could not reach the phone-session service at ${this.baseUrl} (${what}: ${detail}); check PHONELEASE_BASE_URL and that the service is running.`,
        {
          code: timedOut ? 'request_timeout' : 'connection_failed',
          requestId,
          cause: error,
          requestMayHaveArrived: !(typeof cause?.code === 'string' && CONNECT_FAILURE_CODES.has(cause.code)),
        },
      );
    }
    const contentType = res.headers.get('content-type') ?? '';
    const ms = Math.round(performance.now() - started);
    if (this.#debug) {
      // Redact the whole body before cutting it: a cut inside a secret would leave its start unredacted.
      const shown = contentType.includes('json')
        ? redact(data.toString('utf8')).slice(0, 2000)
        : `<${data.length} bytes ${contentType}>`;
      this.#debug(`<- ${status} ${what} ${requestId} ${ms}ms ${shown}`);
    }
    if (status >= 200 && status < 300) return { data, contentType, status, requestId, what };
    if (status >= 300 && status < 400) {
      throw redirected({
        status,
        body: null,
        location: res.headers.get('location'),
        url: url.href,
        requestId,
        what,
        service: this.baseUrl,
      });
    }

    let parsed: unknown = data.toString('utf8');
    // The API's errors are JSON; one sent without a JSON content type (a proxy rewrote it,
    // an older server) is still read as JSON when it looks like it.
    if (contentType.includes('json') || (parsed as string).trimStart().startsWith('{')) {
      try {
        parsed = JSON.parse(parsed as string);
      } catch {
        // keep the text
      }
    }
    throw errorFromResponse({
      status,
      body: parsed,
      retryAfter: res.headers.get('retry-after'),
      requestId,
      what,
      service: this.baseUrl,
      contentType,
    });
  }
}

const enc = encodeURIComponent;
