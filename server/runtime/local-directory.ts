/**
 * The single server's session directory: sessions admitted in this process and run by its
 * runtime, over its SQLite store (a LocalStore). It is the only writer of its sessions,
 * profiles and balances, so everything is answered from memory and the store, synchronously:
 * an admission is decided (admission.ts) over facts read at that moment and committed in the
 * same turn, so concurrent creates with one idempotency key cannot both pass the receipt
 * check; the first commits its receipt, every later one replays it. The deadline counts
 * from admission. Writes join the store's group commit; `uncommitted` tells the API when
 * what it answers is durable.
 *
 * It also picks up where the last process stopped (recover): recorded requests are
 * provisioned, sessions whose phones died with the process end `lost` (billed up to the last
 * moment the server was known alive: its heartbeat), interrupted cleanups complete.
 */
import type { CreateSessionBody } from '../../src/api/schemas.js';
import type { Clock } from '../clock.js';
import { nowSec, seconds } from '../clock.js';
import { notFound, profileHeld } from '../errors.js';
import type { Logger } from '../log.js';
import { safeEqual, sha256Hex, type RandomSource } from '../secrets.js';
import { newKey } from './accounts.js';
import { admissionVerdict } from './admission.js';
import {
  SessionChanges,
  type AccountSummary,
  type Admission,
  type PhoneAccess,
  type Reader,
  type SessionDirectory,
} from './directory.js';
import type { LocalStore } from './ports.js';
import type { ProfileSaves } from './profile-saves.js';
import type { KeyRow, SessionRow } from './rows.js';
import { canonicalJson, lostEndTime, newSessionId, retryAfterSeconds } from './rules.js';
import type { LiveSession, Runtime } from './runtime.js';

export interface LocalDirectoryOptions {
  store: LocalStore;
  runtime: Runtime;
  saves: ProfileSaves;
  clock: Clock;
  random: RandomSource;
  log: Logger;
  /** Shared phone capacity across accounts (phones_busy beyond it). */
  phones: number;
}

/** The last moment the server was known alive is stored this often (and the sessions' activity with it). */
const HEARTBEAT_MS = 2000;

export class LocalDirectory implements SessionDirectory<LiveSession> {
  /** sha256 of a key -> its account: every request asks, and only revocation here changes the answer. */
  private readonly keyCache = new Map<string, string>();
  private readonly changes = new SessionChanges();
  private seq: number;
  private cancelHeartbeat: (() => void) | null = null;

  constructor(private readonly o: LocalDirectoryOptions) {
    this.seq = o.store.maxSeq();
    const wake = (live: LiveSession) => this.changes.wake(live.row.id);
    for (const event of ['changed', 'closing', 'ended'] as const) o.runtime.on(event, wake);
  }

  // ---------------------------------------------------------------------------------
  // Start-up and shutdown

  /** Takes back what the last process left in the store, then keeps the heartbeat. */
  recover(): void {
    const now = nowSec(this.o.clock);
    const lastAlive = Number(this.o.store.getMeta('last_alive') ?? now);
    for (const row of this.o.store.liveSessions()) {
      const lostAt =
        row.state === 'ready'
          ? lostEndTime({
              ready: row.ready,
              created: row.created,
              expiresAt: row.expires_at,
              lastAlive,
              lastDebit: this.o.store.lastDebitAt(row.id),
              now,
            })
          : now;
      this.o.runtime.recover(row, lostAt);
    }
    // Profiles whose save was interrupted keep their previous save, marked inexact.
    for (const profile of this.o.store.profiles()) {
      const held = profile.holder !== null && this.o.runtime.get(profile.holder) !== undefined;
      if (profile.state === 'saving' || (profile.holder && !held)) {
        this.o.store.saveProfile({
          ...profile,
          state: this.o.saves.current(profile.id) ? 'stored' : 'empty',
          holder: held ? profile.holder : null,
          exact: 0,
        });
      }
    }
    this.heartbeat();
    this.o.runtime.start();
  }

