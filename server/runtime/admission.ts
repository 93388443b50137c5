/**
 * Admission as a pure decision: given what the runtime knows at the moment of a create
 * (the account, the receipt of the idempotency key, what is running), say whether the
 * request replays an earlier one, is admitted, or is refused, and why. No I/O, no clock, no
 * HTTP: refusals are error codes with a message that says what to do next and the details
 * the contract gives; the API maps codes to statuses. The runtime commits an admission.
 */
import { ERROR_CODES, MAX_TIMESTAMP, PROVIDER, type CreateSessionBody } from '../../src/api/schemas.js';
import { apiError } from '../errors.js';
import type { AccountRow, ProfileRow, ReceiptRow, SessionRow } from './rows.js';
import { expiryOf } from './rules.js';

export const DEFAULT_TIMEOUT_SECONDS = 300;

/** What a create needs to be decided. */
export interface AdmissionFacts {
  body: CreateSessionBody;
  /** sha256 of the canonical body: the "same request" of an idempotent replay. */
  bodyHash: string;
  requestKey: string | null;
  /** Now, in ms since the epoch (the expiry rounds it up to a whole second: expiryOf). */
  nowMs: number;
  /** The receipt of (uid, requestKey), if the key was used before. */
  receipt: ReceiptRow | undefined;
  /** For a receipt: whether its session is still live (else its cleanup completed), and its last state. */
  receiptSession: { live: boolean; state: string | null } | null;
  account: AccountRow;
  /** Live sessions of the account (sessions pending cleanup count). */
  activeSessions: number;
  /** The account's profile, when the body names one. */
  profile: ProfileRow | undefined;
  /** Live sessions on this server, and how many phones it has. */
  liveSessions: number;
  phones: number;
  /**
   * How long until a phone is likely free, for phones_busy. A function: it walks every live
   * session, and only a phones_busy refusal needs it (not every create).
   */
  retryAfterSeconds: () => number;
}

/** What a directory does with a create: replay the receipt's session, or insert `row` (holding `holdProfile`). */
export type Verdict = { kind: 'replay' } | { kind: 'admit'; row: SessionRow; holdProfile: ProfileRow | null };

/**
 * Decides a create, as both directories act on it: a refusal is thrown as the contract's
 * error (the API maps its code to a status), a replay names the receipt's session, and an
 * admission is the stored row of the new session: provisioning, billed at the account's
 * current terms, due its timeout after admission (`nowMs`: `created` is its whole second, the
 * expiry rounds it up). `id` and `seq` are asked for only on admission.
 */
export function admissionVerdict(
  f: AdmissionFacts,
  next: { uid: string; id: () => string; seq: () => number },
): Verdict {
  if (f.receipt && f.requestKey) {
    if (f.receipt.body_hash !== f.bodyHash) {
      throw apiError(
        ERROR_CODES.idempotencyKeyReused,
        'This Idempotency-Key was used with a different request body; reuse a key only to retry the identical request, or use a new key for a new session.',
        { request_key: f.requestKey },
      );
    }
    if (!f.receiptSession?.live) {
      const state = f.receiptSession?.state;
      throw apiError(
        ERROR_CODES.requestCompleted,
        'The session created with this Idempotency-Key has ended and its cleanup completed; use a new key to start a new session.',
        { id: f.receipt.sid, request_key: f.requestKey, cleanup_complete: true, ...(state ? { state } : {}) },
      );
    }
    return { kind: 'replay' };
  }

  const { body, account } = f;
  if (body.provider !== undefined && body.provider !== PROVIDER) {
    throw apiError(
      ERROR_CODES.invalidRequest,
      `provider must be "${PROVIDER}", the only provider; omit it to use the default.`,
    );
  }
  const timeout = body.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS;
  if (expiryOf(f.nowMs, timeout) > MAX_TIMESTAMP) {
    throw apiError(
      ERROR_CODES.invalidRequest,
      `timeout_seconds ${timeout} puts expires_at past the largest supported timestamp (${MAX_TIMESTAMP}); choose a shorter timeout.`,
    );
  }
  if (!account.can_rent) {
    throw apiError(
      ERROR_CODES.rentalUnavailable,
      account.rent_blocked_reason ?? 'Rentals are not enabled for this account.',
    );
  }
  const twoMinutes = 2 * account.price_cents_per_minute;
  if (account.billing_mode === 'metered' && account.balance_cents < twoMinutes) {
    throw apiError(
      ERROR_CODES.insufficientCredit,
      `Starting a session needs at least two minutes of credit (${twoMinutes} cents); the balance is ${account.balance_cents} cents. Add credit and retry.`,
      { balance_cents: account.balance_cents },
    );
  }
  if (f.activeSessions >= account.session_limit) {
    throw apiError(
      ERROR_CODES.sessionLimit,
      `The account's ${account.session_limit} session slots are in use (sessions pending cleanup count); end a session and retry.`,
      {
        session_limit: account.session_limit,
        active_session_count: f.activeSessions,
        available_session_slots: 0,
      },
    );
  }
  if (body.profile_id !== undefined) {
    const held = f.profile;
    if (!held || held.id !== body.profile_id) {
      throw apiError(
        ERROR_CODES.invalidRequest,
        "profile_id is not this account's profile; use profile.id from GET /me.",
      );
    }
    if (held.holder || held.state === 'saving') {
      throw apiError(
        ERROR_CODES.profileRunning,
        'The profile phone is held by a live session or is still being saved; end that session (or wait for the save) and retry.',
        held.holder ? { session: held.holder } : {},
      );
    }
  }
  if (f.liveSessions >= f.phones) {
    const retryAfter = f.retryAfterSeconds();
    throw apiError(
      ERROR_CODES.phonesBusy,
      `All phones are in use; no session was created. Retry after ${retryAfter} s with the same idempotency key.`,
      { retry_after_seconds: retryAfter },
    );
  }
  const profile = body.profile_id !== undefined ? (f.profile ?? null) : null;
  const now = Math.floor(f.nowMs / 1000);
  const row: SessionRow = {
    id: next.id(),
    uid: next.uid,
    seq: next.seq(),
    provider: PROVIDER,
    profile_id: profile?.id ?? null,
    request_key: f.requestKey,
    state: 'provisioning',
    done: 0,
    device: null,
    screen_w: null,
    screen_h: null,
    billing_mode: f.account.billing_mode,
    price_cents_per_minute: f.account.price_cents_per_minute,
    timeout_seconds: timeout,
    created: now,
    expires_at: expiryOf(f.nowMs, timeout),
    ready: null,
    close_requested: null,
    ended: null,
    end_reason: null,
    cleanup_status: null,
    last: now,
    cost_cents: 0,
    minutes_debited: 0,
    failure_code: null,
    failure_message: null,
    adb_code: null,
    adb_enabled: 1,
  };
  return { kind: 'admit', row, holdProfile: profile };
}
