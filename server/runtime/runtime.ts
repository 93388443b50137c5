/**
 * The runtime: the life of every phone this process runs, written once for the single
 * server and for the device hosts of a deployment. They differ only in how a session reaches
 * the runtime, already admitted: handed over at admission (LocalDirectory), or claimed from
 * the shared queue (HostLoop). From there the runtime gives it a phone (a boot slot, or a
 * pooled phone), makes it ready with an ADB code, bills its minutes, serves its frames and
 * input, and cleans it up however it ends, saving a profile phone.
 *
 * A live session is a typed state machine (Phase): queued -> booting -> ready -> closing ->
 * done, with `failed` (the boot failed: state error until the session is ended or its
 * deadline passes) and `orphaned` (after a restart, a session the store calls ready whose
 * phone died with the old process; it closes at once). What a phase needs lives in that
 * phase: the phone exists only while ready, the boot only while booting. transition() is the
 * one place that moves a session from phase to phase and announces it.
 *
 * What each move means for the stored session (ready, failed, the end and its bill, the
 * cleanup) the SessionLedger records (ports.ts): the runtime keeps the phase, the ledger
 * the row. The single server's ledger records in the group commit of the turn; a device
 * host's in the shared store, which also says when a session ended elsewhere. A record that
 * fails (the shared store restarting) is tried again until it is made.
 *
 * The warm pool (`pool` > 0) keeps temporary phones booted ahead of demand (warm-pool.ts). A
 * waiting temporary session takes a warm one (queued -> ready, startup source `pool`), or
 * adopts the boot of a warming one. Each live session reserves one of `phones`, and the pool
 * only holds what is left, so the pool never makes a session wait: a session that needs a
 * boot of its own (a profile phone) evicts a pooled phone when there is no room. Pooled
 * phones are drained on close and simply gone after a crash.
 */
import { EventEmitter } from 'node:events';
import { ERROR_CODES, type EndReason } from '../../src/api/schemas.js';
import type { Clock } from '../clock.js';
import { nowSec, seconds } from '../clock.js';
import type { AppSummary, DeviceBackend, DeviceLogger, DevicePhone, PhoneInput } from '../devices/types.js';
import { apiError, badRequest, notReady } from '../errors.js';
import { sha256Hex, type RandomSource } from '../secrets.js';
import type { PhoneAccess } from './directory.js';
import type { SessionLedger } from './ports.js';
import type { ProfileSaves } from './profile-saves.js';
import type { SessionRow, StartupSource } from './rows.js';
import {
  FRAME_INTERVAL_MS,
  bootingEtaSeconds,
  newAdbCode,
  nextMinuteStart,
  nextTypicalBootMs,
  queuedEtaSeconds,
  startupFailure,
  tapRefusal,
  type EtaSlot,
} from './rules.js';
import { WarmPool, type PhoneBoot } from './warm-pool.js';
import { messageOf } from '../../src/util/message.js';

export interface RuntimeOptions {
  ledger: SessionLedger;
  backend: DeviceBackend;
  saves: ProfileSaves;
  clock: Clock;
  random: RandomSource;
  log: DeviceLogger;
  /** Phones this runtime runs at most, sessions and pool together. */
  phones: number;
  /** Phones booting at once (sessions' and the pool's); the rest wait as `queued`. */
  bootSlots: number;
  /** Temporary phones kept booted ahead of demand, within `phones` (default 0: no pool). */
  pool?: number;
  /**
   * When the pool refills: whenever a boot slot is free and no session waits for one (the
   * single server, default), or only when asked (refillPool: a device host, after it claimed
   * what the shared queue had for it).
   */
  refill?: 'when-idle' | 'on-request';
  /** Told about boots and ready phones (metrics); optional. */
  observer?: RuntimeObserver;
  /** Called when something it held is let go (a boot settled, a phone stopped, a session cleaned up): there may be room. */
  freed?: () => void;
  /** Added to log lines (a device host's id, known once it registered). */
  logContext?: () => Record<string, unknown>;
}

