/**
 * Versioned schema migrations. PRAGMA user_version records how many have run; each runs
 * once, in a transaction, in order. Never edit a released migration: add the next one.
 */
export const MIGRATIONS: readonly string[] = [
  `
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
];
