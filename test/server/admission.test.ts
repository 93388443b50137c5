/**
 * Admission is a pure decision over facts: the same facts always give the same answer, and
 * a refusal is an error code with its details, never an HTTP status.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../server/errors.js';
import { admissionVerdict, type AdmissionFacts } from '../../server/runtime/admission.js';

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
const decide = (f: AdmissionFacts) => admissionVerdict(f, { uid: 'acc_1', id: () => 'ses_2', seq: () => 1 });
const codeOf = (f: AdmissionFacts) => {
  try {
    return decide(f).kind;
  } catch (err) {
    return err instanceof ApiError ? err.code : String(err);
  }
};

describe('admissionVerdict', () => {
  it('admits with the default timeout, and replays a live receipt with the same body', () => {
    expect(decide(facts())).toMatchObject({ kind: 'admit', row: { timeout_seconds: 300, profile_id: null } });
    const replay = facts({
      requestKey: receipt.request_key,
      receipt,
      receiptSession: { live: true, state: null },
    });
    expect(decide(replay)).toEqual({ kind: 'replay' });
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
    expect(() => decide(facts({ liveSessions: 4 }))).toThrow(
      expect.objectContaining({ code: 'phones_busy', details: { retry_after_seconds: 3 } }),
    );
  });
});
