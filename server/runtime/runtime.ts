/**
 * The session runtime: admission, the boot queue, the lifecycle, deadlines, billing,
 * cleanup and profile phones. It is the only writer of sessions, profiles and balances.
 *
 * Lifecycle: admitted (provisioning, queued) -> booting -> ready -> closing -> cleanup
 * confirmed (done; in history). A failed boot gives state error until the owner ends the
 * session or its deadline passes. The deadline counts from admission.
 *
 * Admission is synchronous from the first check to the committed insert, so concurrent
 * creates with one idempotency key cannot both pass the receipt check: the first commits
 * its receipt, every later one replays it.
 */
import { EventEmitter } from 'node:events';
import {
  ERROR_CODES,
  MAX_TIMESTAMP,
  PROVIDER,
  type CreateSessionBody,
  type EndReason,
} from '../../src/api/schemas.js';
import type { Clock } from '../clock.js';
import { seconds } from '../clock.js';
import type { DeviceBackend, DeviceLogger, DevicePhone, PhoneInput } from '../devices/types.js';
import { PhoneBootError } from '../devices/types.js';
import { apiError, badRequest, notFound, notReady } from '../errors.js';
import { randomToken, sha256Hex, type RandomSource } from '../secrets.js';
import type { ProfileRow, SessionRow, Store } from '../store/store.js';
import type { AccountService } from './accounts.js';
import type { ProfileSaves } from './profile-saves.js';

export interface RuntimeOptions {
  store: Store;
  accounts: AccountService;
  backend: DeviceBackend;
  saves: ProfileSaves;
  clock: Clock;
  random: RandomSource;
  log: DeviceLogger;
  /** Shared phone capacity across accounts (503 phones_busy beyond it). */
  phones: number;
  /** Phones booting at once; the rest wait as `queued`. */
  bootSlots: number;
}

/** In-memory companion of a live session row. */
export interface LiveSession {
  row: SessionRow;
  location: 'queued' | 'booting' | null;
  bootStartedMs: number | null;
  abort: AbortController | null;
  boot: Promise<DevicePhone | null> | null;
  phone: DevicePhone | null;
  cancelDeadline: (() => void) | null;
  cancelBilling: (() => void) | null;
  cleanup: Promise<void> | null;
  /** Last API activity in ms (idle_s); persisted as `last`. */
  activityMs: number;
  frame: { png: Buffer; atMs: number } | null;
  capturing: Promise<Buffer> | null;
}

export type AdmitResult = { status: 202 | 503; live: LiveSession; replayed: boolean };

/** Captures are taken at most once per this interval per session; callers get the cached image in between. */
export const FRAME_INTERVAL_MS = 2000;
/** How long DELETE waits for cleanup before answering 202 cleanup_pending. */
const RELEASE_WAIT_MS = 1500;
const HEARTBEAT_MS = 2000;
const CLEANUP_RETRY_MS = 5000;
const CLEANUP_ATTEMPTS = 5;

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

export class Runtime extends EventEmitter {
  private readonly live = new Map<string, LiveSession>();
  private readonly perAccount = new Map<string, number>();
  private readonly queue: LiveSession[] = [];
  private booting = 0;
  private seq: number;
  private available = true;
  private closed = false;
  private typicalBootMs: number;
  private cancelHeartbeat: (() => void) | null = null;
  /** sha256(code) -> session id, for the ADB gateway. */
  private readonly adbCodes = new Map<string, string>();

  constructor(private readonly o: RuntimeOptions) {
    super();
    this.seq = o.store.maxSeq();
    this.typicalBootMs = o.backend.typicalBootMs;
  }

  private nowSec(): number {
    return seconds(this.o.clock.now());
  }

  // ---------------------------------------------------------------------------------
  // Start-up and shutdown

