/**
 * What the runtime needs from the stores, as interfaces it owns: the stores implement them
 * (server/stores/sqlite, server/stores/postgres) and the runtime never imports a store.
 *
 * - SessionLedger: what the runtime records about the sessions whose phones it runs. The
 *   single server's is its SQLite store; a device host's is the shared PostgreSQL store,
 *   where any node may end a session, so each record there also checks that the session is
 *   still this host's to run.
 * - LocalStore: what the single server's directory reads and writes besides (accounts,
 *   receipts, history, recovery), synchronously, in the store's group commit.
 * - SharedStore: what an API node's directory reads and writes in the shared store.
 * - RemotePhones: the phones of a deployment's sessions, on the device hosts that run them.
 */
import type { EndReason } from '../../src/api/schemas.js';
import type { AppSummary, PhoneInput } from '../devices/types.js';
import type { AdmissionFacts, Verdict } from './admission.js';
import type { AccountSummary } from './directory.js';
import type {
  AccountRow,
  HostRow,
  KeyRow,
  Placement,
  ProfileRow,
  ReceiptRow,
  SessionRow,
  StartupSource,
} from './rows.js';
import type { HostCapacity } from './rules.js';

/** What becomes true of a session when its phone is ready. */
export type ReadyChange = Pick<SessionRow, 'ready' | 'device' | 'screen_w' | 'screen_h' | 'adb_code'>;

/** How a session's cleanup ended, for its record. */
export interface CleanupOutcome {
  /** The phone was saved into a staged directory (a profile phone that stopped cleanly). */
  saved: boolean;
  /** The phone went without a save of this session (lost, or stopped without one): the profile's previous save is inexact. */
  lostProfile: boolean;
  /** Whether the profile has a save on this runtime's disk after this cleanup. */
  stored: boolean;
  /** Makes the staged save the profile's current one; call it inside the record's transaction. */
  commitSave(): void;
}

/**
 * What the runtime records about the sessions whose phones it runs. Each method records one
 * move of the lifecycle and keeps `row` (the runtime's copy of the stored row) as recorded.
 * A ledger applies a record when it is called or when its promise settles: the SQLite store
 * applies it at once, in the group commit of the turn (the single server answers from memory
 * and its answers wait for that commit); the shared store in a transaction of its own.
 */
export interface SessionLedger {
  /** Whether this runtime's save of the profile is the one to restore (a device host's only while the shared store says so). */
  savedHere(profileId: string): Promise<boolean>;
  /** The phone is ready. False when the session is no longer this runtime's to run (it ended elsewhere). */
  ready(row: SessionRow, change: ReadyChange, source: StartupSource): Promise<boolean>;
  /** The phone failed to start: state error, with the failure the owner sees. */
  failed(row: SessionRow, failure: { code: string; message: string }): Promise<void>;
  /** Debits the minutes started by `upto`; the time the paid minutes ran out when the balance could not cover one, else null. */
  bill(row: SessionRow, upto: number): Promise<number | null>;
  /**
   * Records the end, once: billed up to `at` first (which may make it `credit_exhausted`,
   * earlier), a failed session ends `failed`; `last` is its last activity.
   */
  end(row: SessionRow, end: { reason: EndReason; at: number; last: number }): Promise<void>;
  /** Cleanup could not confirm yet that the phone stopped (cleanup_status allocation_uncertain). */
  uncertain(row: SessionRow): Promise<void>;
  /** The profile phone is being saved (state saving), or its save failed (the state it had). */
  saving(row: SessionRow, saving: boolean): Promise<void>;
  /** Cleanup is confirmed: the session moves to history and lets go of its profile. False when it was no longer this runtime's. */
  cleaned(row: SessionRow, outcome: CleanupOutcome): Promise<boolean>;
  /** The session was used at `at` (idle_s), where the ledger keeps that as it happens. */
  active(row: SessionRow, at: number): void;
}

/** The single server's store, as its directory uses it: synchronous, writes in the group commit of the turn. */
export interface LocalStore {
  /** Runs fn in a transaction committed when this returns. */
  transaction<T>(fn: () => T): T;
  /** Runs fn in the transaction this turn of the event loop shares, committed as the turn ends. */
  grouped(fn: () => void): void;
  /** Settles once every write made so far is committed; null when none waits. */
  readonly uncommitted: Promise<void> | null;
  getMeta(key: string): string | undefined;
  setMeta(key: string, value: string): void;
  account(uid: string): AccountRow | undefined;
  key(hash: string): KeyRow | undefined;
  insertKey(row: Omit<KeyRow, 'revoked'>): void;
  activeKeys(uid: string): KeyRow[];
  revokeKey(uid: string, hash: string, at: number): boolean;
  profileOf(uid: string): ProfileRow | undefined;
  profiles(): ProfileRow[];
  saveProfile(row: ProfileRow): void;
  insertSession(row: SessionRow): void;
  updateSession(id: string, fields: Partial<Omit<SessionRow, 'id'>>): void;
  session(id: string): SessionRow | undefined;
  liveSessions(): SessionRow[];
  maxSeq(): number;
  history(uid: string, limit: number, after?: { created: number; id: string }): SessionRow[];
  receipt(uid: string, key: string): ReceiptRow | undefined;
  insertReceipt(row: ReceiptRow): void;
  lastDebitAt(sid: string): number | null;
}

/**
 * A session of the shared store as an API node reads it: its row and placement, the
 * endpoints of the device host that runs it, and what a boot takes there (or on the live
 * hosts, while it is queued).
 */
