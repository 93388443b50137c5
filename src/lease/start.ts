/**
 * Starting a session the way the contract recommends, as one logical start:
 *
 * 1. Admission. POST /sessions with one idempotency key and one body for every attempt;
 *    each failure is handled by its rule in the error registry (src/api/errors.ts):
 *    - refused before processing (503 phones_busy, a rate limiter's 429 whatever its body,
 *      a connection that never opened): wait Retry-After (capped, with jitter) and send it
 *      again, within the lease's budget, saying so through the logger.
 *    - unknown outcome (a cut answer, a 5xx, 503 create_request_recorded): ask
 *      GET /sessions/requests/{key}. A receipt names the session; no receipt means the
 *      create did not land (yet), so it is sent again (same key, same body).
 * 2. Readiness. GET /sessions/{sid}?wait=S long-polls until the state changes; against a
 *    server that answers at once, the wait between polls follows eta_seconds.
 *    - ready: done. error: SessionFailedError with the public failure, fast.
 *    - the budget runs out: ReadyTimeoutError.
 * Whatever fails after a session exists ends that session before the error is thrown; the
 * error names the session (sessionId) and every error of a start carries its requestKey.
 */
import type { CreateReceipt, CreateSessionBody, Session } from '../api/schemas.js';
import { MAX_WAIT_S } from '../api/schemas.js';
import type { PhoneSessionClient } from '../client.js';
import {
  ConfigurationError,
  ConnectionError,
  CreateRequestRecordedError,
  NotFoundError,
  PhoneleaseError,
  PhonesBusyError,
  ReadyTimeoutError,
  RequestCompletedError,
  SessionFailedError,
  withLeaseContext,
} from '../errors.js';
import { mayRetry, retryAfterOf, retryDelay, type RetryPolicy } from '../retry.js';
import type { PhoneleaseLogger } from '../util/log.js';
import { formatDuration, sleep } from '../util/time.js';
import { endAndConfirm, reportEnd } from '../end-session.js';
import { messageOf } from '../util/message.js';

export interface StartPlan {
  client: PhoneSessionClient;
  body: CreateSessionBody;
  requestKey: string;
  /** Everything (busy waits, admission, boot) must fit in this many ms. */
  budgetMs: number;
  logger: PhoneleaseLogger;
  signal?: AbortSignal | undefined;
  /** Called as soon as the session id is known (crash safety records it). */
  onSession?(sessionId: string): void;
  /**
   * Called when a failed start could not be cleaned up for sure: ending its session failed,
   * or a create that may still land was not found. Crash safety then keeps watching the key.
   */
  onUnresolved?(): void;
}

/** How a start went; the benchmark and tests read it, the logger prints the gist. */
export interface StartStats {
  createAttempts: number;
  /** Times a 503 phones_busy made the start wait. */
  busyWaits: number;
  /** Receipt lookups after an unknown outcome. */
  receiptLookups: number;
  /** True when the session was found through its receipt rather than a create response. */
  recoveredFromReceipt: boolean;
  /** GET /sessions/{sid} calls until ready. */
  polls: number;
  /** ms from the start of leasePhone() to the session being admitted, and to ready. */
  admittedMs: number;
  readyMs: number;
}

/** Phones-busy waits: the server's Retry-After, capped at 5 s, jittered. */
const BUSY_POLICY: RetryPolicy = {
  maxRetries: Infinity,
  minDelayMs: 500,
  maxDelayMs: 5000,
  factor: 1.5,
  budgetMs: Infinity,
};
/** Refusals before processing (a rate limiter's 429): its Retry-After, capped at 10 s, jittered. */
const REFUSED_POLICY: RetryPolicy = {
  maxRetries: Infinity,
  minDelayMs: 500,
  maxDelayMs: 10_000,
  factor: 2,
  budgetMs: Infinity,
};
/** Unknown outcomes (no answer, 5xx): quick backoff, also bounded by the start budget. */
const UNKNOWN_POLICY: RetryPolicy = {
  maxRetries: Infinity,
  minDelayMs: 200,
  maxDelayMs: 5000,
  factor: 2,
  budgetMs: Infinity,
};

