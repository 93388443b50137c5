/**
 * Errors, modelled on undici's: one base class with a literal `code`, the HTTP `status`,
 * the `requestId` of the call, the retry rule that applies (`retry`, read from the error
 * registry in src/api/errors.ts) and the one answer to "can trying again help?"
 * (`retryable`); one subclass per API error code, each carrying the details its body has;
 * a factory that maps any response, the API's or a proxy's, to the right class.
 *
 * `instanceof` works across two copies of this module (the built package and its sources,
 * two versions in one node_modules): every error carries its class names under a
 * `Symbol.for` key, and each class checks that brand instead of its prototype chain.
 *
 * Messages come from the server (which says what to do next) or say it themselves, never
 * quote a page, and never contain a secret (they pass through redact()).
 */
import { ERROR_CODES, type ErrorBody, type ErrorCode, type SessionState } from './api/schemas.js';
import { ERROR_REGISTRY, isErrorCode, type RetryRule } from './api/errors.js';
import { redact } from './util/redact.js';

export type { RetryRule } from './api/errors.js';

export interface PhoneleaseErrorOptions {
  /** HTTP status, or null when no response arrived. */
  status?: number | null;
  requestId?: string | null;
  /** The retry rule; the class's own when omitted. */
  retry?: RetryRule;
  /** The error body as the server sent it. */
  body?: ErrorBody;
  /** The server's Retry-After in ms, if it sent one. */
  retryAfterMs?: number | null;
  /** The session this error happened to. */
  sessionId?: string | null;
  /** The idempotency key of the start this error belongs to. */
  requestKey?: string | null;
  cause?: unknown;
}

/** Where every error keeps the names of its classes: shared by every copy of this module. */
const BRANDS = Symbol.for('phonelease.error.brands');

/** The class names from `ctor` up to PhoneleaseError: the brand an instance carries. */
function brandsOf(ctor: abstract new (...args: never[]) => unknown): string[] {
  const names: string[] = [];
  for (let c: unknown = ctor; typeof c === 'function' && c !== Error; c = Object.getPrototypeOf(c))
    names.push(c.name);
  return names;
}

export class PhoneleaseError extends Error {
  /**
   * `error instanceof X` asks the brand, not the prototype chain, so that an error thrown by
   * one copy of phonelease is recognised by another (as undici does with its errors).
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (typeof value !== 'object' || value === null) return false;
    const brands = (value as { [BRANDS]?: unknown })[BRANDS];
    return Array.isArray(brands) && brands.includes(this.name);
  }

  override name = 'PhoneleaseError';
  /** Machine code: the API's code, or one of the client's own (connection_failed, ready_timeout, ...). */
  readonly code: string;
  readonly status: number | null;
  readonly requestId: string | null;
  /**
   * What may be done with the same request: `never`; `after_retry_after` (nothing happened,
   * send it again after the wait); `resolve_receipt` (a create may have been admitted, look
   * its key up first); `transient` (the service had trouble; reads and ends are retried,
   * a create is resolved through its receipt).
   */
  readonly retry: RetryRule;
  /** True when the same request may succeed later: the one answer, derived from `retry`. */
  readonly retryable: boolean;
  readonly body: ErrorBody | undefined;
  /** How long the server asked to wait before retrying (Retry-After, or retry_after_seconds), in ms. */
  readonly retryAfterMs: number | null;
  /** The session this error happened to, once one was admitted. */
  readonly sessionId: string | null;
  /** The idempotency key of the start this error belongs to. */
  readonly requestKey: string | null;

  constructor(code: string, message: string, options: PhoneleaseErrorOptions = {}) {
    super(redact(message), options.cause === undefined ? undefined : { cause: options.cause });
    Object.defineProperty(this, BRANDS, { value: brandsOf(new.target), enumerable: false });
    this.code = code;
    this.status = options.status ?? null;
    this.requestId = options.requestId ?? null;
    this.retry = options.retry ?? (isErrorCode(code) ? ERROR_REGISTRY[code].retry : 'never');
    this.retryable = this.retry !== 'never';
    this.body = options.body;
    this.retryAfterMs = options.retryAfterMs ?? waitOfSeconds(options.body?.retry_after_seconds);
    this.sessionId = options.sessionId ?? null;
    this.requestKey = options.requestKey ?? null;
  }
}