/** What the runtime tells an observer (the metrics) as it happens. */
export interface RuntimeObserver {
  /** A backend boot succeeded, for a session or for the pool, taking `ms`. */
  phoneBooted(boot: { source: 'cold' | 'snapshot'; purpose: 'session' | 'pool'; ms: number }): void;
  /** A session's phone became ready, `leaseToReadyMs` after its admission. */
  sessionReady(start: { source: StartupSource; leaseToReadyMs: number }): void;
}

/** A point-in-time count of what the runtime holds (metrics gauges read it when scraped). */
export interface RuntimeStats {
  sessions: Record<'queued' | 'booting' | 'ready' | 'error' | 'closing', number>;
  /** Pooled phones warm and warming, and the pool's target. */
  pool: { warm: number; warming: number; target: number };
  phones: number;
  bootSlots: number;
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
      /** The last frame, and when it was captured. */
      frame: { png: Buffer; atMs: number } | null;
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

/** The API's session state in each phase. */
const STATE: Record<PhaseKind, SessionRow['state']> = {
  queued: 'provisioning',
  booting: 'provisioning',
  ready: 'ready',
  failed: 'error',
  orphaned: 'closing',
  closing: 'closing',
  done: 'closing',
};

/** The event a move to `kind` announces (long polls, the ADB gateway and viewers listen to them). */
const eventOf = (kind: PhaseKind) => (kind === 'closing' ? 'closing' : kind === 'done' ? 'ended' : 'changed');

let setPhase: (live: LiveSession, phase: Phase) => void;

/** A session this runtime holds until its cleanup is done: its row (as recorded) and its phase. */
export class LiveSession {
  #phase: Phase;
  /** Last API activity in ms (idle_s). */
  activityMs: number;
  /** Cancels the deadline timer (armed from admission until closing). */
  cancelDeadline: () => void = () => undefined;
  /** Where its phone came from, once it had one. */
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

/** How a session ends: at `at` for `reason` (recorded by the runtime), or ended elsewhere and recorded already. */
export type Ending = { reason: EndReason; at: number } | 'recorded';

const CLEANUP_RETRY_MS = 5000;
const CLEANUP_ATTEMPTS = 5;
/** A record the ledger could not make is tried again after this long, doubling up to the maximum. */
const RECORD_RETRY_MS = 250;
const RECORD_RETRY_MAX_MS = 5000;

export class Runtime extends EventEmitter {
  private readonly live = new Map<string, LiveSession>();
  private readonly perAccount = new Map<string, number>();
  private readonly queue: LiveSession[] = [];
  private booting = 0;
  private available = true;
  /** Closing: records not made yet are tried once more, then given up. */
  private stopping = false;
  private closed = false;
  #typicalBootMs: number;
  /** sha256(code) -> session id, for the ADB gateway. */
  private readonly adbCodes = new Map<string, string>();
  /** Temporary phones booted ahead of demand (warm-pool.ts). */
  private readonly pool: WarmPool;
  private refillScheduled = false;
  private cancelRefillRetry: (() => void) | null = null;

  constructor(private readonly o: RuntimeOptions) {
    super();
    // Every waiting request, ADB connection and viewer stream may listen.
    this.setMaxListeners(0);
    this.#typicalBootMs = o.backend.typicalBootMs;
    this.pool = new WarmPool({
      target: o.pool ?? 0,
      phones: o.phones,
      startBoot: (id) => this.startBoot(id, null, 'pool'),
      changed: () => {
        this.pump();
        this.o.freed?.();
      },
      clock: o.clock,
      random: o.random,
      log: o.log,
      ...(o.logContext ? { logContext: o.logContext } : {}),
    });
  }

  private context(): Record<string, unknown> {
    return this.o.logContext?.() ?? {};
  }

  // ---------------------------------------------------------------------------------
  // The one place a session changes phase

  private transition(live: LiveSession, next: Phase): void {
    const from = live.phase.kind;
    if (!NEXT[from].includes(next.kind)) {
      throw new Error(`session ${live.row.id}: ${from} -> ${next.kind} is not a transition of the lifecycle`);
    }
    setPhase(live, next);
    this.emit(eventOf(next.kind), live);
  }

