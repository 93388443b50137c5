/**
 * The warm pool: temporary phones booted ahead of demand, owned by no session and no account.
 * The single server's runtime (runtime.ts) and a deployment's device host (distributed/device-host.ts)
 * both keep one; they differ in how a session reaches a phone (at admission, or by a claim
 * from the shared queue), not in how the pool behaves, which lives here once:
 * - a pooled phone is `warming` (its boot under way), then `warm`; it leaves the pool exactly
 *   once: taken for a session (warm, or its boot adopted while warming), evicted, lost, or
 *   drained;
 * - the pool only holds what live sessions leave of `phones`, and gives way to them newest
 *   (least warm) first, so it never makes a session wait for room;
 * - refills start only while the owner says a boot slot is free for them, and back off
 *   (doubling, capped) after a pooled boot fails rather than boot-fail in a loop;
 * - a phone being stopped holds its room (an emulator's memory) until it is gone.
 *
 * Boot slots stay the owner's: it starts each boot (startBoot) and counts it against the
 * slots its sessions share, so the pool is told nothing about them but "may I boot now".
 */
import type { Clock } from '../clock.js';
import type { DeviceLogger, DevicePhone } from '../devices/types.js';
import { randomToken, type RandomSource } from '../secrets.js';

/** A backend boot under way in one of the owner's boot slots, whoever owns it by the time it settles. */
export interface PhoneBoot {
  readonly startedMs: number;
  readonly abort: AbortController;
  readonly phone: Promise<DevicePhone>;
}

/**
 * A phone booted ahead of demand for no session: `warming` while it boots, `warm` once it is
 * up. It leaves the pool exactly once: handed to a session, adopted while warming, evicted,
 * lost, or drained.
 */
export type PooledPhone =
  | ({ readonly kind: 'warming'; readonly id: string } & PhoneBoot)
  | { readonly kind: 'warm'; readonly id: string; readonly phone: DevicePhone };

export interface WarmPoolOptions {
  /** Phones kept booted ahead of demand (--pool); capped at `phones`. */
  target: number;
  /** Phones the owner runs at most, sessions and pool together (--phones). */
  phones: number;
  /** Starts a backend boot for a pooled phone in one of the owner's boot slots. */
  startBoot(id: string): PhoneBoot;
  /** Something changed that may let the owner hand out or boot more (a phone stopped, or was lost). */
  changed(): void;
  clock: Clock;
  random: RandomSource;
  log: DeviceLogger;
  /** Added to every log line of the pool (a device host adds its id, known once it registered). */
  logContext?: () => Record<string, unknown>;
}

/** After a pooled boot fails, refills wait this long, doubling per failure up to the maximum. */
export const REFILL_BACKOFF_MS = 1000;
export const REFILL_BACKOFF_MAX_MS = 60_000;

export class WarmPool {
  /** Pooled phones by id, oldest first. */
  readonly #entries = new Map<string, PooledPhone>();
  /** Pooled phones being stopped (evicted, lost, drained); they hold their room until gone. */
  readonly #stopping = new Set<Promise<void>>();
  #failures = 0;
  #refillAfterMs = 0;
  readonly target: number;

  constructor(private readonly o: WarmPoolOptions) {
    this.target = Math.max(0, Math.min(o.target, o.phones));
  }

  /** Phones in the pool, warm and warming. */
  get size(): number {
    return this.#entries.size;
  }

  /** True when the pool is short of its target (a refill may be due). */
  get short(): boolean {
    return this.#entries.size < this.target;
  }

