/**
 * Identifiers the client makes up: request ids (one per HTTP call, sent as x-request-id so
 * a failing call can be found in the server's logs) and idempotency keys (one per logical
 * start, reused by every retry of that start).
 */
import { randomBytes } from 'node:crypto';
import { REQUEST_KEY_RE } from '../api/schemas.js';

/** `req_` + 20 random base64url characters. */
export const newRequestId = (): string => `req_${randomBytes(15).toString('base64url')}`;

/** A fresh idempotency key: `pl_` + 32 random base64url characters (matches REQUEST_KEY_PATTERN). */
export const newIdempotencyKey = (): string => `pl_${randomBytes(24).toString('base64url')}`;

export const isValidRequestKey = (key: string): boolean => REQUEST_KEY_RE.test(key);
