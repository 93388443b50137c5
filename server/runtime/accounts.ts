/**
 * Accounts, API keys and authentication. Only sha256 hashes of keys are stored; a raw
 * key exists once, in the response that created it.
 */
import type { BillingMode } from '../../src/api/schemas.js';
import type { Clock } from '../clock.js';
import { seconds } from '../clock.js';
import { keyHint, randomToken, safeEqual, sha256Hex, type RandomSource } from '../secrets.js';
import type { AccountRow, AccountRows, KeyRow } from './rows.js';
import type { Store } from '../stores/sqlite/store.js';

export interface NewAccount {
  email?: string;
  name?: string;
  balanceCents?: number;
  priceCentsPerMinute?: number;
  sessionLimit?: number;
  billingMode?: BillingMode;
  canRent?: boolean;
  rentBlockedReason?: string;
}

export interface CreatedAccount {
  uid: string;
  key: string;
  profile_id: string;
}

export const ACCOUNT_DEFAULTS = {
  balanceCents: 10_000,
  priceCentsPerMinute: 10,
  sessionLimit: 50,
  billingMode: 'metered' as BillingMode,
};

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

/**
 * Resolves bearer keys to accounts. Positive lookups are cached (the hot path of every
 * request); a miss always asks the store, so accounts and keys created by another process
 * on the same data directory work at once.
 */
export class AccountService {
  private readonly keyCache = new Map<string, string>();
  private readonly accounts = new Map<string, AccountRow>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly random: RandomSource,
  ) {}

  /** The account uid for a raw pck_ key, or null. */
  authenticate(rawKey: string): string | null {
    const hash = sha256Hex(rawKey);
    const cached = this.keyCache.get(hash);
    if (cached) return cached;
    const row = this.store.key(hash);
    // The lookup is by hash; the constant-time compare keeps the final check free of
    // content-dependent timing as well.
    if (!row || row.revoked !== null || !safeEqual(row.key_hash, hash)) return null;
    this.keyCache.set(hash, row.uid);
    return row.uid;
  }

  account(uid: string): AccountRow {
    let row = this.accounts.get(uid);
    if (!row) {
      row = this.store.account(uid);
      if (!row) throw new Error(`account ${uid} vanished from the store`);
      this.accounts.set(uid, row);
    }
    return row;
  }

  /** Persists a new balance (call inside the debit's transaction). */
  setBalance(uid: string, balance: number): void {
    this.store.setBalance(uid, balance);
    this.account(uid).balance_cents = balance;
  }

  create(opts: NewAccount): CreatedAccount {
    return createAccount(this.store, this.clock, this.random, opts);
  }

  createKey(uid: string, label: string): { key: string; row: KeyRow } {
    const key = newApiKey(this.random);
    const row: KeyRow = {
      key_hash: sha256Hex(key),
      uid,
      label,
      hint: keyHint(key),
      created: seconds(this.clock.now()),
      revoked: null,
    };
    this.store.insertKey(row);
    return { key, row };
  }

  keys(uid: string): KeyRow[] {
    return this.store.activeKeys(uid);
  }

  revokeKey(uid: string, keyHash: string): boolean {
    const done = this.store.revokeKey(uid, keyHash, seconds(this.clock.now()));
    if (done) this.keyCache.delete(keyHash);
    return done;
  }
}
