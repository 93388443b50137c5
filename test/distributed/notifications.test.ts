/**
 * Wake-ups between the nodes of a deployment (server/stores/postgres/notifications.ts, and
 * the waits of server/runtime/directory.ts they wake, wired as an API node wires them): an
 * API node's wait on a session ends when a change to that session commits on any
 * connection, and only that session's; a notification lost while the listening connection is
 * down is made up for by polling until it is back, after which notifications wake waits again.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../server/log.js';
import { SessionChanges } from '../../server/runtime/directory.js';
import {
  LISTENER_APPLICATION,
  Listener,
  SESSION_CHANNEL,
} from '../../server/stores/postgres/notifications.js';
import { notifySessions } from '../../server/stores/postgres/sessions.js';
import { openPool, tx, type Db } from '../../server/stores/postgres/pool.js';
import { postgresMissing, startPostgres, type PostgresCluster } from '../support/postgres.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the notification tests: ${missing}`);

/** Far longer than any test waits: a wait that ends did so on a notification, not on its poll. */
const NEVER_MS = 600_000;

describe.skipIf(missing !== null)('session wake-ups over LISTEN/NOTIFY', () => {
  let cluster: PostgresCluster;
  let url: string;
  let db: Db;
  const log = createLogger({ level: 'silent' });
  beforeAll(async () => {
    cluster = await startPostgres();
    url = await cluster.createDatabase();
    db = openPool(url, log);
  });
  afterAll(async () => {
    await db?.end();
    await cluster?.stop();
  });

  /** Waits on sessions, woken by a LISTEN connection as an API node's are (distributed/api-node.ts). */
  function sessionWaits(polls: { safetyPollMs: number; fallbackPollMs: number }) {
    let changes: SessionChanges | null = null;
    const listener = new Listener({
      url,
      channels: [SESSION_CHANNEL],
      onNotification: (_channel, sid) => changes?.wake(sid),
      onConnected: () => changes?.wakeAll(),
      log,
    });
    changes = new SessionChanges(listener, polls);
    const waits = changes;
    return {
      start: () => listener.start(),
      close: () => listener.close(),
      get connected() {
        return listener.connected;
      },
      next: (sid: string, maxMs: number) => waits.next(sid, maxMs),
    };
  }

  it('wakes the waits on a session when its change commits, and not before, nor for another session', async () => {
    const events = sessionWaits({ safetyPollMs: NEVER_MS, fallbackPollMs: NEVER_MS });
    await events.start();
    try {
      const woke: string[] = [];
      const a = events.next('ses_a', NEVER_MS).then(() => woke.push('a'));
      const b = events.next('ses_b', NEVER_MS).then(() => woke.push('b'));
      // Announced in a transaction that rolls back: never delivered.
      await tx(db, async (c) => {
        await notifySessions(c, ['ses_a']);
        throw new Error('rolled back');
      }).catch(() => undefined);
      await tx(db, (c) => notifySessions(c, ['ses_b']));
      await b;
      expect(woke).toEqual(['b']);
      await tx(db, (c) => notifySessions(c, ['ses_a', 'ses_c']));
      await a;
      expect(woke).toEqual(['b', 'a']);
    } finally {
      await events.close();
    }
  });

  it('polls while its connection is down, and is woken by notifications again once it reconnects', async () => {
    const events = sessionWaits({ safetyPollMs: NEVER_MS, fallbackPollMs: 50 });
    await events.start();
    try {
      expect(events.connected).toBe(true);
      // What a database restart does to it: the connection is cut.
      const admin = new pg.Client(url);
      await admin.connect();
      await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
        [LISTENER_APPLICATION],
      );
      await admin.end();
      await vi.waitFor(() => expect(events.connected).toBe(false));
      // No notification can arrive now; the wait ends at the fallback poll all the same.
      await events.next('ses_a', NEVER_MS);
      await vi.waitFor(() => expect(events.connected).toBe(true), { timeout: 10_000 });
      const woken = events.next('ses_a', NEVER_MS);
      await tx(db, (c) => notifySessions(c, ['ses_a']));
      await woken;
    } finally {
      await events.close();
    }
  });
});
