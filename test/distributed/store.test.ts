/**
 * The shared store: one list of migrations builds both stores, and `phonelease accounts
 * create --store URL` writes the same account rows into PostgreSQL as into SQLite.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratePg, openPool } from '../../server/stores/postgres/pool.js';
import { migrationsFor } from '../../server/stores/migrations.js';
import { openDatabase } from '../../server/stores/sqlite/store.js';
import { createLogger } from '../../server/log.js';
import { runCli } from '../support/cli.js';
import { postgresMissing, startPostgres, type PostgresCluster } from '../support/postgres.js';

const SHARED_ONLY = ['host_id?', 'startup_source?', 'saved_host?', 'claimed_ms?'];
const missing = postgresMissing();
if (missing) console.warn(`skipping the PostgreSQL store tests: ${missing}`);

/** Column names and whether they take NULL, per table, as the engine reports them. */
async function pgColumns(url: string): Promise<Record<string, string[]>> {
  const c = new pg.Client(url);
  await c.connect();
  try {
    const { rows } = await c.query<{ table_name: string; column_name: string; is_nullable: string }>(
      "SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, column_name",
    );
    const out: Record<string, string[]> = {};
    for (const r of rows)
      (out[r.table_name] ??= []).push(`${r.column_name}${r.is_nullable === 'YES' ? '?' : ''}`);
    return out;
  } finally {
    await c.end();
  }
}

describe.skipIf(missing !== null)('PostgreSQL store', () => {
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('has every table and column of the embedded store, plus the hosts of a deployment', async () => {
    const url = await cluster.createDatabase();
    const db = openPool(url, createLogger({ level: 'silent' }));
    // Two nodes starting together migrate once (the advisory lock), a third start is a no-op.
    await Promise.all([migratePg(db), migratePg(db)]);
    await migratePg(db);
    await db.end();
    const shared = await pgColumns(url);

    const dir = mkdtempSync(join(tmpdir(), 'phonelease-sqlite-'));
    try {
      const sqlite = openDatabase(dir);
      const tables = sqlite
        .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .all();
      for (const { name } of tables) {
        const cols = sqlite
          .prepare<[], { name: string; notnull: number; pk: number }>(`PRAGMA table_info(${name})`)
          .all()
          .map((c) => `${c.name}${c.notnull || c.pk ? '' : '?'}`)
          .sort();
        // The shared store's own additions (where a session runs) aside, the tables are the same.
        const sharedCols = (shared[name] ?? []).filter((c) => !SHARED_ONLY.includes(c));
        expect(sharedCols.sort(), `table ${name}`).toEqual(cols);
      }
      expect(sqlite.pragma('user_version', { simple: true })).toBe(migrationsFor('sqlite').length);
      sqlite.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(Object.keys(shared)).toEqual(expect.arrayContaining(['hosts', 'schema_version']));
    expect(shared.sessions).toEqual(expect.arrayContaining(['host_id?', 'startup_source?']));
  });

  it('upgrading to saves held by hosts says that the saves made before are gone', async () => {
    const url = await cluster.createDatabase();
    const migrations = migrationsFor('postgres');
    const upgrade = migrations.findIndex((m) => m.includes('saved_host'));
    expect(upgrade).toBeGreaterThan(0);
    const c = new pg.Client(url);
    await c.connect();
    try {
      // The schema as the release before built it, with a profile it reports as stored.
      for (const m of migrations.slice(0, upgrade)) await c.query(m);
      await c.query('CREATE TABLE schema_version (version BIGINT NOT NULL)');
      await c.query('INSERT INTO schema_version (version) VALUES ($1)', [upgrade]);
    } finally {
      await c.end();
    }
    const db = openPool(url, createLogger({ level: 'silent' }));
    try {
      // An account and its stored profile as that release wrote them (its columns only).
      const profile_id = 'prof_before';
      await db.query(
        `INSERT INTO accounts (uid, email, name, created, balance_cents, price_cents_per_minute, session_limit, billing_mode, can_rent, rent_blocked_reason, environment)
         VALUES ('acc_before', 'before@example.com', 'Before', 0, 0, 0, 1, 'disabled', 1, NULL, 'local')`,
      );
      await db.query(
        "INSERT INTO profiles (id, uid, state, holder, exact, saved_at) VALUES ($1, 'acc_before', 'stored', NULL, 1, 0)",
        [profile_id],
      );
      await migratePg(db);
      const { rows } = await db.query('SELECT state, exact, saved_host FROM profiles WHERE id = $1', [
        profile_id,
      ]);
      expect(rows).toEqual([{ state: 'empty', exact: 0, saved_host: null }]);
    } finally {
      await db.end();
    }
  });

  it('accounts create --store writes an account whose key is stored only as its hash', async () => {
    const url = await cluster.createDatabase();
    const r = await runCli(['accounts', 'create', '--store', url, '--session-limit', '3', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const created = JSON.parse(r.stdout) as { uid: string; key: string; profile_id: string };
    expect(created.key).toMatch(/^pck_/);
    const c = new pg.Client(url);
    await c.connect();
    try {
      const account = await c.query('SELECT session_limit, balance_cents FROM accounts WHERE uid = $1', [
        created.uid,
      ]);
      expect(account.rows).toEqual([{ session_limit: '3', balance_cents: '10000' }]);
      const keys = await c.query('SELECT * FROM api_keys WHERE uid = $1', [created.uid]);
      expect(keys.rows).toHaveLength(1);
      expect(JSON.stringify(keys.rows)).not.toContain(created.key);
      const profile = await c.query('SELECT id FROM profiles WHERE uid = $1', [created.uid]);
      expect(profile.rows).toEqual([{ id: created.profile_id }]);
    } finally {
      await c.end();
    }
  });

  it('refuses a --store that is not a PostgreSQL URL, without echoing a password', async () => {
    const r = await runCli(['accounts', 'create', '--store', 'mysql://u:hunter2@h/db']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--store must be a PostgreSQL URL');
    expect(r.stderr).not.toContain('hunter2');
  });
});
