/**
 * Sessions, accounts and what belongs to them as both stores keep them: one shape per table,
 * read and written by the SQLite store of the single server and the PostgreSQL store of a
 * deployment alike (server/stores/migrations.ts has the tables).
 */
import type { BillingMode, EndReason, SessionState } from '../../src/api/schemas.js';

/** Where a session's phone came from (the API's `startup.source`). */
export type StartupSource = 'cold' | 'snapshot' | 'pool';

export interface AccountRow {
  uid: string;
  email: string;
  name: string;
  created: number;
  balance_cents: number;
  price_cents_per_minute: number;
  session_limit: number;
  billing_mode: BillingMode;
  can_rent: number;
  rent_blocked_reason: string | null;
  environment: string;
  /** 1 for an operator (the dashboard's fleet page). */
  operator: number;
}

export interface KeyRow {
  key_hash: string;
  uid: string;
  label: string;
  hint: string;
  created: number;
  revoked: number | null;
}

export interface ProfileRow {
  id: string;
  uid: string;
  state: 'empty' | 'stored' | 'saving';
  holder: string | null;
  exact: number;
  saved_at: number | null;
}

export interface SessionRow {
  id: string;
  uid: string;
  seq: number;
  provider: string;
  profile_id: string | null;
  request_key: string | null;
  state: SessionState;
  /** 1 once cleanup is confirmed: the session then lives only in history. */
  done: number;
  device: string | null;
  screen_w: number | null;
  screen_h: number | null;
  billing_mode: BillingMode;
  price_cents_per_minute: number;
  timeout_seconds: number;
  created: number;
  expires_at: number;
  ready: number | null;
  close_requested: number | null;
  ended: number | null;
  end_reason: EndReason | null;
  cleanup_status: 'complete' | 'allocation_uncertain' | 'pending' | null;
  last: number;
  cost_cents: number;
  minutes_debited: number;
  failure_code: string | null;
  failure_message: string | null;
  adb_code: string | null;
  adb_enabled: number;
}

/** A new account's rows: the account, its first key and its (empty) profile phone, inserted together. */
export interface AccountRows {
  account: AccountRow;
  key: Omit<KeyRow, 'revoked'>;
  profile: ProfileRow;
}

export interface ReceiptRow {
  uid: string;
  request_key: string;
  body_hash: string;
  sid: string;
  created: number;
}

/** Every column of a session row, in table order (both stores write them all). */
export const SESSION_COLUMNS: Array<keyof SessionRow> = [
  'id',
  'uid',
  'seq',
  'provider',
  'profile_id',
  'request_key',
  'state',
  'done',
  'device',
  'screen_w',
  'screen_h',
  'billing_mode',
  'price_cents_per_minute',
  'timeout_seconds',
  'created',
  'expires_at',
  'ready',
  'close_requested',
  'ended',
  'end_reason',
  'cleanup_status',
  'last',
  'cost_cents',
  'minutes_debited',
  'failure_code',
  'failure_message',
  'adb_code',
  'adb_enabled',
];

/**
 * Where a session of a deployment runs: columns only the shared store has. `host_id` is the
 * device host that claimed it (null while queued), `claimed_ms` when (eta_seconds counts from
 * there), `startup_source` where its phone came from.
 */
export interface Placement {
  host_id: string | null;
  claimed_ms: number | null;
  startup_source: StartupSource | null;
}

/** A device host of a deployment, as it registered and last heartbeated. */
export interface HostRow {
  id: string;
  url: string;
  adb_host: string;
  adb_port: number;
  phones: number;
  boot_slots: number;
  device: string;
  started: number;
  heartbeat_ms: number;
  lost_after_ms: number;
  typical_boot_ms: number;
  /** Pooled phones warm and still booting, and its --pool, as of its last heartbeat. */
  warm: number;
  warming: number;
  pool_target: number;
  state: 'live' | 'dead' | 'stopped';
}
