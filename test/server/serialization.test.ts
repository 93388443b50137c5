/**
 * The response schemas rewritten for the serialiser mean the same as the originals: Ajv
 * accepts and refuses the same values under both, and no union is left for
 * fast-json-stringify to validate per response.
 */
import fc from 'fast-check';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { Account, HistoryRecord, Session } from '../../src/api/schemas.js';
import { forSerializer } from '../../server/api/serialization.js';

const ajv = new Ajv({ strict: false });

const nullable = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
const valid = fc.record(
  {
    id: fc.string(),
    state: fc.constantFrom('provisioning', 'ready', 'error', 'closing'),
    provider: fc.string(),
    device: nullable(fc.string()),
    close_requested: nullable(fc.integer()),
    cleanup_pending: fc.boolean(),
    cleanup_status: nullable(fc.constantFrom('complete', 'allocation_uncertain', 'pending')),
    billing_mode: fc.constantFrom('metered', 'disabled'),
    phone: nullable(fc.string()),
    watch_url: fc.string(),
    screen: nullable(fc.record({ w: fc.integer(), h: fc.integer() })),
    age_s: fc.integer(),
    ready_age_s: fc.integer(),
    idle_s: fc.integer(),
    ops: fc.array(fc.string()),
    expires_at: fc.integer(),
    timeout_seconds: fc.integer(),
    profile_id: nullable(fc.string()),
    location: fc.constantFrom('queued', 'booting'),
    platform: fc.constantFrom('android', 'ios'),
    kind: fc.constantFrom('emulator', 'device'),
    startup: fc.record({ source: fc.constantFrom('cold', 'snapshot', 'pool') }),
  },
  {
    requiredKeys: [
      'id',
      'state',
      'provider',
      'device',
      'close_requested',
      'cleanup_pending',
      'cleanup_status',
      'billing_mode',
      'phone',
      'watch_url',
      'screen',
      'age_s',
      'ready_age_s',
      'idle_s',
      'ops',
      'expires_at',
      'timeout_seconds',
      'profile_id',
      'platform',
      'kind',
    ],
  },
);
/** A valid session, or one with a field set to a value of the wrong kind or removed. */
const session = fc
  .tuple(
    valid,
    fc.option(
      fc.tuple(
        fc.constantFrom(
          'state',
          'device',
          'close_requested',
          'cleanup_status',
          'billing_mode',
          'screen',
          'location',
          'platform',
          'kind',
          'startup',
        ),
        fc.oneof(
          fc.constant(undefined),
          fc.constant(null),
          fc.constantFrom('x', 'Ready', ''),
          fc.integer(),
          fc.double(),
          fc.record({ w: fc.string() }),
          fc.record({ source: fc.string() }),
        ),
      ),
    ),
  )
  .map(([value, change]) => {
    if (!change) return value;
    const copy: Record<string, unknown> = { ...value };
    if (change[1] === undefined) delete copy[change[0]];
    else copy[change[0]] = change[1];
    return copy;
  });

describe('forSerializer', () => {
  it('leaves no union in the API response schemas', () => {
    for (const schema of [Session, Account, HistoryRecord])
      expect(JSON.stringify(forSerializer(schema))).not.toContain('anyOf');
  });

  it('accepts and refuses exactly what the TypeBox schema does', () => {
    const original = ajv.compile(Session);
    const rewritten = ajv.compile(forSerializer(Session) as object);
    let accepted = 0;
    fc.assert(
      fc.property(session, (value) => {
        expect(rewritten(value)).toBe(original(value));
        if (original(value)) accepted++;
      }),
      { numRuns: 500 },
    );
    // Both outcomes were exercised.
    expect(accepted).toBeGreaterThan(50);
    expect(accepted).toBeLessThan(500);
  });
});