/**
 * Ties an error to the lease it happened in: records the session and the start's key on it,
 * and names the session in its message, so that a user with ten phones knows which one
 * failed. Errors that are not phonelease's (an abort reason, a bug) are returned as they are.
 */
export function withLeaseContext<E>(
  error: E,
  context: { sessionId?: string | null; requestKey?: string | null },
): E {
  if (!(error instanceof PhoneleaseError)) return error;
  const sessionId = error.sessionId ?? context.sessionId ?? null;
  const requestKey = error.requestKey ?? context.requestKey ?? null;
  // The fields are readonly for users; this is the one place that fills them in afterwards.
  Object.assign(error, { sessionId, requestKey });
  if (sessionId && !error.message.includes(sessionId))
    error.message = `session ${sessionId}: ${error.message}`;
  return error;
}

// ---------------------------------------------------------------------------------------
// API errors: one class per code in the error body

export class InvalidRequestError extends PhoneleaseError {
  override name = 'InvalidRequestError';
  declare readonly code:
    'invalid_request' | 'unsupported' | 'body_too_large' | 'uri_too_long' | 'headers_too_large';
  /** The request asked for something the service does not support (raw capabilities, resource overrides). */
  readonly unsupported: boolean;
  constructor(
    message: string,
    options: PhoneleaseErrorOptions & { code?: InvalidRequestError['code'] } = {},
  ) {
    super(options.code ?? ERROR_CODES.invalidRequest, message, options);
    this.unsupported = options.body?.unsupported === true || this.code === ERROR_CODES.unsupported;
  }
}

export class AuthenticationError extends PhoneleaseError {
  override name = 'AuthenticationError';
  /** `sign_in_link_used` / `sign_in_link_expired`: a dashboard sign-in link that no longer works. */
  declare readonly code: 'unauthenticated' | 'sign_in_link_used' | 'sign_in_link_expired';
  constructor(
    message: string,
    options: PhoneleaseErrorOptions & { code?: AuthenticationError['code'] } = {},
  ) {
    super(options.code ?? ERROR_CODES.unauthenticated, message, options);
  }
}

export class PermissionError extends PhoneleaseError {
  override name = 'PermissionError';
  declare readonly code: 'forbidden' | 'rental_unavailable';
  constructor(message: string, options: PhoneleaseErrorOptions & { code?: PermissionError['code'] } = {}) {
    super(options.code ?? ERROR_CODES.forbidden, message, options);
  }
}

export class InsufficientCreditError extends PhoneleaseError {
  override name = 'InsufficientCreditError';
  declare readonly code: 'insufficient_credit';
  /** The account's credit when the start was refused, in US cents. */
  readonly balanceCents: number | null;
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.insufficientCredit, message, options);
    this.balanceCents = options.body?.balance_cents ?? null;
  }
}

export class NotFoundError extends PhoneleaseError {
  override name = 'NotFoundError';
  declare readonly code: 'not_found';
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.notFound, message, options);
  }
}

export class SessionLimitError extends PhoneleaseError {
  override name = 'SessionLimitError';
  declare readonly code: 'session_limit';
  readonly sessionLimit: number | null;
  /** Includes sessions still pending cleanup. */
  readonly activeSessionCount: number | null;
  readonly availableSessionSlots: number | null;
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.sessionLimit, message, options);
    this.sessionLimit = options.body?.session_limit ?? null;
    this.activeSessionCount = options.body?.active_session_count ?? null;
    this.availableSessionSlots = options.body?.available_session_slots ?? null;
  }
}

export class ProfileRunningError extends PhoneleaseError {
  override name = 'ProfileRunningError';
  declare readonly code: 'profile_running';
  /** The session holding the profile phone, when the server names it (null while it is being saved). */
  readonly holdingSession: string | null;
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.profileRunning, message, options);
    this.holdingSession = options.body?.session ?? null;
  }
}

export class IdempotencyConflictError extends PhoneleaseError {
  override name = 'IdempotencyConflictError';
  declare readonly code: 'idempotency_key_reused' | 'idempotency_key_in_use';
  constructor(message: string, options: PhoneleaseErrorOptions & { code: IdempotencyConflictError['code'] }) {
    super(options.code, message, { requestKey: options.body?.request_key ?? null, ...options });
  }
}

