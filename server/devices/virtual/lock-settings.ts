/**
 * The phone's lock: its credential (a PIN, a password or a pattern) and whether the lock
 * screen is disabled, which `locksettings` (Android's LockSettingsShellCommand) reads and
 * changes and the lock screen asks for. A phone starts with no credential and the lock screen
 * disabled (Settings' "None"), as device farms hand phones out; then POWER only turns the
 * screen off. With `locksettings set-disabled false` it is a swipe lock; with a credential
 * the keyguard's bouncer asks for it.
 */
import { createHash, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import type { LockKind } from './ui/types.js';

export type CredentialType = 'pin' | 'password' | 'pattern';

/**
 * How a credential's hash was derived. scrypt (as Android stretches a lock screen
 * credential) with its cost, kept beside the hash so that a later cost still reads older
 * saves; `sha256` is one salted SHA-256, what saves made before scrypt hold.
 */
export type CredentialKdf = { name: 'scrypt'; N: number; r: number; p: number } | { name: 'sha256' };

/**
 * A credential as the phone keeps it: salted and hashed, never as typed (as Android keeps
 * only what it derives from it), so a profile's save holds no PIN or password, only a hash
 * that is slow to guess from.
 */
export interface StoredCredential {
  type: CredentialType;
  kdf: CredentialKdf;
  salt: string;
  hash: string;
  /**
   * A PIN's number of digits, which Android 14 keeps beside it for auto-confirm: the
   * bouncer checks a PIN once, when that many digits are typed. Absent in older saves (the
   * bouncer then checks after every digit).
   */
  length?: number;
}

export interface LockSettings {
  credential: StoredCredential | null;
  /** The lock screen is disabled ("None"); it counts only while there is no credential. */
  disabled: boolean;
}

/**
 * The cost of a new credential's scrypt: Android's own for a lock screen credential
 * (SyntheticPasswordManager's log N 11, log r 3, log p 1). A check takes a few tens of
 * milliseconds, which the bouncer pays once, when a PIN has its length (it unlocks as soon
 * as it is right, without ENTER, as Android 14's auto-confirm does); guessing even a
 * 4-digit PIN from a save costs minutes of CPU, not microseconds.
 */
const SCRYPT = { name: 'scrypt', N: 2 ** 11, r: 8, p: 2 } as const;
const HASH_BYTES = 32;

/** The largest scrypt a save may ask for (128 * N * r bytes of memory): 64 MiB. */
const SCRYPT_MAX_MEMORY = 64 * 1024 * 1024;

function derive(kdf: CredentialKdf, salt: string, value: string): Buffer {
  if (kdf.name === 'sha256')
    return createHash('sha256').update(salt).update('\0').update(value, 'utf8').digest();
  const { N, r, p } = kdf;
  return scryptSync(Buffer.from(value, 'utf8'), Buffer.from(salt, 'hex'), HASH_BYTES, {
    N,
    r,
    p,
    maxmem: 2 * SCRYPT_MAX_MEMORY,
  });
}

export function storeCredential(type: CredentialType, value: string): StoredCredential {
  const salt = randomBytes(16).toString('hex');
  const hash = derive(SCRYPT, salt, value).toString('hex');
  return { type, kdf: { ...SCRYPT }, salt, hash, ...(type === 'pin' && { length: value.length }) };
}

/**
 * Whether `entered` is the phone's credential (false when it has none). A credential from
 * an older save (one SHA-256) that matches is hashed again with scrypt, so that the next
 * save no longer holds the fast hash.
 */
export function credentialMatches(lock: LockSettings, entered: string): boolean {
  const c = lock.credential;
  if (!c || (c.length !== undefined && entered.length !== c.length)) return false;
  const expected = Buffer.from(c.hash, 'hex');
  const actual = derive(c.kdf, c.salt, entered);
  const matches = actual.length === expected.length && timingSafeEqual(actual, expected);
  if (matches && c.kdf.name !== 'scrypt') lock.credential = storeCredential(c.type, entered);
  return matches;
}

const isPowerOfTwo = (n: number) => n > 1 && Number.isInteger(Math.log2(n));

/** A saved key derivation; absent in saves from before scrypt (one salted SHA-256). */
function parseKdf(value: unknown): CredentialKdf | null {
  if (value === undefined) return { name: 'sha256' };
  if (!value || typeof value !== 'object') return null;
  const { name, N, r, p } = value as Record<string, unknown>;
  if (name === 'sha256') return { name };
  if (name !== 'scrypt' || typeof N !== 'number' || typeof r !== 'number' || typeof p !== 'number')
    return null;
  // A cost a damaged (or doctored) save could make huge is refused, not run.
  if (!isPowerOfTwo(N) || !Number.isInteger(r) || r < 1 || !Number.isInteger(p) || p < 1 || p > 4)
    return null;
  if (128 * N * r > SCRYPT_MAX_MEMORY) return null;
  return { name, N, r, p };
}

/**
 * A saved lock (from a profile's save, after a JSON round trip), or null when it is not
 * one (the save is then damaged: state.ts refuses it rather than hand out an unlocked phone).
 */
export function parseLockSettings(value: unknown): LockSettings | null {
  if (!value || typeof value !== 'object') return null;
  const { credential, disabled } = value as Partial<LockSettings>;
  if (typeof disabled !== 'boolean') return null;
  if (credential === null) return { credential: null, disabled };
  if (!credential || typeof credential !== 'object') return null;
  const c = credential as Partial<Record<keyof StoredCredential, unknown>>;
  const kdf = parseKdf(c.kdf);
  if (
    !kdf ||
    typeof c.type !== 'string' ||
    !['pin', 'password', 'pattern'].includes(c.type) ||
    typeof c.salt !== 'string' ||
    typeof c.hash !== 'string' ||
    !/^[0-9a-f]{64}$/.test(c.hash) ||
    (kdf.name === 'scrypt' && !/^(?:[0-9a-f]{2}){16,}$/.test(c.salt)) ||
    (c.length !== undefined && (c.type !== 'pin' || !Number.isInteger(c.length) || (c.length as number) < 1))
  )
    return null;
  const type = c.type as CredentialType;
  const length = c.length as number | undefined;
  return {
    credential: { type, kdf, salt: c.salt, hash: c.hash, ...(length !== undefined && { length }) },
    disabled,
  };
}

export function initialLockSettings(): LockSettings {
  return { credential: null, disabled: true };
}

/** What the lock screen shows when the phone locks. */
export function lockKind(lock: LockSettings): LockKind {
  if (lock.credential) return lock.credential.type;
  return lock.disabled ? 'none' : 'swipe';
}