  /**
   * Makes a ledger record (`first`: the attempt already made), trying again with backoff
   * until it is made (a shared store that restarts). While the runtime stops, a record that
   * fails once more is given up (`fallback`).
   */
  private async record<T>(
    what: string,
    live: LiveSession,
    make: () => Promise<T>,
    fallback: T,
    first?: Promise<T>,
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await (attempt === 0 && first ? first : make());
      } catch (err) {
        const giveUp = this.stopping && attempt > 0;
        this.o.log.warn(
          giveUp ? `could not record ${what}; giving up` : `could not record ${what} yet; retrying`,
          {
            session: live.row.id,
            error: messageOf(err),
            ...this.context(),
          },
        );
        if (giveUp) return fallback;
        await new Promise<void>((resolve) =>
          setTimeout(resolve, Math.min(RECORD_RETRY_MAX_MS, RECORD_RETRY_MS * 2 ** attempt)),
        );
      }
    }
  }

  /** A record that only informs (what cleanup is doing): not waited for, and a failure is only logged. */
  private note(what: string, live: LiveSession, recorded: Promise<void>): void {
    recorded.catch((err: unknown) =>
      this.o.log.warn(`could not record ${what}`, {
        session: live.row.id,
        error: String(err),
        ...this.context(),
      }),
    );
  }

  // ---------------------------------------------------------------------------------
  // How sessions reach the runtime

  /** Runs an admitted session: it waits (queued) for a pooled phone or a boot slot, and for its deadline. */
  run(row: SessionRow, admittedMs = row.created * 1000): LiveSession {
    const live = this.track(row, { kind: 'queued' }, admittedMs);
    live.activityMs = admittedMs;
    this.armDeadline(live);
    this.queue.push(live);
    this.pump();
    return live;
  }

  /**
   * Takes back a session the store holds after a restart of the single server: recorded
   * requests are provisioned, a session that was ready lost its phone with the old process
   * (it ends `lost` at `lostAt`), a failed one waits to be ended, an interrupted cleanup
   * completes.
   */
  recover(row: SessionRow, lostAt: number): void {
    if (row.state === 'provisioning') {
      const live = this.track(row, { kind: 'queued' });
      if (row.expires_at <= nowSec(this.o.clock))
        void this.finish(live, { reason: 'expired', at: row.expires_at });
      else {
        this.armDeadline(live);
        this.queue.push(live);
      }
    } else if (row.state === 'ready') {
      const live = this.track(row, { kind: 'orphaned' });
      this.o.log.warn('phone lost in restart', { session: row.id });
      void this.finish(live, { reason: 'lost', at: lostAt }, { lostProfile: true });
    } else if (row.state === 'closing') {
      // Its save (if any) never committed: the commit and `done` share one transaction.
      // The phone died with the old process. The cleanup starts once the session is tracked.
      const phone = Promise.resolve(null);
      const live: LiveSession = this.track(row, {
        kind: 'closing',
        phone,
        cleanup: Promise.resolve().then(() => this.cleanup(live, phone, true)),
      });
    } else this.armDeadline(this.track(row, { kind: 'failed' }));
  }

  /** Gives out what is free to the sessions taken back by recover(). */
  start(): void {
    this.pump();
  }

