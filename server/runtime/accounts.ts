/**
 * New accounts and API keys, as both stores keep them. Only sha256 hashes of keys are
 * stored; a raw key exists once, in the response that created it.
 */
import type { BillingMode } from '../../src/api/schemas.js';
import type { Clock } from '../clock.js';
import { seconds } from '../clock.js';
import { keyHint, randomToken, sha256Hex, type RandomSource } from '../secrets.js';
import type { AccountRows, KeyRow } from './rows.js';

export interface NewAccount {
  email?: string;
  name?: string;
  balanceCents?: number;
  priceCentsPerMinute?: number;
  sessionLimit?: number;
  billingMode?: BillingMode;
  canRent?: boolean;
  rentBlockedReason?: string;
  /** An operator sees the dashboard's fleet page (`accounts create --operator`). */
  operator?: boolean;
}

export interface CreatedAccount {
  uid: string;
  key: string;
  profile_id: string;
}

/** What a new account gets unless told otherwise (`phonelease accounts create` and the first start). */
export const ACCOUNT_DEFAULTS = {
  balanceCents: 10_000,
  priceCentsPerMinute: 10,
  sessionLimit: 50,
  billingMode: 'metered',
} as const satisfies Required<
  Pick<NewAccount, 'balanceCents' | 'priceCentsPerMinute' | 'sessionLimit' | 'billingMode'>
>;

export const newApiKey = (random: RandomSource): string => `pck_${randomToken(random, 40)}`;

/** Builds a new account's rows (each store inserts them in one transaction), and what its creator is told. */
export function newAccountRows(
  clock: Clock,
  random: RandomSource,
  opts: NewAccount,
): AccountRows & { created: CreatedAccount } {
  const now = seconds(clock.now());
  const uid = `acc_${randomToken(random, 16)}`;
  const profileId = `prof_${randomToken(random, 16)}`;
  const key = newApiKey(random);
  const canRent = opts.canRent ?? true;
  return {
    account: {
      uid,
      email: opts.email ?? `${uid}@localhost`,
      name: opts.name ?? 'Local account',
      created: now,
      balance_cents: opts.balanceCents ?? ACCOUNT_DEFAULTS.balanceCents,
      price_cents_per_minute: opts.priceCentsPerMinute ?? ACCOUNT_DEFAULTS.priceCentsPerMinute,
      session_limit: opts.sessionLimit ?? ACCOUNT_DEFAULTS.sessionLimit,
      billing_mode: opts.billingMode ?? ACCOUNT_DEFAULTS.billingMode,
      can_rent: canRent ? 1 : 0,
      rent_blocked_reason: canRent
        ? null
        : (opts.rentBlockedReason ?? 'Rentals are not enabled for this account.'),
      environment: 'local',
      operator: opts.operator === true ? 1 : 0,
    },
    key: { key_hash: sha256Hex(key), uid, label: 'first key', hint: keyHint(key), created: now },
    profile: { id: profileId, uid, state: 'empty', holder: null, exact: 1, saved_at: now },
    created: { uid, key, profile_id: profileId },
  };
}

/**
 * Creates an account with its first key and its (empty) profile phone on the SQLite store,
 * so `phonelease accounts create` can add accounts while a server runs on the same data.
 */
export function createAccount(
  store: { insertAccount(rows: AccountRows): void },
  clock: Clock,
  random: RandomSource,
  opts: NewAccount,
): CreatedAccount {
  const rows = newAccountRows(clock, random, opts);
  store.insertAccount(rows);
  return rows.created;
}

/** A new API key of the account, and its row (only the key's hash is stored; the key is shown once). */
export function newKey(
  clock: Clock,
  random: RandomSource,
  uid: string,
  label: string,
): { key: string; row: KeyRow } {
  const key = newApiKey(random);
  const row: KeyRow = {
    key_hash: sha256Hex(key),
    uid,
    label,
    hint: keyHint(key),
    created: seconds(clock.now()),
    revoked: null,
  };
  return { key, row };
}
