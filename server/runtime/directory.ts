/**
 * The session directory: everything the HTTP API needs of the service, as one asynchronous
 * interface. The API's routes are written once against it (server/api/*), and two
 * directories implement it:
 * - LocalDirectory (local-directory.ts), the single server: sessions admitted and run in this
 *   process, over its SQLite store; its reads answer from memory without waiting for anything;
 * - SharedDirectory (shared-directory.ts), an API node of a deployment: sessions in the shared
 *   PostgreSQL store, their phones on device hosts.
 * Also here: SessionChanges, the waits both directories make (the long poll of a session
 * read, DELETE's wait for cleanup) over the wake-ups each gets of a session's changes.
 */
import type { CreateSessionBody } from '../../src/api/schemas.js';
import type { AppSummary, PhoneInput, ScreenSize } from '../devices/types.js';
import { RELEASE_WAIT_MS } from './rules.js';
import type { AccountRow, KeyRow, ProfileRow, SessionRow, StartupSource } from './rows.js';

/**
 * A live session as a directory answers it: what every API answer about it is rendered
 * from. The single server hands out its runtime's LiveSession itself (always current); an
 * API node a session as it read it from the shared store.
 */
export interface SessionSnapshot<R extends SessionRow = SessionRow> {
  readonly row: R;
  /** Last API activity in ms (idle_s). */
  readonly activityMs: number;
  /** When it was admitted, in ms, where known (age_s); else its whole-second `created`. */
  readonly admittedMs?: number;
  /** Where a provisioning session waits (the API's `location`). */
  readonly location: 'queued' | 'booting' | null;
  /** Where its phone came from, once it had one. */
  readonly startupSource: StartupSource | null;
  /** Where its ADB is reached when not at the server's own gateway (its device host's). */
  readonly adbEndpoint?: { host: string; port: number };
  /** eta_seconds of a provisioning session, where it is read with the session (an API node). */
  readonly etaSeconds?: number;
}

/** Whose view a read is: an account's (its sessions), or a view grant's (its one session). */
export type Reader = { kind: 'owner'; uid: string } | { kind: 'grant'; sid: string };

/**
 * What a create did: `admitted` (a new session), `replayed` (the session this idempotency
 * key created before), or `recorded` (admitted while the runtime is unavailable: it is
 * provisioned once the runtime is available again, and the caller should look it up).
 */
export interface Admission<S extends SessionSnapshot = SessionSnapshot> {
  outcome: 'admitted' | 'replayed' | 'recorded';
  session: S;
}

/** A ready session's phone, wherever it runs. */
export interface PhoneAccess {
  readonly screen: ScreenSize;
  /** Its current frame, captured at most once per FRAME_INTERVAL_MS. */
  frame(): Promise<Buffer>;
  /** Input from the API or a viewer; a tap outside the screen is refused. */
  input(event: PhoneInput): Promise<void>;
  apps(): Promise<AppSummary[]>;
}

/** GET /me: the account, its profile phone, and what its live sessions take of its slots. */
export interface AccountSummary {
  account: AccountRow;
  profile: ProfileRow;
  active: number;
  /** The billing mode of its live sessions (null without one). */
  billingMode: SessionRow['billing_mode'] | null;
}

/**
 * Everything the API asks of the service. Refusals are thrown as ApiErrors with the
 * contract's codes; a session the reader may not see is `not_found`, exactly as an unknown id.
 */
export interface SessionDirectory<S extends SessionSnapshot = SessionSnapshot> {
  /** The account of an API key (pck_...), or null. Synchronous where the store can answer so (every request asks). */
  authenticate(rawKey: string): string | null | Promise<string | null>;
  /** POST /sessions: a replay, an admission, or a refusal (thrown), idempotent by (account, key). */
  admit(uid: string, body: CreateSessionBody, requestKey: string | null): Promise<Admission<S>>;
  /** A live session the reader may see; `touch` marks it used now (idle_s). */
  session(reader: Reader, sid: string, opts?: { touch?: boolean }): Promise<S>;
  /** A live session by id alone (pages whose URL is the capability), or null once it has ended. */
  find(sid: string): Promise<S | null>;
  /** The account's live sessions, oldest first. */
  list(uid: string): Promise<S[]>;
  /** The session once its state, location or cleanup changed, or after `ms`, or when `signal` aborts. */
  changed(session: S, ms: number, signal: AbortSignal): Promise<S>;
  /** eta_seconds of a provisioning session. */
  eta(session: S): number | undefined;
  /** Ends a session for its owner; `released` once its cleanup is confirmed within RELEASE_WAIT_MS. */
  end(uid: string, sid: string): Promise<{ released: boolean }>;
  /** The session a keyed create made (live or in history), for GET /sessions/requests/{key}. */
  receipt(uid: string, requestKey: string): Promise<SessionRow | undefined>;
  /** Revokes the session's ADB: its code stops working and open connections are cut. */
  revokeAdb(session: S): Promise<void>;
  /** The phone of a ready session (session_not_ready otherwise). */
  phone(session: S): PhoneAccess;
  account(uid: string): Promise<AccountSummary>;
  createKey(uid: string, label: string): Promise<{ key: string; row: KeyRow }>;
  keys(uid: string): Promise<KeyRow[]>;
  /** False when the account has no active key with this hash. */
  revokeKey(uid: string, keyHash: string): Promise<boolean>;
  /** POST /me/profile/reset: the profile's id (profile_running while it is held). */
  resetProfile(uid: string): Promise<string>;
  /** Finished sessions, newest first, after a cursor. */
  history(uid: string, limit: number, after?: { created: number; id: string }): Promise<SessionRow[]>;
  /** Settles once every write the answers so far may reflect is durable; null when none waits. */
  readonly uncommitted: Promise<void> | null;
}

