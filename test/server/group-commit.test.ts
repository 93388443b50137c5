/**
 * Group commit: the writes of one turn of the event loop share a transaction, and nothing
 * that depends on them is answered before it commits. A second connection to the same file
 * plays the process that starts after a kill -9: it sees only what was committed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Database } from '../../server/stores/sqlite/sqlite.js';
import { openDatabase, SqliteStore } from '../../server/stores/sqlite/store.js';
import { buildTestApp, type InProcessApp } from '../support/app.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A store in a fresh directory, and a second connection that sees only committed rows. */
function openStore(): { store: SqliteStore; committed: (key: string) => string | undefined } {
  const dir = mkdtempSync(join(tmpdir(), 'phonelease-group-'));
  const store = new SqliteStore(openDatabase(dir));
  const other = new Database(store.db.name, { readonly: true });
  const get = other.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?');
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => store.close());
  cleanups.push(() => other.close());
  return { store, committed: (key) => get.get(key)?.value };
}

/** Makes the open group's COMMIT fail: a deferred foreign key is checked only then. */
function failingCommit(store: SqliteStore): () => void {
  store.db.exec(
    'CREATE TABLE IF NOT EXISTS dangling (uid TEXT REFERENCES accounts(uid) DEFERRABLE INITIALLY DEFERRED)',
  );
  return () => store.db.prepare("INSERT INTO dangling (uid) VALUES ('no-such-account')").run();
}

describe('the store', () => {
  it('commits the writes of one turn together, once the turn ends', async () => {
    const { store, committed } = openStore();
    store.grouped(() => store.setMeta('a', '1'));
    store.grouped(() => store.setMeta('b', '2'));
    // This connection reads its own writes; another one sees nothing yet.
    expect(store.getMeta('a')).toBe('1');
    expect(committed('a')).toBeUndefined();
    const uncommitted = store.uncommitted;
    expect(uncommitted).not.toBeNull();
    await uncommitted;
    expect([committed('a'), committed('b')]).toEqual(['1', '2']);
    expect(store.uncommitted).toBeNull();
  });

  it('commits an open group at once with a transaction(), and on close', () => {
    const { store, committed } = openStore();
    store.grouped(() => store.setMeta('grouped', 'yes'));
    store.transaction(() => store.setMeta('direct', 'yes'));
    expect([committed('grouped'), committed('direct')]).toEqual(['yes', 'yes']);
    expect(store.uncommitted).toBeNull();

    store.grouped(() => store.setMeta('at-close', 'yes'));
    store.close();
    expect(committed('at-close')).toBe('yes');
  });

  it('undoes only the writes of a grouped call that throws', async () => {
    const { store, committed } = openStore();
    store.grouped(() => store.setMeta('kept', 'yes'));
    expect(() =>
      store.grouped(() => {
        store.setMeta('undone', 'yes');
        throw new Error('refused');
      }),
    ).toThrow('refused');
    await store.uncommitted;
    expect([committed('kept'), committed('undone')]).toEqual(['yes', undefined]);
  });

  it('rejects the waiters of a commit that failed, and refuses writes until a restart', async () => {
    const { store, committed } = openStore();
    const dangling = failingCommit(store);
    store.grouped(() => store.setMeta('lost', 'yes'));
    store.grouped(dangling);
    await expect(store.uncommitted).rejects.toThrow(/could not commit.*restart the server/);
    expect(committed('lost')).toBeUndefined();
    expect(() => store.transaction(() => store.setMeta('later', 'yes'))).toThrow(/restart the server/);
    expect(() => store.grouped(() => store.setMeta('later', 'yes'))).toThrow(/restart the server/);
  });
});

describe('the API', () => {
  async function app(): Promise<InProcessApp> {
    const t = await buildTestApp();
    cleanups.push(() => t.close().catch(() => undefined));
    return t;
  }

  it('answers a create only once its session and receipt are committed', async () => {
    const t = await app();
    const other = new Database(t.store.db.name, { readonly: true });
    cleanups.push(() => other.close());
    const receipts = other.prepare<[string], { sid: string }>(
      'SELECT sid FROM receipts WHERE request_key = ?',
    );
    const answers = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const key = `group-commit-${i}-xxxxxxxx`;
        const r = await t.call({ method: 'POST', url: '/sessions', headers: { 'idempotency-key': key } });
        // Read the moment the answer arrives, before anything else runs.
        return {
          status: r.statusCode,
          id: (JSON.parse(r.body) as { id: string }).id,
          stored: receipts.get(key),
        };
      }),
    );
    for (const a of answers) {
      expect(a.status).toBe(202);
      expect(a.stored?.sid).toBe(a.id);
    }
  });

  it('answers 500, not success, when a commit its answer waits for fails', async () => {
    const t = await app();
    const dangling = failingCommit(t.store);
    const answer = t.call({ method: 'GET', url: '/sessions' });
    // A write in the same turn as the request: the answer waits for its commit, which fails.
    t.store.grouped(dangling);
    const r = await answer;
    expect(r.statusCode).toBe(500);
    expect(JSON.parse(r.body)).toMatchObject({ code: 'internal' });
  });
});
