/**
 * The rules of a session's life (server/runtime/rules.ts), each on its own: what the single
 * server's runtime, device hosts and the shared store's SQL decide by.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PhoneBootError } from '../../server/devices/types.js';
import {
  canonicalJson,
  endingOf,
  expiryOf,
  hostSlots,
  lostEndTime,
  minutesDue,
  newAdbCode,
  nextMinuteStart,
  nextTypicalBootMs,
  planDebits,
  queuedEtaSeconds,
  retryAfterSeconds,
  startupFailure,
  tapRefusal,
  usageMinutes,
  type Billed,
  type HostCapacity,
} from '../../server/runtime/rules.js';
import { cryptoRandom } from '../../server/secrets.js';

const READY = 1_000_000;
const metered = (s: Partial<Billed> = {}): Billed => ({
  billing_mode: 'metered',
  ready: READY,
  expires_at: READY + 3600,
  minutes_debited: 0,
  price_cents_per_minute: 10,
  ...s,
});

describe('idempotency and deadlines', () => {
  it('reads two bodies as the same request whatever their key order', () => {
    expect(canonicalJson({ b: 1, a: [{ y: 2, x: null }] })).toBe(
      canonicalJson({ a: [{ x: null, y: 2 }], b: 1 }),
    );
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: '1' }));
  });

  it('rounds the admission up to a whole second, so a session lives at least its timeout', () => {
    expect(expiryOf(5_000, 60)).toBe(65);
    expect(expiryOf(5_001, 1)).toBe(7);
  });

  it('asks phones_busy callers back in 1 s while a phone is being freed, else at the soonest deadline within 1 to 5 s', () => {
    expect(retryAfterSeconds({ closing: 1, soonestExpiresAt: 100 }, 0)).toBe(1);
    expect(retryAfterSeconds({ closing: 0, soonestExpiresAt: 103 }, 100)).toBe(3);
    expect(retryAfterSeconds({ closing: 0, soonestExpiresAt: 500 }, 100)).toBe(5);
    expect(retryAfterSeconds({ closing: 0, soonestExpiresAt: 100 }, 100)).toBe(1);
    expect(retryAfterSeconds({ closing: 0, soonestExpiresAt: null }, 100)).toBe(5);
  });
});

describe('billing', () => {
  it('is due every started minute from ready, never past the deadline, and never unmetered', () => {
    expect(minutesDue(metered(), READY)).toBe(0);
    expect(minutesDue(metered(), READY + 1)).toBe(1);
    expect(minutesDue(metered(), READY + 60)).toBe(1);
    expect(minutesDue(metered(), READY + 61)).toBe(2);
    expect(minutesDue(metered({ expires_at: READY + 90 }), READY + 10_000)).toBe(2);
    expect(minutesDue(metered({ billing_mode: 'disabled' }), READY + 600)).toBe(0);
    expect(minutesDue(metered({ ready: null }), READY + 600)).toBe(0);
  });

  it('starts the next minute one second after the last paid one, unless that is past the deadline', () => {
    expect(nextMinuteStart(metered())).toBe(READY + 1);
    expect(nextMinuteStart(metered({ minutes_debited: 2 }))).toBe(READY + 121);
    expect(nextMinuteStart(metered({ minutes_debited: 2, expires_at: READY + 120 }))).toBeNull();
    expect(nextMinuteStart(metered({ billing_mode: 'disabled' }))).toBeNull();
  });

  it('plans each minute due once, dated when it started, until the balance runs out', () => {
    expect(planDebits(metered({ minutes_debited: 1 }), 100, READY + 150)).toEqual({
      debits: [
        { minute: 2, cents: 10, at: READY + 61 },
        { minute: 3, cents: 10, at: READY + 121 },
      ],
      balance: 80,
      exhaustedAt: null,
    });
    // 25 cents pay two minutes: the paid time ends where the second minute ends.
    expect(planDebits(metered(), 25, READY + 200)).toEqual({
      debits: [
        { minute: 1, cents: 10, at: READY + 1 },
        { minute: 2, cents: 10, at: READY + 61 },
      ],
      balance: 5,
      exhaustedAt: READY + 120,
    });
    expect(planDebits(metered({ minutes_debited: 4 }), 0, READY + 200)).toEqual({
      debits: [],
      balance: 0,
      exhaustedAt: null,
    });
  });

  it('debits as many minutes as history calls usage, for any end up to the deadline', () => {
    fc.assert(
      // A session ends at its deadline at the latest (READY + 3600 here).
      fc.property(fc.nat(3600), fc.nat(100), (elapsed, debitedBefore) => {
        const ended = READY + elapsed;
        const s = metered({ minutes_debited: Math.min(debitedBefore, usageMinutes(READY, ended)) });
        const plan = planDebits(s, 1_000_000, ended);
        expect(s.minutes_debited + plan.debits.length).toBe(usageMinutes(READY, ended));
        for (const d of plan.debits) expect(d.at).toBeGreaterThan(READY);
        for (const d of plan.debits) expect(d.at).toBeLessThanOrEqual(Math.max(ended, READY + 1));
      }),
    );
  });
});

describe('an ending', () => {
  it('records a failed start as failed, whatever ended it', () => {
    expect(endingOf('error', 'released', READY + 10, null)).toEqual({ reason: 'failed', at: READY + 10 });
  });

  it('ends a session whose credit ran out then, as credit_exhausted', () => {
    expect(endingOf('ready', 'released', READY + 600, READY + 120)).toEqual({
      reason: 'credit_exhausted',
      at: READY + 120,
    });
  });

  it('ends any other at the time and for the reason given', () => {
    expect(endingOf('ready', 'expired', READY + 600, null)).toEqual({ reason: 'expired', at: READY + 600 });
    expect(endingOf('queued', 'released', READY + 1, null)).toEqual({ reason: 'released', at: READY + 1 });
  });
});

describe('a lost session', () => {
  const lost = (o: Partial<Parameters<typeof lostEndTime>[0]>) =>
    lostEndTime({
      ready: READY,
      created: READY - 5,
      expiresAt: READY + 3600,
      lastAlive: READY + 100,
      lastDebit: null,
      now: READY + 500,
      ...o,
    });

  it('ends when its runtime was last known alive', () => {
    expect(lost({})).toBe(READY + 100);
  });

  it('never before its last debit, nor before ready, nor past its deadline or now', () => {
    expect(lost({ lastDebit: READY + 121 })).toBe(READY + 121);
    expect(lost({ lastAlive: READY - 50 })).toBe(READY);
    expect(lost({ expiresAt: READY + 60 })).toBe(READY + 60);
    expect(lost({ lastAlive: READY + 900 })).toBe(READY + 500);
  });

  it('that never got a phone counts from its creation', () => {
    expect(lost({ ready: null, lastAlive: READY - 50 })).toBe(READY - 5);
  });
});

describe('boot times', () => {
  it('follow what boots take, as a moving average', () => {
    expect(nextTypicalBootMs(10_000, 0)).toBe(7_000);
    let typical = 1_000;
    for (let i = 0; i < 30; i++) typical = nextTypicalBootMs(typical, 20_000);
    expect(typical).toBeGreaterThan(19_900);
  });
});

const NOW = 1_000_000;
const host = (h: Partial<HostCapacity>): HostCapacity => ({
  boot_slots: 1,
  phones: 10,
  typical_boot_ms: 10_000,
  warm: 0,
  warming: 0,
  held: 0,
  claimed: [],
  ...h,
});
const eta = (
  hosts: HostCapacity[],
  q: { temporary?: boolean; ahead?: number; temporaryAhead?: number } = {},
) => {
  const { slots, pooled } = hostSlots(hosts, NOW);
  return queuedEtaSeconds({
    temporary: q.temporary ?? true,
    ahead: q.ahead ?? 0,
    temporaryAhead: q.temporaryAhead ?? 0,
    pooledReadyInMs: pooled,
    slots,
  });
};

describe('eta_seconds of a queued session', () => {
  it('plays the queue forward over the boot slots', () => {
    const slots = [
      { freeInMs: 0, typicalMs: 4_000 },
      { freeInMs: 3_000, typicalMs: 4_000 },
    ];
    const at = (ahead: number) =>
      queuedEtaSeconds({ temporary: false, ahead, temporaryAhead: 0, pooledReadyInMs: [], slots });
    expect([0, 1, 2, 3].map(at)).toEqual([4, 7, 8, 11]);
  });

  it('waits for a claimed boot to end, then boots at that host’s pace', () => {
    // Claimed 4 s ago on a host whose boots take 10 s: its slot frees in 6 s.
    const busy = host({ held: 1, claimed: [NOW - 4_000] });
    expect(eta([busy])).toBe(16);
    expect(eta([busy], { ahead: 1 })).toBe(26);
    // A second host with a free slot and faster boots takes the first in line.
    const fast = host({ typical_boot_ms: 3_000 });
    expect(eta([busy, fast])).toBe(3);
    expect(eta([busy, fast], { ahead: 1 })).toBe(6);
  });

  it('offers no free slot on a host without room, and says so when no host has one', () => {
    const full = host({ phones: 2, held: 2 });
    expect(eta([full])).toBeUndefined();
    expect(eta([full, host({ boot_slots: 2 })], { ahead: 1 })).toBe(10);
  });

  it('hands warm phones to temporary sessions only, and counts a warming one half-way', () => {
    const pooled = host({ boot_slots: 2, warm: 1, warming: 1 });
    expect(eta([pooled])).toBe(0);
    expect(eta([pooled], { ahead: 1, temporaryAhead: 1 })).toBe(5);
    // A profile session boots its own phone: one slot is free now, the other after the warming boot.
    expect(eta([pooled], { temporary: false })).toBe(10);
  });
});

describe('phones', () => {
  it('refuses a tap outside the screen, saying its size', () => {
    const screen = { w: 1080, h: 2400 };
    expect(tapRefusal(1079, 2399, screen)).toBeNull();
    expect(tapRefusal(1080, 0, screen)).toBe('(1080, 0) is outside the 1080x2400 screen.');
    expect(tapRefusal(0, 2400, screen)).toContain('outside');
  });

  it("shows a backend's own startup failure, and a generic one for anything else", () => {
    expect(startupFailure(new PhoneBootError('avd_missing', 'No AVD named x.'))).toEqual({
      code: 'avd_missing',
      message: 'No AVD named x.',
    });
    const generic = startupFailure(new Error('ENOMEM at 0x7f'));
    expect(generic.code).toBe('boot_failed');
    expect(generic.message).not.toContain('ENOMEM');
  });

  it('makes ADB codes that redaction recognises, never the same twice', () => {
    const codes = new Set(Array.from({ length: 100 }, () => newAdbCode(cryptoRandom)));
    expect(codes.size).toBe(100);
    for (const code of codes) expect(code).toMatch(/^pau_[0-9A-Za-z]{32}$/);
  });
});
