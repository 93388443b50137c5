/**
 * The single server's store: SQLite through better-sqlite3 in WAL mode. Every acknowledged
 * change is committed before the API answers, so a restart (kill -9 included) loses no
 * acknowledged session, receipt, debit or history record.
 *
 * synchronous=NORMAL: in WAL mode a commit survives the process dying at any point; only
 * an OS crash or power loss can drop the last commits. That trade buys an order of
 * magnitude in create throughput over FULL, which would fsync every commit.
 *
 * Group commit: the writes of a create and of session transitions (`grouped()`) share one
 * transaction per turn of the event loop, committed as the turn ends, so that creates
 * arriving together pay one commit instead of two each. Until then they are visible only to
 * this process; the API answers nothing before `uncommitted` has settled (api/app.ts), which
 * keeps "committed before acknowledged". A `transaction()` commits the open group with it
 * at once; a lone statement run while a group is open joins the group.
 */
import { Database, type Statement, type Transaction } from './sqlite.js';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  SESSION_COLUMNS,
  type AccountRow,
  type AccountRows,
  type KeyRow,
  type ProfileRow,
  type ReceiptRow,
  type SessionRow,
} from '../../runtime/rows.js';
import { migrationsFor } from '../migrations.js';

const SQLITE_MIGRATIONS = migrationsFor('sqlite');

const SESSION_COLUMN_SET: ReadonlySet<string> = new Set(SESSION_COLUMNS);
/** A column updateSession may set: a session column other than the id (which names the row). */
const isSessionColumn = (c: string): c is Exclude<keyof SessionRow, 'id'> =>
  c !== 'id' && SESSION_COLUMN_SET.has(c);

export function openDatabase(dataDir: string): Database {
  // The store holds key hashes and the secret view grants are signed with: only its owner
  // may read it.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, 'phonelease.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  // A second process (`phonelease accounts create`) may write while the server runs.
  db.pragma('busy_timeout = 5000');
  migrate(db);
  for (const f of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) chmodSync(f, 0o600);
  return db;
}

function migrate(db: Database): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SQLITE_MIGRATIONS.length) {
    throw new Error(
      `The data directory was written by a newer phonelease (schema ${current}, this one knows ${SQLITE_MIGRATIONS.length}); upgrade phonelease or use another --data directory.`,
    );
  }
  for (let v = current; v < SQLITE_MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(SQLITE_MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    }).immediate();
  }
}

/** Prepared statements over one database; all methods are synchronous. */
export class SqliteStore {
  private readonly s;
  private readonly accounts = new Map<string, AccountRow>();
  /**
   * One transaction wrapper for every call: better-sqlite3 builds a wrapper (and its
   * BEGIN/COMMIT statements' bookkeeping) per db.transaction() call, which showed as a
   * measurable share of each create under load.
   */
  private readonly tx: Transaction<(fn: () => void) => void>;
  private readonly groupBegin;
  private readonly groupCommit;
  private readonly groupRollback;
  /** The open group transaction: its commit, which `uncommitted` hands out, and how to settle it. */
  private group: { committed: Promise<void>; settle: (error?: unknown) => void } | null = null;
  /** UPDATE statements by the columns they set (a handful of shapes: one per kind of change). */
  private readonly sessionUpdates = new Map<string, Statement<Record<string, unknown>>>();
  /** How deep inside transaction()/grouped() callbacks we are: the group commits only outside them. */
  private depth = 0;
  /** Why a group commit failed: the store then refuses writes until the server restarts. */
  private failure: Error | null = null;

