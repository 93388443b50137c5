/**
 * The shared store as a device host uses it besides its ledger (HostStore,
 * server/runtime/ports.ts): membership (register, heartbeat, leave), the sessions it holds,
 * and its claims on the shared queue.
 */
import { seconds } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { HostRegistration, HostStore } from '../../runtime/ports.js';
import type { SessionRow } from '../../runtime/rows.js';
import { all, insertRow, tx, type Db } from './pool.js';
import { forgetSavesOn, notifySessions, reap } from './sessions.js';

export class PostgresHosts implements HostStore {
  constructor(
    private readonly db: Db,
    private readonly log: Logger,
  ) {}

  async register(h: HostRegistration, nowMs: number): Promise<void> {
    await tx(this.db, (c) =>
      insertRow(c, 'hosts', { ...h, started: seconds(nowMs), heartbeat_ms: nowMs, state: 'live' }),
    );
  }

  async heartbeat(
    hostId: string,
    beat: { nowMs: number; typicalBootMs: number; warm: number; warming: number },
  ): Promise<boolean> {
    const r = await this.db.query(
      "UPDATE hosts SET heartbeat_ms = $2, typical_boot_ms = $3, warm = $4, warming = $5 WHERE id = $1 AND state = 'live'",
      [hostId, beat.nowMs, beat.typicalBootMs, beat.warm, beat.warming],
    );
    return (r.rowCount ?? 0) > 0;
  }

  held(hostId: string): Promise<Array<Pick<SessionRow, 'id' | 'state' | 'adb_enabled'>>> {
    return all(this.db, 'SELECT id, state, adb_enabled FROM sessions WHERE host_id = $1 AND done = 0', [
      hostId,
    ]);
  }

  sessions(ids: readonly string[]): Promise<SessionRow[]> {
    return all(this.db, 'SELECT * FROM sessions WHERE id = ANY($1) ORDER BY seq', [ids]);
  }

  claim(
    hostId: string,
    want: { room: number; pooled: number; boot: number; warmAfter: number; nowMs: number },
  ): Promise<SessionRow[]> {
    return tx(this.db, async (c) => {
      const fromPool =
        want.pooled <= 0
          ? []
          : await all<SessionRow>(
              c,
              "SELECT * FROM sessions WHERE done = 0 AND state = 'provisioning' AND host_id IS NULL AND profile_id IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED",
              [Math.min(want.room, want.pooled)],
            );
      const toBoot = Math.min(want.room - fromPool.length, want.boot);
      const booted =
        toBoot <= 0
          ? []
          : await all<SessionRow>(
              c,
              `SELECT * FROM sessions WHERE done = 0 AND state = 'provisioning' AND host_id IS NULL AND NOT (id = ANY($2))
                 AND (profile_id IS NOT NULL OR created <= $3
                      OR NOT EXISTS (SELECT 1 FROM hosts WHERE state = 'live' AND warm > 0 AND id <> $4))
                 -- A profile whose save is on another live host waits for that host.
                 AND NOT EXISTS (SELECT 1 FROM profiles p JOIN hosts h ON h.id = p.saved_host
                                 WHERE p.id = sessions.profile_id AND p.state = 'stored'
                                   AND h.state = 'live' AND h.id <> $4)
               ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`,
              [toBoot, fromPool.map((r) => r.id), want.warmAfter, hostId],
            );
      const rows = [...fromPool, ...booted];
      if (rows.length > 0) {
        const ids = rows.map((r) => r.id);
        await c.query('UPDATE sessions SET host_id = $1, claimed_ms = $3 WHERE id = ANY($2)', [
          hostId,
          ids,
          want.nowMs,
        ]);
        // Their location moved from queued to booting.
        await notifySessions(c, ids);
      }
      return rows;
    });
  }

  async leave(hostId: string): Promise<void> {
    // A host that comes back registers anew: the saves on this disk are nobody's then.
    await tx(this.db, async (c) => {
      await c.query("UPDATE hosts SET state = 'stopped' WHERE id = $1", [hostId]);
      await forgetSavesOn(c, [hostId]);
    });
  }

  sweep: HostStore['sweep'] = (nowMs) => reap(this.db, nowMs, this.log);
}
