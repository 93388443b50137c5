/**
 * Identifiers and secrets. Randomness is injected (tests may seed it); secrets are compared
 * in constant time and only their hashes are stored where the server need not show them.
 */
import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';

export type RandomSource = (bytes: number) => Buffer;

/** How many bytes the OS's randomness is drawn in. */
const RANDOM_POOL_BYTES = 4096;

/**
 * Cryptographic randomness drawn from the OS a pool at a time: each randomBytes() call is a
 * trip into OpenSSL whose fixed cost dwarfs the few dozen bytes a token needs, and every
 * create draws two tokens. Each caller gets its own copy, and a byte is handed out once.
 */
export function pooledRandom(poolBytes = RANDOM_POOL_BYTES): RandomSource {
  let pool = Buffer.alloc(0);
  let offset = 0;
  return (n) => {
    if (n > poolBytes) return randomBytes(n);
    if (offset + n > pool.length) {
      pool = randomBytes(poolBytes);
      offset = 0;
    }
    const out = Buffer.from(pool.subarray(offset, offset + n));
    // Handed-out bytes do not stay behind in the pool.
    pool.fill(0, offset, offset + n);
    offset += n;
    return out;
  };
}

export const cryptoRandom: RandomSource = pooledRandom();

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A base62 string of `length` characters, unbiased. */
export function randomToken(random: RandomSource, length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of random(length * 2)) {
      // 62 * 4 = 248: reject the top bytes so every character is equally likely.
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

// The one-shot hash (Node >= 20.12) is about four times faster than a Hash object, and every
// authenticated request hashes its key.
export const sha256Hex = (value: string): string => hash('sha256', value, 'hex');

export function hmacB64url(secret: Buffer, value: string): string {
  return createHmac('sha256', secret).update(value).digest('base64url');
}

/** Constant-time equality of two strings (false for different lengths, without early exit on content). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

/** A display hint for a key that cannot authenticate: prefix and last four characters. */
export const keyHint = (key: string): string => `pck_…${key.slice(-4)}`;