  constructor(readonly db: Database) {
    const placeholders = SESSION_COLUMNS.map((c) => `@${c}`).join(', ');
    this.s = {
      metaGet: db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?'),
      metaSet: db.prepare(
        'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
      ),
      accountInsert: db.prepare(
        `INSERT INTO accounts (uid, email, name, created, balance_cents, price_cents_per_minute, session_limit, billing_mode, can_rent, rent_blocked_reason, environment, operator)
         VALUES (@uid, @email, @name, @created, @balance_cents, @price_cents_per_minute, @session_limit, @billing_mode, @can_rent, @rent_blocked_reason, @environment, @operator)`,
      ),
      accountGet: db.prepare<[string], AccountRow>('SELECT * FROM accounts WHERE uid = ?'),
      accountCount: db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM accounts'),
      accountBalance: db.prepare('UPDATE accounts SET balance_cents = ? WHERE uid = ?'),
      keyInsert: db.prepare(
        'INSERT INTO api_keys (key_hash, uid, label, hint, created, revoked) VALUES (@key_hash, @uid, @label, @hint, @created, NULL)',
      ),
      keyGet: db.prepare<[string], KeyRow>('SELECT * FROM api_keys WHERE key_hash = ?'),
      keyList: db.prepare<[string], KeyRow>(
        'SELECT * FROM api_keys WHERE uid = ? AND revoked IS NULL ORDER BY created, key_hash',
      ),
      keyRevoke: db.prepare(
        'UPDATE api_keys SET revoked = ? WHERE key_hash = ? AND uid = ? AND revoked IS NULL',
      ),
      profileInsert: db.prepare(
        'INSERT INTO profiles (id, uid, state, holder, exact, saved_at) VALUES (@id, @uid, @state, @holder, @exact, @saved_at)',
      ),
      profileByUid: db.prepare<[string], ProfileRow>('SELECT * FROM profiles WHERE uid = ?'),
      profileAll: db.prepare<[], ProfileRow>('SELECT * FROM profiles'),
      profileSave: db.prepare(
        'UPDATE profiles SET state = @state, holder = @holder, exact = @exact, saved_at = @saved_at WHERE id = @id',
      ),
      sessionInsert: db.prepare(
        `INSERT INTO sessions (${SESSION_COLUMNS.join(', ')}) VALUES (${placeholders})`,
      ),
      sessionGet: db.prepare<[string], SessionRow>('SELECT * FROM sessions WHERE id = ?'),
      sessionsLive: db.prepare<[], SessionRow>('SELECT * FROM sessions WHERE done = 0 ORDER BY seq'),
      sessionMaxSeq: db.prepare<[], { n: number | null }>('SELECT MAX(seq) AS n FROM sessions'),
      historyFirst: db.prepare<[string, number], SessionRow>(
        'SELECT * FROM sessions WHERE uid = ? AND done = 1 ORDER BY created DESC, id DESC LIMIT ?',
      ),
      historyAfter: db.prepare<[string, number, number, string, number], SessionRow>(
        'SELECT * FROM sessions WHERE uid = ? AND done = 1 AND (created < ? OR (created = ? AND id < ?)) ORDER BY created DESC, id DESC LIMIT ?',
      ),
      receiptGet: db.prepare<[string, string], ReceiptRow>(
        'SELECT * FROM receipts WHERE uid = ? AND request_key = ?',
      ),
      receiptInsert: db.prepare(
        'INSERT INTO receipts (uid, request_key, body_hash, sid, created) VALUES (@uid, @request_key, @body_hash, @sid, @created)',
      ),
      debitInsert: db.prepare('INSERT INTO debits (sid, minute, uid, cents, at) VALUES (?, ?, ?, ?, ?)'),
      debitLast: db.prepare<[string], { n: number | null }>('SELECT MAX(at) AS n FROM debits WHERE sid = ?'),
      debitSum: db.prepare<[string], { n: number | null }>(
        'SELECT SUM(cents) AS n FROM debits WHERE sid = ?',
      ),
    };
    this.tx = db.transaction((fn: () => void) => fn());
    this.groupBegin = db.prepare('BEGIN IMMEDIATE');
    this.groupCommit = db.prepare('COMMIT');
    this.groupRollback = db.prepare('ROLLBACK');
  }

  /**
   * Runs fn in one IMMEDIATE transaction (a savepoint when already inside one), committed
   * when this returns; an open group commits with it.
   */
  transaction<T>(fn: () => T): T {
    let result!: T;
    this.run(() => {
      result = fn();
    });
    if (this.depth === 0) this.flush();
    return result;
  }

  /**
   * Runs fn now in the transaction this turn of the event loop shares (in a savepoint of
   * its own: if fn throws, only its writes are undone), committed once the turn ends. Reads
   * on this connection see the writes at once; `uncommitted` says when they are durable.
   */
  grouped(fn: () => void): void {
    if (!this.group) {
      this.writable();
      this.groupBegin.run();
      let settle!: (error?: unknown) => void;
      const committed = new Promise<void>((resolve, reject) => {
        settle = (error) => (error === undefined ? resolve() : reject(error));
      });
      // Nobody may be waiting (a transition no request asked for): the failure is kept in
      // `failure` and refused on the next write, not thrown at the event loop.
      committed.catch(() => undefined);
      this.group = { committed, settle };
      setImmediate(() => this.flush());
    }
    this.run(fn);
  }

  /**
   * Settles once every write made so far is committed, or null when none waits (the usual
   * case, so that a read answers without a turn of the event loop). Rejects when the
   * commit failed: nothing that depends on those writes may then be answered as done.
   */
  get uncommitted(): Promise<void> | null {
    return this.group?.committed ?? null;
  }