export async function startSession(plan: StartPlan): Promise<{ session: Session; stats: StartStats }> {
  const started = Date.now();
  const deadline = started + plan.budgetMs;
  const stats: StartStats = {
    createAttempts: 0,
    busyWaits: 0,
    receiptLookups: 0,
    recoveredFromReceipt: false,
    polls: 0,
    admittedMs: 0,
    readyMs: 0,
  };
  let admitted: Session;
  const creates: CreateTrace = { mayHaveLanded: false };
  try {
    admitted = await admit(plan, stats, started, deadline, creates);
  } catch (error) {
    // An abort, a timeout or an unknown outcome may have cut a create that landed: end
    // whatever the key made. A create that was refused or never left made nothing.
    if (creates.mayHaveLanded) await cleanUp(plan, null);
    else if (plan.signal?.aborted) plan.logger.info('stopped before a session was created; nothing to end');
    throw withLeaseContext(error, { requestKey: plan.requestKey });
  }
  stats.admittedMs = Date.now() - started;
  let session: Session;
  try {
    // Inside the try: if recording the session fails, the admitted phone is still ended.
    plan.onSession?.(admitted.id);
    session = await untilReady(plan, admitted, stats, started, deadline);
  } catch (error) {
    await cleanUp(plan, admitted.id);
    throw withLeaseContext(error, { sessionId: admitted.id, requestKey: plan.requestKey });
  }
  stats.readyMs = Date.now() - started;
  return { session, stats };
}

/** Whether a create of this start may have made a session that nobody has heard of. */
interface CreateTrace {
  mayHaveLanded: boolean;
}

/**
 * How long a start keeps trying a service that has not answered once: long enough for a
 * service that is restarting, short enough that a wrong PHONELEASE_BASE_URL fails fast.
 */
export const UNREACHABLE_GIVE_UP_MS = 10_000;

/**
 * Sends the keyed create until it is admitted, following the error registry's rule for
 * each failure (`error.retry`):
 * - `after_retry_after`: refused before it was processed (phones_busy, a rate limiter's
 *   429, a connection that never opened): wait Retry-After, send it again.
 * - `transient` (a 5xx, a cut answer) and `resolve_receipt` (create_request_recorded): the
 *   create may have been admitted; its receipt says so, else it is sent again, same key
 *   and body, so at most one session can come of it.
 * - `never`: the answer stands; thrown.
 */
async function admit(
  plan: StartPlan,
  stats: StartStats,
  started: number,
  deadline: number,
  creates: CreateTrace,
): Promise<Session> {
  const { client, requestKey, logger, signal } = plan;
  let resends = 0;
  let answered = false;
  for (;;) {
    signal?.throwIfAborted();
    stats.createAttempts++;
    let error: unknown;
    try {
      // The lease does its own retrying: every unknown outcome goes through the receipt first.
      return await client.createSession(plan.body, { idempotencyKey: requestKey, retry: false, signal });
    } catch (e) {
      error = e;
    }
    if (!(error instanceof PhoneleaseError)) {
      // An abort or something unexpected mid-create: it may have landed.
      creates.mayHaveLanded = true;
      throw error;
    }
    if (!(error instanceof ConnectionError)) answered = true;

    if (error instanceof ConfigurationError && error.status !== null && error.status < 300) {
      // A 2xx that is not a session (empty, `null`, a page): something accepted the create,
      // and it may have reached the service. Its receipt says; without one, the key's
      // cleanup in startSession() looks for it a while longer. Never sent again: whatever
      // answered would answer the same.
      creates.mayHaveLanded = true;
      const receipt = await lookUp(plan, stats);
      if (!receipt || receipt.cleanup_complete || receipt.state === 'closing') throw error;
      stats.recoveredFromReceipt = true;
      logger.info(
        `the create's answer was not a session (${messageOf(error)}); its receipt names session ${receipt.id}`,
      );
      return await readSession(plan, receipt.id, deadline);
    }

    let delay: number;
    switch (error.retry) {
      case 'never':
        // The answer stands. If an earlier create's outcome was unknown, it still is: the
        // refusal may come from a gateway in front of the service, or from a key revoked
        // since, neither of which knows about the earlier create. mayHaveLanded stays set,
        // so startSession() ends whatever the key made.
        throw error;

      case 'after_retry_after':
        if (error instanceof ConnectionError) {
          // Not a byte reached the service.
          if (!answered) {
            const waited = Date.now() - started;
            const giveUpMs = Math.min(UNREACHABLE_GIVE_UP_MS, deadline - started);
            if (waited + 1000 > giveUpMs) {
              throw new ConnectionError(
                `${error.message} It did not answer for ${formatDuration(waited)}, so the start gave up.`,
                { cause: error, requestMayHaveArrived: false },
              );
            }
            if (resends === 0) {
              logger.info(
                `cannot reach the phone-session service at ${client.baseUrl}; trying again for up to ${formatDuration(giveUpMs)}`,
              );
            }
          }
          delay = retryDelay(UNKNOWN_POLICY, resends++, null);
        } else if (error instanceof PhonesBusyError) {
          delay = retryDelay(BUSY_POLICY, stats.busyWaits, error.retryAfterMs);
          if (Date.now() + delay > deadline) throw error;
          stats.busyWaits++;
          logger.info(
            `all phones are busy; trying again in ${formatDuration(delay)} (waited ${formatDuration(Date.now() - started)} so far)`,
          );
        } else {
          // A rate limiter (429) or a key still being admitted: nothing was processed.
          delay = retryDelay(REFUSED_POLICY, resends++, error.retryAfterMs);
          logger.info(
            `the create was refused before it was processed (${error.status === null ? error.code : `HTTP ${error.status}`}); sending it again in ${formatDuration(delay)}`,
          );
        }
        break;

      case 'transient':
      case 'resolve_receipt': {
        creates.mayHaveLanded = true;
        const receipt = await lookUp(plan, stats);
        if (receipt) {
          if (receipt.cleanup_complete || receipt.state === 'closing') {
            creates.mayHaveLanded = false;
            throw new RequestCompletedError(
              `The session this start created (${receipt.id}) has already ended; start again with a new idempotency key.`,
              {
                status: 410,
                body: {
                  error: 'request completed',
                  code: 'request_completed',
                  id: receipt.id,
                  request_key: requestKey,
                },
              },
            );
          }
          stats.recoveredFromReceipt = true;
          logger.info(
            error instanceof CreateRequestRecordedError
              ? `session ${receipt.id} was recorded while the service's runtime is unavailable; waiting for it`
              : `the create's answer was lost (${messageOf(error)}); its receipt names session ${receipt.id}`,
          );
          // mayHaveLanded stays set until the session is read: if that fails, the key finds it.
          return await readSession(plan, receipt.id, deadline);
        }
        // No receipt (yet): the create did not land, or is still landing. Send it again,
        // same key and body: the service replays it if it did.
        delay = retryDelay(
          UNKNOWN_POLICY,
          resends++,
          error.retryAfterMs ?? (error.retry === 'resolve_receipt' ? 1000 : null),
        );
        logger.debug?.(
          `create outcome unknown (${messageOf(error)}); sending it again in ${formatDuration(delay)}`,
        );
        break;
      }
    }
    if (Date.now() + delay > deadline) throw error;
    await sleep(delay, signal);
  }
}

