/**
 * Every error the API answers is an ApiError rendered as the contract's error body
 * ({error, code, ...details}). Messages tell the caller what to do next.
 */
import { ERROR_CODES, type ErrorBody, type ErrorCode } from '../src/api/schemas.js';

export type ErrorDetails = Omit<ErrorBody, 'error' | 'code'>;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  body(): ErrorBody {
    return { error: this.message, code: this.code, ...this.details };
  }
}

export const badRequest = (message: string, details: ErrorDetails = {}) =>
  new ApiError(400, ERROR_CODES.invalidRequest, message, details);

export const unsupported = (message: string) =>
  new ApiError(400, ERROR_CODES.unsupported, message, { unsupported: true });

export const notFound = (message = 'No live session with this id is visible to this account.') =>
  new ApiError(404, ERROR_CODES.notFound, message);

export const notReady = (state: string, id: string) =>
  new ApiError(
    409,
    ERROR_CODES.sessionNotReady,
    state === 'closing'
      ? 'The session is closing; start a new session to keep working.'
      : `The session is ${state}, not ready; poll GET /sessions/${id} until its state is ready.`,
    { state, id },
  );
