// @ts-check
/** How a live session is described in words, on the list and on its own page. */
import { duration } from './format.js';

/**
 * The fields of a live session the pages read (the API's Session).
 * @typedef {{
 *   id: string,
 *   state: 'provisioning' | 'ready' | 'error' | 'closing',
 *   device: string | null,
 *   location?: 'queued' | 'booting',
 *   eta_seconds?: number,
 *   age_s: number,
 *   expires_at: number,
 *   timeout_seconds: number,
 *   profile_id: string | null,
 *   cleanup_pending: boolean,
 *   failure?: { code: string, message: string },
 * }} LiveSession
 */

/** @param {LiveSession} s */
export function stateLabel(s) {
  if (s.state === 'provisioning') return s.location === 'queued' ? 'Queued' : 'Booting';
  if (s.state === 'ready') return 'Ready';
  if (s.state === 'error') return 'Failed to start';
  return 'Ending';
}

/** Where a session that is not ready yet stands, or what it is doing. @param {LiveSession} s */
export function whereLabel(s) {
  if (s.state === 'provisioning') {
    const eta = s.eta_seconds === undefined ? '' : ` (ready in about ${duration(s.eta_seconds)})`;
    return s.location === 'queued' ? `Queued for a boot slot${eta}` : `Booting${eta}`;
  }
  if (s.state === 'ready') return 'Running';
  if (s.state === 'error') return s.failure?.message ?? 'The phone did not start.';
  return s.cleanup_pending ? 'Handing the phone back' : 'Ended';
}

/**
 * From the server's own figures (the deadline counts from creation, as age does), so a
 * browser whose clock is off still shows the right time.
 * @param {LiveSession} s
 */
export function timeLeft(s) {
  return duration(s.timeout_seconds - s.age_s);
}

/** @param {LiveSession} s */
export const phoneKind = (s) => (s.profile_id ? 'Profile phone' : 'Temporary phone');

/** @param {LiveSession} s */
export const deviceName = (s) => s.device ?? 'Android phone';
