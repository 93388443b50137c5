/**
 * The session runtime: admission, the boot queue, the lifecycle, deadlines, billing,
 * cleanup and profile phones. It is the only writer of sessions, profiles and balances.
 *
 * A live session is a typed state machine (Phase): queued -> booting -> ready -> closing ->
 * done, with `failed` (the boot failed: state error until the owner ends the session or its
 * deadline passes) and `orphaned` (after a restart, a session the store calls ready whose
 * phone died with the old process; it closes at once). What a phase needs lives in that
 * phase: the phone exists only while ready, the boot only while booting. transition() is the
 * one place that moves a session from phase to phase and persists the move.
 *
 * Admission is a pure decision (admission.ts) over facts read at that moment, then a
 * commit; both run synchronously, so concurrent creates with one idempotency key cannot
 * both pass the receipt check: the first commits its receipt, every later one replays it.
 * The deadline counts from admission.
 *
 * The warm pool (`pool` > 0) keeps temporary phones booted ahead of demand. A pooled phone
 * is its own typed thing (PooledPhone: warming, then warm), owned by no session and no
 * account. A new temporary session takes a warm one at admission (queued -> ready, startup
 * source `pool`), or adopts the boot of a warming one; a replacement boots when a boot slot
 * is free and no session waits for one. Each live session reserves one of `phones`, and the
 * pool only holds what is left, so the pool never makes a create get phones_busy: a session
 * that needs a boot of its own (a profile phone) evicts a pooled phone when there is no
 * room. Pooled phones are drained on close and simply gone after a crash.
 */
import { EventEmitter } from 'node:events';
import {
  ERROR_CODES,
  type CreateSessionBody,
  type EndReason,
  type ErrorCode,
} from '../../src/api/schemas.js';
import type { Clock } from '../clock.js';
import { seconds } from '../clock.js';
import type { DeviceBackend, DeviceLogger, DevicePhone, PhoneInput } from '../devices/types.js';
import { apiError, badRequest, notFound, notReady, profileHeld } from '../errors.js';
import { sha256Hex, type RandomSource } from '../secrets.js';
import type { SessionRow, StartupSource } from './rows.js';
import type { Store } from '../stores/sqlite/store.js';
import type { AccountService } from './accounts.js';
import { admittedSession, decideAdmission } from './admission.js';
import type { ProfileSaves } from './profile-saves.js';
import {
  FRAME_INTERVAL_MS,
  RELEASE_WAIT_MS,
  bootingEtaSeconds,
  canonicalJson,
  lostEndTime,
  newAdbCode,
  newSessionId,
  nextMinuteStart,
  nextTypicalBootMs,
  planDebits,
  queuedEtaSeconds,
  retryAfterSeconds,
  startupFailure,
  tapRefusal,
  type EtaSlot,
} from './rules.js';
import { WarmPool, type PhoneBoot } from './warm-pool.js';

export interface RuntimeOptions {
  store: Store;
  accounts: AccountService;
  backend: DeviceBackend;
  saves: ProfileSaves;
  clock: Clock;
  random: RandomSource;
  log: DeviceLogger;
  /** Shared phone capacity across accounts (phones_busy beyond it). */
  phones: number;
  /** Phones booting at once (sessions' and the pool's); the rest wait as `queued`. */
  bootSlots: number;
  /** Temporary phones kept booted ahead of demand, within `phones` (default 0: no pool). */
  pool?: number;
  /** Told about admissions, boots and ready phones (metrics); optional. */
  observer?: RuntimeObserver;
}

/** What the runtime tells an observer (the metrics) as it happens. */
export interface RuntimeObserver {
  /** A create the runtime answered: admitted, replayed, recorded, or refused with a code. */
  admission(outcome: Admission['outcome'] | { refused: ErrorCode }): void;
  /** A backend boot succeeded, for a session or for the pool, taking `ms`. */
  phoneBooted(boot: { source: 'cold' | 'snapshot'; purpose: 'session' | 'pool'; ms: number }): void;
  /** A session's phone became ready, `leaseToReadyMs` after its admission. */
  sessionReady(start: { source: StartupSource; leaseToReadyMs: number }): void;
}