  counts(): { warm: number; warming: number; target: number } {
    let warm = 0;
    for (const entry of this.#entries.values()) if (entry.kind === 'warm') warm++;
    return { warm, warming: this.#entries.size - warm, target: this.target };
  }

  /** Every pooled phone, oldest first. */
  entries(): PooledPhone[] {
    return [...this.#entries.values()];
  }

  /**
   * Takes the phone a waiting temporary session gets out of the pool: a warm one at once, else
   * the oldest warming one's boot (it started earlier, so it never ends later than a boot of its own).
   */
  takeNext(): PooledPhone | null {
    const all = this.entries();
    const next = all.find((e) => e.kind === 'warm') ?? all[0] ?? null;
    if (next) this.#entries.delete(next.id);
    return next;
  }

  /** Keeps the pool within `room` phones, evicting the newest (least warm) first. */
  shrinkTo(room: number): void {
    while (this.#entries.size > 0 && this.#entries.size > Math.max(0, room)) {
      const all = this.entries().reverse();
      const entry = all.find((e) => e.kind === 'warming') ?? all[0]!;
      this.evict(entry, 'a session needs its phone slot');
    }
  }

  /**
   * Starts pooled boots while the owner has a slot for them (`canBoot`), the pool is short,
   * and `sessions` leave room. Returns null, or how long until a refill held back by a
   * recent failure may start (the owner decides how to come back then).
   */
  refill(sessions: number, canBoot: () => boolean): number | null {
    while (
      this.#entries.size < this.target &&
      canBoot() &&
      // Phones still stopping hold what they hold (an emulator's memory) until they are gone.
      sessions + this.#entries.size + this.#stopping.size < this.o.phones
    ) {
      const nowMs = this.o.clock.now();
      if (nowMs < this.#refillAfterMs) return this.#refillAfterMs - nowMs;
      this.#startBoot();
    }
    return null;
  }

  /** Stops every pooled phone (warming boots are aborted, and stopped if they come up) and waits for them. */
  async drain(why: string): Promise<void> {
    for (const entry of this.entries()) this.evict(entry, why);
    await Promise.all([...this.#stopping]);
  }

  #startBoot(): void {
    const id = `pool_${randomToken(this.o.random, 12)}`;
    const entry: PooledPhone = { kind: 'warming', id, ...this.o.startBoot(id) };
    this.#entries.set(id, entry);
    this.o.log.debug('booting pooled phone', { pooled: id, ...this.o.logContext?.() });
    void entry.phone.then(
      (phone) => {
        // Adopted by a session, or evicted: whoever took it out of the pool has it.
        if (this.#entries.get(id) !== entry) return;
        this.#failures = 0;
        const warm: PooledPhone = { kind: 'warm', id, phone };
        this.#entries.set(id, warm);
        phone.onLost((reason) => {
          if (this.#entries.get(id) !== warm) return; // handed out: its session listens now
          this.o.log.warn('pooled phone lost', { pooled: id, reason, ...this.o.logContext?.() });
          // Stopped all the same: whatever it still holds (ports, files) is freed.
          this.evict(warm, 'lost');
          this.o.changed();
        });
        this.o.log.debug('pooled phone warm', { pooled: id, ...this.o.logContext?.() });
      },
      (err: unknown) => {
        if (this.#entries.get(id) !== entry) return;
        this.#entries.delete(id);
        this.#failures++;
        const backoff = Math.min(REFILL_BACKOFF_MAX_MS, REFILL_BACKOFF_MS * 2 ** (this.#failures - 1));
        this.#refillAfterMs = this.o.clock.now() + backoff;
        this.o.log.error('pooled phone failed to start; the pool retries later', {
          error: String(err),
          retry_in_ms: backoff,
          ...this.o.logContext?.(),
        });
      },
    );
  }

  /** Takes a phone out of the pool and stops it (a warming one: its boot is aborted). */
  evict(entry: PooledPhone, why: string): void {
    this.#entries.delete(entry.id);
    this.o.log.debug('pooled phone stopped', { pooled: entry.id, why, ...this.o.logContext?.() });
    let phone: Promise<DevicePhone | null>;
    if (entry.kind === 'warm') phone = Promise.resolve(entry.phone);
    else {
      entry.abort.abort(new Error(why));
      phone = entry.phone.catch(() => null);
    }
    const stopped = phone
      .then((p) => p?.shutdown({ saveTo: null }))
      .catch((err: unknown) =>
        this.o.log.error('pooled phone did not stop', {
          pooled: entry.id,
          error: String(err),
          ...this.o.logContext?.(),
        }),
      )
      .finally(() => {
        this.#stopping.delete(stopped);
        this.o.changed();
      });
    this.#stopping.add(stopped);
  }
}
