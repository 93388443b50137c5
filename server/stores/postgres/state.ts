/**
 * The deployment's state as an API node's metrics report it (distributed/node-metrics.ts):
 * sessions by state and every host with its phones, pool and sessions, read in one scrape.
 */
import type { Db } from './pool.js';

/** The deployment's state as a metrics scrape reads it. */
export interface DeploymentState {
  sessions: Record<'queued' | 'booting' | 'ready' | 'error' | 'closing', number>;
  hosts: Array<{
    id: string;
    state: 'live' | 'dead' | 'stopped';
    phones: number;
    warm: number;
    warming: number;
    pool_target: number;
    sessions: number;
  }>;
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
      `SELECT h.id, h.state, h.phones, h.warm, h.warming, h.pool_target,
              (SELECT count(*) FROM sessions s WHERE s.host_id = h.id AND s.done = 0) AS sessions
         FROM hosts h ORDER BY h.id`,
    ),
  ]);
  return { sessions: sessions.rows[0]!, hosts: hosts.rows };
}
