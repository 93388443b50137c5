/**
 * The shared store as an API node's directory uses it (SharedStore, server/runtime/ports.ts):
 * sessions with their placement on device hosts, accounts, keys, receipts and history, in
 * PostgreSQL. Reads are single statements; every change is a transaction (sessions.ts), or a
 * single statement where one row is all it touches.
 */
import type { EndReason } from '../../../src/api/schemas.js';
import type { AccountSummary } from '../../runtime/directory.js';
import type { PlacedRow, SharedStore } from '../../runtime/ports.js';
import type { AccountRow, KeyRow, ProfileRow, SessionRow } from '../../runtime/rows.js';
import type { HostCapacity } from '../../runtime/rules.js';
import { HOST_CHANNEL } from './notifications.js';
import { all, count, insertRow, one, tx, type Db } from './pool.js';
import { admit, endSession } from './sessions.js';

/** What a boot takes on the live hosts, on average (for sessions no host has claimed yet). */
const TYPICAL_BOOT = `coalesce((SELECT avg(typical_boot_ms) FROM hosts WHERE state = 'live'), 1000)`;
/**
 * Whether an unclaimed session has a boot slot waiting for it: the unclaimed sessions up to
 * it in queue order fit in what the live hosts can start now, each host counting the boot
 * slots its claimed boots leave and no more than its phones left. A profile whose save is on
 * a live host waits for that host alone (the claim brings it there).
 */
const SLOT_FREE = `CASE WHEN s.state = 'provisioning' AND s.host_id IS NULL THEN
  (SELECT count(*) FROM sessions q WHERE q.done = 0 AND q.state = 'provisioning' AND q.host_id IS NULL AND q.seq <= s.seq)
  <= (SELECT coalesce(sum(GREATEST(0, LEAST(
        h.boot_slots - (SELECT count(*) FROM sessions b WHERE b.host_id = h.id AND b.done = 0 AND b.state = 'provisioning'),
        h.phones - (SELECT count(*) FROM sessions b WHERE b.host_id = h.id AND b.done = 0)))), 0)
      FROM hosts h WHERE h.state = 'live'
       AND h.id = coalesce((SELECT p.saved_host FROM profiles p JOIN hosts ph ON ph.id = p.saved_host
                            WHERE p.id = s.profile_id AND p.state = 'stored' AND ph.state = 'live'), h.id))
  ELSE false END`;
/** A session with its host's endpoints, and what a boot takes there (or anywhere, while queued). */
const PLACED = `SELECT s.*, h.url AS host_url, h.adb_host, h.adb_port,
  coalesce(h.typical_boot_ms, ${TYPICAL_BOOT}) AS typical_boot_ms, ${SLOT_FREE} AS slot_free
  FROM sessions s LEFT JOIN hosts h ON h.id = s.host_id`;

/**
 * Where a queued session stands, in one round trip: the queued sessions ahead of it (and how
 * many of those are temporary), and every live host with its held sessions and the claim
 * times of its boots.
 */
const QUEUE_POSITION = `
  SELECT a.ahead, a.temporary, coalesce(hs.hosts, '[]'::json) AS hosts
    FROM (SELECT count(*) AS ahead, count(*) FILTER (WHERE profile_id IS NULL) AS temporary
            FROM sessions WHERE done = 0 AND state = 'provisioning' AND host_id IS NULL AND seq < $1) a,
         (SELECT json_agg(json_build_object(
                   'boot_slots', h.boot_slots, 'phones', h.phones, 'typical_boot_ms', h.typical_boot_ms,
                   'warm', h.warm, 'warming', h.warming,
                   'held', (SELECT count(*) FROM sessions s WHERE s.host_id = h.id AND s.done = 0),
                   'claimed', coalesce((SELECT array_agg(coalesce(s.claimed_ms, 0)) FROM sessions s
                                         WHERE s.host_id = h.id AND s.done = 0 AND s.state = 'provisioning'), '{}')
                 )) AS hosts
            FROM hosts h WHERE h.state = 'live') hs`;

export class PostgresStore implements SharedStore {
  constructor(private readonly db: Db) {}

  async keyOwner(keyHash: string): Promise<string | null> {
    const row = await one<KeyRow>(this.db, 'SELECT * FROM api_keys WHERE key_hash = $1', [keyHash]);
    return row && row.revoked === null ? row.uid : null;
  }

  admit: SharedStore['admit'] = (a, decide) => admit(this.db, a, decide);

  placed(sid: string, opts: { any?: boolean } = {}): Promise<PlacedRow | undefined> {
    return one<PlacedRow>(this.db, `${PLACED} WHERE s.id = $1${opts.any ? '' : ' AND s.done = 0'}`, [sid]);
  }