  /** Commits the open group now (transaction() and close() do; otherwise the end of the turn does). */
  flush(): void {
    const group = this.group;
    if (!group || this.depth > 0) return;
    this.group = null;
    try {
      this.groupCommit.run();
      group.settle();
    } catch (error) {
      if (this.db.inTransaction) this.groupRollback.run();
      // What the runtime holds in memory is now ahead of the store; only a restart (which
      // recovers from what was committed) makes them agree again.
      this.failure = new Error(
        `The store could not commit (${String(error)}); restart the server: it recovers from what was committed.`,
        { cause: error },
      );
      group.settle(this.failure);
    }
  }

  private run(fn: () => void): void {
    this.writable();
    this.depth++;
    try {
      this.tx.immediate(fn);
    } finally {
      this.depth--;
    }
  }

  private writable(): void {
    if (this.failure) throw this.failure;
  }

  close(): void {
    this.flush();
    this.db.close();
  }

  getMeta(key: string): string | undefined {
    return this.s.metaGet.get(key)?.value;
  }
  setMeta(key: string, value: string): void {
    this.s.metaSet.run(key, value);
  }

  /** A new account with its first key and its profile, in one transaction. */
  insertAccount(rows: AccountRows): void {
    this.transaction(() => {
      this.s.accountInsert.run(rows.account);
      this.s.keyInsert.run(rows.key);
      this.s.profileInsert.run(rows.profile);
    });
  }
  /**
   * An account, kept once read: this process is the only one that changes an account (its
   * balance, by debits), and an account another process creates is read on its first use.
   */
  account(uid: string): AccountRow | undefined {
    let row = this.accounts.get(uid);
    if (!row) {
      row = this.s.accountGet.get(uid);
      if (row) this.accounts.set(uid, row);
    }
    return row;
  }
  accountCount(): number {
    return this.s.accountCount.get()!.n;
  }
  setBalance(uid: string, balance: number): void {
    this.s.accountBalance.run(balance, uid);
    const kept = this.accounts.get(uid);
    if (kept) kept.balance_cents = balance;
  }

  insertKey(row: Omit<KeyRow, 'revoked'>): void {
    this.s.keyInsert.run(row);
  }
  key(hash: string): KeyRow | undefined {
    return this.s.keyGet.get(hash);
  }
  activeKeys(uid: string): KeyRow[] {
    return this.s.keyList.all(uid);
  }
  revokeKey(uid: string, hash: string, at: number): boolean {
    return this.s.keyRevoke.run(at, hash, uid).changes > 0;
  }

  profileOf(uid: string): ProfileRow | undefined {
    return this.s.profileByUid.get(uid);
  }
  profiles(): ProfileRow[] {
    return this.s.profileAll.all();
  }
  saveProfile(row: ProfileRow): void {
    this.s.profileSave.run(row);
  }

  insertSession(row: SessionRow): void {
    this.s.sessionInsert.run(row);
  }
  /**
   * Writes only the given columns of a session. Most changes touch a few columns (a move to
   * ready, a heartbeat's `last`); rewriting the whole row also rewrote the entries of every
   * index over it, a large share of a create's store time.
   */
  updateSession(id: string, fields: Partial<Omit<SessionRow, 'id'>>): void {
    const columns = Object.keys(fields).filter(isSessionColumn).sort();
    if (columns.length === 0) return;
    const name = columns.join(',');
    let statement = this.sessionUpdates.get(name);
    if (!statement) {
      statement = this.db.prepare<Record<string, unknown>>(
        `UPDATE sessions SET ${columns.map((c) => `${c} = @${c}`).join(', ')} WHERE id = @id`,
      );
      this.sessionUpdates.set(name, statement);
    }
    statement.run({ ...Object.fromEntries(columns.map((c) => [c, fields[c]])), id });
  }
  session(id: string): SessionRow | undefined {
    return this.s.sessionGet.get(id);
  }
  liveSessions(): SessionRow[] {
    return this.s.sessionsLive.all();
  }
  maxSeq(): number {
    return this.s.sessionMaxSeq.get()!.n ?? 0;
  }
  history(uid: string, limit: number, after?: { created: number; id: string }): SessionRow[] {
    return after
      ? this.s.historyAfter.all(uid, after.created, after.created, after.id, limit)
      : this.s.historyFirst.all(uid, limit);
  }

  receipt(uid: string, key: string): ReceiptRow | undefined {
    return this.s.receiptGet.get(uid, key);
  }
  insertReceipt(row: ReceiptRow): void {
    this.s.receiptInsert.run(row);
  }

  insertDebit(sid: string, minute: number, uid: string, cents: number, at: number): void {
    this.s.debitInsert.run(sid, minute, uid, cents, at);
  }
  /** The time of the session's latest debit, or null when nothing was debited. */
  lastDebitAt(sid: string): number | null {
    return this.s.debitLast.get(sid)!.n;
  }
  debitedCents(sid: string): number {
    return this.s.debitSum.get(sid)!.n ?? 0;
  }
}