  private heartbeat(): void {
    this.o.store.transaction(() => {
      this.o.store.setMeta('last_alive', String(nowSec(this.o.clock)));
      for (const live of this.o.runtime.all()) {
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
    await this.o.runtime.close();
    this.cancelHeartbeat?.();
    this.cancelHeartbeat = null;
    this.o.store.setMeta('last_alive', String(nowSec(this.o.clock)));
  }

  // ---------------------------------------------------------------------------------
  // Credentials

  authenticate(rawKey: string): string | null {
    const hash = sha256Hex(rawKey);
    const cached = this.keyCache.get(hash);
    if (cached) return cached;
    // A miss always asks the store: keys created by another process on the same data
    // directory (`phonelease accounts create`) work at once.
    const row = this.o.store.key(hash);
    // The lookup is by hash; the constant-time compare keeps the final check free of
    // content-dependent timing as well.
    if (!row || row.revoked !== null || !safeEqual(row.key_hash, hash)) return null;
    this.keyCache.set(hash, row.uid);
    return row.uid;
  }

  // ---------------------------------------------------------------------------------
  // Sessions

  async admit(
    uid: string,
    body: CreateSessionBody,
    requestKey: string | null,
  ): Promise<Admission<LiveSession>> {
    const nowMs = this.o.clock.now();
    const now = seconds(nowMs);
    const bodyHash = sha256Hex(canonicalJson(body));
    const receipt = requestKey ? this.o.store.receipt(uid, requestKey) : undefined;
    const replayed = receipt ? this.o.runtime.get(receipt.sid) : undefined;
    const account = this.o.store.account(uid);
    if (!account) throw new Error(`account ${uid} vanished from the store`);
    const verdict = admissionVerdict(
      {
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
        account,
        activeSessions: this.o.runtime.activeCount(uid),
        profile: body.profile_id !== undefined ? this.o.store.profileOf(uid) : undefined,
        liveSessions: this.o.runtime.size,
        phones: this.o.phones,
        retryAfterSeconds: () => {
          let closing = 0;
          let soonestExpiresAt: number | null = null;
          for (const l of this.o.runtime.all()) {
            if (l.phase.kind === 'closing') closing++;
            soonestExpiresAt = Math.min(soonestExpiresAt ?? Infinity, l.row.expires_at);
          }
          return retryAfterSeconds({ closing, soonestExpiresAt }, now);
        },
      },
      { uid, id: () => newSessionId(this.o.random), seq: () => ++this.seq },
    );
    if (verdict.kind === 'replay') {
      if (!replayed || replayed.row.uid !== uid) throw new Error('receipt points at another account');
      return { outcome: 'replayed', session: replayed };
    }
    const { row, holdProfile } = verdict;
    // The admission (and its receipt) is written before the runtime is asked, in the group
    // commit of this turn: the 202 answer waits for that commit (api/app.ts), and so does
    // any replay of the same key that reads the receipt in the meantime.
    this.o.store.grouped(() => {
      this.o.store.insertSession(row);
      if (requestKey)
        this.o.store.insertReceipt({
          uid,
          request_key: requestKey,
          body_hash: bodyHash,
          sid: row.id,
          created: now,
        });
      if (holdProfile) this.o.store.saveProfile({ ...holdProfile, holder: row.id });
    });
    const outcome = this.o.runtime.isAvailable ? 'admitted' : 'recorded';
    return { outcome, session: this.o.runtime.run(row, nowMs) };
  }

  /** A live session the reader may see; anything else is the same 404 as an unknown id. */
  private visible(reader: Reader, sid: string): LiveSession {
    const live = this.o.runtime.get(sid);
    if (!live || (reader.kind === 'owner' && live.row.uid !== reader.uid)) throw notFound();
    return live;
  }

  async session(reader: Reader, sid: string, opts: { touch?: boolean } = {}): Promise<LiveSession> {
    const live = this.visible(reader, sid);
    if (opts.touch) this.o.runtime.touch(live);
    return live;
  }

  async find(sid: string): Promise<LiveSession | null> {
    return this.o.runtime.get(sid) ?? null;
  }

  async list(uid: string): Promise<LiveSession[]> {
    return this.o.runtime.list(uid);
  }

  changed(live: LiveSession, ms: number, signal: AbortSignal): Promise<LiveSession> {
    return this.changes.untilChanged(live, ms, signal, async (sid) => this.o.runtime.get(sid));
  }

  eta(live: LiveSession): number | undefined {
    return this.o.runtime.eta(live);
  }

  async end(uid: string, sid: string): Promise<{ released: boolean }> {
    const live = this.visible({ kind: 'owner', uid }, sid);
    void this.o.runtime.finish(live, { reason: 'released', at: nowSec(this.o.clock) });
    return { released: await this.changes.untilCleanedUp(sid, () => this.o.runtime.get(sid) !== live) };
  }

  async receipt(uid: string, requestKey: string): Promise<SessionRow | undefined> {
    const receipt = this.o.store.receipt(uid, requestKey);
    return receipt ? this.o.store.session(receipt.sid) : undefined;
  }

  async revokeAdb(live: LiveSession): Promise<void> {
    this.o.store.updateSession(live.row.id, { adb_enabled: 0 });
    this.o.runtime.revokeAdb(live);
  }

  phone(live: LiveSession): PhoneAccess {
    return this.o.runtime.phone(live);
  }

  // ---------------------------------------------------------------------------------
  // The account

  async account(uid: string): Promise<AccountSummary> {
    const account = this.o.store.account(uid);
    const profile = this.o.store.profileOf(uid);
    if (!account || !profile) throw new Error(`account ${uid} has no account or profile row`);
    return {
      account,
      profile,
      active: this.o.runtime.activeCount(uid),
      billingMode: this.o.runtime.activeBillingMode(uid),
    };
  }

  async createKey(uid: string, label: string): Promise<{ key: string; row: KeyRow }> {
    const created = newKey(this.o.clock, this.o.random, uid, label);
    this.o.store.insertKey(created.row);
    return created;
  }

  async keys(uid: string): Promise<KeyRow[]> {
    return this.o.store.activeKeys(uid);
  }

  async revokeKey(uid: string, keyHash: string): Promise<boolean> {
    const done = this.o.store.revokeKey(uid, keyHash, nowSec(this.o.clock));
    if (done) this.keyCache.delete(keyHash);
    return done;
  }

  async resetProfile(uid: string): Promise<string> {
    const profile = this.o.store.profileOf(uid);
    if (!profile) throw new Error(`account ${uid} has no profile`);
    if (profile.holder || profile.state === 'saving')
      throw profileHeld(profile.holder, 'end that session, then reset');
    this.o.store.transaction(() => {
      this.o.saves.reset(profile.id);
      this.o.store.saveProfile({ ...profile, state: 'empty', exact: 1, saved_at: nowSec(this.o.clock) });
    });
    return profile.id;
  }

  async history(uid: string, limit: number, after?: { created: number; id: string }): Promise<SessionRow[]> {
    return this.o.store.history(uid, limit, after);
  }

  get uncommitted(): Promise<void> | null {
    return this.o.store.uncommitted;
  }
}
