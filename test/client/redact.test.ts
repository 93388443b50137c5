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

  it('keeps placeholders in advice readable', () => {
    const advice = 'send a valid key as "Authorization: Bearer pck_...".';
    expect(redact(advice)).toBe(advice);
  });

  it('leaves text without secrets as it is', () => {
    const text = 'session ses_abc123 ready in 1.2 s on 127.0.0.1:5555';
    expect(redact(text)).toBe(text);
  });
});