/** While notifications of changes arrive, a waiter still looks this often (one can be lost in a reconnect). */
export const SAFETY_POLL_MS = 1_000;
/** While they do not, waiters look this often. */
export const FALLBACK_POLL_MS = 150;

/**
 * Wake-ups of waits on one session: a wait registered before a read ends when that session
 * changes (wake), or after its time. Each directory wakes them from its own news of changes:
 * the runtime's events (never missed), or the shared store's notifications, which can be
 * lost while their connection is down; with `news`, a wait then also ends at a poll interval
 * (slow while notifications arrive, fast while they do not), so the waiter reads again.
 */
export class SessionChanges {
  readonly #waiters = new Map<string, Set<() => void>>();

  constructor(
    /** News of changes that may be missed (notifications over a connection that can drop): true while they arrive. */
    private readonly news?: { readonly connected: boolean },
    private readonly polls: { safetyPollMs?: number; fallbackPollMs?: number } = {},
  ) {}

  /** A wait for the next change of `sid`, at most `maxMs` (or until `signal` aborts), registered now. */
  next(sid: string, maxMs: number, signal?: AbortSignal): Promise<void> {
    const pollMs = !this.news
      ? Infinity
      : this.news.connected
        ? (this.polls.safetyPollMs ?? SAFETY_POLL_MS)
        : (this.polls.fallbackPollMs ?? FALLBACK_POLL_MS);
    return new Promise<void>((resolve) => {
      let set = this.#waiters.get(sid);
      if (!set) this.#waiters.set(sid, (set = new Set()));
      const waiters = set;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0 && this.#waiters.get(sid) === waiters) this.#waiters.delete(sid);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, Math.min(maxMs, pollMs)));
      waiters.add(done);
      if (signal?.aborted) done();
      else signal?.addEventListener('abort', done, { once: true });
    });
  }

  wake(sid: string): void {
    const set = this.#waiters.get(sid);
    if (set) for (const done of [...set]) done();
  }

  /** Wakes every wait (the news of changes may have been missed). */
  wakeAll(): void {
    for (const sid of [...this.#waiters.keys()]) this.wake(sid);
  }

  /**
   * The long poll of GET /sessions/{sid}?wait=S: reads the session again on each wake-up until
   * its state, location or cleanup changed, `ms` passed, or the caller left. Each wait is
   * registered before its read, so a change in between is never missed.
   */
  async untilChanged<S extends SessionSnapshot>(
    session: S,
    ms: number,
    signal: AbortSignal,
    read: (sid: string) => Promise<S | undefined>,
  ): Promise<S> {
    const key = (s: S) => `${s.row.state}/${s.location}/${s.row.cleanup_status}/${s.row.done}`;
    const before = key(session);
    const until = Date.now() + ms;
    let current = session;
    while (!signal.aborted && Date.now() < until) {
      const changed = this.next(current.row.id, until - Date.now(), signal);
      const again = await read(current.row.id);
      if (!again) break;
      current = again;
      if (key(current) !== before) break;
      await changed;
    }
    return current;
  }

  /** DELETE's wait: true once the session's cleanup is confirmed (`cleanedUp`), within RELEASE_WAIT_MS. */
  async untilCleanedUp(sid: string, cleanedUp: () => boolean | Promise<boolean>): Promise<boolean> {
    const until = Date.now() + RELEASE_WAIT_MS;
    for (;;) {
      const changed = this.next(sid, until - Date.now());
      if (await cleanedUp()) return true;
      if (Date.now() >= until) return false;
      await changed;
    }
  }
}
