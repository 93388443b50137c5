/**
 * The phone's lock: its credential (a PIN, a password or a pattern) and whether the lock
 * screen is disabled, which `locksettings` (Android's LockSettingsShellCommand) reads and
 * changes and the lock screen asks for. A phone starts with no credential and the lock screen
 * disabled (Settings' "None"), as device farms hand phones out; then POWER only turns the
 * screen off. With `locksettings set-disabled false` it is a swipe lock; with a credential
 * the keyguard's bouncer asks for it.
 */
import type { LockKind } from './ui/types.js';

export interface LockSettings {
  credential: { type: 'pin' | 'password' | 'pattern'; value: string } | null;
  /** The lock screen is disabled ("None"); it counts only while there is no credential. */
  disabled: boolean;
}

export function initialLockSettings(): LockSettings {
  return { credential: null, disabled: true };
}

/** What the lock screen shows when the phone locks. */
export function lockKind(lock: LockSettings): LockKind {
  if (lock.credential) return lock.credential.type;
  return lock.disabled ? 'none' : 'swipe';
}
