/**
 * eta_seconds with a warm pool, on the runtime with an injected clock and phones that take
 * BOOT_MS to boot: a session that adopts a pooled phone's boot waits only what is left of
 * it, a session queued behind pool refills waits for their slots, and a temporary session
 * recorded while the runtime is unavailable is told a warm phone is waiting.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { LiveSession } from '../../server/runtime/runtime.js';
import { RuntimeWorld } from '../support/runtime-world.js';

const BOOT_MS = 10_000;
const worlds: RuntimeWorld[] = [];
afterEach(async () => {
  await Promise.all(worlds.splice(0).map((w) => w.close()));
});

function world(): RuntimeWorld {
  const w = new RuntimeWorld({ phones: 10, bootSlots: 2, pool: 2, bootMs: BOOT_MS });
  worlds.push(w);
  return w;
}

describe('eta_seconds with the warm pool', () => {
  it('counts what is left of an adopted boot, and the slots pool refills hold', async () => {
    const w = world();
    const { uid } = w.createAccount({ billingMode: 'disabled', sessionLimit: 5 });
    await w.advance(6_000);
    expect(w.runtime.stats().pool).toEqual({ warm: 0, warming: 2, target: 2 });

    // The pool's boots started 6 s ago: a temporary session takes one over.
    const temp = (await w.directory.admit(uid, {}, null)).session;
    expect(temp.phase.kind).toBe('booting');
    expect(w.runtime.eta(temp)).toBe(4);

    // A profile phone needs its own boot: both slots are busy (one with the adopted boot,
    // one with the other pooled phone), so it starts in 4 s and boots for 10.
    const profile = (await w.directory.admit(uid, { profile_id: w.store.profileOf(uid)!.id }, null)).session;
    expect(profile.phase.kind).toBe('queued');
    expect(w.runtime.eta(profile)).toBe(14);

    await w.advance(4_000);
    expect(temp.phase.kind).toBe('ready');
    expect(temp.startupSource).toBe('cold');
    expect(profile.phase.kind).toBe('booting');
  });

  it('tells a temporary session recorded while the runtime is unavailable that a phone is warm', async () => {
    const w = world();
    const { uid } = w.createAccount({ billingMode: 'disabled', sessionLimit: 5 });
    await w.advance(BOOT_MS);
    expect(w.runtime.stats().pool).toEqual({ warm: 2, warming: 0, target: 2 });
    w.runtime.pause();
    const sessions: LiveSession[] = [];
    for (let i = 0; i < 3; i++) sessions.push((await w.directory.admit(uid, {}, null)).session);
    expect(sessions.map((s) => w.runtime.eta(s))).toEqual([0, 0, 10]);
    w.runtime.resume();
    await w.advance(0);
    expect(sessions.map((s) => s.startupSource)).toEqual(['pool', 'pool', null]);
    expect(sessions[2]!.phase.kind).toBe('booting');
  });
});