/** A point-in-time count of what the runtime holds (metrics gauges read it when scraped). */
export interface RuntimeStats {
  sessions: Record<'queued' | 'booting' | 'ready' | 'error' | 'closing', number>;
  pool: { ready: number; booting: number; target: number };
  phones: number;
  bootSlots: number;
}

/** A frame and when it was captured. */
interface Frame {
  png: Buffer;
  atMs: number;
}

/** Where a live session is in its lifecycle, with what exists only there. */
export type Phase =
  | { readonly kind: 'queued' }
  | {
      readonly kind: 'booting';
      readonly startedMs: number;
      readonly abort: AbortController;
      /** Resolves to the phone, or null when the boot failed. */
      readonly boot: Promise<DevicePhone | null>;
    }
  | {
      readonly kind: 'ready';
      readonly phone: DevicePhone;
      cancelBilling: () => void;
      frame: Frame | null;
      capturing: Promise<Buffer> | null;
    }
  | { readonly kind: 'failed' }
  | { readonly kind: 'orphaned' }
  | {
      readonly kind: 'closing';
      /** The phone cleanup stops: the ready phone, or whatever an interrupted boot yields. */
      readonly phone: Promise<DevicePhone | null>;
      readonly cleanup: Promise<void>;
    }
  | { readonly kind: 'done' };

export type PhaseKind = Phase['kind'];

/** The moves the machine allows; anything else is a bug and throws. */
const NEXT: Record<PhaseKind, readonly PhaseKind[]> = {
  // queued -> ready: handed a warm pooled phone.
  queued: ['booting', 'ready', 'closing'],
  booting: ['ready', 'failed', 'closing'],
  ready: ['closing'],
  failed: ['closing'],
  orphaned: ['closing'],
  closing: ['done'],
  done: [],
};

/** The stored state of each phase (the API's session state). */
const ROW_STATE: Record<PhaseKind, SessionRow['state']> = {
  queued: 'provisioning',
  booting: 'provisioning',
  ready: 'ready',
  failed: 'error',
  orphaned: 'ready',
  closing: 'closing',
  done: 'closing',
};

/** The event each phase announces (the API's long-polls and the gateway listen to them). */
const EVENT: Record<PhaseKind, 'changed' | 'closing' | 'ended'> = {
  queued: 'changed',
  booting: 'changed',
  ready: 'changed',
  failed: 'changed',
  orphaned: 'changed',
  closing: 'closing',
  done: 'ended',
};

let setPhase: (live: LiveSession, phase: Phase) => void;

/** A live session: its stored row and its phase. Only the runtime changes the phase. */
export class LiveSession {
  #phase: Phase;
  /** Last API activity in ms (idle_s); persisted as `last`. */
  activityMs: number;
  /** Cancels the deadline timer (armed from admission until closing). */
  cancelDeadline: () => void = () => undefined;
  /** Where its phone came from, once it had one (unknown for a session recovered after a restart). */
  startupSource: StartupSource | null = null;

  static {
    setPhase = (live, phase) => {
      live.#phase = phase;
    };
  }

  constructor(
    readonly row: SessionRow,
    phase: Phase,
    /** When it was admitted, in ms (lease-to-ready time). */
    readonly admittedMs = row.created * 1000,
  ) {
    this.#phase = phase;
    this.activityMs = row.last * 1000;
  }

  get phase(): Phase {
    return this.#phase;
  }

  /** The phone, while the session is ready. */
  get phone(): DevicePhone | null {
    return this.#phase.kind === 'ready' ? this.#phase.phone : null;
  }

  /** Where a provisioning session waits (the API's `location`). */
  get location(): 'queued' | 'booting' | null {
    const kind = this.#phase.kind;
    return kind === 'queued' || kind === 'booting' ? kind : null;
  }
}

/**
 * What a create did: `admitted` (a new session), `replayed` (the session this idempotency
 * key created before), or `recorded` (admitted while the runtime is unavailable: it is
 * provisioned once the runtime is available again, and the caller should look it up).
 */
export interface Admission {
  outcome: 'admitted' | 'replayed' | 'recorded';
  live: LiveSession;
}

const HEARTBEAT_MS = 2000;
const CLEANUP_RETRY_MS = 5000;
const CLEANUP_ATTEMPTS = 5;

