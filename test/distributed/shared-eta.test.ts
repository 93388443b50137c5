/**
 * What a deployment's eta_seconds model makes of the live hosts (shared-eta.ts capacity, fed
 * to runtime/eta.ts): claimed boots hold their slots until they should end, a host offers
 * free slots only while it has room, warm pooled phones serve temporary sessions at once and
 * warming ones count as half-way through their boot, and each slot boots at its host's pace.
 */
import { describe, expect, it } from 'vitest';
import { queuedEtaSeconds } from '../../server/runtime/eta.js';
import { capacity, type LiveHost } from '../../server/distributed/shared-eta.js';

const NOW = 1_000_000;
const host = (h: Partial<LiveHost>): LiveHost => ({
  boot_slots: 1,
  phones: 10,
  typical_boot_ms: 10_000,
  warm: 0,
  warming: 0,
  held: 0,
  claimed: [],
  ...h,
});
const eta = (hosts: LiveHost[], q: { temporary?: boolean; ahead?: number; temporaryAhead?: number } = {}) => {
  const { slots, pooled } = capacity(hosts, NOW);
  return queuedEtaSeconds({
    temporary: q.temporary ?? true,
    ahead: q.ahead ?? 0,
    temporaryAhead: q.temporaryAhead ?? 0,
    pooledReadyInMs: pooled,
    slots,
  });
};

describe("eta_seconds over a deployment's hosts", () => {
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
