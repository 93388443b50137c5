/**
 * The shared store of API nodes and device hosts: PostgreSQL through node-postgres (`pg`).
 * `pg` rather than `postgres`: it is the client most deployments already run, its Pool
 * survives a database restart by simply opening new connections, and the few queries here
 * need nothing that `postgres` adds.
 *
 * Every change is one transaction (tx). A transaction that meets a serialization failure, a
 * deadlock or a lost connection (the database restarting) is retried whole with backoff, so
 * a node survives a restart of PostgreSQL without doing anything twice: each transaction
 * either committed or did not, and the retried one decides again from what is committed.
 */
import pg from 'pg';
import { ERROR_CODES } from '../../../src/api/schemas.js';
import { apiError, type ApiError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { migrationsFor } from '../migrations.js';
import type { AccountRows } from '../../runtime/rows.js';
import type { RandomSource } from '../../secrets.js';
import { messageOf } from '../../../src/util/message.js';

const PG_MIGRATIONS = migrationsFor('postgres');
/** int8 (BIGINT) and numeric as numbers: every integer phonelease stores fits a double. */
const INT8_OID = 20;
const NUMERIC_OID = 1700;
/** Retried SQLSTATEs: serialization_failure, deadlock_detected, and the classes of a lost server. */
const RETRIED = new Set(['40001', '40P01', '57P01', '57P02', '57P03', '08000', '08003', '08006', '08001']);
// Long enough to ride out a failover or a quick restart, short enough that a caller gets a clear
// error (and retries on its own terms) while the database is down.
const RETRY_BUDGET_MS = 5_000;
/** Any node migrates under this advisory lock, so nodes starting together migrate once. */
const MIGRATION_LOCK = 7_204_118;

export type Db = pg.Pool;
export type Tx = pg.PoolClient;

/** Opens a pool on `url`. A lost connection is logged, never fatal: the next query reconnects. */
export function openPool(url: string, log: Logger, max = 10): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID || oid === NUMERIC_OID
          ? (v: string) => Number(v)
          : pg.types.getTypeParser(oid, format ?? 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client whose server went away emits here; unhandled, it would end the process.
  pool.on('error', (err) =>
    log.warn('database connection lost; reconnecting on next use', { error: err.message }),
  );
  // A checked-out client has no listener of the pool's: its connection lost between two
  // queries (ECONNRESET when the database restarts, a FATAL when its backend is terminated,
  // even in the moment it is handed out) would be thrown at the process. Each client listens
  // for its whole life; the queries it has fail with that error all the same, and that is
  // what callers handle (tx retries, the API answers 500).
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** True when retrying the whole transaction may succeed (conflict, lost or restarting server). */
export function isTransient(err: unknown): boolean {
  const code = sqlState(err);
  if (code !== undefined && RETRIED.has(code)) return true;
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE' || code === 'ETIMEDOUT')
    return true;
  const message = err instanceof Error ? err.message : '';
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|terminating connection/i.test(
    message,
  );
}

/** An error while the database is unreachable, saying so and what the caller may do. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

/** A lost database is the caller's to retry: a 500 that says so (retryable, receipts resolve creates). */
export function storeUnavailable(err: Error): ApiError | undefined {
  if (!(err instanceof StoreUnavailableError) && !isTransient(err)) return undefined;
  return apiError(
    ERROR_CODES.internal,
    'The shared store (PostgreSQL) is unavailable; retry shortly (a create with an Idempotency-Key is resolved through GET /sessions/requests/{key}).',
  );
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs fn in one transaction (READ COMMITTED with the row and advisory locks fn takes, or
 * SERIALIZABLE), retrying it whole on transient failures with exponential backoff and
 * jitter for up to 5 s. A connection lost once COMMIT is sent is not retried: whether it
 * committed is unknown, and doing it again could do it twice (a conflict at COMMIT is a
 * definite rollback, and is).
 */
export async function tx<T>(
  db: Db,
  fn: (client: Tx) => Promise<T>,
  opts: { serializable?: boolean; budgetMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.budgetMs ?? RETRY_BUDGET_MS);
  for (let attempt = 0; ; attempt++) {
    let client: Tx | undefined;
    let committing = false;
    try {
      client = await db.connect();
      await client.query(opts.serializable ? 'BEGIN ISOLATION LEVEL SERIALIZABLE' : 'BEGIN');
      const result = await fn(client);
      committing = true;
      await client.query('COMMIT');
      client.release();
      return result;
    } catch (err) {
      if (client) {
        if (!committing) await client.query('ROLLBACK').catch(() => undefined);
        // A client whose connection broke must not go back to the pool.
        client.release(isTransient(err) ? (err instanceof Error ? err : true) : undefined);
      }
      if (!isTransient(err)) throw err;
      const backoff = Math.min(2_000, 25 * 2 ** attempt) * (0.5 + Math.random() / 2);
      const conflict = sqlState(err) === '40001' || sqlState(err) === '40P01';
      if ((committing && !conflict) || Date.now() + backoff > deadline) {
        throw new StoreUnavailableError(
          `The shared store (PostgreSQL) is unavailable or too busy (${messageOf(err)}); retry shortly.`,
          { cause: err },
        );
      }
      await sleep(backoff);
    }
  }
}

export async function one<R>(c: Tx | Db, text: string, values: unknown[] = []): Promise<R | undefined> {
  return (await c.query(text, values)).rows[0] as R | undefined;
}

export async function all<R>(c: Tx | Db, text: string, values: unknown[] = []): Promise<R[]> {
  return (await c.query(text, values)).rows as R[];
}

export async function count(c: Tx | Db, text: string, values: unknown[] = []): Promise<number> {
  const row = (await c.query<{ n: number | string }>(text, values)).rows[0];
  return Number(row?.n ?? 0);
}

/** Inserts `row` into `table`: one column per key of the row, which must be the table's columns. */
export async function insertRow(c: Tx | Db, table: string, row: object): Promise<void> {
  const columns = Object.keys(row);
  await c.query(
    `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
    Object.values(row),
  );
}

/** Brings the schema up to date (once, whichever node gets there first). */
export async function migratePg(db: Db): Promise<void> {
  await tx(db, async (c) => {
    await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await c.query('CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)');
    const rows = (await c.query<{ version: number }>('SELECT version FROM schema_version')).rows;
    let current = rows[0]?.version ?? 0;
    if (rows.length === 0) await c.query('INSERT INTO schema_version (version) VALUES (0)');
    if (current > PG_MIGRATIONS.length) {
      throw new Error(
        `The database was migrated by a newer phonelease (schema ${current}, this one knows ${PG_MIGRATIONS.length}); upgrade every node to the same version.`,
      );
    }
    for (; current < PG_MIGRATIONS.length; current++) {
      await c.query(PG_MIGRATIONS[current]!);
      await c.query('UPDATE schema_version SET version = $1', [current + 1]);
    }
  });
}

/** The deployment's secret (view grants, node-to-node signatures), created by the first node. */
export async function sharedSecret(db: Db, random: RandomSource): Promise<Buffer> {
  return tx(db, async (c) => {
    await c.query("INSERT INTO meta (key, value) VALUES ('secret', $1) ON CONFLICT (key) DO NOTHING", [
      random(32).toString('hex'),
    ]);
    const row = (await c.query<{ value: string }>("SELECT value FROM meta WHERE key = 'secret'")).rows[0]!;
    return Buffer.from(row.value, 'hex');
  });
}

/** A new account with its first key and its profile (`phonelease accounts create --store URL`), as the SQLite store inserts it. */
export async function insertAccount(db: Db, rows: AccountRows): Promise<void> {
  await tx(db, async (c) => {
    await insertRow(c, 'accounts', rows.account);
    await insertRow(c, 'api_keys', rows.key);
    await insertRow(c, 'profiles', rows.profile);
  });
}