  private track(row: SessionRow, phase: Phase, admittedMs?: number): LiveSession {
    const live = new LiveSession(row, phase, admittedMs);
    // A row that was ready already (taken back by recover) had its phone from the backend.
    if (row.ready !== null) live.startupSource = this.o.backend.startupSource;
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
  // Availability and shutdown

  /** Makes the runtime unavailable: sessions it is given wait queued until resume(). */
  pause(): void {
    this.available = false;
  }

  /** Makes the runtime available again; waiting sessions get phones in order. */
  resume(): void {
    if (this.closed) return;
    this.available = true;
    this.pump();
  }

  /** Whether sessions get phones now (see pause). */
  get isAvailable(): boolean {
    return this.available;
  }

  /**
   * Stops: every live session ends `lost` (the runtime no longer has its phone) and is
   * cleaned up, profile phones saved unless `saveProfiles` is false; pooled phones are
   * stopped, booting ones aborted (and stopped if they come up).
   */
  async close(opts: { saveProfiles?: boolean } = {}): Promise<void> {
    if (this.closed || this.stopping) return;
    this.available = false;
    this.stopping = true;
    const now = nowSec(this.o.clock);
    const lostProfile = opts.saveProfiles === false;
    await Promise.all(
      [...this.live.values()].map((l) => this.finish(l, { reason: 'lost', at: now }, { lostProfile })),
    );
    this.cancelRefillRetry?.();
    await this.pool.drain('the runtime is stopping');
    this.closed = true;
  }

  /**
   * Lets go of every session without recording anything (a device host the deployment
   * declared dead: whoever declared it ended them): their phones are stopped, unsaved.
   */
  async abandon(): Promise<void> {
    await Promise.all([...this.live.values()].map((l) => this.finish(l, 'recorded', { lostProfile: true })));
  }

  // ---------------------------------------------------------------------------------
  // Boot queue

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
    if (this.o.refill !== 'on-request') this.scheduleRefill();
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
      if (this.available && !this.closed) this.refillPool();
    });
  }

  /** Starts pooled boots while a slot is free, no session waits for one, and there is room. */
  refillPool(): void {
    if (!this.available || this.closed) return;
    const retryInMs = this.pool.refill(
      this.live.size,
      () => this.queue.length === 0 && this.booting < this.o.bootSlots,
    );
    // A pooled boot failed recently: retry later rather than boot-fail in a loop (a device
    // host comes back on its own, at its next claim).
    if (retryInMs !== null && this.o.refill !== 'on-request')
      this.cancelRefillRetry ??= this.o.clock.setTimeout(() => {
        this.cancelRefillRetry = null;
        this.pump();
      }, retryInMs);
  }

  /** What a device host may claim now: phones it has room for, pooled phones to hand out, free boot slots. */
  claimable(): { room: number; pooled: number; freeSlots: number } {
    return {
      room: this.o.phones - this.live.size,
      pooled: this.pool.size,
      freeSlots: this.o.bootSlots - this.booting,
    };
  }

  /**
   * Starts a backend boot in a boot slot. The slot frees when the boot settles, whoever
   * owns it by then (a session, the pool, or nobody after an eviction), and what it took
   * feeds eta_seconds.
   */
  private startBoot(
    name: string,
    restoreFrom: Promise<string | null> | null,
    purpose: 'session' | 'pool',
  ): PhoneBoot {
    this.booting++;
    const abort = new AbortController();
    const startedMs = this.o.clock.now();
    const boot = (from: string | null) =>
      this.o.backend.boot({ sessionId: name, restoreFrom: from, signal: abort.signal, log: this.o.log });
    const phone = restoreFrom === null ? boot(null) : restoreFrom.then(boot);
    void phone
      .then(
        (p) => {
          const ms = this.o.clock.now() - startedMs;
          this.#typicalBootMs = nextTypicalBootMs(this.#typicalBootMs, ms);
          const source = p.startupSource ?? this.o.backend.startupSource;
          if (source !== 'pool') this.o.observer?.phoneBooted({ source, purpose, ms });
        },
        () => undefined,
      )
      .finally(() => {
        this.booting--;
        this.pump();
        this.o.freed?.();
      });
    return { startedMs, abort, phone };
  }

  private startSessionBoot(live: LiveSession): void {
    const { id, profile_id: profileId } = live.row;
    this.o.log.debug('booting phone', { session: id, profile: profileId !== null, ...this.context() });
    // A profile phone restores its save where this runtime holds the current one; else it
    // boots fresh ('': null would mean "temporary").
    const restoreFrom =
      profileId === null
        ? null
        : this.o.ledger
            .savedHere(profileId)
            .then((here) => (here ? (this.o.saves.current(profileId) ?? '') : ''));
    this.bootSession(live, this.startBoot(id, restoreFrom, 'session'));
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
      (phone) => {
        // Closed while booting: cleanup stops the phone.
        if (live.phase === phase)
          this.becomeReady(
            live,
            phone,
            phone.startupSource ?? this.o.backend.startupSource,
            this.o.clock.now() - phase.startedMs,
          );
      },
      (err: unknown) => this.bootFailed(live, phase, err),
    );
  }

  /**
   * Gives a waiting session a warm pooled phone. It is ready on the next turn of the event
   * loop, not at once: the answer to its create is rendered in this turn, and the contract
   * returns a newly admitted session in state provisioning (here `location: booting`,
   * `eta_seconds: 0`). A poll right after that answer finds it ready.
   */
  private handOver(live: LiveSession, phone: DevicePhone): void {
    const phase: Phase = {
      kind: 'booting',
      // As if a boot were just ending: eta_seconds 0.
      startedMs: this.o.clock.now() - this.#typicalBootMs,
      abort: new AbortController(),
      boot: Promise.resolve(phone),
    };
    this.transition(live, phase);
    setImmediate(() => {
      // Closed meanwhile: the closing phase stops the phone it gets from `boot`.
      if (live.phase === phase) this.becomeReady(live, phone, 'pool', 0);
    });
  }

  /** The session has its phone: from its boot (which took `bootMs`), or handed from the pool. */
  private becomeReady(live: LiveSession, phone: DevicePhone, source: StartupSource, bootMs: number): void {
    const row = live.row;
    const adbCode = newAdbCode(this.o.random);
    const change = {
      ready: nowSec(this.o.clock),
      device: phone.label,
      screen_w: phone.screen.w,
      screen_h: phone.screen.h,
      adb_code: adbCode,
    };
    const recordReady = () => this.o.ledger.ready(row, change, source);
    const recorded = recordReady();
    const ready: Phase = {
      kind: 'ready',
      phone,
      cancelBilling: () => undefined,
      frame: null,
      capturing: null,
    };
    live.startupSource = source;
    this.transition(live, ready);
    this.adbCodes.set(sha256Hex(adbCode), row.id);
    phone.onLost((reason) => {
      this.o.log.warn('phone lost', { session: row.id, reason, ...this.context() });
      void this.finish(live, { reason: 'lost', at: nowSec(this.o.clock) }, { lostProfile: true });
    });
    const leaseToReadyMs = this.o.clock.now() - live.admittedMs;
    this.o.observer?.sessionReady({ source, leaseToReadyMs });
    this.o.log.info('phone ready', {
      session: row.id,
      source,
      boot_ms: bootMs,
      lease_to_ready_ms: leaseToReadyMs,
      ...this.context(),
    });
    void this.record('a ready phone', live, recordReady, true, recorded).then((mine) => {
      if (live.phase !== ready) return;
      // It ended elsewhere while it booted: the phone is nobody's to use.
      if (!mine) void this.finish(live, 'recorded');
      else this.armBilling(live, ready);
    });
  }

  private bootFailed(live: LiveSession, booting: Phase, err: unknown): void {
    if (live.phase !== booting) return; // aborted because the session ended
    const failure = startupFailure(err);
    this.o.log.error('phone failed to start', {
      session: live.row.id,
      error: String(err),
      ...this.context(),
    });
    const failed = () => this.o.ledger.failed(live.row, failure);
    const recorded = failed();
    this.transition(live, { kind: 'failed' });
    void this.record('a failed boot', live, failed, undefined, recorded);
  }

  /** Seconds until the phone is likely ready (provisioning only). */
  eta(live: LiveSession): number | undefined {
    const typical = this.#typicalBootMs;
    const now = this.o.clock.now();
    const phase = live.phase;
    const remaining = (startedMs: number) => Math.max(0, typical - (now - startedMs));
    if (phase.kind === 'booting') return bootingEtaSeconds(typical, now - phase.startedMs);
    if (phase.kind !== 'queued') return undefined;
    // Temporary sessions waiting (only while the runtime is unavailable, otherwise they take
    // one at once) get pooled phones in order: warm ones first, then the warming ones. The
    // boot slots are held by sessions' boots and the pool's.
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

  /** What boots typically take here, as measured (a device host publishes it). */
  get typicalBootMs(): number {
    return this.#typicalBootMs;
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
    return {
      sessions,
      pool: this.pool.counts(),
      phones: this.o.phones,
      bootSlots: this.o.bootSlots,
    };
  }

  // ---------------------------------------------------------------------------------
  // Deadlines and billing

  private armDeadline(live: LiveSession): void {
    const dueMs = live.row.expires_at * 1000 - this.o.clock.now();
    live.cancelDeadline = this.o.clock.setTimeout(
      () => this.finish(live, { reason: 'expired', at: live.row.expires_at }),
      dueMs,
    );
  }

  /** Schedules the debit of the next started minute; credit running out ends the session. */
  private armBilling(live: LiveSession, ready: Extract<Phase, { kind: 'ready' }>): void {
    const nextStartSec = nextMinuteStart(live.row);
    if (nextStartSec === null) return;
    ready.cancelBilling = this.o.clock.setTimeout(
      async () => {
        if (live.phase !== ready) return;
        const exhaustedAt = await this.record(
          'a debit',
          live,
          () => this.o.ledger.bill(live.row, nowSec(this.o.clock)),
          null,
        );
        if (live.phase !== ready) return;
        if (exhaustedAt !== null) return this.finish(live, { reason: 'credit_exhausted', at: exhaustedAt });
        this.armBilling(live, ready);
      },
      nextStartSec * 1000 - this.o.clock.now(),
    );
  }

  // ---------------------------------------------------------------------------------
  // Ending and cleanup

  /**
   * Ends a session: records the end (billing stops there) unless it was recorded elsewhere,
   * then cleans up. `lostProfile`: its phone went without a save (lost): the profile keeps
   * its previous save, marked inexact. Idempotent: a later call returns the cleanup already
   * under way.
   */
  finish(live: LiveSession, ending: Ending, opts: { lostProfile?: boolean } = {}): Promise<void> {
    const phase = live.phase;
    if (phase.kind === 'closing') return phase.cleanup;
    if (phase.kind === 'done') return Promise.resolve();
    live.cancelDeadline();
    if (phase.kind === 'ready') phase.cancelBilling();
    const queued = this.queue.indexOf(live);
    if (queued >= 0) this.queue.splice(queued, 1);
    if (phase.kind === 'booting') phase.abort.abort(new Error('session ended'));
    const phone =
      phase.kind === 'ready'
        ? Promise.resolve(phase.phone)
        : phase.kind === 'booting'
          ? phase.boot
          : Promise.resolve(null);
    if (live.row.adb_code) this.adbCodes.delete(sha256Hex(live.row.adb_code));
    const recorded =
      ending === 'recorded'
        ? Promise.resolve()
        : this.record(
            'an end',
            live,
            () => this.o.ledger.end(live.row, { ...ending, last: seconds(live.activityMs) }),
            undefined,
          );
    // The cleanup starts once the closing phase is in place: a re-entrant finish() (from an
    // event handler) joins it.
    const cleanup = recorded.then(() => this.cleanup(live, phone, opts.lostProfile ?? false));
    this.transition(live, { kind: 'closing', phone, cleanup });
    return cleanup;
  }

  private async cleanup(
    live: LiveSession,
    phonePromise: Promise<DevicePhone | null>,
    lostProfile: boolean,
    attempt = 1,
  ): Promise<void> {
    const row = live.row;
    const phone = await phonePromise;
    const profileId = row.profile_id;
    let staged: string | null = null;
    try {
      if (phone) {
        if (profileId !== null && !lostProfile) {
          staged = this.o.saves.stage(profileId, row.id);
          this.note('a save', live, this.o.ledger.saving(row, true));
        }
        await phone.shutdown({ saveTo: staged });
      }
    } catch (err) {
      // The next attempt counts from the failure, whatever recording it takes.
      const retry =
        attempt < CLEANUP_ATTEMPTS && !this.stopping
          ? new Promise<void>((resolve) => this.o.clock.setTimeout(resolve, CLEANUP_RETRY_MS))
          : null;
      if (staged) {
        this.o.saves.discard(staged);
        staged = null;
        this.note('a failed save', live, this.o.ledger.saving(row, false));
      }
      this.o.log.error('cleanup failed', { session: row.id, attempt, error: String(err), ...this.context() });
      if (retry) {
        this.note('an uncertain cleanup', live, this.o.ledger.uncertain(row));
        await retry;
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
    const saved = staged !== null;
    const confirmed = await this.record(
      'a cleanup',
      live,
      () =>
        this.o.ledger.cleaned(row, {
          saved,
          lostProfile,
          stored: saved || (profileId !== null && this.o.saves.current(profileId) !== null),
          commitSave: () => {
            if (staged && profileId !== null) this.o.saves.commit(profileId, staged);
          },
        }),
      false,
    );
    // Someone else finished it (a device host declared dead meanwhile): the save is nobody's.
    if (!confirmed && staged) this.o.saves.discard(staged);
    this.transition(live, { kind: 'done' });
    this.untrack(live);
    this.o.log.info('session ended', { session: row.id, reason: row.end_reason, ...this.context() });
    // Its phone is gone: the pool may refill into the room it leaves.
    this.pump();
    this.o.freed?.();
  }

  // ---------------------------------------------------------------------------------
  // Reads

  /** A live session by id (one this runtime holds until its cleanup is done). */
  get(sid: string): LiveSession | undefined {
    return this.live.get(sid);
  }

  /** Every live session (for shutdown, the gateway and diagnostics). */
  all(): IterableIterator<LiveSession> {
    return this.live.values();
  }

  /** Live sessions held. */
  get size(): number {
    return this.live.size;
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
    return this.list(uid)[0]?.row.billing_mode ?? null;
  }

  /** Marks the session used now (idle_s). */
  touch(live: LiveSession): void {
    live.activityMs = this.o.clock.now();
    this.o.ledger.active(live.row, seconds(live.activityMs));
  }

  // ---------------------------------------------------------------------------------
  // The phone of a ready session

  /** The phone (session_not_ready unless the session is ready). */
  readyPhone(live: LiveSession): DevicePhone {
    const phase = live.phase;
    if (phase.kind !== 'ready') throw notReady(STATE[phase.kind], live.row.id);
    return phase.phone;
  }

  /** The phone of a ready session, as the API and viewers use it. */
  phone(live: LiveSession): PhoneAccess {
    const phone = this.readyPhone(live);
    return {
      screen: phone.screen,
      frame: () => this.frame(live),
      input: (event) => this.input(live, event),
      apps: (): Promise<AppSummary[]> => this.readyPhone(live).apps(),
    };
  }

  /** The current frame, captured at most once per FRAME_INTERVAL_MS; concurrent callers share one capture. */
  async frame(live: LiveSession): Promise<Buffer> {
    const phase = live.phase;
    if (phase.kind !== 'ready') throw notReady(STATE[phase.kind], live.row.id);
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
    const phone = this.readyPhone(live);
    const refusal = event.type === 'tap' ? tapRefusal(event.x, event.y, phone.screen) : null;
    if (refusal) throw badRequest(refusal);
    await phone.input(event);
  }

  // ---------------------------------------------------------------------------------
  // ADB (the gateway asks)

  /** Resolves an ADB unlock code to its ready session, or null (revoked, closed, expired, unknown). */
  sessionForAdbCode(code: string): LiveSession | null {
    const sid = this.adbCodes.get(sha256Hex(code));
    const live = sid ? this.live.get(sid) : undefined;
    if (!live || live.phase.kind !== 'ready' || !live.row.adb_enabled) return null;
    if (live.row.expires_at <= nowSec(this.o.clock)) return null;
    return live;
  }

  /** The session's ADB code stops working and its connections are cut (the store records the revocation). */
  revokeAdb(live: LiveSession): void {
    if (live.row.adb_code) this.adbCodes.delete(sha256Hex(live.row.adb_code));
    live.row.adb_enabled = 0;
    this.emit('adb-revoked', live);
  }
}

/** Display label, by device backend, of history records of sessions that never got a phone. */
export const genericDevice = (backend: string): string =>
  backend === 'emulator' ? 'Android emulator' : 'Virtual Android phone';