export class SessionNotReadyError extends PhoneleaseError {
  override name = 'SessionNotReadyError';
  declare readonly code: 'session_not_ready';
  readonly state: SessionState | null;
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.sessionNotReady, message, { sessionId: options.body?.id ?? null, ...options });
    this.state = (options.body?.state as SessionState | undefined) ?? null;
  }
}

export class RequestCompletedError extends PhoneleaseError {
  override name = 'RequestCompletedError';
  declare readonly code: 'request_completed';
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.requestCompleted, message, {
      sessionId: options.body?.id ?? null,
      requestKey: options.body?.request_key ?? null,
      ...options,
    });
  }
}

/** The service had an unexpected failure (code internal, or a 5xx without a code it knows). */
export class ServerError extends PhoneleaseError {
  override name = 'ServerError';
  constructor(code: string, message: string, options: PhoneleaseErrorOptions = {}) {
    super(code, message, { retry: 'transient', ...options });
  }
}

export class PhonesBusyError extends PhoneleaseError {
  override name = 'PhonesBusyError';
  declare readonly code: 'phones_busy';
  /** How long the server asks to wait before retrying (Retry-After, else retry_after_seconds, else 1 s). */
  declare readonly retryAfterMs: number;
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.phonesBusy, message, {
      ...options,
      retryAfterMs: options.retryAfterMs ?? waitOfSeconds(options.body?.retry_after_seconds) ?? 1000,
    });
  }
}

export class CreateRequestRecordedError extends PhoneleaseError {
  override name = 'CreateRequestRecordedError';
  declare readonly code: 'create_request_recorded';
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.createRequestRecorded, message, {
      sessionId: options.body?.id ?? null,
      requestKey: options.body?.request_key ?? null,
      ...options,
    });
  }
}

export class NoFrameError extends PhoneleaseError {
  override name = 'NoFrameError';
  declare readonly code: 'no_frame';
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.noFrame, message, options);
  }
}

// ---------------------------------------------------------------------------------------
// Answers that are not the API's: a proxy, a rate limiter or another program at the address

/** HTTP 429 without one of the API's codes: a rate limiter refused the request before it was processed. */
export class RateLimitedError extends PhoneleaseError {
  override name = 'RateLimitedError';
  declare readonly code: 'rate_limited';
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super('rate_limited', message, { retry: 'after_retry_after', ...options });
  }
}

// ---------------------------------------------------------------------------------------
// Client-side errors

/** No response: the service could not be reached, the connection dropped, or the call timed out. */
export class ConnectionError extends PhoneleaseError {
  override name = 'ConnectionError';
  declare readonly code: 'connection_failed' | 'request_timeout';
  /**
   * False when the connection itself failed (refused, unknown host, unreachable), so the
   * service cannot have seen the request; true when it may have (a timeout, a cut answer).
   */
  readonly requestMayHaveArrived: boolean;
  constructor(
    message: string,
    options: PhoneleaseErrorOptions & {
      code?: ConnectionError['code'];
      requestMayHaveArrived?: boolean;
    } = {},
  ) {
    const mayHaveArrived = options.requestMayHaveArrived ?? true;
    super(options.code ?? 'connection_failed', message, {
      // A request that never left may be sent again as is; one that may have arrived has
      // the outcome of a server in trouble: unknown.
      retry: mayHaveArrived ? 'transient' : 'after_retry_after',
      ...options,
      status: null,
    });
    this.requestMayHaveArrived = mayHaveArrived;
  }
}

/** Error codes of a connection that never opened: no byte of the request left this machine. */
export const CONNECT_FAILURE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Base URL or API key missing or malformed, or another program answers at the address. */
export class ConfigurationError extends PhoneleaseError {
  override name = 'ConfigurationError';
  declare readonly code: 'configuration';
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super('configuration', message, { ...options, retry: 'never' });
  }
}

/** The phone did not become ready within the lease's budget (the session was ended). */
export class ReadyTimeoutError extends PhoneleaseError {
  override name = 'ReadyTimeoutError';
  declare readonly code: 'ready_timeout';
  declare readonly sessionId: string;
  readonly lastState: SessionState | null;
  constructor(
    message: string,
    options: PhoneleaseErrorOptions & { sessionId: string; lastState: SessionState | null },
  ) {
    // A new lease may well get a phone in time.
    super('ready_timeout', message, { retry: 'transient', ...options });
    this.lastState = options.lastState;
  }
}