/**
 * GET /sessions/{sid}, tried again on a failure that allows it until the start's deadline:
 * once a session is admitted, a rate limit or a proxy's hiccup must not cost the phone.
 */
async function readSession(
  plan: StartPlan,
  sessionId: string,
  deadline: number,
  options: { waitSeconds?: number } = {},
): Promise<Session> {
  for (let retry = 0; ; retry++) {
    try {
      return await plan.client.getSession(sessionId, { ...options, signal: plan.signal });
    } catch (error) {
      if (!mayRetry(error, { idempotent: true })) throw error;
      const delay = retryDelay(UNKNOWN_POLICY, retry, retryAfterOf(error));
      if (Date.now() + delay > deadline) throw error;
      plan.logger.debug?.(
        `reading ${sessionId} failed (${messageOf(error)}); again in ${formatDuration(delay)}`,
      );
      await sleep(delay, plan.signal);
    }
  }
}

/** The receipt for this start's key, or null when the service has none (or cannot be asked). */
async function lookUp(plan: StartPlan, stats: StartStats): Promise<CreateReceipt | null> {
  stats.receiptLookups++;
  try {
    // One attempt: the admission loop around it does the retrying, within the start's budget.
    return await plan.client.getReceipt(plan.requestKey, { signal: plan.signal, retry: false });
  } catch (error) {
    // Not there, or not answerable now: sending the create again with its key is safe either way.
    if (error instanceof NotFoundError || mayRetry(error, { idempotent: true })) return null;
    throw error;
  }
}