  /**
   * Picks up where the last process stopped: recorded requests are provisioned, sessions
   * whose phones died with the process end as `lost` (billed up to the last moment the
   * server was known alive), interrupted cleanups complete, profile holds are released.
   */
  recover(): void {
    const now = this.nowSec();
    const lastAlive = Number(this.o.store.getMeta('last_alive') ?? now);
    for (const row of this.o.store.liveSessions()) {
      const live = this.track(row);
      if (row.state === 'provisioning') {
        if (row.expires_at <= now) void this.finish(live, 'expired', row.expires_at);
        else {
          this.armDeadline(live);
          this.enqueue(live);
        }
      } else if (row.state === 'ready') {
        // The phone lived at least until the server was last known alive and until its last
        // debit (a minute may be debited between two heartbeats); ending earlier would put
        // acknowledged debits after the end and bill minutes that history does not show.
        const ready = row.ready ?? row.created;
        const lastDebit = this.o.store.lastDebitAt(row.id) ?? ready;
        const at = Math.max(Math.min(now, Math.max(lastAlive, ready), row.expires_at), lastDebit);
        this.o.log.warn('phone lost in restart', { session: row.id });
        void this.finish(live, 'lost', at, { lostProfile: true });
      } else if (row.state === 'closing') {
        // Its save (if any) never committed: the commit and `done` share one transaction.
        live.cleanup = Promise.resolve().then(() => this.cleanup(live, true));
      } else {
        this.armDeadline(live);
      }
    }
    // Profiles whose save was interrupted keep their previous save, marked inexact.
    for (const profile of this.o.store.profiles()) {
      const holder = profile.holder ? this.live.get(profile.holder) : undefined;
      if (profile.state === 'saving' || (profile.holder && !holder)) {
        this.o.store.saveProfile({
          ...profile,
          state: this.o.saves.current(profile.id) ? 'stored' : 'empty',
          holder: holder ? profile.holder : null,
          exact: 0,
        });
      }
    }
    this.heartbeat();
    this.pump();
  }

  private heartbeat(): void {
    if (this.closed) return;
    this.o.store.transaction(() => {
      this.o.store.setMeta('last_alive', String(this.nowSec()));
      for (const live of this.live.values()) {
        const last = seconds(live.activityMs);
        if (last !== live.row.last) {
          live.row.last = last;
          this.o.store.saveSession(live.row);
        }
      }
    });
    this.cancelHeartbeat = this.o.clock.setTimeout(() => this.heartbeat(), HEARTBEAT_MS);
  }

  /**
   * Graceful shutdown: profile phones are saved, every live session ends (`lost`: the
   * runtime no longer has its phone) and is recorded in history.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.available = false;
    const now = this.nowSec();
    await Promise.all([...this.live.values()].map((l) => this.finish(l, 'lost', now)));
    this.closed = true;
    this.cancelHeartbeat?.();
    this.o.store.setMeta('last_alive', String(this.nowSec()));
  }

  /** Makes the runtime unavailable: admissions are recorded and answered 503 create_request_recorded. */
  pause(): void {
    this.available = false;
  }

  /** Makes the runtime available again; recorded requests are provisioned in order. */
  resume(): void {
    if (this.closed) return;
    this.available = true;
    this.pump();
  }

  // ---------------------------------------------------------------------------------
  // Admission

