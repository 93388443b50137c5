/**
 * Versioned schema migrations for both stores, from this one list: the embedded SQLite store
 * (PRAGMA user_version counts the migrations run) and the shared PostgreSQL store of API
 * nodes and device hosts (its `schema_version` table does). Each runs once, in a
 * transaction, in order. Never edit a released migration: add the next one.
 *
 * The SQL is written once, in the subset both engines read alike; `sqlFor` turns it into
 * each dialect. The one difference that matters: INTEGER is 64-bit in SQLite and 32-bit in
 * PostgreSQL, where times (expires_at may reach year 9999) and money need BIGINT. A
 * migration that only the shared store needs (hosts, placement of sessions on hosts) names
 * its dialect, and each store's version counts only the migrations it runs: data
 * directories of the embedded store are untouched by the shared store's additions.
 */
export type Dialect = 'sqlite' | 'postgres';

export interface Migration {
  readonly sql: string;
  /** Only this store needs it (default: both). */
  readonly only?: Dialect;
}

export const MIGRATIONS: readonly Migration[] = [
  // accounts, keys, profiles, sessions, receipts and debits
  {
    sql: `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

  CREATE TABLE accounts (
    uid TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    name TEXT NOT NULL,
    created INTEGER NOT NULL,
    balance_cents INTEGER NOT NULL,
    price_cents_per_minute INTEGER NOT NULL,
    session_limit INTEGER NOT NULL,
    billing_mode TEXT NOT NULL CHECK (billing_mode IN ('metered', 'disabled')),
    can_rent INTEGER NOT NULL,
    rent_blocked_reason TEXT,
    environment TEXT NOT NULL
  );

  CREATE TABLE api_keys (
    key_hash TEXT PRIMARY KEY,
    uid TEXT NOT NULL REFERENCES accounts(uid),
    label TEXT NOT NULL,
    hint TEXT NOT NULL,
    created INTEGER NOT NULL,
    revoked INTEGER
  );
  CREATE INDEX api_keys_uid ON api_keys(uid);

  CREATE TABLE profiles (
    id TEXT PRIMARY KEY,
    uid TEXT NOT NULL UNIQUE REFERENCES accounts(uid),
    state TEXT NOT NULL CHECK (state IN ('empty', 'stored', 'saving')),
    holder TEXT,
    exact INTEGER NOT NULL,
    saved_at INTEGER
  );

  CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    uid TEXT NOT NULL REFERENCES accounts(uid),
    seq INTEGER NOT NULL,
    provider TEXT NOT NULL,
    profile_id TEXT,
    request_key TEXT,
    state TEXT NOT NULL CHECK (state IN ('provisioning', 'ready', 'error', 'closing')),
    done INTEGER NOT NULL DEFAULT 0,
    device TEXT,
    screen_w INTEGER,
    screen_h INTEGER,
    billing_mode TEXT NOT NULL,
    price_cents_per_minute INTEGER NOT NULL,
    timeout_seconds INTEGER NOT NULL,
    created INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    ready INTEGER,
    close_requested INTEGER,
    ended INTEGER,
    end_reason TEXT,
    cleanup_status TEXT,
    last INTEGER NOT NULL,
    cost_cents INTEGER NOT NULL DEFAULT 0,
    minutes_debited INTEGER NOT NULL DEFAULT 0,
    failure_code TEXT,
    failure_message TEXT,
    adb_code TEXT,
    adb_enabled INTEGER NOT NULL DEFAULT 1
  );
  CREATE INDEX sessions_live ON sessions(done) WHERE done = 0;
  CREATE INDEX sessions_history ON sessions(uid, created DESC, id DESC) WHERE done = 1;

  CREATE TABLE receipts (
    uid TEXT NOT NULL,
    request_key TEXT NOT NULL,
    body_hash TEXT NOT NULL,
    sid TEXT NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (uid, request_key)
  );

  CREATE TABLE debits (
    sid TEXT NOT NULL,
    minute INTEGER NOT NULL,
    uid TEXT NOT NULL,
    cents INTEGER NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (sid, minute)
  );
  `,
  },
  // device hosts and where each session runs
  {
    only: 'postgres',
    sql: `
  CREATE TABLE hosts (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    adb_host TEXT NOT NULL,
    adb_port INTEGER NOT NULL,
    phones INTEGER NOT NULL,
    boot_slots INTEGER NOT NULL,
    device TEXT NOT NULL,
    started INTEGER NOT NULL,
    heartbeat_ms INTEGER NOT NULL,
    -- How long this host may be silent before any node declares it dead.
    lost_after_ms INTEGER NOT NULL,
    -- What a boot takes there, as measured (eta_seconds of provisioning sessions).
    typical_boot_ms INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('live', 'dead', 'stopped'))
  );
  CREATE INDEX hosts_live ON hosts(state) WHERE state = 'live';

  ALTER TABLE sessions ADD COLUMN host_id TEXT REFERENCES hosts(id);
  ALTER TABLE sessions ADD COLUMN startup_source TEXT;
  CREATE INDEX sessions_queue ON sessions(seq) WHERE done = 0 AND state = 'provisioning' AND host_id IS NULL;
  CREATE INDEX sessions_host ON sessions(host_id) WHERE done = 0;
  CREATE SEQUENCE session_seq;
  `,
  },
  // device hosts' warm pools
  {
    only: 'postgres',
    sql: `
  -- Warm pooled phones a host holds, as of its last heartbeat: hosts that would cold-boot
  -- leave a new temporary session to a host with a warm phone for a moment.
  ALTER TABLE hosts ADD COLUMN warm INTEGER NOT NULL DEFAULT 0;
  `,
  },
  // the device host that holds each profile save
  {
    only: 'postgres',
    sql: `
  -- A profile's save is on the disk of the host that ran its last session: its next session
  -- runs there while that host is live. NULL: nothing saved (or the save went with its host).
  ALTER TABLE profiles ADD COLUMN saved_host TEXT;
  -- Saves made before this are on hosts that restarted for the upgrade (a host that starts
  -- joins anew, with none): say they are gone rather than report them stored and boot fresh.
  UPDATE profiles SET state = 'empty', exact = 0 WHERE state = 'stored';
  `,
  },
  // device hosts' whole pools, for API nodes' metrics
  {
    only: 'postgres',
    sql: `
  -- Pooled phones still booting, as of the last heartbeat, and the host's --pool.
  ALTER TABLE hosts ADD COLUMN warming INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE hosts ADD COLUMN pool_target INTEGER NOT NULL DEFAULT 0;
  `,
  },
  // when a host claimed each session, for eta_seconds
  {
    only: 'postgres',
    sql: `
  ALTER TABLE sessions ADD COLUMN claimed_ms INTEGER;
  `,
  },
  // operators, and the sign-in links and sessions of the dashboard
  {
    sql: `
  -- Operators see the fleet page of the dashboard (accounts create --operator).
  ALTER TABLE accounts ADD COLUMN operator INTEGER NOT NULL DEFAULT 0;

  -- One-time sign-in links (phonelease dashboard): only the sha256 of the token is kept.
  -- A link works once (used) and for 10 minutes after created.
  CREATE TABLE sign_in_links (
    token_hash TEXT PRIMARY KEY,
    uid TEXT NOT NULL REFERENCES accounts(uid),
    created INTEGER NOT NULL,
    used INTEGER
  );

  -- Signed-in dashboard sessions, by the jti of their token: a token is accepted while its
  -- row is here, not signed out and not expired, so a sign-out holds on every API node.
  CREATE TABLE dashboard_sessions (
    jti TEXT PRIMARY KEY,
    uid TEXT NOT NULL REFERENCES accounts(uid),
    created INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    signed_out INTEGER
  );
  CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions(expires_at);
  CREATE INDEX sign_in_links_created ON sign_in_links(created);
  `,
  },
];

/** The migrations one store runs, in order, as that dialect's SQL. */
export function migrationsFor(dialect: Dialect): string[] {
  return MIGRATIONS.filter((m) => m.only === undefined || m.only === dialect).map((m) =>
    dialect === 'postgres' ? m.sql.replace(/\bINTEGER\b/g, 'BIGINT') : m.sql,
  );
}