const NO_OBSERVER: RuntimeObserver = {
  admission: () => undefined,
  phoneBooted: () => undefined,
  sessionReady: () => undefined,
};

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
  /** Temporary phones booted ahead of demand (warm-pool.ts). */
  private readonly pool: WarmPool;
  private refillScheduled = false;
  private cancelRefillRetry: (() => void) | null = null;
  private readonly observer: RuntimeObserver;

  constructor(private readonly o: RuntimeOptions) {
    super();
    this.seq = o.store.maxSeq();
    this.typicalBootMs = o.backend.typicalBootMs;
    this.observer = o.observer ?? NO_OBSERVER;
    // startServer refuses a pool larger than --phones; the pool keeps that promise itself too.
    this.pool = new WarmPool({
      target: o.pool ?? 0,
      phones: o.phones,
      startBoot: (id) => this.startBoot(id, null, 'pool'),
      changed: () => this.pump(),
      clock: o.clock,
      random: o.random,
      log: o.log,
    });
  }

  private nowSec(): number {
    return seconds(this.o.clock.now());
  }

  // ---------------------------------------------------------------------------------
  // The one place a session changes phase

  /**
   * Moves a session to `next`, with the row changes that go with it, persisted in one
   * transaction (with `alsoCommit`, for writes that must commit with the move), then
   * announces it. The row in memory changes only once the store has it. The write joins the
   * store's group commit: the API answers nothing until it is committed.
   */
  private transition(
    live: LiveSession,
    next: Phase,
    change: Partial<SessionRow> = {},
    alsoCommit?: () => void,
  ): void {
    const from = live.phase.kind;
    if (!NEXT[from].includes(next.kind)) {
      throw new Error(`session ${live.row.id}: ${from} -> ${next.kind} is not a transition of the lifecycle`);
    }
    const row: SessionRow = { ...live.row, ...change, state: ROW_STATE[next.kind] };
    if (row.state !== live.row.state || Object.keys(change).length > 0 || alsoCommit) {
      this.o.store.grouped(() => {
        alsoCommit?.();
        // Only what this move changes: every other column is stored already.
        this.o.store.updateSession(row.id, { ...change, state: row.state });
      });
    }
    Object.assign(live.row, row);
    setPhase(live, next);
    this.emit(EVENT[next.kind], live);
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
      if (row.state === 'provisioning') {
        const live = this.track(row, { kind: 'queued' });
        if (row.expires_at <= now) void this.finish(live, 'expired', row.expires_at);
        else {
          this.armDeadline(live);
          this.enqueue(live);
        }
      } else if (row.state === 'ready') {
        const live = this.track(row, { kind: 'orphaned' });
        const at = lostEndTime({
          ready: row.ready,
          created: row.created,
          expiresAt: row.expires_at,
          lastAlive,
          lastDebit: this.o.store.lastDebitAt(row.id),
          now,
        });
        this.o.log.warn('phone lost in restart', { session: row.id });
        void this.finish(live, 'lost', at, { lostProfile: true });
      } else if (row.state === 'closing') {
        // Its save (if any) never committed: the commit and `done` share one transaction.
        // The phone died with the old process.
        // The cleanup starts on the next microtask, once the session is tracked.
        const phone = Promise.resolve(null);
        const live: LiveSession = this.track(row, {
          kind: 'closing',
          phone,
          cleanup: Promise.resolve().then(() => this.cleanup(live, phone, true)),
        });
      } else {
        const live = this.track(row, { kind: 'failed' });
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
          this.o.store.updateSession(live.row.id, { last });
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
    // Drained: pooled phones are stopped, booting ones aborted (and stopped if they come up).
    this.cancelRefillRetry?.();
    await this.pool.drain('the server is stopping');
    this.closed = true;
    this.cancelHeartbeat?.();
    this.o.store.setMeta('last_alive', String(this.nowSec()));
  }

  /** Makes the runtime unavailable: admissions are recorded (outcome `recorded`) and provisioned later. */
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

  /** Decides a create (admission.ts) and commits it; a refusal is raised as its error code. */
  admit(uid: string, body: CreateSessionBody, requestKey: string | null): Admission {
    const nowMs = this.o.clock.now();
    const now = seconds(nowMs);
    const bodyHash = sha256Hex(canonicalJson(body));
    const receipt = requestKey ? this.o.store.receipt(uid, requestKey) : undefined;
    const replayed = receipt ? this.live.get(receipt.sid) : undefined;
    const decision = decideAdmission({
      body,
      bodyHash,
      requestKey,
      nowMs,
      receipt,
      receiptSession: receipt
        ? {
            live: replayed !== undefined,
            state: replayed ? null : (this.o.store.session(receipt.sid)?.state ?? null),
          }
        : null,
      account: this.o.accounts.account(uid),
      activeSessions: this.perAccount.get(uid) ?? 0,
      profile: body.profile_id !== undefined ? this.o.store.profileOf(uid) : undefined,
      liveSessions: this.live.size,
      phones: this.o.phones,
      retryAfterSeconds: () => this.retryAfterSeconds(now),
    });
    switch (decision.kind) {
      case 'refuse': {
        const { code, message, details } = decision.refusal;
        this.observer.admission({ refused: code });
        throw apiError(code, message, details);
      }
      case 'replay': {
        if (!replayed || replayed.row.uid !== uid) throw new Error('receipt points at another account');
        this.observer.admission('replayed');
        return { outcome: 'replayed', live: replayed };
      }
      case 'admit': {
        const outcome = this.available ? 'admitted' : 'recorded';
        this.observer.admission(outcome);
        // A temporary session is handed a warm pooled phone right here (pump); it is ready
        // a microtask later, so the 202 still says provisioning (handOver).
        return { outcome, live: this.commitAdmission(uid, decision, bodyHash, requestKey, nowMs) };
      }
    }
  }

  /** Inserts an admitted session (and its receipt, and its hold on the profile) and queues it. */
  private commitAdmission(
    uid: string,
    decision: Extract<ReturnType<typeof decideAdmission>, { kind: 'admit' }>,
    bodyHash: string,
    requestKey: string | null,
    nowMs: number,
  ): LiveSession {
    const now = seconds(nowMs);
    const account = this.o.accounts.account(uid);
    const profile = decision.profile;
    const row = admittedSession({
      id: newSessionId(this.o.random),
      uid,
      seq: ++this.seq,
      account,
      decision,
      requestKey,
      nowMs,
    });
    // The admission (and its receipt) is written before the runtime is asked, in the group
    // commit of this turn: the 202 answer waits for that commit (app.ts), and so does any
    // replay of the same key that reads the receipt in the meantime.
    this.o.store.grouped(() => {
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
    const live = this.track(row, { kind: 'queued' }, nowMs);
    live.activityMs = nowMs;
    this.armDeadline(live);
    this.enqueue(live);
    this.emit('admitted', live);
    return live;
  }

  private retryAfterSeconds(now: number): number {
    let closing = 0;
    let soonestExpiresAt: number | null = null;
    for (const l of this.live.values()) {
      if (l.phase.kind === 'closing') closing++;
      soonestExpiresAt = Math.min(soonestExpiresAt ?? Infinity, l.row.expires_at);
    }
    return retryAfterSeconds({ closing, soonestExpiresAt }, now);
  }

  private track(row: SessionRow, phase: Phase, admittedMs?: number): LiveSession {
    const live = new LiveSession(row, phase, admittedMs);
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
    this.queue.push(live);
    this.pump();
  }

  /**
   * Gives out what is free, in order of precedence: pooled phones to waiting temporary
   * sessions, then boot slots to waiting sessions, then boot slots to pool refills. Also
   * keeps the pool within what live sessions leave of `phones`.
   */
  private pump(): void {
    if (!this.available || this.closed) return;
    // A waiting temporary session takes a warm phone at once, else the boot of a warming
    // one: that boot started earlier, so it never ends later than a boot of its own.
    for (const live of [...this.queue]) {
      if (live.row.profile_id !== null || live.phase.kind !== 'queued') continue;
      const entry = this.pool.takeNext();
      if (!entry) break;
      this.queue.splice(this.queue.indexOf(live), 1);
      if (entry.kind === 'warm') this.handOver(live, entry.phone);
      else this.bootSession(live, entry);
    }
    // Each live session reserves a phone; the pool gets only what is left. A session that
    // needs a boot of its own (a profile phone) thus evicts a pooled phone, never waits for one.
    this.pool.shrinkTo(this.o.phones - this.live.size);
    while (this.booting < this.o.bootSlots && this.queue.length > 0) {
      const live = this.queue.shift()!;
      if (live.phase.kind === 'queued') this.startSessionBoot(live);
    }
    this.scheduleRefill();
  }

  /**
   * Refills on the next turn of the event loop: a backend's boot does synchronous work
   * before its first await (an emulator is spawned there), which must not delay the answer
   * that hands out a pooled phone.
   */
  private scheduleRefill(): void {
    if (this.refillScheduled || !this.pool.short) return;
    this.refillScheduled = true;
    setImmediate(() => {
      this.refillScheduled = false;
      if (this.available && !this.closed) this.refill();
    });
  }

  /** Starts pooled boots while a slot is free, no session waits for one, and there is room. */
  private refill(): void {
    const retryInMs = this.pool.refill(
      this.live.size,
      () => this.queue.length === 0 && this.booting < this.o.bootSlots,
    );
    // A pooled boot failed recently: retry later rather than boot-fail in a loop.
    if (retryInMs !== null)
      this.cancelRefillRetry ??= this.o.clock.setTimeout(() => {
        this.cancelRefillRetry = null;
        this.pump();
      }, retryInMs);
  }

  /**
   * Starts a backend boot in a boot slot. The slot frees when the boot settles, whoever
   * owns it by then (a session, the pool, or nobody after an eviction), and what it took
   * feeds eta_seconds.
   */
  private startBoot(name: string, restoreFrom: string | null, purpose: 'session' | 'pool'): PhoneBoot {
    this.booting++;
    const abort = new AbortController();
    const startedMs = this.o.clock.now();
    const phone = this.o.backend.boot({
      sessionId: name,
      restoreFrom,
      signal: abort.signal,
      log: this.o.log,
    });
    void phone
      .then(
        (p) => {
          const ms = this.o.clock.now() - startedMs;
          this.typicalBootMs = nextTypicalBootMs(this.typicalBootMs, ms);
          const source = p.startupSource ?? this.o.backend.startupSource;
          if (source !== 'pool') this.observer.phoneBooted({ source, purpose, ms });
        },
        () => undefined,
      )
      .finally(() => {
        this.booting--;
        this.pump();
      });
    return { startedMs, abort, phone };
  }

  private startSessionBoot(live: LiveSession): void {
    const row = live.row;
    const restoreFrom = row.profile_id ? (this.o.saves.current(row.profile_id) ?? null) : null;
    this.o.log.debug('booting phone', { session: row.id, profile: row.profile_id !== null });
    // A profile phone without a save boots fresh; null would mean "temporary".
    this.bootSession(live, this.startBoot(row.id, row.profile_id ? (restoreFrom ?? '') : null, 'session'));
  }

  /** The session waits for this boot (its own, or a warming pooled phone's it adopted). */
  private bootSession(live: LiveSession, boot: PhoneBoot): void {
    const phase: Phase = {
      kind: 'booting',
      startedMs: boot.startedMs,
      abort: boot.abort,
      boot: boot.phone.catch(() => null),
    };
    this.transition(live, phase);
    void boot.phone.then(
      (phone) => this.bootFinished(live, phase, phone),
      (err: unknown) => this.bootFailed(live, err),
    );
  }

  /**
   * Gives a waiting session a warm pooled phone. It is ready a microtask later, not at once:
   * a create's 202 is built in this turn, and the contract returns a newly admitted session
   * in state provisioning (here `location: booting`, `eta_seconds: 0`). A poll right after
   * the 202 finds it ready.
   */
  private handOver(live: LiveSession, phone: DevicePhone): void {
    const phase: Phase = {
      kind: 'booting',
      // As if a boot were just ending: eta_seconds 0.
      startedMs: this.o.clock.now() - this.typicalBootMs,
      abort: new AbortController(),
      boot: Promise.resolve(phone),
    };
    this.transition(live, phase);
    queueMicrotask(() => {
      // Closed meanwhile: the closing phase stops the phone it gets from `boot`.
      if (live.phase === phase) this.becomeReady(live, phone, 'pool', 0);
    });
  }

  private bootFinished(
    live: LiveSession,
    booting: Extract<Phase, { kind: 'booting' }>,
    phone: DevicePhone,
  ): void {
    if (live.phase !== booting) return; // closed while booting; cleanup stops the phone
    const bootMs = this.o.clock.now() - booting.startedMs;
    this.becomeReady(live, phone, phone.startupSource ?? this.o.backend.startupSource, bootMs);
  }

  /** The session has its phone: from its boot (which took `bootMs`), or handed from the pool. */
  private becomeReady(live: LiveSession, phone: DevicePhone, source: StartupSource, bootMs: number): void {
    const row = live.row;
    const adbCode = newAdbCode(this.o.random);
    const ready: Phase = {
      kind: 'ready',
      phone,
      cancelBilling: () => undefined,
      frame: null,
      capturing: null,
    };
    live.startupSource = source;
    this.transition(live, ready, {
      ready: this.nowSec(),
      device: phone.label,
      screen_w: phone.screen.w,
      screen_h: phone.screen.h,
      adb_code: adbCode,
    });
    this.adbCodes.set(sha256Hex(adbCode), row.id);
    phone.onLost((reason) => {
      this.o.log.warn('phone lost', { session: row.id, reason });
      void this.finish(live, 'lost', this.nowSec(), { lostProfile: true });
    });
    this.armBilling(live, ready);
    const leaseToReadyMs = this.o.clock.now() - live.admittedMs;
    this.observer.sessionReady({ source, leaseToReadyMs });
    this.o.log.info('phone ready', {
      session: row.id,
      source,
      boot_ms: bootMs,
      lease_to_ready_ms: leaseToReadyMs,
    });
  }

  private bootFailed(live: LiveSession, err: unknown): void {
    if (live.phase.kind !== 'booting') return; // aborted because the session ended
    const failure = startupFailure(err);
    this.transition(
      live,
      { kind: 'failed' },
      { failure_code: failure.code, failure_message: failure.message },
    );
    this.o.log.error('phone failed to start', { session: live.row.id, error: String(err) });
  }

  /** Seconds until the phone is likely ready (provisioning only). */
  eta(live: LiveSession): number | undefined {
    const typical = this.typicalBootMs;
    const now = this.o.clock.now();
    const phase = live.phase;
    const remaining = (startedMs: number) => Math.max(0, typical - (now - startedMs));
    if (phase.kind === 'booting') return bootingEtaSeconds(typical, now - phase.startedMs);
    if (phase.kind !== 'queued') return undefined;
    // Temporary sessions waiting (only while the runtime is unavailable, otherwise they take
    // one at once) get pooled phones in order: warm ones first, then the warming ones. The
    // boot slots are held by sessions' boots and the pool's (eta.ts plays the queue forward).
    const waiting = this.queue.filter((l) => l.phase.kind === 'queued');
    const index = waiting.indexOf(live);
    const slots: EtaSlot[] = [];
    for (const other of this.live.values()) {
      if (other.phase.kind === 'booting')
        slots.push({ freeInMs: remaining(other.phase.startedMs), typicalMs: typical });
    }
    for (const entry of this.pool.entries())
      if (entry.kind === 'warming') slots.push({ freeInMs: remaining(entry.startedMs), typicalMs: typical });
    while (slots.length < this.o.bootSlots) slots.push({ freeInMs: 0, typicalMs: typical });
    return queuedEtaSeconds({
      temporary: live.row.profile_id === null,
      ahead: Math.max(0, index),
      temporaryAhead: waiting.filter((l, i) => i < index && l.row.profile_id === null).length,
      pooledReadyInMs: this.pool.entries().map((e) => (e.kind === 'warm' ? 0 : remaining(e.startedMs))),
      slots,
    });
  }

  /** What the runtime holds now, for the metrics. */
  stats(): RuntimeStats {
    const sessions: RuntimeStats['sessions'] = { queued: 0, booting: 0, ready: 0, error: 0, closing: 0 };
    for (const live of this.live.values()) {
      const kind = live.phase.kind;
      if (kind === 'queued' || kind === 'booting' || kind === 'ready') sessions[kind]++;
      else if (kind === 'failed') sessions.error++;
      else if (kind === 'orphaned' || kind === 'closing') sessions.closing++;
    }
    const { warm, warming, target } = this.pool.counts();
    return {
      sessions,
      pool: { ready: warm, booting: warming, target },
      phones: this.o.phones,
      bootSlots: this.o.bootSlots,
    };
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
  private armBilling(live: LiveSession, ready: Extract<Phase, { kind: 'ready' }>): void {
    const nextStartSec = nextMinuteStart(live.row);
    if (nextStartSec === null) return;
    ready.cancelBilling = this.o.clock.setTimeout(
      () => {
        if (live.phase !== ready) return;
        const exhaustedAt = this.bill(live, this.nowSec());
        if (exhaustedAt !== null) return this.finish(live, 'credit_exhausted', exhaustedAt);
        this.armBilling(live, ready);
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
    const plan = planDebits(row, this.o.accounts.account(row.uid).balance_cents, upto);
    if (plan.debits.length > 0) {
      this.o.store.transaction(() => {
        for (const d of plan.debits) this.o.store.insertDebit(row.id, d.minute, row.uid, d.cents, d.at);
        this.o.accounts.setBalance(row.uid, plan.balance);
        row.minutes_debited += plan.debits.length;
        row.cost_cents += plan.debits.reduce((n, d) => n + d.cents, 0);
        this.o.store.updateSession(row.id, {
          minutes_debited: row.minutes_debited,
          cost_cents: row.cost_cents,
        });
      });
    }
    return plan.exhaustedAt;
  }

  // ---------------------------------------------------------------------------------
  // Ending and cleanup

  /**
   * Ends a session: records the closure (billing stops there), then cleans up. Idempotent:
   * a later call returns the cleanup already under way.
   */
  finish(
    live: LiveSession,
    reason: EndReason,
    at: number,
    opts: { lostProfile?: boolean } = {},
  ): Promise<void> {
    const phase = live.phase;
    if (phase.kind === 'closing') return phase.cleanup;
    if (phase.kind === 'done') return Promise.resolve();
    const row = live.row;
    live.cancelDeadline();
    let endReason: EndReason = phase.kind === 'failed' ? 'failed' : reason;
    let endAt = at;
    if (phase.kind === 'ready' || phase.kind === 'orphaned') {
      if (phase.kind === 'ready') phase.cancelBilling();
      const exhaustedAt = this.bill(live, at);
      if (exhaustedAt !== null) {
        endReason = 'credit_exhausted';
        endAt = exhaustedAt;
      }
    }
    const queued = this.queue.indexOf(live);
    if (queued >= 0) this.queue.splice(queued, 1);
    if (phase.kind === 'booting') phase.abort.abort(new Error('session ended'));
    const phone =
      phase.kind === 'ready'
        ? Promise.resolve(phase.phone)
        : phase.kind === 'booting'
          ? phase.boot
          : Promise.resolve(null);
    // Deferred by a microtask so that the closing phase (with its cleanup) is in place before
    // any of the cleanup runs: a re-entrant finish() (from an event handler) joins it.
    const cleanup = Promise.resolve().then(() => this.cleanup(live, phone, opts.lostProfile ?? false));
    if (row.adb_code) this.adbCodes.delete(sha256Hex(row.adb_code));
    this.transition(
      live,
      { kind: 'closing', phone, cleanup },
      {
        close_requested: endAt,
        ended: endAt,
        end_reason: endReason,
        cleanup_status: 'pending',
        last: seconds(live.activityMs),
      },
    );
    return cleanup;
  }

  private async cleanup(
    live: LiveSession,
    phonePromise: Promise<DevicePhone | null>,
    lostProfile = false,
    attempt = 1,
  ): Promise<void> {
    const row = live.row;
    const phone = await phonePromise;
    const profile = row.profile_id ? this.o.store.profileOf(row.uid) : undefined;
    let staged: string | null = null;
    try {
      if (phone) {
        if (profile && !lostProfile) {
          staged = this.o.saves.stage(profile.id, row.id);
          this.o.store.saveProfile({ ...profile, state: 'saving' });
        }
        await phone.shutdown({ saveTo: staged });
      }
    } catch (err) {
      if (staged) this.o.saves.discard(staged);
      staged = null;
      if (profile) this.o.store.saveProfile({ ...profile });
      this.o.log.error('cleanup failed', { session: row.id, attempt, error: String(err) });
      if (attempt < CLEANUP_ATTEMPTS && !this.closed) {
        row.cleanup_status = 'allocation_uncertain';
        this.o.store.updateSession(row.id, { cleanup_status: row.cleanup_status });
        await new Promise<void>((resolve) => this.o.clock.setTimeout(resolve, CLEANUP_RETRY_MS));
        return this.cleanup(live, phonePromise, lostProfile, attempt + 1);
      }
      // Out of attempts: the profile keeps its previous save (marked inexact), and the phone
      // is stopped without saving so nothing stays allocated. If even that fails, the phone
      // is unreachable; count it as gone so the slot is not held forever.
      lostProfile = true;
      await phone
        ?.shutdown({ saveTo: null })
        .catch((e: unknown) => this.o.log.error('phone did not stop', { session: row.id, error: String(e) }));
    }
    const now = this.nowSec();
    this.transition(live, { kind: 'done' }, { cleanup_status: 'complete', done: 1 }, () => {
      if (!profile) return;
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
    });
    this.untrack(live);
    this.o.log.info('session ended', { session: row.id, reason: row.end_reason });
    // Its phone is gone: the pool may refill into the room it leaves.
    this.pump();
  }

  /** Ends a session for its owner; `released` when cleanup is confirmed quickly, else it is still pending. */
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

  /** A live session of this account (not_found otherwise, exactly as for an unknown id). */
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
    const phase = live.phase;
    if (phase.kind !== 'ready') throw notReady(live.row.state, live.row.id);
    return phase.phone;
  }

  /** The current frame, captured at most once per FRAME_INTERVAL_MS; concurrent callers share one capture. */
  async frame(live: LiveSession): Promise<Buffer> {
    const phase = live.phase;
    if (phase.kind !== 'ready') throw notReady(live.row.state, live.row.id);
    const now = this.o.clock.now();
    if (phase.frame && now - phase.frame.atMs < FRAME_INTERVAL_MS) return phase.frame.png;
    if (phase.capturing) return phase.capturing;
    phase.capturing = phase.phone
      .capture()
      .then((png) => {
        phase.frame = { png, atMs: this.o.clock.now() };
        return png;
      })
      .catch((err: unknown) => {
        this.o.log.warn('capture failed', { session: live.row.id, error: String(err) });
        if (phase.frame) return phase.frame.png;
        throw apiError(ERROR_CODES.noFrame, 'No frame is available yet; retry in a few seconds.');
      })
      .finally(() => (phase.capturing = null));
    return phase.capturing;
  }

  async input(live: LiveSession, event: PhoneInput): Promise<void> {
    const phone = this.requireReady(live);
    const refusal = event.type === 'tap' ? tapRefusal(event.x, event.y, phone.screen) : null;
    if (refusal) throw badRequest(refusal);
    await phone.input(event);
  }

  /** Resolves an ADB unlock code to its ready session, or null (revoked, closed, expired, unknown). */
  sessionForAdbCode(code: string): LiveSession | null {
    const sid = this.adbCodes.get(sha256Hex(code));
    const live = sid ? this.live.get(sid) : undefined;
    if (!live || live.phase.kind !== 'ready' || !live.row.adb_enabled) return null;
    if (live.row.expires_at <= this.nowSec()) return null;
    return live;
  }

  revokeAdb(live: LiveSession): void {
    if (live.row.adb_code) this.adbCodes.delete(sha256Hex(live.row.adb_code));
    live.row.adb_enabled = 0;
    this.o.store.updateSession(live.row.id, { adb_enabled: 0 });
    this.emit('adb-revoked', live);
  }

  /** POST /me/profile/reset. */
  resetProfile(uid: string): string {
    const profile = this.o.store.profileOf(uid);
    if (!profile) throw new Error(`account ${uid} has no profile`);
    if (profile.holder || profile.state === 'saving') {
      throw profileHeld(profile.holder, 'end that session, then reset');
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
