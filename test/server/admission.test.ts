/**
 * Admission is a pure decision over facts: the same facts always give the same answer, and
 * a refusal is an error code with its details, never an HTTP status.
 */
import { describe, expect, it } from 'vitest';
import { decideAdmission, type AdmissionFacts } from '../../server/runtime/admission.js';

const facts = (over: Partial<AdmissionFacts> = {}): AdmissionFacts => ({
  body: {},
  bodyHash: 'h1',
  requestKey: null,
  nowMs: 1_800_000_000_000,
  receipt: undefined,
  receiptSession: null,
  account: {
    uid: 'acc_1',
    email: 'a@example.com',
    name: 'A',
    created: 0,
    balance_cents: 1000,
    price_cents_per_minute: 10,
    session_limit: 2,
    billing_mode: 'metered',
    can_rent: 1,
    rent_blocked_reason: null,
    environment: 'local',
    operator: 0,
  },
  activeSessions: 0,
  profile: undefined,
  liveSessions: 0,
  phones: 4,
  retryAfterSeconds: () => 3,
  ...over,
});
const receipt = { uid: 'acc_1', request_key: 'k'.repeat(16), body_hash: 'h1', sid: 'ses_1', created: 0 };
const codeOf = (f: AdmissionFacts) => {
  const d = decideAdmission(f);
  return d.kind === 'refuse' ? d.refusal.code : d.kind;
};

describe('decideAdmission', () => {
  it('admits with the default timeout, and replays a live receipt with the same body', () => {
    expect(decideAdmission(facts())).toEqual({ kind: 'admit', timeoutSeconds: 300, profile: null });
    const replay = facts({
      requestKey: receipt.request_key,
      receipt,
      receiptSession: { live: true, state: null },
    });
    expect(decideAdmission(replay)).toEqual({ kind: 'replay', sid: 'ses_1' });
  });

  it('refuses by code, in the order the contract checks', () => {
    const keyed = { requestKey: receipt.request_key, receipt };
    expect(codeOf(facts({ ...keyed, bodyHash: 'h2', receiptSession: { live: true, state: null } }))).toBe(
      'idempotency_key_reused',
    );
    expect(codeOf(facts({ ...keyed, receiptSession: { live: false, state: 'closing' } }))).toBe(
      'request_completed',
    );
    // A receipt wins over every limit: a replay is never refused for capacity.
    expect(codeOf(facts({ ...keyed, receiptSession: { live: true, state: null }, liveSessions: 4 }))).toBe(
      'replay',
    );
    expect(codeOf(facts({ body: { provider: 'other' } }))).toBe('invalid_request');
    expect(codeOf(facts({ account: { ...facts().account, can_rent: 0 } }))).toBe('rental_unavailable');
    expect(codeOf(facts({ account: { ...facts().account, balance_cents: 19 } }))).toBe('insufficient_credit');
    expect(codeOf(facts({ activeSessions: 2, liveSessions: 4 }))).toBe('session_limit');
    expect(codeOf(facts({ liveSessions: 4 }))).toBe('phones_busy');
  });

  it('says when to retry a busy server in the refusal details', () => {
    const d = decideAdmission(facts({ liveSessions: 4 }));
    expect(d).toMatchObject({
      kind: 'refuse',
      refusal: { code: 'phones_busy', details: { retry_after_seconds: 3 } },
    });
    expect(JSON.stringify(d)).not.toMatch(/\b503\b|status/);
  });
});
