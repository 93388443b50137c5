/**
 * Account contract tests that need the server in this process: an account created with a
 * reason it cannot rent (no CLI flag sets one), and a scan of the SQLite data directory for
 * raw keys. The rest of the accounts contract is in accounts.test.ts, which also runs
 * against a deployment.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

describe('GET /me', () => {
  it('explains why an account cannot rent', async () => {
    const { api } = t.other({ canRent: false, rentBlockedReason: 'Beta access pending review.' });
    const me = await api.get('/me');
    expect(me.body.can_rent).toBe(false);
    expect(me.body.rent_blocked_reason).toBe('Beta access pending review.');
    const create = await api.post('/sessions');
    expect(create.status).toBe(403);
    expect(create.body.code).toBe('rental_unavailable');
    expect((await api.get('/sessions')).body).toEqual([]);
  });
});

describe('API keys', () => {
  it('stores only hashes: no raw key is in the data directory', async () => {
    const created = await t.api.post('/me/keys', { body: { label: 'scan' } });
    const files = readdirSync(t.server.dataDir).filter((f) => f.startsWith('phonelease.db'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const bytes = readFileSync(join(t.server.dataDir, f));
      expect(bytes.includes(Buffer.from(created.body.key))).toBe(false);
      expect(bytes.includes(Buffer.from(t.account.key))).toBe(false);
    }
  });
});