export interface PlacedRow extends SessionRow, Placement {
  host_url: string | null;
  adb_host: string | null;
  adb_port: number | null;
  typical_boot_ms: number;
  /** Unclaimed, and a live host's boot slot is free for it: a host claims it at once. */
  slot_free: boolean;
}

/**
 * What a create is decided on in the shared store, read under the account's lock; the
 * deployment's load (`capacity`) is read under its capacity lock, and only for a create that
 * passes everything else (null on the first decision).
 */
export type SharedAdmissionFacts = Pick<
  AdmissionFacts,
  'receipt' | 'receiptSession' | 'account' | 'activeSessions' | 'profile'
> & { capacity: Pick<AdmissionFacts, 'liveSessions' | 'phones' | 'retryAfterSeconds'> | null };

/** What an API node's directory asks of the shared store. */
export interface SharedStore {
  /** The account of an API key's hash, unless revoked. */
  keyOwner(keyHash: string): Promise<string | null>;
  /**
   * Admits a create in one transaction, deciding with `decide` on the facts read under the
   * account's lock (and then the deployment's capacity lock): the admitted session, its
   * receipt and its hold on the profile are written together, and the hosts are woken.
   */
  admit(
    a: { uid: string; requestKey: string | null; bodyHash: string; wantsProfile: boolean },
    decide: (facts: SharedAdmissionFacts) => Verdict,
  ): Promise<{ outcome: 'admitted' | 'replayed'; id: string }>;
  /** A session with its placement (a live one unless `any`). */
  placed(sid: string, opts?: { any?: boolean }): Promise<PlacedRow | undefined>;
  /** The account's live sessions, oldest first. */
  placedOf(uid: string): Promise<PlacedRow[]>;
  /** Where a queued session stands: queued sessions ahead of it (and how many temporary), and the live hosts. */
  queuePosition(seq: number): Promise<{ ahead: number; temporary: number; hosts: HostCapacity[] }>;
  /** Records activity at `at` (seconds), when later than what is stored. */
  touch(sid: string, at: number): Promise<void>;
  /** Records the end of a session (billed up to `at`); its host is told to clean it up. */
  end(sid: string, reason: EndReason, at: number): Promise<void>;
  /** Whether the session's cleanup is confirmed. */
  cleanedUp(sid: string): Promise<boolean>;
  receipt(uid: string, requestKey: string): Promise<SessionRow | undefined>;
  /** Records the revocation; the session's host is told. */
  revokeAdb(sid: string, hostId: string | null): Promise<void>;
  account(uid: string): Promise<AccountSummary>;
  insertKey(row: Omit<KeyRow, 'revoked'>): Promise<void>;
  activeKeys(uid: string): Promise<KeyRow[]>;
  revokeKey(uid: string, keyHash: string, at: number): Promise<boolean>;
  /** Forgets the profile's save (profile_running while it is held, thrown as `held(holder)`); its id. */
  resetProfile(uid: string, at: number, held: (holder: string | null) => Error): Promise<string>;
  history(uid: string, limit: number, after?: { created: number; id: string }): Promise<SessionRow[]>;
}

/** The phones of a deployment's sessions, asked of the device host at `hostUrl` that runs them. */
export interface RemotePhones {
  frame(hostUrl: string, sid: string): Promise<Buffer>;
  input(hostUrl: string, sid: string, event: PhoneInput): Promise<void>;
  apps(hostUrl: string, sid: string): Promise<AppSummary[]>;
  /** Cuts the session's open ADB connections now (its host also applies the stored revocation on its own). */
  revokeAdb(hostUrl: string, sid: string): Promise<void>;
}

/** A device host as it registers: what it runs, and where API nodes and clients reach it. */
export type HostRegistration = Omit<HostRow, 'started' | 'heartbeat_ms' | 'warm' | 'warming' | 'state'>;

/** What a device host asks of the shared store, besides its ledger. */
export interface HostStore {
  /** Joins the deployment: a live host from now. */
  register(host: HostRegistration, nowMs: number): Promise<void>;
  /** Says it is alive, with what it publishes; false once the deployment declared it dead. */
  heartbeat(
    hostId: string,
    beat: { nowMs: number; typicalBootMs: number; warm: number; warming: number },
  ): Promise<boolean>;
  /** The live sessions placed on this host. */
  held(hostId: string): Promise<Array<Pick<SessionRow, 'id' | 'state' | 'adb_enabled'>>>;
  /** The rows of these sessions. */
  sessions(ids: readonly string[]): Promise<SessionRow[]>;
  /**
   * Takes queued sessions in queue order, in one transaction (FOR UPDATE SKIP LOCKED: hosts
   * never wait on each other, and a session goes to exactly one): up to `pooled` temporary
   * ones (they get pooled phones), then up to `boot` of any kind, except a temporary session
   * admitted after `warmAfter` (seconds) while another live host advertises a warm phone, and
   * a profile whose save is on another live host. At most `room` in all.
   */
  claim(
    hostId: string,
    want: { room: number; pooled: number; boot: number; warmAfter: number; nowMs: number },
  ): Promise<SessionRow[]>;
  /** Leaves the deployment (stopped): the saves on its disk are nobody's from now on. */
  leave(hostId: string): Promise<void>;
  /** Ends what expired, and what dead hosts held (any node does it now and then; each once). */
  sweep(nowMs: number): Promise<void>;
}