  admit(uid: string, body: CreateSessionBody, requestKey: string | null): AdmitResult {
    const nowMs = this.o.clock.now();
    const now = seconds(nowMs);
    const bodyHash = sha256Hex(canonicalJson(body));

    if (requestKey) {
      const receipt = this.o.store.receipt(uid, requestKey);
      if (receipt) return this.replay(uid, receipt.sid, receipt.body_hash, bodyHash, requestKey);
    }

    if (body.provider !== undefined && body.provider !== PROVIDER) {
      throw badRequest(`provider must be "${PROVIDER}", the only provider; omit it to use the default.`);
    }
    const timeout = body.timeout_seconds ?? 300;
    if (now + timeout > MAX_TIMESTAMP) {
      throw badRequest(
        `timeout_seconds ${timeout} puts expires_at past the largest supported timestamp (${MAX_TIMESTAMP}); choose a shorter timeout.`,
      );
    }

    const account = this.o.accounts.account(uid);
    if (!account.can_rent) {
      throw apiError(
        ERROR_CODES.rentalUnavailable,
        account.rent_blocked_reason ?? 'Rentals are not enabled for this account.',
      );
    }
    if (account.billing_mode === 'metered' && account.balance_cents < 2 * account.price_cents_per_minute) {
      throw apiError(
        ERROR_CODES.insufficientCredit,
        `Starting a session needs at least two minutes of credit (${2 * account.price_cents_per_minute} cents); the balance is ${account.balance_cents} cents. Add credit and retry.`,
        { balance_cents: account.balance_cents },
      );
    }
    const active = this.perAccount.get(uid) ?? 0;
    if (active >= account.session_limit) {
      throw apiError(
        ERROR_CODES.sessionLimit,
        `The account's ${account.session_limit} session slots are in use (sessions pending cleanup count); end a session and retry.`,
        { session_limit: account.session_limit, active_session_count: active, available_session_slots: 0 },
      );
    }
    let profile: ProfileRow | undefined;
    if (body.profile_id !== undefined) {
      profile = this.o.store.profileOf(uid);
      if (!profile || profile.id !== body.profile_id) {
        throw badRequest("profile_id is not this account's profile; use profile.id from GET /me.");
      }
      if (profile.holder || profile.state === 'saving') {
        throw apiError(
          ERROR_CODES.profileRunning,
          'The profile phone is held by a live session or is still being saved; end that session (or wait for the save) and retry.',
          profile.holder ? { session: profile.holder } : {},
        );
      }
    }
    if (this.live.size >= this.o.phones) {
      const retry = this.retryAfterSeconds(now);
      throw apiError(
        ERROR_CODES.phonesBusy,
        `All phones are in use; no session was created. Retry after ${retry} s with the same idempotency key.`,
        { retry_after_seconds: retry },
        { 'retry-after': String(retry) },
      );
    }

    const row: SessionRow = {
      id: `ses_${randomToken(this.o.random, 20)}`,
      uid,
      seq: ++this.seq,
      provider: PROVIDER,
      profile_id: profile?.id ?? null,
      request_key: requestKey,
      state: 'provisioning',
      done: 0,
      device: null,
      screen_w: null,
      screen_h: null,
      billing_mode: account.billing_mode,
      price_cents_per_minute: account.price_cents_per_minute,
      timeout_seconds: timeout,
      created: now,
      expires_at: now + timeout,
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
    // The admission (and its receipt) is committed before the runtime is asked.
    this.o.store.transaction(() => {
      this.o.store.insertSession(row);
      if (requestKey) {
        this.o.store.insertReceipt({
          uid,
          request_key: requestKey,
          body_hash: bodyHash,
          sid: row.id,
          created: now,
        });
      }
      if (profile) this.o.store.saveProfile({ ...profile, holder: row.id });
    });
    const live = this.track(row);
    live.activityMs = nowMs;
    this.armDeadline(live);
    this.enqueue(live);
    this.emit('admitted', live);
    return { status: this.available ? 202 : 503, live, replayed: false };
  }

  private replay(
    uid: string,
    sid: string,
    storedHash: string,
    bodyHash: string,
    requestKey: string,
  ): AdmitResult {
    if (storedHash !== bodyHash) {
      throw apiError(
        ERROR_CODES.idempotencyKeyReused,
        'This Idempotency-Key was used with a different request body; reuse a key only to retry the identical request, or use a new key for a new session.',
        { request_key: requestKey },
      );
    }
    const live = this.live.get(sid);
    if (!live) {
      const row = this.o.store.session(sid);
      throw apiError(
        ERROR_CODES.requestCompleted,
        'The session created with this Idempotency-Key has ended and its cleanup completed; use a new key to start a new session.',
        { id: sid, request_key: requestKey, cleanup_complete: true, ...(row ? { state: row.state } : {}) },
      );
    }
    if (live.row.uid !== uid) throw new Error('receipt points at another account');
    return { status: 202, live, replayed: true };
  }

  private retryAfterSeconds(now: number): number {
    let soonest = Infinity;
    for (const l of this.live.values()) {
      if (l.row.state === 'closing') return 1;
      soonest = Math.min(soonest, l.row.expires_at - now);
    }
    return Math.max(1, Math.min(5, Number.isFinite(soonest) ? soonest : 5));
  }

  private track(row: SessionRow): LiveSession {
    const live: LiveSession = {
      row,
      location: row.state === 'provisioning' ? 'queued' : null,
      bootStartedMs: null,
      abort: null,
      boot: null,
      phone: null,
      cancelDeadline: null,
      cancelBilling: null,
      cleanup: null,
      activityMs: row.last * 1000,
      frame: null,
      capturing: null,
    };
    this.live.set(row.id, live);
    this.perAccount.set(row.uid, (this.perAccount.get(row.uid) ?? 0) + 1);
    return live;
  }

  private untrack(live: LiveSession): void {
    if (this.live.get(live.row.id) !== live) return;
    this.live.delete(live.row.id);
    const n = (this.perAccount.get(live.row.uid) ?? 1) - 1;
    if (n > 0) this.perAccount.set(live.row.uid, n);
    else this.perAccount.delete(live.row.uid);
  }

  // ---------------------------------------------------------------------------------
  // Boot queue

  private enqueue(live: LiveSession): void {
    live.location = 'queued';
    this.queue.push(live);
    this.pump();
  }

  private pump(): void {
    while (this.available && !this.closed && this.booting < this.o.bootSlots && this.queue.length > 0) {
      const live = this.queue.shift()!;
      if (live.row.state !== 'provisioning') continue;
      this.startBoot(live);
    }
  }

  private startBoot(live: LiveSession): void {
    const row = live.row;
    this.booting++;
    live.location = 'booting';
    live.bootStartedMs = this.o.clock.now();
    live.abort = new AbortController();
    const restoreFrom = row.profile_id ? (this.o.saves.current(row.profile_id) ?? null) : null;
    this.o.log.debug('booting phone', { session: row.id, profile: row.profile_id !== null });
    this.emit('changed', live);
    live.boot = this.o.backend
      .boot({
        sessionId: row.id,
        // A profile phone without a save boots fresh; null would mean "temporary".
        restoreFrom: row.profile_id ? (restoreFrom ?? '') : null,
        signal: live.abort.signal,
        log: this.o.log,
      })
      .then(
        (phone) => {
          this.booting--;
          this.bootFinished(live, phone);
          return phone;
        },
        (err: unknown) => {
          this.booting--;
          this.bootFailed(live, err);
          return null;
        },
      )
      .finally(() => this.pump());
  }

  private bootFinished(live: LiveSession, phone: DevicePhone): void {
    const row = live.row;
    live.phone = phone;
    live.location = null;
    const tookMs = this.o.clock.now() - (live.bootStartedMs ?? this.o.clock.now());
    // A moving average: eta_seconds follows what boots really take on this machine.
    this.typicalBootMs = Math.round(this.typicalBootMs * 0.7 + tookMs * 0.3);
    if (row.state !== 'provisioning') return; // closed while booting; cleanup stops the phone
    row.state = 'ready';
    row.ready = this.nowSec();
    row.device = phone.label;
    row.screen_w = phone.screen.w;
    row.screen_h = phone.screen.h;
    // A recognisable prefix lets redact() find the code wherever a client puts it.
    row.adb_code = `pau_${randomToken(this.o.random, 32)}`;
    this.o.store.saveSession(row);
    this.adbCodes.set(sha256Hex(row.adb_code), row.id);
    phone.onLost((reason) => {
      this.o.log.warn('phone lost', { session: row.id, reason });
      void this.finish(live, 'lost', this.nowSec(), { lostProfile: true });
    });
    this.armBilling(live);
    this.o.log.info('phone ready', { session: row.id, boot_ms: tookMs });
    this.emit('changed', live);
  }

  private bootFailed(live: LiveSession, err: unknown): void {
    const row = live.row;
    live.location = null;
    if (row.state !== 'provisioning') return; // aborted because the session ended
    const isPublic = err instanceof PhoneBootError;
    row.state = 'error';
    row.failure_code = isPublic ? err.code : 'boot_failed';
    row.failure_message = isPublic
      ? err.message
      : 'The phone failed to start. End this session and start a new one.';
    this.o.store.saveSession(row);
    this.o.log.error('phone failed to start', { session: row.id, error: String(err) });
    this.emit('changed', live);
  }

  /** Seconds until the phone is likely ready (provisioning only). */
  eta(live: LiveSession): number | undefined {
    const typical = this.typicalBootMs;
    if (live.location === 'booting') {
      const elapsed = this.o.clock.now() - (live.bootStartedMs ?? this.o.clock.now());
      return Math.max(0, Math.ceil((typical - elapsed) / 1000));
    }
    if (live.location === 'queued') {
      // Play the queue forward: each slot frees when its boot should end, and the queue
      // takes slots in order, each boot taking the typical time.
      const now = this.o.clock.now();
      const slotsFreeAt: number[] = [];
      for (const other of this.live.values()) {
        if (other.location === 'booting')
          slotsFreeAt.push(Math.max(0, typical - (now - (other.bootStartedMs ?? now))));
      }
      while (slotsFreeAt.length < this.o.bootSlots) slotsFreeAt.push(0);
      const position = Math.max(0, this.queue.indexOf(live));
      let readyInMs = typical;
      for (let i = 0; i <= position; i++) {
        slotsFreeAt.sort((a, b) => a - b);
        const startsInMs = slotsFreeAt.shift()!;
        readyInMs = startsInMs + typical;
        slotsFreeAt.push(readyInMs);
      }
      return Math.ceil(readyInMs / 1000);
    }
    return undefined;
  }

  // ---------------------------------------------------------------------------------
  // Deadlines and billing

  private armDeadline(live: LiveSession): void {
    const dueMs = live.row.expires_at * 1000 - this.o.clock.now();
    live.cancelDeadline = this.o.clock.setTimeout(
      () => this.finish(live, 'expired', live.row.expires_at),
      dueMs,
    );
  }

  /** Schedules the debit of the next started minute. */
  private armBilling(live: LiveSession): void {
    const row = live.row;
    if (row.billing_mode !== 'metered' || row.ready === null) return;
    // Minute k starts one second after ready + (k-1) * 60 (usage rounds up to whole minutes).
    const nextStartSec = row.ready + row.minutes_debited * 60 + 1;
    live.cancelBilling = this.o.clock.setTimeout(
      () => {
        live.cancelBilling = null;
        if (row.state !== 'ready') return;
        const exhaustedAt = this.bill(live, this.nowSec());
        if (exhaustedAt !== null) return this.finish(live, 'credit_exhausted', exhaustedAt);
        this.armBilling(live);
      },
      nextStartSec * 1000 - this.o.clock.now(),
    );
  }

  /**
   * Debits every started minute up to `upto` (seconds). Returns null, or the time the paid
   * minutes ran out when the balance cannot cover the next one.
   */
  private bill(live: LiveSession, upto: number): number | null {
    const row = live.row;
    if (row.billing_mode !== 'metered' || row.ready === null) return null;
    // Nothing is billed past the deadline, however late a timer fires.
    const due = Math.ceil(Math.max(0, Math.min(upto, row.expires_at) - row.ready) / 60);
    while (row.minutes_debited < due) {
      const account = this.o.accounts.account(row.uid);
      if (account.balance_cents < row.price_cents_per_minute) return row.ready + row.minutes_debited * 60;
      const minute = row.minutes_debited + 1;
      // A debit is dated the second its minute started: always inside [ready, ended], even
      // when it is recorded late (at closure, or by recovery after a crash).
      const startedAt = row.ready + (minute - 1) * 60 + 1;
      this.o.store.transaction(() => {
        this.o.store.insertDebit(row.id, minute, row.uid, row.price_cents_per_minute, startedAt);
        this.o.accounts.setBalance(row.uid, account.balance_cents - row.price_cents_per_minute);
        row.minutes_debited = minute;
        row.cost_cents += row.price_cents_per_minute;
        this.o.store.saveSession(row);
      });
    }
    return null;
  }

  // ---------------------------------------------------------------------------------
  // Ending and cleanup

  /**
   * Ends a session: records the closure (billing stops there), then cleans up. Idempotent:
   * a second call returns the cleanup already under way.
   */
  finish(
    live: LiveSession,
    reason: EndReason,
    at: number,
    opts: { lostProfile?: boolean } = {},
  ): Promise<void> {
    if (live.cleanup) return live.cleanup;
    const row = live.row;
    live.cancelDeadline?.();
    live.cancelBilling?.();
    let endReason: EndReason = row.state === 'error' ? 'failed' : reason;
    let endAt = at;
    if (row.state === 'ready') {
      const exhaustedAt = this.bill(live, at);
      if (exhaustedAt !== null) {
        endReason = 'credit_exhausted';
        endAt = exhaustedAt;
      }
    }
    const queued = this.queue.indexOf(live);
    if (queued >= 0) this.queue.splice(queued, 1);
    row.state = 'closing';
    row.close_requested = endAt;
    row.ended = endAt;
    row.end_reason = endReason;
    row.cleanup_status = 'pending';
    row.last = seconds(live.activityMs);
    this.o.store.saveSession(row);
    live.location = null;
    live.abort?.abort(new Error('session ended'));
    if (row.adb_code) this.adbCodes.delete(sha256Hex(row.adb_code));
    this.emit('closing', live);
    // Deferred by a microtask so that `live.cleanup` is set before any of the cleanup runs:
    // a re-entrant finish() (from an event handler) then joins it instead of starting another.
    live.cleanup = Promise.resolve().then(() => this.cleanup(live, opts.lostProfile ?? false));
    return live.cleanup;
  }

  private async cleanup(live: LiveSession, lostProfile = false, attempt = 1): Promise<void> {
    const row = live.row;
    const phone = live.phone ?? (live.boot ? await live.boot : null);
    const profile = row.profile_id ? this.o.store.profileOf(row.uid) : undefined;
    let staged: string | null = null;
    try {
      if (phone) {
        if (profile && !lostProfile) {
          staged = this.o.saves.stage(profile.id, row.id);
          this.o.store.saveProfile({ ...profile, state: 'saving' });
        }
        await phone.shutdown({ saveTo: staged });
        live.phone = null;
      }
    } catch (err) {
      if (staged) this.o.saves.discard(staged);
      staged = null;
      if (profile) this.o.store.saveProfile({ ...profile });
      this.o.log.error('cleanup failed', { session: row.id, attempt, error: String(err) });
      if (attempt < CLEANUP_ATTEMPTS && !this.closed) {
        row.cleanup_status = 'allocation_uncertain';
        this.o.store.saveSession(row);
        await new Promise<void>((resolve) => this.o.clock.setTimeout(resolve, CLEANUP_RETRY_MS));
        return this.cleanup(live, lostProfile, attempt + 1);
      }
      // Out of attempts: the profile keeps its previous save (marked inexact), and the phone
      // is stopped without saving so nothing stays allocated. If even that fails, the phone
      // is unreachable; count it as gone so the slot is not held forever.
      lostProfile = true;
      await phone
        ?.shutdown({ saveTo: null })
        .catch((e: unknown) => this.o.log.error('phone did not stop', { session: row.id, error: String(e) }));
      live.phone = null;
    }
    const now = this.nowSec();
    this.o.store.transaction(() => {
      if (profile) {
        const current = this.o.store.profileOf(row.uid)!;
        if (staged && !lostProfile) this.o.saves.commit(profile.id, staged);
        const saved = staged !== null;
        this.o.store.saveProfile({
          ...current,
          state: saved ? 'stored' : this.o.saves.current(profile.id) ? 'stored' : 'empty',
          holder: current.holder === row.id ? null : current.holder,
          exact: saved ? 1 : lostProfile ? 0 : current.exact,
          saved_at: saved ? now : current.saved_at,
        });
      }
      row.cleanup_status = 'complete';
      row.done = 1;
      this.o.store.saveSession(row);
    });
    this.untrack(live);
    this.o.log.info('session ended', { session: row.id, reason: row.end_reason });
    this.emit('ended', live);
  }

  /** DELETE /sessions/{sid}: 200 when cleanup is confirmed quickly, else 202 pending. */
  async release(uid: string, sid: string): Promise<{ released: boolean }> {
    const live = this.get(uid, sid);
    const cleanup = this.finish(live, 'released', this.nowSec());
    let done = false;
    await Promise.race([
      cleanup.then(() => (done = true)),
      new Promise<void>((resolve) => {
        const t = setTimeout(resolve, RELEASE_WAIT_MS);
        void cleanup.finally(() => clearTimeout(t));
      }),
    ]);
    return { released: done };
  }

  // ---------------------------------------------------------------------------------
  // Reads

  /** A live session of this account (404 otherwise, exactly as for an unknown id). */
  get(uid: string, sid: string): LiveSession {
    const live = this.live.get(sid);
    if (!live || live.row.uid !== uid) throw notFound();
    return live;
  }

  /** A live session by id alone (view grants are already bound to their session). */
  byId(sid: string): LiveSession {
    const live = this.live.get(sid);
    if (!live) throw notFound();
    return live;
  }

  touch(live: LiveSession): void {
    live.activityMs = this.o.clock.now();
  }

  list(uid: string): LiveSession[] {
    const out: LiveSession[] = [];
    for (const live of this.live.values()) if (live.row.uid === uid) out.push(live);
    return out;
  }

  activeCount(uid: string): number {
    return this.perAccount.get(uid) ?? 0;
  }

  activeBillingMode(uid: string): SessionRow['billing_mode'] | null {
    for (const live of this.live.values()) if (live.row.uid === uid) return live.row.billing_mode;
    return null;
  }

  requireReady(live: LiveSession): DevicePhone {
    if (live.row.state !== 'ready' || !live.phone) throw notReady(live.row.state, live.row.id);
    return live.phone;
  }

  /** The current frame, captured at most once per FRAME_INTERVAL_MS; concurrent callers share one capture. */
  async frame(live: LiveSession): Promise<Buffer> {
    const phone = this.requireReady(live);
    const now = this.o.clock.now();
    if (live.frame && now - live.frame.atMs < FRAME_INTERVAL_MS) return live.frame.png;
    if (live.capturing) return live.capturing;
    live.capturing = phone
      .capture()
      .then((png) => {
        live.frame = { png, atMs: this.o.clock.now() };
        return png;
      })
      .catch((err: unknown) => {
        this.o.log.warn('capture failed', { session: live.row.id, error: String(err) });
        if (live.frame) return live.frame.png;
        throw apiError(ERROR_CODES.noFrame, 'No frame is available yet; retry in a few seconds.');
      })
      .finally(() => (live.capturing = null));
    return live.capturing;
  }

  async input(live: LiveSession, event: PhoneInput): Promise<void> {
    const phone = this.requireReady(live);
    if (event.type === 'tap' && (event.x >= phone.screen.w || event.y >= phone.screen.h)) {
      throw badRequest(`(${event.x}, ${event.y}) is outside the ${phone.screen.w}x${phone.screen.h} screen.`);
    }
    await phone.input(event);
  }

  /** Resolves an ADB unlock code to its ready session, or null (revoked, closed, expired, unknown). */
  sessionForAdbCode(code: string): LiveSession | null {
    const sid = this.adbCodes.get(sha256Hex(code));
    const live = sid ? this.live.get(sid) : undefined;
    if (!live || live.row.state !== 'ready' || !live.row.adb_enabled || !live.phone) return null;
    if (live.row.expires_at <= this.nowSec()) return null;
    return live;
  }

  revokeAdb(live: LiveSession): void {
    if (live.row.adb_code) this.adbCodes.delete(sha256Hex(live.row.adb_code));
    live.row.adb_enabled = 0;
    this.o.store.saveSession(live.row);
    this.emit('adb-revoked', live);
  }

  /** POST /me/profile/reset. */
  resetProfile(uid: string): string {
    const profile = this.o.store.profileOf(uid);
    if (!profile) throw new Error(`account ${uid} has no profile`);
    if (profile.holder || profile.state === 'saving') {
      throw apiError(
        ERROR_CODES.profileRunning,
        'The profile phone is held by a live session or is still being saved; end that session, then reset.',
        profile.holder ? { session: profile.holder } : {},
      );
    }
    this.o.store.transaction(() => {
      this.o.saves.reset(profile.id);
      this.o.store.saveProfile({ ...profile, state: 'empty', exact: 1, saved_at: this.nowSec() });
    });
    return profile.id;
  }

  /** Display label for history records of sessions that never got a phone. */
  get genericDevice(): string {
    return this.o.backend.name === 'virtual' ? 'Virtual Android phone' : 'Android emulator';
  }

  get startupSource(): DeviceBackend['startupSource'] {
    return this.o.backend.startupSource;
  }

  /** Every live session (for shutdown and diagnostics). */
  all(): IterableIterator<LiveSession> {
    return this.live.values();
  }
}
