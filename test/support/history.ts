/**
 * What every history record of a released session looks like, whichever server answered
 * (the history contract tests run in-process and against a deployment).
 */
import { expect } from 'vitest';

/** The fields of a history record, and no others. */
export const HISTORY_FIELDS = [
  'billable_minutes',
  'billing_mode',
  'cost_cents',
  'created',
  'device',
  'end_reason',
  'ended',
  'kind',
  'last',
  'phone',
  'platform',
  'provider',
  'ready',
  'sid',
  'uid',
  'usage_minutes',
].sort();

/** Asserts that `h` is the history record of a session of `uid` that its owner released. */
export function expectReleasedRecord(h: object, uid: string): void {
  expect(Object.keys(h).sort()).toEqual(HISTORY_FIELDS);
  expect(h).toMatchObject({
    uid,
    provider: 'shlut',
    end_reason: 'released',
    platform: 'android',
    kind: 'emulator',
    phone: null,
  });
  const { created, ended } = h as { created: number; ended: number };
  expect(ended).toBeGreaterThanOrEqual(created);
}
