/**
 * The deployment's state as an API node's metrics report it (distributed/node-metrics.ts):
 * sessions by state and every host with its phones, pool and sessions, read in one scrape.
 */
import type { HostRow } from '../../runtime/rows.js';
import type { Db } from './pool.js';

/** The deployment's state as a metrics scrape reads it. */
export interface DeploymentState {
  sessions: Record<'queued' | 'booting' | 'ready' | 'error' | 'closing', number>;
  /** Every host as it last heartbeated, with its live sessions. */
  hosts: Array<
    Omit<HostRow, 'adb_host' | 'adb_port' | 'device' | 'started' | 'lost_after_ms' | 'typical_boot_ms'> & {
      sessions: number;
    }
  >;
}

export async function readDeploymentState(db: Db): Promise<DeploymentState> {
  const [sessions, hosts] = await Promise.all([
    db.query<DeploymentState['sessions']>(
      `SELECT count(*) FILTER (WHERE state = 'provisioning' AND host_id IS NULL) AS queued,
              count(*) FILTER (WHERE state = 'provisioning' AND host_id IS NOT NULL) AS booting,
              count(*) FILTER (WHERE state = 'ready') AS ready,
              count(*) FILTER (WHERE state = 'error') AS error,
              count(*) FILTER (WHERE state = 'closing') AS closing
         FROM sessions WHERE done = 0`,
    ),
    db.query<DeploymentState['hosts'][number]>(
      `SELECT h.id, h.state, h.phones, h.warm, h.warming, h.pool_target, h.url, h.boot_slots, h.heartbeat_ms,
              (SELECT count(*) FROM sessions s WHERE s.host_id = h.id AND s.done = 0) AS sessions
         FROM hosts h ORDER BY h.id`,
    ),
  ]);
  return { sessions: sessions.rows[0]!, hosts: hosts.rows };
}

/**
 * Admission to ready of the sessions that became ready since `sinceSec`, by where their phone
 * came from, in ms (whole seconds: the store keeps `created` and `ready` in seconds).
 */
export async function readStartDurations(
  db: Db,
  sinceSec: number,
): Promise<Array<{ source: 'cold' | 'snapshot' | 'pool'; ms: number }>> {
  return (
    await db.query<{ source: 'cold' | 'snapshot' | 'pool'; ms: number }>(
      `SELECT startup_source AS source, (ready - created) * 1000 AS ms FROM sessions
        WHERE ready IS NOT NULL AND ready >= $1 AND startup_source IS NOT NULL
        ORDER BY ready DESC LIMIT 10000`,
      [sinceSec],
    )
  ).rows;
}
