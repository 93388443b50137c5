/**
 * Starting a session the way the contract recommends, as one logical start:
 *
 * 1. Admission. POST /sessions with one idempotency key and one body for every attempt.
 *    - 503 phones_busy: wait Retry-After (capped, with jitter) and try again, within the
 *      lease's budget, saying so through the logger.
 *    - No answer, a 5xx, or 503 create_request_recorded: the outcome is unknown, so ask
 *      GET /sessions/requests/{key}. A receipt names the session; no receipt means the
 *      create did not land, so it is sent again (same key, same body).
 * 2. Readiness. GET /sessions/{sid}?wait=S long-polls until the state changes; against a
 *    server that answers at once, the wait between polls follows eta_seconds.
 *    - ready: done. error: SessionFailedError with the public failure, fast.
 *    - the budget runs out: ReadyTimeoutError.
 * Whatever fails after a session exists ends that session before the error is thrown.
 */
import type { CreateReceipt, CreateSessionBody, Session } from '../api/schemas.js';
import type { PhoneSessionClient } from '../client.js';
import {
  ConnectionError,
  CreateRequestRecordedError,
  IdempotencyConflictError,
  NotFoundError,
  PhoneleaseError,
  PhonesBusyError,
  ReadyTimeoutError,
  RequestCompletedError,
  ServerError,
  SessionFailedError,
} from '../errors.js';
import { retryDelay, type RetryPolicy } from '../retry.js';
import type { PhoneleaseLogger } from '../util/log.js';
import { formatDuration, sleep } from '../util/time.js';
import { endAndConfirm, reportEnd } from './end.js';
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
/** Unknown outcomes (no answer, 5xx): quick backoff, also bounded by the start budget. */
const UNKNOWN_POLICY: RetryPolicy = {
  maxRetries: Infinity,
  minDelayMs: 200,
  maxDelayMs: 5000,
  factor: 2,
  budgetMs: Infinity,
};
const MAX_WAIT_S = 30;

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
  const creates: CreateTrace = { mayHaveArrived: false };
  try {
    admitted = await admit(plan, stats, started, deadline, creates);
  } catch (error) {
    // An abort or timeout may have cut a create that landed: end whatever the key made.
    // A create the service never saw (every connection refused) left nothing to end.
    if (creates.mayHaveArrived && mayHaveLanded(error)) await cleanUp(plan, null);
    else if (plan.signal?.aborted) plan.logger.info('stopped before a session was created; nothing to end');
    throw error;
  }
  stats.admittedMs = Date.now() - started;
  let session: Session;
  try {
    // Inside the try: if recording the session fails, the admitted phone is still ended.
    plan.onSession?.(admitted.id);
    session = await untilReady(plan, admitted, stats, started, deadline);
  } catch (error) {
    await cleanUp(plan, admitted.id);
    throw error;
  }
  stats.readyMs = Date.now() - started;
  return { session, stats };
}

/** Whether any create of this start may have reached the service. */
interface CreateTrace {
  mayHaveArrived: boolean;
}

/**
 * How long a start keeps trying a service that has not answered once: long enough for a
 * service that is restarting, short enough that a wrong PHONELEASE_BASE_URL fails fast.
 */
export const UNREACHABLE_GIVE_UP_MS = 10_000;

