/**
 * The rules of a session's life as pure functions: what the single server's runtime, a device
 * host and the shared store's SQL all decide by, written once. No I/O, no clock (times are
 * passed in, in whole seconds unless a name says ms), no store: each rule is tested on its own
 * (test/server/rules.test.ts).
 */
import type { EndReason } from '../../src/api/schemas.js';
import { PhoneBootError } from '../devices/types.js';
import { randomToken, type RandomSource } from '../secrets.js';

/** A phone's frame is captured at most once per this interval; callers get the cached image in between. */
export const FRAME_INTERVAL_MS = 2000;
/** How long DELETE waits for cleanup to be confirmed before answering 202 cleanup_pending. */
export const RELEASE_WAIT_MS = 1500;

// ---------------------------------------------------------------------------------------
// Idempotency and deadlines

/** Stable JSON with sorted keys: the "same parsed body" of an idempotent replay. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * When a session admitted at `nowMs` with `timeoutSeconds` expires, in whole seconds: the
 * admission second rounded up, so a session never lives less than its timeout from
 * admission (rounded down, `timeout_seconds: 1` could end within milliseconds).
 */
export const expiryOf = (nowMs: number, timeoutSeconds: number): number =>
  Math.ceil(nowMs / 1000) + timeoutSeconds;

/**
 * The `retry_after_seconds` of phones_busy: 1 while a session is being cleaned up (its phone
 * is about to be free), else until the soonest deadline of a live session, within 1 to 5.
 */
export function retryAfterSeconds(
  live: { closing: number; soonestExpiresAt: number | null },
  now: number,
): number {
  if (live.closing > 0) return 1;
  return Math.max(1, Math.min(5, live.soonestExpiresAt !== null ? live.soonestExpiresAt - now : 5));
}

// ---------------------------------------------------------------------------------------
// Billing: each started minute of a ready metered session is debited once

/** What billing reads of a session. */
export interface Billed {
  billing_mode: 'metered' | 'disabled';
  /** When its phone became ready (null: never). */
  ready: number | null;
  expires_at: number;
  minutes_debited: number;
  price_cents_per_minute: number;
}

/**
 * The minutes due by `upto`: every minute started since ready (usage rounds up to whole
 * minutes), never one past the deadline however late it is asked.
 */
export function minutesDue(s: Billed, upto: number): number {
  if (s.billing_mode !== 'metered' || s.ready === null) return 0;
  return Math.ceil(Math.max(0, Math.min(upto, s.expires_at) - s.ready) / 60);
}

/**
 * When the next minute starts (and is due), or null when it would start past the deadline
 * (the deadline ends the session first) or nothing is metered. Minute k starts one second
 * after ready + (k-1) * 60.
 */
export function nextMinuteStart(s: Billed): number | null {
  if (s.billing_mode !== 'metered' || s.ready === null) return null;
  const next = s.ready + s.minutes_debited * 60 + 1;
  return next > s.expires_at ? null : next;
}

/** A debit to record: minute `minute` of a session, dated the second it started. */
export interface Debit {
  minute: number;
  cents: number;
  /** Always inside [ready, ended], however late it is recorded (at closure, by a sweep, after a crash). */
  at: number;
}

/** The debits due by `upto` against `balance`, and what is left. */
export interface DebitPlan {
  debits: Debit[];
  balance: number;
  /** When the paid minutes ran out, if the balance could not cover a minute due; else null. */
  exhaustedAt: number | null;
}

export function planDebits(s: Billed, balance: number, upto: number): DebitPlan {
  const due = minutesDue(s, upto);
  const debits: Debit[] = [];
  let left = balance;
  for (let minute = s.minutes_debited + 1; minute <= due; minute++) {
    if (left < s.price_cents_per_minute)
      return { debits, balance: left, exhaustedAt: s.ready! + (minute - 1) * 60 };
    debits.push({ minute, cents: s.price_cents_per_minute, at: s.ready! + (minute - 1) * 60 + 1 });
    left -= s.price_cents_per_minute;
  }
  return { debits, balance: left, exhaustedAt: null };
}

/** History's usage_minutes: every started minute from ready to the end. */
export const usageMinutes = (ready: number | null, ended: number): number =>
  ready !== null ? Math.ceil(Math.max(0, ended - ready) / 60) : 0;

// ---------------------------------------------------------------------------------------
// Ending

/**
 * How an ending is recorded: a session whose start failed ends as `failed`, whatever ended
 * it; one whose credit ran out before `at` (`exhaustedAt`, from billing it up to `at`) ends
 * then, as `credit_exhausted`; any other ends at `at` for the reason given.
 */
export function endingOf(
  state: string,
  reason: EndReason,
  at: number,
  exhaustedAt: number | null,
): { reason: EndReason; at: number } {
  if (state === 'error') return { reason: 'failed', at };
  if (exhaustedAt !== null) return { reason: 'credit_exhausted', at: exhaustedAt };
  return { reason, at };
}

/**
 * When a session whose phone was lost without a word (its process killed, its host dead)
 * ended: the phone lived at least until its runtime was last known alive, and until its last
 * debit (a minute may be debited between two heartbeats: ending earlier would put an
 * acknowledged debit after the end and bill minutes history does not show), never past its
 * deadline nor past now.
 */
