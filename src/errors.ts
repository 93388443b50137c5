/**
 * Errors, modelled on undici's and stripe's: one base class with a literal `code`, the HTTP
 * `status`, the `requestId` of the call and whether retrying can help (`retryable`); one
 * subclass per API error code, each carrying the details its body has; a factory that maps
 * a response to the right class. Messages come from the server (which says what to do
 * next) or say it themselves, and never contain a secret (they pass through redact()).
 */
import { ERROR_CODES, type ErrorBody, type SessionState } from './api/schemas.js';
import { redact } from './util/redact.js';

export interface PhoneleaseErrorOptions {
  /** HTTP status, or null when no response arrived. */
  status?: number | null;
  requestId?: string | null;
  retryable?: boolean;
  /** The error body as the server sent it. */
  body?: ErrorBody;
  /** The server's Retry-After in ms, if it sent one. */
  retryAfterMs?: number | null;
  cause?: unknown;
}

export class PhoneleaseError extends Error {
  override name = 'PhoneleaseError';
  /** Machine code: the API's code, or one of the client's own (connection_failed, ready_timeout, ...). */
  readonly code: string;
  readonly status: number | null;
  readonly requestId: string | null;
  /** True when the same request may succeed later (capacity, connection, server trouble). */
  readonly retryable: boolean;
  readonly body: ErrorBody | undefined;
  /** How long the server asked to wait before retrying (Retry-After, or retry_after_seconds), in ms. */
  readonly retryAfterMs: number | null;

  constructor(code: string, message: string, options: PhoneleaseErrorOptions = {}) {
    super(redact(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = options.status ?? null;
    this.requestId = options.requestId ?? null;
    this.retryable = options.retryable ?? false;
    this.body = options.body;
    const fromBody = options.body?.retry_after_seconds;
    this.retryAfterMs = options.retryAfterMs ?? (typeof fromBody === 'number' ? fromBody * 1000 : null);
  }
}

// ---------------------------------------------------------------------------------------
// API errors: one class per code in the error body

export class InvalidRequestError extends PhoneleaseError {
  override name = 'InvalidRequestError';
  declare readonly code: 'invalid_request' | 'unsupported' | 'body_too_large';
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
  declare readonly code: 'unauthenticated';
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.unauthenticated, message, options);
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
  readonly requestKey: string | null;
  constructor(message: string, options: PhoneleaseErrorOptions & { code: IdempotencyConflictError['code'] }) {
    // A key still being admitted resolves on its own; a key reused with another body never does.
    super(options.code, message, { ...options, retryable: options.code === ERROR_CODES.idempotencyKeyInUse });
    this.requestKey = options.body?.request_key ?? null;
  }
}

export class SessionNotReadyError extends PhoneleaseError {
  override name = 'SessionNotReadyError';
  declare readonly code: 'session_not_ready';
  readonly state: SessionState | null;
  readonly sessionId: string | null;
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.sessionNotReady, message, options);
    this.state = (options.body?.state as SessionState | undefined) ?? null;
    this.sessionId = options.body?.id ?? null;
  }
}

export class RequestCompletedError extends PhoneleaseError {
  override name = 'RequestCompletedError';
  declare readonly code: 'request_completed';
  readonly sessionId: string | null;
  readonly requestKey: string | null;
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.requestCompleted, message, options);
    this.sessionId = options.body?.id ?? null;
    this.requestKey = options.body?.request_key ?? null;
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
      retryable: true,
      retryAfterMs: options.retryAfterMs ?? (options.body?.retry_after_seconds ?? 1) * 1000,
    });
  }
}

export class CreateRequestRecordedError extends PhoneleaseError {
  override name = 'CreateRequestRecordedError';
  declare readonly code: 'create_request_recorded';
  /** The admitted session, when the server names it. */
  readonly sessionId: string | null;
  readonly requestKey: string | null;
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.createRequestRecorded, message, { ...options, retryable: true });
    this.sessionId = options.body?.id ?? null;
    this.requestKey = options.body?.request_key ?? null;
  }
}

export class NoFrameError extends PhoneleaseError {
  override name = 'NoFrameError';
  declare readonly code: 'no_frame';
  constructor(message: string, options: PhoneleaseErrorOptions = {}) {
    super(ERROR_CODES.noFrame, message, { ...options, retryable: true });
  }
}

