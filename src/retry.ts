/**
 * The retry policy, modelled on undici's retry handler: exponential backoff with jitter,
 * Retry-After honoured but capped, and a bounded total budget so a retrying call can never
 * outlive its caller's patience.
 *
 * What may be retried is one rule, mayRetry(), read from the error's registry row
 * (`error.retry`) and whether the request is safe to send twice (GET, DELETE, a keyed
 * create): a request that was refused before it was processed (429, phones_busy, a
 * connection that never opened) is sent again whatever it is; a request whose outcome is
 * unknown (5xx, a cut answer) only when sending it twice is harmless.
 */
import { PhoneleaseError } from './errors.js';
import { sleep } from './util/time.js';

export interface RetryOptions {
  /** Retries after the first attempt (default 4). */
  maxRetries?: number;
  /** First backoff in ms (default 250). */
  minDelayMs?: number;
  /** Longest single wait in ms; also caps a server's Retry-After (default 10 000). */
  maxDelayMs?: number;
  /** Growth of the backoff per retry (default 2). */
  factor?: number;
  /** Total time for all attempts and waits, in ms (default 30 000). */
  budgetMs?: number;
}

export type RetryPolicy = Required<RetryOptions>;

export const DEFAULT_RETRY: RetryPolicy = {
  maxRetries: 4,
  minDelayMs: 250,
  maxDelayMs: 10_000,
  factor: 2,
  budgetMs: 30_000,
};

export function retryPolicy(options: RetryOptions | false | undefined): RetryPolicy {
  if (options === false) return { ...DEFAULT_RETRY, maxRetries: 0 };
  return { ...DEFAULT_RETRY, ...options };
}

/**
 * The wait before retry number `retry` (0-based). With a Retry-After, the server's figure
 * (capped at maxDelayMs, and never under minDelayMs) plus up to 10% so that many waiting
 * clients do not return in the same millisecond. Without, "equal jitter": half the
 * exponential step fixed, half random. A Retry-After of 0 or less counts as none: a server
 * (or a proxy) that says "now" on every answer must not turn a retry loop into a flood.
 */
export function retryDelay(
  policy: RetryPolicy,
  retry: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== null && retryAfterMs > 0) {
    const capped = Math.min(Math.max(retryAfterMs, policy.minDelayMs), policy.maxDelayMs);
    return Math.min(policy.maxDelayMs, capped + capped * 0.1 * random());
  }
  const step = Math.min(policy.maxDelayMs, policy.minDelayMs * policy.factor ** retry);
  return step / 2 + (step / 2) * random();
}

/**
 * The one retry rule of the client: whether `error` allows sending the same request again.
 * `idempotent`: the request may be processed twice without harm (GET, DELETE, a keyed create).
 */
export function mayRetry(error: unknown, request: { idempotent: boolean }): boolean {
  if (!(error instanceof PhoneleaseError)) return false;
  switch (error.retry) {
    case 'after_retry_after':
      return true;
    case 'transient':
      return request.idempotent;
    case 'resolve_receipt':
    case 'never':
      return false;
  }
}

/** The Retry-After an error carries, if the server sent one. */
export function retryAfterOf(error: unknown): number | null {
  return error instanceof PhoneleaseError ? error.retryAfterMs : null;
}

export interface RetryContext {
  policy: RetryPolicy;
  /** Whether this error may be retried (the caller knows if the request is idempotent). */
  shouldRetry(error: unknown): boolean;
  signal?: AbortSignal | undefined;
  /** Called before each wait (debug output). */
  onRetry?(error: unknown, retry: number, delayMs: number): void;
  random?: () => number;
  now?: () => number;
}

/** Runs `attempt` until it succeeds, the error is not retryable, or retries or budget run out. */
export async function withRetry<T>(attempt: (retry: number) => Promise<T>, ctx: RetryContext): Promise<T> {
  const now = ctx.now ?? Date.now;
  const started = now();
  for (let retry = 0; ; retry++) {
    try {
      return await attempt(retry);
    } catch (error) {
      if (retry >= ctx.policy.maxRetries || !ctx.shouldRetry(error) || ctx.signal?.aborted) throw error;
      const delay = retryDelay(ctx.policy, retry, retryAfterOf(error), ctx.random);
      // Never start a wait that would end past the budget: fail now with the real error.
      if (now() - started + delay > ctx.policy.budgetMs) throw error;
      ctx.onRetry?.(error, retry + 1, delay);
      await sleep(delay, ctx.signal);
    }
  }
}
