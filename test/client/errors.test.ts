/**
 * Error classes across two copies of phonelease (the built package beside its sources, as
 * when a fixture loads dist/ and a test imports src/, or two versions share one
 * node_modules): instanceof asks the Symbol.for brand, not the prototype chain.
 * Needs `npm run build` (dist/) like the e2e tests.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import * as src from '../../src/index.js';

const DIST = fileURLToPath(new URL('../../dist/src/index.js', import.meta.url));
let dist: typeof src;

beforeAll(async () => {
  if (!existsSync(DIST)) throw new Error(`${DIST} is missing: run \`npm run build\` first.`);
  dist = (await import(DIST)) as typeof src;
});

describe('error classes across two copies of the package', () => {
  it('the built copy really is another copy of the classes', () => {
    expect(dist.NotFoundError).not.toBe(src.NotFoundError);
    expect(Object.getPrototypeOf(new dist.NotFoundError('x'))).not.toBe(src.NotFoundError.prototype);
  });

  it("recognises the other copy's errors as their own class and its ancestors, and nothing else", () => {
    const error = dist.errorFromResponse({
      status: 429,
      body: '<html><body>slow down</body></html>',
      contentType: 'text/html',
    });
    expect(error instanceof src.RateLimitedError).toBe(true);
    expect(error instanceof src.PhoneleaseError).toBe(true);
    expect(error instanceof src.ServerError).toBe(false);
    expect(error instanceof src.ConfigurationError).toBe(false);
    const failed = new src.SessionFailedError('x', { sessionId: 's', failure: { code: 'c', message: 'm' } });
    expect(failed instanceof dist.SessionFailedError).toBe(true);
    expect(failed instanceof dist.ReadyTimeoutError).toBe(false);
    // The retry rule of one copy honours the errors of the other.
    expect(src.mayRetry(error, { idempotent: false })).toBe(true);
  });

  it('is not fooled by values that are not phonelease errors', () => {
    expect(new Error('x') instanceof src.PhoneleaseError).toBe(false);
    const nothing: unknown = null;
    expect(nothing instanceof src.PhoneleaseError).toBe(false);
    expect({ code: 'not_found' } instanceof dist.NotFoundError).toBe(false);
  });
});
