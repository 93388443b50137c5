/**
 * Viewer tokens of a deployment (signed, so that any API node opens them): they name their
 * session, mode and expiry, expire, and refuse any change, another secret, and view grants.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock.js';
import { Grants } from '../../server/runtime/grants.js';
import { cryptoRandom } from '../../server/secrets.js';

const secret = cryptoRandom(32);
const clock = new ManualClock();
const now = () => Math.floor(clock.now() / 1000);

describe('signed viewer tokens', () => {
  it('open on every node holding the secret, with their session, mode and expiry', () => {
    const issuing = new Grants(secret, clock, cryptoRandom, true);
    const other = new Grants(secret, clock, cryptoRandom, true);
    const token = issuing.issueViewer('ses_abc', 'view', now() + 60);
    expect(token).toMatch(/^[A-Za-z0-9_-]{16,200}$/);
    expect(other.viewer(token)).toEqual({ sid: 'ses_abc', mode: 'view', expiresAt: now() + 60 });
    expect(other.viewer(issuing.issueViewer('ses_abc', 'owner', now() + 60))?.mode).toBe('owner');
  });

  it('expire', async () => {
    const grants = new Grants(secret, clock, cryptoRandom, true);
    const token = grants.issueViewer('ses_abc', 'owner', now() + 60);
    await clock.advance(60_000);
    expect(grants.viewer(token)).toBeNull();
  });

  it('refuse any changed character, another secret, an in-memory token and a view grant', () => {
    const grants = new Grants(secret, clock, cryptoRandom, true);
    const token = grants.issueViewer('ses_abc', 'view', now() + 60);
    for (let i = 0; i < token.length; i++) {
      const changed = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
      expect(grants.viewer(changed), `position ${i}`).toBeNull();
    }
    expect(new Grants(cryptoRandom(32), clock, cryptoRandom, true).viewer(token)).toBeNull();
    expect(
      grants.viewer(new Grants(secret, clock, cryptoRandom).issueViewer('ses_abc', 'owner', now() + 60)),
    ).toBeNull();
    expect(grants.viewer(grants.viewGrant('ses_abc'))).toBeNull();
    expect(grants.viewer('')).toBeNull();
  });
});
