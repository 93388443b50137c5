/**
 * redact(): every kind of secret the project handles is removed from text, and the
 * advice around it stays readable.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { redact } from '../../src/util/redact.js';

// Made per run, shaped like the real ones: no key-like literal is committed.
const token = () => randomBytes(32).toString('base64url');
const KEY = `pck_${token()}`;
const GRANT = `pvg_${token()}`;
const VIEWER_TOKEN = token();
const VIEWER = `http://127.0.0.1:8080/v/${VIEWER_TOKEN}`;

describe('redact', () => {
  it.each([
    ['an account key', `key ${KEY} here`, KEY],
    ['a view grant', `grant ${GRANT}`, GRANT],
    ['a bearer credential of another kind', 'Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.sig', 'eyJhbGciOi'],
    ['a viewer URL', `open ${VIEWER} now`, VIEWER_TOKEN],
    ['a query token', '/watch/ses_1?token=s3cr3tvalue&x=1', 's3cr3tvalue'],
    ['the gateway unlock line', 'UNLOCK 9f8e7d6c5b4a', '9f8e7d6c5b4a'],
    ['a JSON code field', '{"enabled":true,"code":"abcdef123456","port":1}', 'abcdef123456'],
  ])('removes %s', (_what, text, secret) => {
    const out = redact(text);
    expect(out).not.toContain(secret);
    expect(out).toContain('[redacted]');
  });

  // Secrets where a client may put them: glued to other text, percent-encoded (once or
  // twice, the prefix included), in any query parameter or fragment.
  const ADB = `pau_${token()}`;
  const enc = (s: string) => encodeURIComponent(s);
  const encAll = (s: string) =>
    [...s].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
  it.each([
    ['a grant glued to a query value', `/sessions/s?x=a_${GRANT}`, GRANT],
    ['a grant after an encoded equals sign', `/sessions/s?token%3D${GRANT}`, GRANT],
    ['a key glued to a word', `/me?apikey${KEY}`, KEY],
    ['a grant with an encoded underscore', `/sessions/s?t=pvg%5F${GRANT.slice(4)}`, GRANT.slice(4)],
    ['a fully percent-encoded grant', `/sessions/s?q=${encAll(GRANT)}`, GRANT.slice(4)],
    ['a twice-encoded key', `/x?u=${enc(enc(`k=${KEY}`))}`, KEY.slice(4)],
    ['an encoded viewer URL', `/x?next=${enc(VIEWER)}`, VIEWER_TOKEN],
    ['a viewer URL glued to text', `go:${VIEWER}`, VIEWER_TOKEN],
    ['an unlock code anywhere', `/sessions/s/${ADB}/x`, ADB.slice(4)],
    ['an encoded unlock code', `/x?${encAll(ADB)}`, ADB.slice(4)],
    ['a code query parameter', '/x?a=1&code=abcdef123456', 'abcdef123456'],
    ['a token in a fragment', '/watch/ses_1#token=s3cr3tvalue', 's3cr3tvalue'],
    ['an upper-case prefix', `/x?${KEY.replace('pck_', 'PCK_')}`, KEY.slice(4)],
  ])('removes %s', (_what, text, secret) => {
    const out = redact(text);
    expect(out).not.toContain(secret);
    expect(out).toContain('[redacted]');
  });

  it('keeps placeholders in advice readable', () => {
    const advice = 'send a valid key as "Authorization: Bearer pck_...".';
    expect(redact(advice)).toBe(advice);
  });

  it.each([
    ['an error code field', '{"error":"session limit reached","code":"session_limit"}'],
    ['the word after "bearer" in a message', 'Missing bearer credential; send Authorization: Bearer <key>'],
  ])('keeps %s readable', (_what, text) => {
    expect(redact(text)).toBe(text);
  });

  it('leaves text without secrets as it is', () => {
    const text = 'session ses_abc123 ready in 1.2 s on 127.0.0.1:5555';
    expect(redact(text)).toBe(text);
  });
});