/** The phone failed to start (state error), or vanished while starting. Carries the public failure. */
export class SessionFailedError extends PhoneleaseError {
  override name = 'SessionFailedError';
  declare readonly code: 'session_failed';
  declare readonly sessionId: string;
  readonly failure: { code: string; message: string };
  constructor(
    message: string,
    options: PhoneleaseErrorOptions & { sessionId: string; failure: { code: string; message: string } },
  ) {
    super('session_failed', message, options);
    this.failure = options.failure;
  }
}

/** The ADB gateway refused the unlock code, or an ADB command failed. */
export class AdbError extends PhoneleaseError {
  override name = 'AdbError';
  declare readonly code: 'adb_denied' | 'adb_unavailable' | 'adb_failed';
  constructor(code: AdbError['code'], message: string, options: PhoneleaseErrorOptions = {}) {
    super(code, message, options);
  }
}

/** An operation on a lease that has already ended. */
export class LeaseEndedError extends PhoneleaseError {
  override name = 'LeaseEndedError';
  declare readonly code: 'lease_ended';
  constructor(sessionId: string) {
    super('lease_ended', `The lease of session ${sessionId} has ended; start a new lease to keep working.`, {
      sessionId,
    });
  }
}

// ---------------------------------------------------------------------------------------
// The app under test

/**
 * An app given to install (`apps`, `--app`, `--preinstall`) that cannot be installed as
 * given: a missing or unreadable file, a file that is not an APK, split APKs without their
 * base. Found before any phone is started for it.
 */
export class AppFileError extends PhoneleaseError {
  override name = 'AppFileError';
  declare readonly code: 'app_file_invalid';
  /** The file as it was given. */
  readonly path: string;
  constructor(path: string, message: string, options: PhoneleaseErrorOptions = {}) {
    super('app_file_invalid', message, { ...options, retry: 'never' });
    this.path = path;
  }
}

/**
 * The phone's package manager refused an app. `failure` is its code
 * (INSTALL_FAILED_UPDATE_INCOMPATIBLE, INSTALL_FAILED_NO_MATCHING_ABIS, ...); the message
 * quotes its words and says what to do. The lease's phone was ended.
 */
export class AppInstallError extends PhoneleaseError {
  override name = 'AppInstallError';
  declare readonly code: 'app_install_failed';
  readonly packageName: string;
  /** The package manager's failure code, e.g. INSTALL_FAILED_UPDATE_INCOMPATIBLE. */
  readonly failure: string;
  constructor(message: string, options: PhoneleaseErrorOptions & { packageName: string; failure: string }) {
    super('app_install_failed', message, { ...options, retry: 'never' });
    this.packageName = options.packageName;
    this.failure = options.failure;
  }
}

/**
 * An installed app the phone cannot run: the built-in virtual phone runs only its own apps
 * (Settings, Chrome, Login), not an app's code. Android SDK emulators run it.
 */
export class AppNotRunnableError extends PhoneleaseError {
  override name = 'AppNotRunnableError';
  declare readonly code: 'app_not_runnable';
  readonly packageName: string;
  constructor(packageName: string, options: PhoneleaseErrorOptions = {}) {
    super(
      'app_not_runnable',
      `${packageName} can't run on this virtual phone: the virtual phone runs only its built-in apps (Settings, Chrome, Login), not your app's code. Run it on an Android SDK emulator: set phoneleaseServer: { device: 'emulator' } (Playwright and WebdriverIO) or PHONELEASE_DEVICE=emulator; \`phonelease doctor\` says what this machine needs for emulators.`,
      { ...options, retry: 'never' },
    );
    this.packageName = packageName;
  }
}

// ---------------------------------------------------------------------------------------
// The factory

export interface ErrorResponse {
  status: number;
  /** Parsed JSON body, or the raw text when it was not JSON. */
  body: unknown;
  /** Retry-After as sent (seconds or an HTTP date). */
  retryAfter?: string | null;
  requestId?: string | null;
  /** What was called, for messages: `GET /sessions/ses_1`. */
  what?: string;
  /** The service's base URL, for messages about answers that are not from the API. */
  service?: string;
  /** The response's content type. */
  contentType?: string;
}