async function untilReady(
  plan: StartPlan,
  admitted: Session,
  stats: StartStats,
  started: number,
  deadline: number,
): Promise<Session> {
  const { logger, signal } = plan;
  let session = admitted;
  const trail: string[] = [];
  let lastStep = '';
  for (;;) {
    const step = session.state === 'provisioning' ? (session.location ?? 'provisioning') : session.state;
    if (step !== lastStep) {
      lastStep = step;
      if (session.state === 'ready') {
        trail.push(`ready in ${formatDuration(Date.now() - started)}`);
      } else if (session.state === 'provisioning') {
        trail.push(
          step === 'queued' && session.eta_seconds !== undefined
            ? `queued (eta ${session.eta_seconds}s)`
            : step,
        );
      }
      if (trail.length > 0) logger.info(`${session.id}: ${trail.join(' -> ')}`);
    }
    if (session.state === 'ready') return session;
    if (session.state === 'error') {
      const failure = session.failure ?? { code: 'unknown', message: 'The phone failed to start.' };
      throw new SessionFailedError(
        `Session ${session.id} failed to start: ${failure.message} (${failure.code}). The session was ended.`,
        {
          sessionId: session.id,
          failure,
        },
      );
    }
    if (session.state === 'closing') {
      throw new SessionFailedError(
        `Session ${session.id} was closed before it became ready (ended elsewhere, or its deadline passed).`,
        {
          sessionId: session.id,
          failure: { code: 'closed', message: 'The session was closed before it became ready.' },
        },
      );
    }

    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      throw new ReadyTimeoutError(
        `Session ${session.id} was not ready within ${formatDuration(plan.budgetMs)} (still ${step}); it was ended. Raise startTimeoutMs, or check the service's capacity.`,
        { sessionId: session.id, lastState: session.state },
      );
    }
    // GET ?wait= answers at once for a settled session and otherwise as soon as this
    // session changes, so one poll usually covers the whole boot. The wait is still bounded
    // by the eta: against a server that holds polls whatever the state, a change landing
    // just before a poll costs seconds, not half a minute.
    const waitS = Math.min(
      MAX_WAIT_S,
      Math.floor(remaining / 1000),
      Math.max(1, (session.eta_seconds ?? 1) + 2),
    );
    const askedAt = Date.now();
    stats.polls++;
    let next: Session;
    try {
      next = await readSession(plan, session.id, deadline, waitS >= 1 ? { waitSeconds: waitS } : {});
    } catch (error) {
      if (error instanceof NotFoundError) {
        throw new SessionFailedError(
          `Session ${session.id} disappeared while starting (ended elsewhere, or its deadline passed).`,
          {
            sessionId: session.id,
            failure: { code: 'gone', message: 'The session is no longer live.' },
          },
        );
      }
      throw error;
    }
    const unchanged = next.state === session.state && next.location === session.location;
    session = next;
    // A server that does not hold long polls answers at once, and so does every poll of the
    // last second (no whole second left to wait): pace them by the eta, never back to back.
    if (unchanged && (waitS < 1 || Date.now() - askedAt < (waitS * 1000) / 2)) {
      await sleep(
        Math.min(
          Math.max(((session.eta_seconds ?? 1) * 1000) / 4, 100),
          2000,
          Math.max(0, deadline - Date.now()),
        ),
        signal,
      );
    }
  }
}

/**
 * How long ending the session of a failed start keeps sending its DELETE: the caller is
 * waiting for the failure; past it, the reaper takes over (onUnresolved).
 */
const END_AFTER_FAILED_START_MS = 15_000;

/** How long a start that may have landed keeps looking for its session by key. */
const FIND_LANDED_MS = 3000;

/** Best effort, never throws: a start that fails must not leave a phone behind. */
async function cleanUp(plan: StartPlan, sessionId: string | null): Promise<void> {
  const started = Date.now();
  // Without an id the create may still be landing: look for it by its key for a while.
  const result = await endAndConfirm(
    plan.client,
    { sessionId, requestKey: plan.requestKey },
    { confirmMs: 5000, findMs: sessionId ? 0 : FIND_LANDED_MS, retryMs: END_AFTER_FAILED_START_MS },
  );
  if (result.outcome === 'failed' || (sessionId === null && result.outcome === 'nothing_to_end'))
    plan.onUnresolved?.();
  if (result.outcome === 'failed') {
    plan.logger.warn(
      `could not end session ${sessionId ?? `of key ${plan.requestKey}`} after a failed start: ${messageOf(result.error)}`,
    );
  } else if (plan.signal?.aborted) {
    // The caller stopped the start (Ctrl-C, a test's timeout): an end it asked for, said as
    // Lease.end() says it.
    if (result.sessionId) reportEnd(plan.logger, result.sessionId, result, Date.now() - started);
    else plan.logger.info('stopped before a session was created; nothing to end');
  } else if (result.sessionId) {
    plan.logger.debug?.(`ended session ${result.sessionId} after a failed start (${result.outcome})`);
  }
}
