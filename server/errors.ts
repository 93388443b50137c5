/**
 * Every refusal the API answers is an ApiError rendered as the contract's error body
 * ({error, code, ...details}). Errors are raised by code; the HTTP status comes from the
 * error registry (src/api/errors.ts) that the client reads too, so no code picks a status by
 * hand. Messages tell the caller what to do next.
 */
import { ERROR_CODES, type ErrorBody, type ErrorCode } from '../src/api/schemas.js';
import { errorSpec } from '../src/api/errors.js';

export type ErrorDetails = Omit<ErrorBody, 'error' | 'code'>;

export class ApiError extends Error {
  override name = 'ApiError';
  readonly headers: Record<string, string>;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    // A refusal that says when to retry (retry_after_seconds) says it in Retry-After too, so
    // code that raises it (the runtime) need not know about HTTP headers.
    const retry = details.retry_after_seconds;
    this.headers =
      retry !== undefined && headers['retry-after'] === undefined
        ? { ...headers, 'retry-after': String(retry) }
        : headers;
  }

  /** The HTTP status of this code, from the registry. */
  get status(): number {
    return errorSpec(this.code).status;
  }

  body(): ErrorBody {
    return { error: this.message, code: this.code, ...this.details };
  }
}

/** Raises an error by its code: `throw apiError('session_limit', 'message', { session_limit: 2 })`. */
export function apiError(
  code: ErrorCode,
  message: string,
  details: ErrorDetails = {},
  headers: Record<string, string> = {},
): ApiError {
  return new ApiError(code, message, details, headers);
}

export const badRequest = (message: string, details: ErrorDetails = {}) =>
  apiError(ERROR_CODES.invalidRequest, message, details);

export const unsupported = (message: string) =>
  apiError(ERROR_CODES.unsupported, message, { unsupported: true });

export const notFound = (message = 'No live session with this id is visible to this account.') =>
  apiError(ERROR_CODES.notFound, message);

export const notReady = (state: string, id: string) =>
  apiError(
    ERROR_CODES.sessionNotReady,
    state === 'closing'
      ? 'The session is closing; start a new session to keep working.'
      : `The session is ${state}, not ready; poll GET /sessions/${id} until its state is ready.`,
    { state, id },
  );

/** The profile phone is taken: a reset must wait for it (`next` says what to do). */
export const profileHeld = (holder: string | null, next: string) =>
  apiError(
    ERROR_CODES.profileRunning,
    `The profile phone is held by a live session or is still being saved; ${next}.`,
    holder ? { session: holder } : {},
  );
