/**
 * The sweep of a dead device host (stores/postgres/sessions.ts reap): in one transaction, whatever
 * it held ends as the contract says. Ready sessions end `lost` at the host's last heartbeat
 * with their started minutes debited once (or `credit_exhausted` where the balance ran out
 * first), a failed boot ends `failed`, a pending cleanup completes, a held profile is let go
 * (its save now inexact), queued boots go back to the queue, and another host's sessions
 * are untouched. Two nodes sweeping at once, and a sweep run again, change nothing more.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../server/log.js';
import type { Placement, SessionRow } from '../../server/runtime/rows.js';
import { reap } from '../../server/stores/postgres/sessions.js';
import { migratePg, openPool } from '../../server/stores/postgres/pool.js';
import { createdOn, admittedOn } from '../support/shared-store.js';
import { postgresMissing, startPostgres, type PostgresCluster } from '../support/postgres.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the dead-host sweep tests: ${missing}`);

const log = createLogger({ level: 'silent' });
const PRICE = 10;
/** Beyond 32 bits, as the store's BIGINT columns allow: the sweep must not overflow on it. */
const RICH = 3_000_000_000;

describe.skipIf(missing !== null)('the dead-host sweep', () => {
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('ends what a dead host held, billed to its last heartbeat, exactly once however many nodes sweep', async () => {
    const url = await cluster.createDatabase();
    const db = openPool(url, log);
    const other = openPool(url, log);
    try {
      await migratePg(db);
      const nowMs = Date.now();
      const now = Math.floor(nowMs / 1000);
      const created = now - 600;
      const lastHeartbeatMs = (now - 300) * 1000 + 500;
      const host = (id: string) =>
        db.query(
          `INSERT INTO hosts (id, url, adb_host, adb_port, phones, boot_slots, device, started, heartbeat_ms, lost_after_ms, typical_boot_ms, state)
           VALUES ($1, 'http://127.0.0.1:1', '127.0.0.1', 1, 10, 4, 'virtual', $2, $3, 15000, 1000, 'live')`,
          [id, created, nowMs],
        );
      await host('hst_dead');
      await host('hst_live');
      const account = (balanceCents: number) =>
        createdOn(db, {
          billingMode: 'metered',
          balanceCents,
          priceCentsPerMinute: PRICE,
          sessionLimit: 10,
        });
      const rich = await account(RICH);
      const poor = await account(25);
      const open = (uid: string, body: { profile_id?: string } = {}) =>
        admittedOn(db, uid, { timeout_seconds: 3600, ...body }, created * 1000);
      const place = (sid: string, hostId: string, set: string, values: unknown[] = []) =>
        db.query(`UPDATE sessions SET host_id = $2, ${set} WHERE id = $1`, [sid, hostId, ...values]);

      // Ready since `created + 10`, two minutes already debited by its host.
      const lost = await open(rich.uid);
      await place(lost, 'hst_dead', "state = 'ready', ready = $3, minutes_debited = 2, cost_cents = $4", [
        created + 10,
        2 * PRICE,
      ]);
      for (const minute of [1, 2])
        await db.query('INSERT INTO debits (sid, minute, uid, cents, at) VALUES ($1, $2, $3, $4, $5)', [
          lost,
          minute,
          rich.uid,
          PRICE,
          created + 10 + (minute - 1) * 60 + 1,
        ]);
      await db.query('UPDATE accounts SET balance_cents = balance_cents - $2 WHERE uid = $1', [
        rich.uid,
        2 * PRICE,
      ]);
      const queued = await open(rich.uid);
      await place(queued, 'hst_dead', "state = 'provisioning'");
      const failed = await open(rich.uid);
      await place(failed, 'hst_dead', "state = 'error', failure_code = 'boot_failed'");
      const cleaning = await open(rich.uid, { profile_id: rich.profile_id });
      await place(
        cleaning,
        'hst_dead',
        "state = 'closing', ended = $3, close_requested = $3, end_reason = 'released', cleanup_status = 'pending'",
        [now - 400],
      );
      const elsewhere = await open(rich.uid);
      await place(elsewhere, 'hst_live', "state = 'ready', ready = $3", [created + 10]);
      // Ready on the dead host with credit for two of the five minutes it ran.
      const broke = await open(poor.uid);
      await place(broke, 'hst_dead', "state = 'ready', ready = $3", [created + 10]);

      await db.query('UPDATE hosts SET heartbeat_ms = $2 WHERE id = $1', ['hst_dead', lastHeartbeatMs]);
      // Two nodes notice at once; then one looks again.
      await Promise.all([reap(db, nowMs, log), reap(other, nowMs, log)]);
      await reap(db, nowMs + 1000, log);

      const rows = new Map(
        (await db.query<SessionRow & Placement>('SELECT * FROM sessions')).rows.map((r) => [r.id, r]),
      );
      // Ran from created + 10 to the last heartbeat (now - 300): 290 s, five started minutes.
      expect(rows.get(lost)).toMatchObject({
        state: 'closing',
        done: 1,
        cleanup_status: 'complete',
        end_reason: 'lost',
        ended: now - 300,
        minutes_debited: 5,
        cost_cents: 5 * PRICE,
      });
      expect(rows.get(queued)).toMatchObject({ state: 'provisioning', done: 0, host_id: null });
      expect(rows.get(failed)).toMatchObject({ done: 1, end_reason: 'failed', cost_cents: 0 });
      expect(rows.get(cleaning)).toMatchObject({
        done: 1,
        end_reason: 'released',
        ended: now - 400,
        cleanup_status: 'complete',
      });
      expect(rows.get(elsewhere)).toMatchObject({ state: 'ready', done: 0, host_id: 'hst_live' });
      // Paid minutes ran out after two: ended when they did.
      expect(rows.get(broke)).toMatchObject({
        done: 1,
        end_reason: 'credit_exhausted',
        ended: created + 10 + 2 * 60,
        minutes_debited: 2,
        cost_cents: 2 * PRICE,
      });

      const debits = (
        await db.query<{ sid: string; minute: number; at: number }>(
          'SELECT sid, minute, at FROM debits ORDER BY sid, minute',
        )
      ).rows;
      const minutesOf = (sid: string) => debits.filter((d) => d.sid === sid).map((d) => [d.minute, d.at]);
      expect(minutesOf(lost)).toEqual([1, 2, 3, 4, 5].map((m) => [m, created + 10 + (m - 1) * 60 + 1]));
      expect(minutesOf(broke)).toEqual([1, 2].map((m) => [m, created + 10 + (m - 1) * 60 + 1]));
      const balances = new Map(
        (
          await db.query<{ uid: string; balance_cents: number }>('SELECT uid, balance_cents FROM accounts')
        ).rows.map((a) => [a.uid, a.balance_cents]),
      );
      expect(balances.get(rich.uid)).toBe(RICH - 5 * PRICE);
      expect(balances.get(poor.uid)).toBe(25 - 2 * PRICE);
      const profile = (
        await db.query<{ holder: string | null; exact: number }>(
          'SELECT holder, exact FROM profiles WHERE id = $1',
          [rich.profile_id],
        )
      ).rows[0];
      expect(profile).toEqual({ holder: null, exact: 0 });
      const hosts = (await db.query<{ id: string; state: string }>('SELECT id, state FROM hosts ORDER BY id'))
        .rows;
      expect(hosts).toEqual([
        { id: 'hst_dead', state: 'dead' },
        { id: 'hst_live', state: 'live' },
      ]);
    } finally {
      await db.end();
      await other.end();
    }
  });
});