/** 5xx without a more specific code: the service had trouble; retrying may help. */
export class ServerError extends PhoneleaseError {
  override name = 'ServerError';
  constructor(code: string, message: string, options: PhoneleaseErrorOptions = {}) {
    super(code, message, { ...options, retryable: true });
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
    super(options.code ?? 'connection_failed', message, { ...options, status: null, retryable: true });
    this.requestMayHaveArrived = options.requestMayHaveArrived ?? true;
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

/** Base URL or API key missing or malformed. */
export class ConfigurationError extends PhoneleaseError {
  override name = 'ConfigurationError';
  declare readonly code: 'configuration';
  constructor(message: string) {
    super('configuration', message);
  }
}

/** The phone did not become ready within the lease's budget (the session was ended). */
export class ReadyTimeoutError extends PhoneleaseError {
  override name = 'ReadyTimeoutError';
  declare readonly code: 'ready_timeout';
  readonly sessionId: string | null;
  readonly lastState: SessionState | null;
  constructor(
    message: string,
    options: PhoneleaseErrorOptions & { sessionId: string | null; lastState: SessionState | null },
  ) {
    super('ready_timeout', message, { ...options, retryable: true });
    this.sessionId = options.sessionId;
    this.lastState = options.lastState;
  }
}

/** The phone failed to start (state error), or vanished while starting. Carries the public failure. */
export class SessionFailedError extends PhoneleaseError {
  override name = 'SessionFailedError';
  declare readonly code: 'session_failed';
  readonly sessionId: string;
  readonly failure: { code: string; message: string };
  constructor(
    message: string,
    options: PhoneleaseErrorOptions & { sessionId: string; failure: { code: string; message: string } },
  ) {
    super('session_failed', message, options);
    this.sessionId = options.sessionId;
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
    super('lease_ended', `The lease of session ${sessionId} has ended; start a new lease to keep working.`);
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

/** Retry-After in ms: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** Statuses a proxy in front of the service answers on its own while the service restarts. */
const PROXY_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

function isApiErrorBody(body: unknown): boolean {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return false;
  const o = body as Partial<ErrorBody>;
  return typeof o.code === 'string' || typeof o.error === 'string';
}

function asErrorBody(body: unknown, status: number): ErrorBody {
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const o = body as Partial<ErrorBody>;
    if (typeof o.code === 'string' || typeof o.error === 'string') {
      return {
        ...(o as ErrorBody),
        error: typeof o.error === 'string' ? o.error : `HTTP ${status}`,
        code: typeof o.code === 'string' ? o.code : '',
      };
    }
  }
  const text = typeof body === 'string' ? body.slice(0, 300) : '';
  return { error: text || `HTTP ${status}`, code: '' };
}

/** Maps an error response to its class. Unknown codes fall back on the status. */
export function errorFromResponse(res: ErrorResponse): PhoneleaseError {
  if (!isApiErrorBody(res.body) && !PROXY_STATUSES.has(res.status)) {
    // Not the API's error body: another program answers at this address (a web server, a
    // proxy's own page). Retrying will not help, and the page itself is noise.
    const type = res.contentType?.split(';')[0]?.trim() || 'no content type';
    return new ConfigurationError(
      `${res.service ?? 'The service'} answered ${res.what ?? 'the request'} with HTTP ${res.status} (${type}), which is not the phonelease API; check that PHONELEASE_BASE_URL (or baseUrl) points at a phonelease server.`,
    );
  }
  const body = asErrorBody(res.body, res.status);
  const opts: PhoneleaseErrorOptions = {
    status: res.status,
    requestId: res.requestId ?? null,
    body,
    retryAfterMs: parseRetryAfter(res.retryAfter),
  };
  const where = res.what
    ? ` (${res.what}, HTTP ${res.status}${res.requestId ? `, request ${res.requestId}` : ''})`
    : '';
  const message = `${body.error}${where}`;
  switch (body.code) {
    case ERROR_CODES.invalidRequest:
    case ERROR_CODES.unsupported:
    case ERROR_CODES.bodyTooLarge:
      return new InvalidRequestError(message, { ...opts, code: body.code });
    case ERROR_CODES.unauthenticated:
      // The server's advice is about HTTP headers; a client user sets a key, not a header.
      return new AuthenticationError(
        `The service refused the API key: ${body.error}${where} Check PHONELEASE_API_KEY (or the apiKey option); \`phonelease keys create\` makes a new key, \`phonelease accounts create\` a new account on the server's machine.`,
        opts,
      );
    case ERROR_CODES.forbidden:
    case ERROR_CODES.rentalUnavailable:
      return new PermissionError(message, { ...opts, code: body.code });
    case ERROR_CODES.insufficientCredit:
      return new InsufficientCreditError(message, opts);
    case ERROR_CODES.notFound:
      return new NotFoundError(message, opts);
    case ERROR_CODES.sessionLimit:
      return new SessionLimitError(message, opts);
    case ERROR_CODES.profileRunning: {
      const holder = typeof body.session === 'string' ? ` It is held by session ${body.session}.` : '';
      return new ProfileRunningError(
        `${body.error}${holder}${where} One session at a time may use the profile phone: run profile tests one after another (workers: 1, or test.describe.configure({ mode: 'serial' })), or wait for the holder to end.`,
        opts,
      );
    }
    case ERROR_CODES.idempotencyKeyReused:
    case ERROR_CODES.idempotencyKeyInUse:
      return new IdempotencyConflictError(message, { ...opts, code: body.code });
    case ERROR_CODES.sessionNotReady:
      return new SessionNotReadyError(message, opts);
    case ERROR_CODES.requestCompleted:
      return new RequestCompletedError(message, opts);
    case ERROR_CODES.phonesBusy:
      return new PhonesBusyError(message, opts);
    case ERROR_CODES.createRequestRecorded:
      return new CreateRequestRecordedError(message, opts);
    case ERROR_CODES.noFrame:
      return new NoFrameError(message, opts);
  }
  // A code this client does not know (a newer server), or no error body at all.
  const code = body.code || `http_${res.status}`;
  switch (res.status) {
    case 400:
    case 413:
      return new InvalidRequestError(message, {
        ...opts,
        code: res.status === 413 ? 'body_too_large' : 'invalid_request',
      });
    case 401:
      return new AuthenticationError(message, opts);
    case 403:
      return new PermissionError(message, opts);
    case 404:
      return new NotFoundError(message, opts);
    case 410:
      return new RequestCompletedError(message, opts);
  }
  if (res.status >= 500 || res.status === 429) return new ServerError(code, message, opts);
  return new PhoneleaseError(code, message, opts);
}
