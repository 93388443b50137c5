/**
 * WAL checkpoints on a worker thread: the server's own commits never copy the WAL back into
 * the database file (only the worker does), and nothing is lost on the way.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startCheckpointer } from '../../server/stores/sqlite/checkpointer.js';
import { Database } from '../../server/stores/sqlite/sqlite.js';
import { openDatabase, SqliteStore } from '../../server/stores/sqlite/store.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Commits enough to fill the WAL well past SQLite's automatic checkpoint (1,000 pages). */
function fill(store: SqliteStore, prefix: string): void {
  for (let i = 0; i < 300; i++) {
    store.transaction(() => store.setMeta(`${prefix}-${i}`, 'x'.repeat(16 * 1024)));
  }
}

it('checkpoints on its worker, never in a commit of the server, and leaves nothing behind', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'phonelease-ckpt-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const store = new SqliteStore(openDatabase(dir));
  cleanups.push(() => store.close());
  const errors: Error[] = [];
  const checkpointer = startCheckpointer(store.db, (e) => errors.push(e), 100);
  cleanups.push(() => checkpointer.stop());
  const file = join(dir, 'phonelease.db');
  const before = statSync(file).size;

  // About 5 MB committed: the server's commits leave the database file as it was.
  fill(store, 'a');
  expect(statSync(file).size).toBe(before);

  // The worker copies it back within its interval.
  const deadline = Date.now() + 10_000;
  while (statSync(file).size < before + 4 * 1024 * 1024 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(statSync(file).size).toBeGreaterThan(before + 4 * 1024 * 1024);

  // Stopping runs a last checkpoint: what was committed since is in the file, and the
  // connection checkpoints by itself again.
  fill(store, 'b');
  await checkpointer.stop();
  expect(statSync(file).size).toBeGreaterThan(before + 8 * 1024 * 1024);
  expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
  const reader = new Database(file, { readonly: true });
  cleanups.push(() => reader.close());
  const n = reader.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM meta WHERE key LIKE 'b-%'").get()!;
  expect(n.n).toBe(300);
  expect(errors).toEqual([]);
});