/**
 * A wait the server asked for, in whole seconds, as ms; null for anything that is not a
 * positive whole number. A wait of 0 (or less, or a fraction) would make a retry loop send
 * back to back, so it counts as no advice at all: the caller's backoff applies.
 */
export function waitOfSeconds(seconds: unknown): number | null {
  return typeof seconds === 'number' && Number.isSafeInteger(seconds) && seconds > 0 ? seconds * 1000 : null;
}

/**
 * Retry-After in ms: delta-seconds or an HTTP date; null when absent, unreadable, or no wait
 * at all (0, a past date). Only a text that looks like a date is read as one: Date.parse
 * takes "-1" or "1.5" for a day in 2001.
 */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return waitOfSeconds(Number(trimmed));
  if (!/^[A-Za-z]{3,9},? /.test(trimmed)) return null;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) || at <= now ? null : at - now;
}

/** The class of every API code: adding a code to the registry without a class does not compile. */
const API_ERROR_CLASSES: {
  readonly [C in ErrorCode]: (message: string, options: PhoneleaseErrorOptions) => PhoneleaseError;
} = {
  [ERROR_CODES.invalidRequest]: (m, o) => new InvalidRequestError(m, { ...o, code: 'invalid_request' }),
  [ERROR_CODES.unsupported]: (m, o) => new InvalidRequestError(m, { ...o, code: 'unsupported' }),
  [ERROR_CODES.bodyTooLarge]: (m, o) => new InvalidRequestError(m, { ...o, code: 'body_too_large' }),
  [ERROR_CODES.uriTooLong]: (m, o) => new InvalidRequestError(m, { ...o, code: 'uri_too_long' }),
  [ERROR_CODES.headersTooLarge]: (m, o) => new InvalidRequestError(m, { ...o, code: 'headers_too_large' }),
  // The server gave up waiting for the rest of the request: nothing was processed.
  [ERROR_CODES.requestTimeout]: (m, o) => new ServerError(ERROR_CODES.requestTimeout, m, o),
  [ERROR_CODES.unauthenticated]: (m, o) => new AuthenticationError(m, o),
  [ERROR_CODES.forbidden]: (m, o) => new PermissionError(m, { ...o, code: 'forbidden' }),
  [ERROR_CODES.rentalUnavailable]: (m, o) => new PermissionError(m, { ...o, code: 'rental_unavailable' }),
  [ERROR_CODES.insufficientCredit]: (m, o) => new InsufficientCreditError(m, o),
  [ERROR_CODES.notFound]: (m, o) => new NotFoundError(m, o),
  [ERROR_CODES.sessionLimit]: (m, o) => new SessionLimitError(m, o),
  [ERROR_CODES.profileRunning]: (m, o) => new ProfileRunningError(m, o),
  [ERROR_CODES.idempotencyKeyReused]: (m, o) =>
    new IdempotencyConflictError(m, { ...o, code: 'idempotency_key_reused' }),
  [ERROR_CODES.idempotencyKeyInUse]: (m, o) =>
    new IdempotencyConflictError(m, { ...o, code: 'idempotency_key_in_use' }),
  [ERROR_CODES.sessionNotReady]: (m, o) => new SessionNotReadyError(m, o),
  [ERROR_CODES.requestCompleted]: (m, o) => new RequestCompletedError(m, o),
  [ERROR_CODES.internal]: (m, o) => new ServerError(ERROR_CODES.internal, m, o),
  [ERROR_CODES.phonesBusy]: (m, o) => new PhonesBusyError(m, o),
  [ERROR_CODES.createRequestRecorded]: (m, o) => new CreateRequestRecordedError(m, o),
  [ERROR_CODES.noFrame]: (m, o) => new NoFrameError(m, o),
  [ERROR_CODES.signInLinkUsed]: (m, o) => new AuthenticationError(m, { ...o, code: 'sign_in_link_used' }),
  [ERROR_CODES.signInLinkExpired]: (m, o) =>
    new AuthenticationError(m, { ...o, code: 'sign_in_link_expired' }),
};

/**
 * 5xx statuses that say something permanent about the program answering (it does not
 * implement the method, the HTTP version, or wants a captive-portal login): retrying will
 * not help, so without the API's body they mean another program is at the address.
 */