  placedOf(uid: string): Promise<PlacedRow[]> {
    return all<PlacedRow>(this.db, `${PLACED} WHERE s.uid = $1 AND s.done = 0 ORDER BY s.seq`, [uid]);
  }

  async queuePosition(seq: number): Promise<{ ahead: number; temporary: number; hosts: HostCapacity[] }> {
    return (await one<{ ahead: number; temporary: number; hosts: HostCapacity[] }>(this.db, QUEUE_POSITION, [
      seq,
    ]))!;
  }

  async touch(sid: string, at: number): Promise<void> {
    await this.db.query('UPDATE sessions SET last = $2 WHERE id = $1 AND last < $2', [sid, at]);
  }

  async end(sid: string, reason: EndReason, at: number): Promise<void> {
    await tx(this.db, (c) => endSession(c, sid, reason, at));
  }

  async cleanedUp(sid: string): Promise<boolean> {
    return (await count(this.db, 'SELECT done AS n FROM sessions WHERE id = $1', [sid])) === 1;
  }

  receipt(uid: string, requestKey: string): Promise<SessionRow | undefined> {
    return one<SessionRow>(
      this.db,
      'SELECT s.* FROM receipts r JOIN sessions s ON s.id = r.sid WHERE r.uid = $1 AND r.request_key = $2',
      [uid, requestKey],
    );
  }

  async revokeAdb(sid: string, hostId: string | null): Promise<void> {
    await tx(this.db, async (c) => {
      await c.query('UPDATE sessions SET adb_enabled = 0 WHERE id = $1', [sid]);
      // The host cuts open relays when it hears of it.
      if (hostId !== null) await c.query(`SELECT pg_notify('${HOST_CHANNEL}', $1)`, [hostId]);
    });
  }

  async account(uid: string): Promise<AccountSummary> {
    const account = await one<AccountRow>(this.db, 'SELECT * FROM accounts WHERE uid = $1', [uid]);
    const profile = await one<ProfileRow>(this.db, 'SELECT * FROM profiles WHERE uid = $1', [uid]);
    if (!account || !profile) throw new Error(`account ${uid} has no account or profile row`);
    const live = await all<Pick<SessionRow, 'billing_mode'>>(
      this.db,
      'SELECT billing_mode FROM sessions WHERE uid = $1 AND done = 0 ORDER BY seq',
      [uid],
    );
    return { account, profile, active: live.length, billingMode: live[0]?.billing_mode ?? null };
  }

  async insertKey(row: Omit<KeyRow, 'revoked'>): Promise<void> {
    await insertRow(this.db, 'api_keys', row);
  }

  activeKeys(uid: string): Promise<KeyRow[]> {
    return all<KeyRow>(
      this.db,
      'SELECT * FROM api_keys WHERE uid = $1 AND revoked IS NULL ORDER BY created, key_hash',
      [uid],
    );
  }

  async revokeKey(uid: string, keyHash: string, at: number): Promise<boolean> {
    const done = await this.db.query(
      'UPDATE api_keys SET revoked = $1 WHERE key_hash = $2 AND uid = $3 AND revoked IS NULL',
      [at, keyHash, uid],
    );
    return (done.rowCount ?? 0) > 0;
  }

  resetProfile(uid: string, at: number, held: (holder: string | null) => Error): Promise<string> {
    return tx(this.db, async (c) => {
      const profile = await one<ProfileRow>(c, 'SELECT * FROM profiles WHERE uid = $1 FOR UPDATE', [uid]);
      if (!profile) throw new Error(`account ${uid} has no profile`);
      if (profile.holder || profile.state === 'saving') throw held(profile.holder);
      // Hosts restore a profile only while it is `stored`: its save on its host is forgotten.
      await c.query(
        "UPDATE profiles SET state = 'empty', exact = 1, saved_at = $2, saved_host = NULL WHERE id = $1",
        [profile.id, at],
      );
      return profile.id;
    });
  }

  history(uid: string, limit: number, after?: { created: number; id: string }): Promise<SessionRow[]> {
    return after
      ? all<SessionRow>(
          this.db,
          'SELECT * FROM sessions WHERE uid = $1 AND done = 1 AND (created < $2 OR (created = $2 AND id < $3)) ORDER BY created DESC, id DESC LIMIT $4',
          [uid, after.created, after.id, limit],
        )
      : all<SessionRow>(
          this.db,
          'SELECT * FROM sessions WHERE uid = $1 AND done = 1 ORDER BY created DESC, id DESC LIMIT $2',
          [uid, limit],
        );
  }
}
