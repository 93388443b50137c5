/**
 * Limits on wrong ADB unlock codes. Codes are long random strings, so guessing one is
 * hopeless; the limits keep it that way under a flood and stop a gateway from being a
 * free oracle, without letting a stranger lock the owner out:
 *
 * - Per source (remote address): each wrong code costs one token of a bucket of
 *   SOURCE_BURST tokens that refills one token every SOURCE_REFILL_MS. A source with an empty
 *   bucket gets `DENIED` without its code being looked at. Other sources are unaffected.
 * - Per session: a wrong code whose first TAG_LENGTH characters match a live session's code
 *   (a partly leaked code, the only way to aim at one session) also costs a token of that
 *   session's bucket (SESSION_BURST, one token every SESSION_REFILL_MS). While it is empty,
 *   only sources that already unlocked that session are still checked; everyone else gets
 *   `DENIED`. The owner's tunnel, which unlocked before, keeps reconnecting.
 * - A right code costs nothing, and neither does a dead one (RetiredCodes): a code that worked
 *   until its ADB was revoked or its session closed is no guess.
 */
import type { Clock } from './clock.js';
import { sha256Hex } from './secrets.js';

export const SOURCE_BURST = 10;
export const SOURCE_REFILL_MS = 5_000;
export const SESSION_BURST = 5;
export const SESSION_REFILL_MS = 30_000;
/** `pau_` and 8 random characters. */
export const TAG_LENGTH = 12;
/** Above this many remembered sources, full buckets (which carry no information) are dropped. */
const MAX_SOURCES = 4096;
/** How long a dead code is still known as one. */
export const RETIRED_CODE_MS = 60 * 60_000;
/** At most this many dead codes are remembered (the oldest are forgotten first). */
const MAX_RETIRED = 20_000;

export class TokenBucket {
  private tokens: number;
  private atMs: number;

  constructor(
    private readonly burst: number,
    private readonly refillMs: number,
    nowMs: number,
  ) {
    this.tokens = burst;
    this.atMs = nowMs;
  }

  private refill(nowMs: number): void {
    const gained = Math.max(0, nowMs - this.atMs) / this.refillMs;
    this.tokens = Math.min(this.burst, this.tokens + gained);
    this.atMs = nowMs;
  }

  /** True when at least one whole token is left. */
  available(nowMs: number): boolean {
    this.refill(nowMs);
    return this.tokens >= 1;
  }

  take(nowMs: number): void {
    this.refill(nowMs);
    this.tokens = Math.max(0, this.tokens - 1);
  }

  full(nowMs: number): boolean {
    this.refill(nowMs);
    return this.tokens >= this.burst;
  }
}

interface SessionGuard {
  bucket: TokenBucket;
  /** Sources that unlocked this session with its code. */
  trusted: Set<string>;
}

export class UnlockLimiter {
  private readonly sources = new Map<string, TokenBucket>();
  private readonly sessions = new Map<string, SessionGuard>();

  constructor(private readonly clock: Clock) {}

  /** Whether an attempt from `source`, aimed (by its tag) at session `sid` or at none, may be checked. */
  mayTry(source: string, sid: string | null): boolean {
    const now = this.clock.now();
    if (!(this.sources.get(source)?.available(now) ?? true)) return false;
    if (sid === null) return true;
    const guard = this.sessions.get(sid);
    return !guard || guard.bucket.available(now) || guard.trusted.has(source);
  }

  failed(source: string, sid: string | null): void {
    const now = this.clock.now();
    let bucket = this.sources.get(source);
    if (!bucket) {
      if (this.sources.size >= MAX_SOURCES) this.sweep(now);
      this.sources.set(source, (bucket = new TokenBucket(SOURCE_BURST, SOURCE_REFILL_MS, now)));
    }
    bucket.take(now);
    if (sid !== null) this.guard(sid, now).bucket.take(now);
  }

  succeeded(source: string, sid: string): void {
    this.guard(sid, this.clock.now()).trusted.add(source);
  }

  /** The session's code is dead (revoked, closed): nothing about it is needed any more. */
  forget(sid: string): void {
    this.sessions.delete(sid);
  }

  private guard(sid: string, now: number): SessionGuard {
    let guard = this.sessions.get(sid);
    if (!guard) {
      guard = { bucket: new TokenBucket(SESSION_BURST, SESSION_REFILL_MS, now), trusted: new Set() };
      this.sessions.set(sid, guard);
    }
    return guard;
  }

  private sweep(now: number): void {
    for (const [source, bucket] of this.sources) if (bucket.full(now)) this.sources.delete(source);
  }
}

/**
 * Codes that worked once and no longer do: ADB revoked, session closed or expired. Tools
 * that were connected keep knocking with them (an adb server reconnects to a connected
 * serial several times a second until it is told to disconnect, and a CI machine's many
 * workers share one address), so they are refused without costing their source a token;
 * otherwise the leftovers of ended phones would lock that machine out of its new ones. Kept
 * as hashes, for RETIRED_CODE_MS, at most MAX_RETIRED.
 */
export class RetiredCodes {
  /** Hash of the code → when it is forgotten; in the order retired. */
  private readonly until = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  add(code: string): void {
    const hash = sha256Hex(code);
    this.until.delete(hash);
    this.until.set(hash, this.clock.now() + RETIRED_CODE_MS);
    for (const oldest of this.until.keys()) {
      if (this.until.size <= MAX_RETIRED) break;
      this.until.delete(oldest);
    }
  }

  has(code: string): boolean {
    const hash = sha256Hex(code);
    const until = this.until.get(hash);
    if (until === undefined) return false;
    if (until > this.clock.now()) return true;
    this.until.delete(hash);
    return false;
  }
}
