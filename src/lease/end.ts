/**
 * Ending a session and confirming its cleanup, shared by Lease.end(), the signal handler,
 * the reaper and endLeftovers(). DELETE may answer 200 (cleanup confirmed), 202 (cleanup
 * pending) or 404 (already gone); the create receipt is the durable record that cleanup
 * completed, so it is what "confirmed" means whenever a request key is known.
 */
import type { PhoneSessionClient } from '../client.js';
import { NotFoundError } from '../errors.js';
import type { PhoneleaseLogger } from '../util/log.js';
import { formatDuration, sleep } from '../util/time.js';

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
}

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

    let outcome: EndOutcome = 'released';
    let confirmed = false;
    try {
      const release = await client.endSession(sessionId);
      confirmed = release.released;
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      // Gone from the live runtime: it ended before (its cleanup may still need confirming).
      outcome = 'already_ended';
    }
    if (!confirmed) {
      try {
        confirmed = await waitForCleanup(client, sessionId, key, confirmMs);
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
    if (key) {
      const receipt = await client.getReceipt(key);
      if (receipt.cleanup_complete) return true;
    } else {
      try {
        await client.getSession(sessionId);
      } catch (error) {
        if (error instanceof NotFoundError) return true;
        throw error;
      }
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
