/**
 * The phone's lock: its credential (a PIN, a password or a pattern) and whether the lock
 * screen is disabled, which `locksettings` (Android's LockSettingsShellCommand) reads and
 * changes and the lock screen asks for. A phone starts with no credential and the lock screen
 * disabled (Settings' "None"), as device farms hand phones out; then POWER only turns the
 * screen off. With `locksettings set-disabled false` it is a swipe lock; with a credential
 * the keyguard's bouncer asks for it.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { LockKind } from './ui/types.js';

export type CredentialType = 'pin' | 'password' | 'pattern';

/**
 * A credential as the phone keeps it: salted and hashed, never as typed (as Android keeps
 * only what it derives from it), so a profile's save holds no PIN or password.
 */
export interface StoredCredential {
  type: CredentialType;
  salt: string;
  hash: string;
}

export interface LockSettings {
  credential: StoredCredential | null;
  /** The lock screen is disabled ("None"); it counts only while there is no credential. */
  disabled: boolean;
}

function digest(salt: string, value: string): string {
  return createHash('sha256').update(salt).update('\0').update(value, 'utf8').digest('hex');
}

export function storeCredential(type: CredentialType, value: string): StoredCredential {
  const salt = randomBytes(16).toString('hex');
  return { type, salt, hash: digest(salt, value) };
}

/** Whether `entered` is the phone's credential (false when it has none). */
export function credentialMatches(lock: LockSettings, entered: string): boolean {
  const c = lock.credential;
  if (!c) return false;
  return timingSafeEqual(Buffer.from(digest(c.salt, entered), 'hex'), Buffer.from(c.hash, 'hex'));
}

/** A saved lock (from a profile's save, after a JSON round trip), or null when it is not one. */
export function parseLockSettings(value: unknown): LockSettings | null {
  if (!value || typeof value !== 'object') return null;
  const { credential, disabled } = value as Partial<LockSettings>;
  if (typeof disabled !== 'boolean') return null;
  if (credential === null) return { credential: null, disabled };
  const c = credential as Partial<StoredCredential> | undefined;
  if (
    !c ||
    !['pin', 'password', 'pattern'].includes(c.type ?? '') ||
    typeof c.salt !== 'string' ||
    !/^[0-9a-f]{64}$/.test(c.hash ?? '')
  )
    return null;
  return { credential: { type: c.type!, salt: c.salt, hash: c.hash! }, disabled };
}

export function initialLockSettings(): LockSettings {
  return { credential: null, disabled: true };
}

/** What the lock screen shows when the phone locks. */
export function lockKind(lock: LockSettings): LockKind {
  if (lock.credential) return lock.credential.type;
  return lock.disabled ? 'none' : 'swipe';
}
