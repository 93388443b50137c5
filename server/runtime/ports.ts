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
 */
import type { EndReason } from '../../src/api/schemas.js';
import type { AccountRow, KeyRow, ProfileRow, ReceiptRow, SessionRow, StartupSource } from './rows.js';

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