async function admit(
  plan: StartPlan,
  stats: StartStats,
  started: number,
  deadline: number,
  creates: CreateTrace,
): Promise<Session> {
  const { client, requestKey, logger, signal } = plan;
  let unknown = 0;
  let answered = false;
  for (;;) {
    signal?.throwIfAborted();
    stats.createAttempts++;
    let error: unknown;
    const arrivedBefore = creates.mayHaveArrived;
    creates.mayHaveArrived = true; // until this attempt shows otherwise
    try {
      // The lease does its own retrying: every unknown outcome goes through the receipt first.
      return await client.createSession(plan.body, { idempotencyKey: requestKey, retry: false, signal });
    } catch (e) {
      error = e;
    }
    if (error instanceof ConnectionError && !error.requestMayHaveArrived) {
      creates.mayHaveArrived = arrivedBefore;
      if (!answered) {
        const waited = Date.now() - started;
        const giveUpMs = Math.min(UNREACHABLE_GIVE_UP_MS, deadline - started);
        if (waited + 1000 > giveUpMs) {
          throw new ConnectionError(
            `${error.message} It did not answer for ${formatDuration(waited)}, so the start gave up.`,
            { cause: error, requestMayHaveArrived: false },
          );
        }
        if (unknown === 0) {
          logger.info(
            `cannot reach the phone-session service at ${client.baseUrl}; trying again for up to ${formatDuration(giveUpMs)}`,
          );
        }
      }
    } else if (!(error instanceof ConnectionError)) {
      answered = true;
    }

    if (error instanceof PhonesBusyError) {
      const delay = retryDelay(BUSY_POLICY, stats.busyWaits, error.retryAfterMs);
      if (Date.now() + delay > deadline) throw error;
      stats.busyWaits++;
      logger.info(
        `all phones are busy; trying again in ${formatDuration(delay)} (waited ${formatDuration(Date.now() - started)} so far)`,
      );
      await sleep(delay, signal);
      continue;
    }
    if (error instanceof CreateRequestRecordedError || isUnknownOutcome(error)) {
      // Only a create that may have arrived can have a receipt.
      const receipt = creates.mayHaveArrived ? await lookUp(plan, stats) : null;
      if (receipt) {
        if (receipt.cleanup_complete || receipt.state === 'closing') {
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
        return await client.getSession(receipt.id, { signal });
      }
      // No receipt: the create never landed (or is still landing). Send it again, same key and body.
      const delay = retryDelay(
        UNKNOWN_POLICY,
        unknown++,
        error instanceof CreateRequestRecordedError ? 1000 : null,
      );
      if (Date.now() + delay > deadline) throw error;
      logger.debug?.(`create outcome unknown (${messageOf(error)}); retrying in ${formatDuration(delay)}`);
      await sleep(delay, signal);
      continue;
    }
    throw error;
  }
}

/** The receipt for this start's key, or null when the service has none (or cannot be asked). */
async function lookUp(plan: StartPlan, stats: StartStats): Promise<CreateReceipt | null> {
  stats.receiptLookups++;
  try {
    // One attempt: the admission loop around it does the retrying, within the start's budget.
    return await plan.client.getReceipt(plan.requestKey, { signal: plan.signal, retry: false });
  } catch (error) {
    if (error instanceof NotFoundError || isUnknownOutcome(error)) return null;
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
  const { client, logger, signal } = plan;
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
      next = await client.getSession(session.id, { ...(waitS >= 1 ? { waitSeconds: waitS } : {}), signal });
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

/** No answer, or a server error: the create may or may not have happened. */
function isUnknownOutcome(error: unknown): boolean {
  return (
    error instanceof ConnectionError ||
    error instanceof ServerError ||
    (error instanceof IdempotencyConflictError && error.code === 'idempotency_key_in_use')
  );
}

function mayHaveLanded(error: unknown): boolean {
  if (error instanceof PhoneleaseError)
    return isUnknownOutcome(error) || error instanceof CreateRequestRecordedError;
  return true; // an abort, or something unexpected
}

/** How long a start that may have landed keeps looking for its session by key. */
const FIND_LANDED_MS = 3000;

/** Best effort, never throws: a start that fails must not leave a phone behind. */
async function cleanUp(plan: StartPlan, sessionId: string | null): Promise<void> {
  const started = Date.now();
  // Without an id the create may still be landing: look for it by its key for a while.
  const result = await endAndConfirm(
    plan.client,
    { sessionId, requestKey: plan.requestKey },
    { confirmMs: 5000, findMs: sessionId ? 0 : FIND_LANDED_MS },
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