export function lostEndTime(s: {
  ready: number | null;
  created: number;
  expiresAt: number;
  lastAlive: number;
  lastDebit: number | null;
  now: number;
}): number {
  const ready = s.ready ?? s.created;
  return Math.max(Math.min(s.now, Math.max(s.lastAlive, ready), s.expiresAt), s.lastDebit ?? ready);
}

// ---------------------------------------------------------------------------------------
// Boot times and eta_seconds

/** What boots typically take, after one more took `bootMs`: a moving average that follows the machine. */
export const nextTypicalBootMs = (typicalMs: number, bootMs: number): number =>
  Math.round(typicalMs * 0.7 + bootMs * 0.3);

/** eta_seconds of a session whose boot started `elapsedMs` ago. */
export const bootingEtaSeconds = (typicalMs: number, elapsedMs: number): number =>
  Math.ceil(Math.max(0, typicalMs - elapsedMs) / 1000);

/** A boot slot: in how many ms it frees, and what a boot there typically takes. */
export interface EtaSlot {
  freeInMs: number;
  typicalMs: number;
}

/** Where a queued session stands. */
export interface QueuePosition {
  /** Whether the session is temporary (pooled phones serve only those). */
  temporary: boolean;
  /** Queued sessions ahead of it, and how many of those are temporary. */
  ahead: number;
  temporaryAhead: number;
  /** When each pooled phone is ready, in ms from now, in the order they are handed out (warm: 0). */
  pooledReadyInMs: readonly number[];
  /** Every boot slot there is. */
  slots: readonly EtaSlot[];
}

/**
 * eta_seconds of a queued session, one queue model played forward for every server: temporary
 * sessions get pooled phones in order (warm ones at once, warming ones when their boot ends);
 * everything else waits for a boot slot, each slot freeing when the boot it holds should end,
 * and each boot taking what boots typically take there. Undefined when there is no slot to
 * model. A typical remaining time, not a promise, as the contract says.
 */
export function queuedEtaSeconds(q: QueuePosition): number | undefined {
  const pooled = [...q.pooledReadyInMs].sort((a, b) => a - b);
  if (q.temporary && q.temporaryAhead < pooled.length) return Math.ceil(pooled[q.temporaryAhead]! / 1000);
  if (q.slots.length === 0) return undefined;
  const slots = q.slots.map((s) => ({ ...s }));
  const position = Math.max(0, q.ahead - Math.min(pooled.length, q.temporaryAhead));
  let readyInMs = 0;
  for (let i = 0; i <= position; i++) {
    slots.sort((a, b) => a.freeInMs - b.freeInMs);
    const slot = slots[0]!;
    readyInMs = slot.freeInMs + slot.typicalMs;
    slot.freeInMs = readyInMs;
  }
  return Math.ceil(readyInMs / 1000);
}

/** A live device host as the queue model sees it. */
export interface HostCapacity {
  boot_slots: number;
  phones: number;
  typical_boot_ms: number;
  /** Pooled phones warm and warming, as of its last heartbeat. */
  warm: number;
  warming: number;
  /** Sessions it holds, and when it claimed each of those still booting (ms). */
  held: number;
  claimed: number[];
}

/**
 * The boot slots and pooled phones of a deployment's live hosts, in ms from `nowMs`: the
 * slots its claimed boots hold free when they should end, the rest are free now while the
 * host has room (phones its sessions leave). Hosts publish their pools by count only, not
 * when each warming phone started: a warming phone is taken to be half-way through its boot.
 */
export function hostSlots(
  hosts: readonly HostCapacity[],
  nowMs: number,
): { slots: EtaSlot[]; pooled: number[] } {
  const slots: EtaSlot[] = [];
  const pooled: number[] = [];
  for (const h of hosts) {
    const typicalMs = Number(h.typical_boot_ms);
    const busy = [
      ...h.claimed.map((at) => Math.max(0, typicalMs - (nowMs - Number(at)))),
      ...Array.from({ length: Number(h.warming) }, () => typicalMs / 2),
    ].slice(0, Number(h.boot_slots));
    for (const freeInMs of busy) slots.push({ freeInMs, typicalMs });
    const free = Math.min(Number(h.boot_slots) - busy.length, Math.max(0, Number(h.phones) - Number(h.held)));
    for (let i = 0; i < free; i++) slots.push({ freeInMs: 0, typicalMs });
    for (let i = 0; i < Number(h.warm); i++) pooled.push(0);
    for (let i = 0; i < Number(h.warming); i++) pooled.push(typicalMs / 2);
  }
  return { slots, pooled };
}

// ---------------------------------------------------------------------------------------
// Phones

/** Why a tap cannot land on the screen, or null when it can. */
export function tapRefusal(x: number, y: number, screen: { w: number; h: number }): string | null {
  return x >= screen.w || y >= screen.h
    ? `(${x}, ${y}) is outside the ${screen.w}x${screen.h} screen.`
    : null;
}

/** The `failure` of a session whose phone failed to start: the backend's own words when they are public. */
export function startupFailure(err: unknown): { code: string; message: string } {
  return err instanceof PhoneBootError
    ? { code: err.code, message: err.message }
    : { code: 'boot_failed', message: 'The phone failed to start. End this session and start a new one.' };
}

/** A new ADB unlock code: a recognisable prefix lets redact() find it wherever a client puts it. */
export const newAdbCode = (random: RandomSource): string => `pau_${randomToken(random, 32)}`;

/** A new session id. */
export const newSessionId = (random: RandomSource): string => `ses_${randomToken(random, 20)}`;
