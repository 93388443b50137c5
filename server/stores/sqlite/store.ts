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

/** Statements over one database, each prepared on its first use; all methods are synchronous. */
export class SqliteStore {
  private readonly accounts = new Map<string, AccountRow>();
  /** Every statement by its SQL: better-sqlite3 prepares one once, and runs it many times. */
  private readonly statements = new Map<string, Statement<unknown[] | object, unknown>>();
  /**
   * One transaction wrapper for every call: better-sqlite3 builds a wrapper (and its
   * BEGIN/COMMIT statements' bookkeeping) per db.transaction() call, which showed as a
   * measurable share of each create under load.
   */
  private readonly tx: Transaction<(fn: () => void) => void>;
  /** The open group transaction: its commit, which `uncommitted` hands out, and how to settle it. */
  private group: { committed: Promise<void>; settle: (error?: unknown) => void } | null = null;
  /** How deep inside transaction()/grouped() callbacks we are: the group commits only outside them. */
  private depth = 0;
  /** Why a group commit failed: the store then refuses writes until the server restarts. */
  private failure: Error | null = null;

  constructor(readonly db: Database) {
    this.tx = db.transaction((fn: () => void) => fn());
  }

  /** The prepared statement of `sql` (prepared on first use, then kept). */
  query<P extends unknown[] | object = unknown[], R = unknown>(sql: string): Statement<P, R> {
    let statement = this.statements.get(sql);
    if (!statement) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement as Statement<P, R>;
  }

  /** Inserts `row` into `table`: one column per key of the row, which must be the table's columns. */
  insertRow(table: string, row: object): void {
    const columns = Object.keys(row);
    this.query<object>(
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
    ).run(row);
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
      this.query('BEGIN IMMEDIATE').run();
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
      this.query('COMMIT').run();
      group.settle();
    } catch (error) {
      if (this.db.inTransaction) this.query('ROLLBACK').run();
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
    return this.query<[string], { value: string }>('SELECT value FROM meta WHERE key = ?').get(key)?.value;
  }
  setMeta(key: string, value: string): void {
    this.query(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    ).run(key, value);
  }

  /** A new account with its first key and its profile, in one transaction. */
  insertAccount(rows: AccountRows): void {
    this.transaction(() => {
      this.insertRow('accounts', rows.account);
      this.insertRow('api_keys', rows.key);
      this.insertRow('profiles', rows.profile);
    });
  }
  /**
   * An account, kept once read: this process is the only one that changes an account (its
   * balance, by debits), and an account another process creates is read on its first use.
   */
  account(uid: string): AccountRow | undefined {
    let row = this.accounts.get(uid);
    if (!row) {
      row = this.query<[string], AccountRow>('SELECT * FROM accounts WHERE uid = ?').get(uid);
      if (row) this.accounts.set(uid, row);
    }
    return row;
  }
  accountCount(): number {
    return this.query<[], { n: number }>('SELECT COUNT(*) AS n FROM accounts').get()!.n;
  }
  setBalance(uid: string, balance: number): void {
    this.query('UPDATE accounts SET balance_cents = ? WHERE uid = ?').run(balance, uid);
    const kept = this.accounts.get(uid);
    if (kept) kept.balance_cents = balance;
  }

  insertKey(row: Omit<KeyRow, 'revoked'>): void {
    this.insertRow('api_keys', row);
  }
  key(hash: string): KeyRow | undefined {
    return this.query<[string], KeyRow>('SELECT * FROM api_keys WHERE key_hash = ?').get(hash);
  }
  activeKeys(uid: string): KeyRow[] {
    return this.query<[string], KeyRow>(
      'SELECT * FROM api_keys WHERE uid = ? AND revoked IS NULL ORDER BY created, key_hash',
    ).all(uid);
  }
  revokeKey(uid: string, hash: string, at: number): boolean {
    const revoke = this.query(
      'UPDATE api_keys SET revoked = ? WHERE key_hash = ? AND uid = ? AND revoked IS NULL',
    );
    return revoke.run(at, hash, uid).changes > 0;
  }

  profileOf(uid: string): ProfileRow | undefined {
    return this.query<[string], ProfileRow>('SELECT * FROM profiles WHERE uid = ?').get(uid);
  }
  profiles(): ProfileRow[] {
    return this.query<[], ProfileRow>('SELECT * FROM profiles').all();
  }
  saveProfile(row: ProfileRow): void {
    this.query<ProfileRow>(
      'UPDATE profiles SET state = @state, holder = @holder, exact = @exact, saved_at = @saved_at WHERE id = @id',
    ).run(row);
  }

  insertSession(row: SessionRow): void {
    this.insertRow('sessions', row);
  }
  /**
   * Writes only the given columns of a session. Most changes touch a few columns (a move to
   * ready, a heartbeat's `last`); rewriting the whole row also rewrote the entries of every
   * index over it, a large share of a create's store time.
   */
  updateSession(id: string, fields: Partial<Omit<SessionRow, 'id'>>): void {
    const columns = Object.keys(fields).filter(isSessionColumn).sort();
    if (columns.length === 0) return;
    this.query<Record<string, unknown>>(
      `UPDATE sessions SET ${columns.map((c) => `${c} = @${c}`).join(', ')} WHERE id = @id`,
    ).run({ ...Object.fromEntries(columns.map((c) => [c, fields[c]])), id });
  }
  session(id: string): SessionRow | undefined {
    return this.query<[string], SessionRow>('SELECT * FROM sessions WHERE id = ?').get(id);
  }
  liveSessions(): SessionRow[] {
    return this.query<[], SessionRow>('SELECT * FROM sessions WHERE done = 0 ORDER BY seq').all();
  }
  maxSeq(): number {
    return this.query<[], { n: number | null }>('SELECT MAX(seq) AS n FROM sessions').get()!.n ?? 0;
  }
  history(uid: string, limit: number, after?: { created: number; id: string }): SessionRow[] {
    return after
      ? this.query<[string, number, number, string, number], SessionRow>(
          'SELECT * FROM sessions WHERE uid = ? AND done = 1 AND (created < ? OR (created = ? AND id < ?)) ORDER BY created DESC, id DESC LIMIT ?',
        ).all(uid, after.created, after.created, after.id, limit)
      : this.query<[string, number], SessionRow>(
          'SELECT * FROM sessions WHERE uid = ? AND done = 1 ORDER BY created DESC, id DESC LIMIT ?',
        ).all(uid, limit);
  }

  receipt(uid: string, key: string): ReceiptRow | undefined {
    return this.query<[string, string], ReceiptRow>(
      'SELECT * FROM receipts WHERE uid = ? AND request_key = ?',
    ).get(uid, key);
  }
  insertReceipt(row: ReceiptRow): void {
    this.insertRow('receipts', row);
  }

  insertDebit(sid: string, minute: number, uid: string, cents: number, at: number): void {
    this.insertRow('debits', { sid, minute, uid, cents, at });
  }
  /** The time of the session's latest debit, or null when nothing was debited. */
  lastDebitAt(sid: string): number | null {
    const last = this.query<[string], { n: number | null }>('SELECT MAX(at) AS n FROM debits WHERE sid = ?');
    return last.get(sid)!.n;
  }
}
