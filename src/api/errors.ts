/**
 * The error registry: what every error code of the API means, in one table that the server
 * and the client both read. The server raises errors by code and takes the HTTP status from
 * here; the client maps a response to its class, decides whether to retry and how, and
 * reports `error.retryable`, all from the same row.
 *
 * `retry` says what a caller may do with the same request:
 * - `never`: the same request gets the same answer until something else changes (the caller
 *   fixes the request, ends a session, tops up credit...).
 * - `after_retry_after`: nothing happened; send the same request again after Retry-After
 *   (or `retry_after_seconds`), capped and jittered.
 * - `resolve_receipt`: a create may have been admitted; look its key up with
 *   `GET /sessions/requests/{key}` before sending it again, so no second phone starts.
 * - `transient`: the service had trouble; a read or an end is retried with backoff, a keyed
 *   create is first resolved through its receipt (its outcome is unknown).
 */
import { ERROR_CODES, type ErrorCode } from './schemas.js';

export type RetryRule = 'never' | 'after_retry_after' | 'resolve_receipt' | 'transient';

export interface ErrorSpec {
  /** The HTTP status the server answers with this code. */
  readonly status: number;
  readonly retry: RetryRule;
}

export const ERROR_REGISTRY: { readonly [C in ErrorCode]: ErrorSpec } = {
  [ERROR_CODES.invalidRequest]: { status: 400, retry: 'never' },
  [ERROR_CODES.unsupported]: { status: 400, retry: 'never' },
  [ERROR_CODES.bodyTooLarge]: { status: 413, retry: 'never' },
  [ERROR_CODES.uriTooLong]: { status: 414, retry: 'never' },
  [ERROR_CODES.headersTooLarge]: { status: 431, retry: 'never' },
  // The request did not arrive whole in time; nothing of it was acted on.
  [ERROR_CODES.requestTimeout]: { status: 408, retry: 'transient' },
  [ERROR_CODES.unauthenticated]: { status: 401, retry: 'never' },
  [ERROR_CODES.forbidden]: { status: 403, retry: 'never' },
  [ERROR_CODES.rentalUnavailable]: { status: 403, retry: 'never' },
  [ERROR_CODES.insufficientCredit]: { status: 403, retry: 'never' },
  [ERROR_CODES.notFound]: { status: 404, retry: 'never' },
  [ERROR_CODES.sessionLimit]: { status: 409, retry: 'never' },
  [ERROR_CODES.profileRunning]: { status: 409, retry: 'never' },
  [ERROR_CODES.idempotencyKeyReused]: { status: 409, retry: 'never' },
  // Reserved: a keyed create still being admitted resolves on its own.
  [ERROR_CODES.idempotencyKeyInUse]: { status: 409, retry: 'after_retry_after' },
  [ERROR_CODES.sessionNotReady]: { status: 409, retry: 'never' },
  [ERROR_CODES.requestCompleted]: { status: 410, retry: 'never' },
  [ERROR_CODES.internal]: { status: 500, retry: 'transient' },
  [ERROR_CODES.phonesBusy]: { status: 503, retry: 'after_retry_after' },
  [ERROR_CODES.createRequestRecorded]: { status: 503, retry: 'resolve_receipt' },
  [ERROR_CODES.noFrame]: { status: 503, retry: 'after_retry_after' },
  // A dashboard sign-in link works once and for 10 minutes: only a new link helps.
  [ERROR_CODES.signInLinkUsed]: { status: 401, retry: 'never' },
  [ERROR_CODES.signInLinkExpired]: { status: 401, retry: 'never' },
};

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_REGISTRY, code);
}

export function errorSpec(code: ErrorCode): ErrorSpec {
  return ERROR_REGISTRY[code];
}
