/**
 * redact(): every kind of secret the project handles is removed from text, and the
 * advice around it stays readable.
 */
import { describe, expect, it } from 'vitest';
import { redact } from '../../src/util/redact.js';

const KEY = 'pck_Zx8fA0c1d2e3f4g5h6i7j8k9l0m1n2o3p4q5r6s7';
const GRANT = 'pvg_Qm9vYmFyYmF6cXV4cXV1eHh5ejEyMzQ1Njc4OTBhYmNkZWZnaGk';
const VIEWER = 'http://127.0.0.1:8080/v/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg';

describe('redact', () => {
  it.each([
    ['an account key', `key ${KEY} here`, KEY],
    ['a view grant', `grant ${GRANT}`, GRANT],
    ['a bearer credential of another kind', 'Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.sig', 'eyJhbGciOi'],
    ['a viewer URL', `open ${VIEWER} now`, 'AbCdEfGhIjKlMnOp'],
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