const PERMANENT_5XX: ReadonlySet<number> = new Set([501, 505, 511]);

/**
 * The API's error body (an `error` string, and a `code` string but for an older server's
 * HTTP-layer refusals), or null for anything else.
 */
function apiErrorBody(body: unknown): ErrorBody | null {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
  const o = body as Partial<ErrorBody>;
  if (typeof o.error !== 'string') return null;
  return { ...(o as ErrorBody), code: typeof o.code === 'string' ? o.code : '' };
}

/** The human part of a JSON body that is not the API's: its message, error or detail. */
function jsonGist(body: object): string {
  const o = body as Record<string, unknown>;
  for (const field of ['message', 'error', 'detail', 'title']) {
    const value = o[field];
    if (typeof value === 'string') return value;
  }
  return JSON.stringify(body);
}

const SUMMARY_MAX = 100;

/** The character of a numeric entity (&#95; or &#x5f;); a code point that is none stays as text. */
function fromCodePoint(entity: string, code: number): string {
  return Number.isInteger(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : entity;
}

/**
 * A short plain-text gist of a body that is not the API's, for a message: the text of an
 * HTML page (no tags, scripts or styles), or the start of a text or JSON body, whitespace
 * collapsed, cut at SUMMARY_MAX characters. Never the page itself. Entities are decoded
 * and secrets redacted before the cut: `pck&#95;...` is a key, and a cut inside a secret
 * would leave its start for anyone to read.
 */
export function summarizeBody(body: unknown): string {
  let text =
    typeof body === 'string'
      ? body
      : body && typeof body === 'object'
        ? jsonGist(body)
        : body === undefined || body === null
          ? ''
          : String(body);
  if (/<[a-z!/][^>]*>/i.test(text)) {
    text = text
      .replace(/<(script|style|head)\b[\s\S]*?<\/\1\s*>/gi, ' ')
      .replace(/<!--[\s\S]*?-->/g, ' ')
      .replace(/<[^>]*>?/g, ' ');
  }
  text = text
    .replace(/&#x([0-9a-f]{1,6});?/gi, (entity, hex: string) => fromCodePoint(entity, parseInt(hex, 16)))
    .replace(/&#([0-9]{1,7});?/g, (entity, dec: string) => fromCodePoint(entity, Number(dec)))
    .replace(/&nbsp;/gi, ' ')
    .replace(/&lt;/gi, '‹')
    .replace(/&gt;/gi, '›')
    .replace(/&quot;/gi, '"')
    .replace(/&apos;/gi, "'")
    .replace(/&amp;/gi, '&');
  // Whatever is left of markup (a stray "<" in a torn page) is not shown either.
  text = redact(text.replace(/[<>]/g, ' ').replace(/\s+/g, ' ').trim());
  return text.length > SUMMARY_MAX ? `${text.slice(0, SUMMARY_MAX - 1).trimEnd()}…` : text;
}

/**
 * Maps an error response to its class. The API's codes map through the registry; anything
 * else is classified by its status: 429 was refused before it was processed (wait and send
 * it again), a 5xx is a service or proxy in trouble (transient; not 501, 505 or 511), and
 * any other answer that is not the API's comes from another program at the address (a
 * configuration error).
 */
export function errorFromResponse(res: ErrorResponse): PhoneleaseError {
  const opts: PhoneleaseErrorOptions = {
    status: res.status,
    requestId: res.requestId ?? null,
    retryAfterMs: parseRetryAfter(res.retryAfter),
  };
  const where = res.what
    ? ` (${res.what}, HTTP ${res.status}${res.requestId ? `, request ${res.requestId}` : ''})`
    : ` (HTTP ${res.status})`;
  const body = apiErrorBody(res.body);
  if (body && isErrorCode(body.code)) {
    const withBody = { ...opts, body };
    switch (body.code) {
      case ERROR_CODES.unauthenticated:
        // The server's advice is about HTTP headers; a client user sets a key, not a header.
        return new AuthenticationError(
          `The service refused the API key: ${body.error}${where} Check PHONELEASE_API_KEY (or the apiKey option); \`phonelease keys create\` makes a new key, \`phonelease accounts create\` a new account on the server's machine.`,
          withBody,
        );
      case ERROR_CODES.profileRunning: {
        const holder = typeof body.session === 'string' ? ` It is held by session ${body.session}.` : '';
        return new ProfileRunningError(
          `${body.error}${holder}${where} One session at a time may use the profile phone: run profile tests one after another (workers: 1, or test.describe.configure({ mode: 'serial' })), or wait for the holder to end.`,
          withBody,
        );
      }
      default:
        return API_ERROR_CLASSES[body.code](`${body.error}${where}`, withBody);
    }
  }

  // Not one of the API's codes: a newer server's code, a proxy's page, an empty body. (The
  // request id stays on the error: a proxy's page never saw it.)
  const type = res.contentType?.split(';')[0]?.trim() || 'no content type';
  const summary = body ? body.error : summarizeBody(res.body);
  const service = res.service ?? 'The service';
  const answered = `${service} answered ${res.what ?? 'the request'} with HTTP ${res.status} (${type}${summary ? `: "${summary}"` : ''})`;
  const withBody = body ? { ...opts, body } : opts;
  const code = body?.code || `http_${res.status}`;
  if (res.status === 429) {
    return new RateLimitedError(
      `${answered}: too many requests, refused before it was processed; it is sent again after ${opts.retryAfterMs !== null ? 'the Retry-After the answer asked for' : 'a backoff'}. If this persists, run fewer tests at once or raise the rate limit in front of the service.`,
      withBody,
    );
  }
  if (res.status >= 500 && !PERMANENT_5XX.has(res.status)) {
    return new ServerError(
      code,
      `${answered}: the service, or a proxy in front of it, is in trouble; calls that are safe to repeat are retried.`,
      withBody,
    );
  }
  if (body) {
    // The API's shape with a code this client does not know: the status says what it is.
    const message = `${body.error}${where}`;
    switch (res.status) {
      case 400:
      case 413:
        return new InvalidRequestError(message, {
          ...withBody,
          code: res.status === 413 ? 'body_too_large' : 'invalid_request',
        });
      case 401:
        return new AuthenticationError(message, withBody);
      case 403:
        return new PermissionError(message, withBody);
      case 404:
        return new NotFoundError(message, withBody);
      case 410:
        return new RequestCompletedError(message, withBody);
    }
    return new PhoneleaseError(code, message, withBody);
  }
  return notTheApi(answered, opts);
}

/** The error for an answer that cannot come from the phonelease API. */
function notTheApi(answered: string, opts: PhoneleaseErrorOptions): ConfigurationError {
  return new ConfigurationError(
    `${answered}, which is not the phonelease API; check that PHONELEASE_BASE_URL (or baseUrl) points at a phonelease server.`,
    opts,
  );
}

/**
 * A 2xx whose body is not what the API sends (an HTML page, an empty body, JSON of another
 * shape): another program answered, the same ConfigurationError as any answer that is not
 * the API's. `status` stays on it, so that a create can tell that its outcome is unknown.
 */
export function unexpectedSuccess(res: ErrorResponse & { expected: string }): ConfigurationError {
  const type = res.contentType?.split(';')[0]?.trim() || 'no content type';
  const summary = summarizeBody(res.body);
  const service = res.service ?? 'The service';
  return notTheApi(
    `${service} answered ${res.what ?? 'the request'} with HTTP ${res.status} (${type}${summary ? `: "${summary}"` : ', empty'}) instead of ${res.expected}`,
    { status: res.status, requestId: res.requestId ?? null },
  );
}

/**
 * A redirect, which the client never follows: across origins it drops the API key (and the
 * user is told the key is bad), and a 301 or 302 turns a create into GET /sessions.
 * `location` is shown without its query or fragment, which may hold a token.
 */
export function redirected(
  res: ErrorResponse & { location: string | null; url: string },
): ConfigurationError {
  let where = 'an address it did not name';
  if (res.location) {
    try {
      const to = new URL(res.location, res.url);
      where = `${to.origin}${to.pathname}`;
    } catch {
      where = 'an address that is not a URL';
    }
  }
  return new ConfigurationError(
    `${res.service ?? 'The service'} redirected ${res.what ?? 'the request'} (HTTP ${res.status}) to ${where}; the client does not follow redirects (they drop the API key, or turn a create into a GET). Set PHONELEASE_BASE_URL (or baseUrl) to the final address of the phonelease server.`,
    { status: res.status, requestId: res.requestId ?? null },
  );
}
