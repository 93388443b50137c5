/**
 * JSON Web Tokens (RFC 7519) signed with HS256, the one algorithm the dashboard's sessions use,
 * written over node:crypto: a library would bring algorithm negotiation, and negotiation is
 * how JWT verifiers get fooled (`alg: none`, an RSA public key taken for an HMAC secret).
 * verifyJwt() accepts exactly the header signJwt() writes, compares the MAC in constant time,
 * and checks the expiry against the injected clock.
 */
import { hmacB64url, safeEqual } from './secrets.js';

/** The claims the dashboard's tokens carry (times in Unix seconds). */
export interface JwtClaims {
  /** The account. */
  sub: string;
  /** The session's id: a sign-out ends it. */
  jti: string;
  iat: number;
  exp: number;
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
/** Far more than a token of ours takes; a longer bearer is not worth parsing. */
const MAX_JWT_CHARS = 2048;
const SEGMENT = /^[A-Za-z0-9_-]+$/;

/** True when `token` has the shape of a JWT (three base64url segments), whatever it says. */
export function looksLikeJwt(token: string): boolean {
  const parts = token.split('.');
  return parts.length === 3 && parts.every((p) => SEGMENT.test(p));
}

export function signJwt(secret: Buffer, claims: JwtClaims): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${HEADER}.${payload}.${hmacB64url(secret, `${HEADER}.${payload}`)}`;
}

/** The claims of a token this secret signed and that has not expired at `nowSec`, else null. */
export function verifyJwt(secret: Buffer, token: string, nowSec: number): JwtClaims | null {
  if (token.length > MAX_JWT_CHARS || !looksLikeJwt(token)) return null;
  const [header, payload, mac] = token.split('.') as [string, string, string];
  // Our header, byte for byte: no other algorithm (none, RS256, ...) is ever considered.
  if (!safeEqual(header, HEADER)) return null;
  if (!safeEqual(mac, hmacB64url(secret, `${header}.${payload}`))) return null;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!isClaims(claims) || claims.exp <= nowSec) return null;
  return claims;
}

function isClaims(value: unknown): value is JwtClaims {
  if (typeof value !== 'object' || value === null) return false;
  const c = value as Record<string, unknown>;
  return (
    typeof c.sub === 'string' &&
    typeof c.jti === 'string' &&
    Number.isSafeInteger(c.iat) &&
    Number.isSafeInteger(c.exp)
  );
}
