/**
 * Ending a session and confirming its cleanup, shared by Lease.end(), the signal handler,
 * the reaper and endLeftovers(). DELETE may answer 200 (cleanup confirmed), 202 (cleanup
 * pending) or 404 (already gone); the create receipt is the durable record that cleanup
 * completed, so it is what "confirmed" means whenever a request key is known.
 *
 * A DELETE that fails transiently (a rate limiter's 429, a proxy's 502, a lost answer) is
 * sent again for a bounded time (EndOptions.retryMs), Retry-After honoured, capped and
 * jittered; past it the caller hands the session to the reaper.
 */
import type { PhoneSessionClient } from './client.js';
import { NotFoundError, PhoneleaseError } from './errors.js';
import { mayRetry, withRetry, type RetryPolicy } from './retry.js';
import type { PhoneleaseLogger } from './util/log.js';
import { formatDuration, sleep } from './util/time.js';

export type EndOutcome =
  /** DELETE ended it now. */
  | 'released'
  /** It had already ended (by us earlier, by its deadline, or by someone else). */
  | 'already_ended'
  /** Closure accepted but cleanup was not confirmed within the budget (the server keeps trying). */
  | 'cleanup_pending'
  /** The service could not be asked (unreachable, refused): the phone may still be running. */
  | 'failed'
  /** There was nothing to end (the create never produced a session). */
  | 'nothing_to_end';

export interface EndResult {
  sessionId: string | null;
  outcome: EndOutcome;
  /** True once the service confirmed that the phone is cleaned up. */
  cleanupConfirmed: boolean;
  error?: unknown;
}

export interface EndTarget {
  sessionId: string | null;
  /** The create's idempotency key: finds the session if its id is unknown, and confirms cleanup. */
  requestKey?: string | null;
}

export interface EndOptions {
  /** How long to wait for cleanup confirmation (default 15 s). */
  confirmMs?: number;
  /** How long to keep looking for the session of a key whose create may still be landing (default 0). */
  findMs?: number;
  /**
   * How long a DELETE that fails transiently (a rate limit, a 5xx, a lost answer) is sent
   * again, in ms (default 60 000: long enough to outlast a rate limiter's window).
   */
  retryMs?: number;
}

/** Default of EndOptions.retryMs. */
export const END_RETRY_MS = 60_000;

/**
 * Waits between DELETEs: Retry-After honoured but capped at 5 s (a phone that bills must
 * not wait out a proxy's generous figure), backoff with jitter otherwise.
 */
const END_POLICY: Omit<RetryPolicy, 'budgetMs'> = {
  maxRetries: Infinity,
  minDelayMs: 250,
  maxDelayMs: 5000,
  factor: 2,
};

/** Ends a session (found by id or by its create key) and waits for cleanup confirmation. Never throws. */
export async function endAndConfirm(
  client: PhoneSessionClient,
  target: EndTarget,
  options: EndOptions = {},
): Promise<EndResult> {
  const confirmMs = options.confirmMs ?? 15_000;
  let sessionId = target.sessionId;
  const key = target.requestKey ?? null;
  try {
    if (!sessionId && key) sessionId = await findByKey(client, key, options.findMs ?? 0);
    if (!sessionId) return { sessionId: null, outcome: 'nothing_to_end', cleanupConfirmed: true };
    const sid = sessionId;

    let outcome: EndOutcome = 'released';
    let confirmed = false;
    // Whether a DELETE of ours may have been processed although its answer never came back.
    let ours = false;
    try {
      const release = await withRetry(() => client.endSession(sid, { retry: false }), {
        policy: { ...END_POLICY, budgetMs: options.retryMs ?? END_RETRY_MS },
        shouldRetry: (error) => mayRetry(error, { idempotent: true }),
        onRetry: (error) => {
          if (error instanceof PhoneleaseError && error.retry !== 'after_retry_after') ours = true;
        },
      });
      confirmed = release.released;
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      // Gone from the live runtime: ended before, or by our own DELETE whose answer was
      // lost. The receipt tells: it ended and, if a DELETE of ours may have landed, by us.
      outcome = ours && key && (await endedPerReceipt(client, key, sid)) ? 'released' : 'already_ended';
    }
    if (!confirmed) {
      try {
        confirmed = await waitForCleanup(client, sid, key, confirmMs);
      } catch {
        // Closure was accepted (or had happened); only the confirmation could not be read.
        confirmed = false;
      }
    }
    if (!confirmed && outcome === 'released') outcome = 'cleanup_pending';
    return { sessionId, outcome, cleanupConfirmed: confirmed };
  } catch (error) {
    return { sessionId, outcome: 'failed', cleanupConfirmed: false, error };
  }
}

/** Whether the key's receipt names this session as ended (closing, or cleaned up). */
async function endedPerReceipt(client: PhoneSessionClient, key: string, sessionId: string): Promise<boolean> {
  try {
    const receipt = await client.getReceipt(key);
    return receipt.id === sessionId && (receipt.state === 'closing' || receipt.cleanup_complete);
  } catch {
    return false;
  }
}

/** The session a keyed create made, or null if the service has no receipt for it (yet). */
async function findByKey(client: PhoneSessionClient, key: string, findMs: number): Promise<string | null> {
  const until = Date.now() + findMs;
  for (;;) {
    try {
      return (await client.getReceipt(key)).id;
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      if (Date.now() >= until) return null;
      await sleep(250);
    }
  }
}

/**
 * Waits until cleanup is confirmed: the receipt says cleanup_complete, or (without a key)
 * the session left the live list. Returns false when the budget runs out first.
 */
export async function waitForCleanup(
  client: PhoneSessionClient,
  sessionId: string,
  key: string | null,
  budgetMs: number,
): Promise<boolean> {
  const until = Date.now() + budgetMs;
  for (let delay = 50; ; delay = Math.min(1000, delay * 2)) {
    try {
      if (key) {
        if ((await client.getReceipt(key)).cleanup_complete) return true;
      } else {
        await client.getSession(sessionId);
      }
    } catch (error) {
      if (!key && error instanceof NotFoundError) return true;
      // A read refused or lost on the way is asked again while the budget lasts.
      if (!mayRetry(error, { idempotent: true })) throw error;
    }
    if (Date.now() + delay > until) return false;
    await sleep(delay);
  }
}

/**
 * Says through a lease's logger how an end that reached the service went, in the same
 * words whenever it happens: Lease.end(), or a start its caller stopped. A failed end is
 * worded by the caller, who knows what will still try again.
 */
export function reportEnd(
  logger: PhoneleaseLogger,
  sessionId: string,
  result: EndResult,
  tookMs: number,
): void {
  const took = formatDuration(tookMs);
  if (!result.cleanupConfirmed) {
    logger.warn(
      `session ${sessionId} ended but its cleanup was not confirmed within ${took}; the service keeps trying.`,
    );
  } else {
    logger.info(`${sessionId}: ended (${result.outcome.replace('_', ' ')}, cleanup confirmed in ${took})`);
  }
}
