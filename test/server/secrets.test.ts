/** The pooled randomness every token is drawn from. */
import { describe, expect, it } from 'vitest';
import { pooledRandom, randomToken } from '../../server/secrets.js';

describe('pooledRandom', () => {
  it('hands out each byte once, in copies no later draw changes', () => {
    const random = pooledRandom(64);
    const first = random(40);
    const kept = Buffer.from(first);
    // Past the pool's end: a new pool is drawn, and the first copy stays as it was.
    const draws = Array.from({ length: 20 }, () => random(40));
    expect(first.equals(kept)).toBe(true);
    const hex = new Set([first, ...draws].map((b) => b.toString('hex')));
    expect(hex.size).toBe(21);
    for (const d of draws) expect(d.length).toBe(40);
  });

  it('serves draws larger than its pool straight from the OS', () => {
    const random = pooledRandom(16);
    const big = random(100);
    expect(big.length).toBe(100);
    expect(new Set(big).size).toBeGreaterThan(40);
  });

  it('gives tokens of the asked length from the base62 alphabet, all different', () => {
    const random = pooledRandom();
    const tokens = new Set(Array.from({ length: 1000 }, () => randomToken(random, 20)));
    expect(tokens.size).toBe(1000);
    for (const t of tokens) expect(t).toMatch(/^[0-9A-Za-z]{20}$/);
  });
});
