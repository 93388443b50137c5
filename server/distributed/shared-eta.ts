/**
 * eta_seconds of a deployment's provisioning sessions, with the single server's queue model
 * (runtime/rules.ts) fed from the shared store: a session a host has claimed is booting
 * there (what is left of that host's typical boot since the claim); a queued session waits
 * behind the sessions queued before it (by seq) for the live hosts' pooled phones and boot
 * slots (rules.ts hostSlots).
 */
import { bootingEtaSeconds, hostSlots, queuedEtaSeconds, type HostCapacity } from '../runtime/rules.js';
import type { Db } from '../stores/postgres/pool.js';

/** What the estimate needs of a session row (a PlacedSession). */
export interface EtaRow {
  id: string;
  seq: number;
  state: string;
  host_id: string | null;
  profile_id: string | null;
  claimed_ms: number | null;
  typical_boot_ms: number;
  eta_seconds?: number;
}

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

/**
 * Sets eta_seconds on the provisioning rows among `rows` (the rest are left alone). Reads
 * the shared store only for a queued one: one statement each.
 */
export async function estimateEta(db: Db, rows: EtaRow[], nowMs: number): Promise<void> {
  for (const row of rows) {
    if (row.state !== 'provisioning') continue;
    const typicalMs = Number(row.typical_boot_ms);
    if (row.host_id !== null) {
      row.eta_seconds = bootingEtaSeconds(
        typicalMs,
        row.claimed_ms === null ? 0 : nowMs - Number(row.claimed_ms),
      );
      continue;
    }
    const q = (
      await db.query<{ ahead: number; temporary: number; hosts: HostCapacity[] }>(QUEUE_POSITION, [row.seq])
    ).rows[0]!;
    const { slots, pooled } = hostSlots(q.hosts, nowMs);
    const eta = queuedEtaSeconds({
      temporary: row.profile_id === null,
      ahead: Number(q.ahead),
      temporaryAhead: Number(q.temporary),
      pooledReadyInMs: pooled,
      slots,
    });
    // No live host with room: a typical boot after one more (a guess until one has room).
    row.eta_seconds = eta ?? Math.max(1, Math.ceil((2 * typicalMs) / 1000));
  }
}
