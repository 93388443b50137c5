/**
 * eta_seconds of a deployment's provisioning sessions, with the single server's queue model
 * (runtime/eta.ts) fed from the shared store:
 * - a session a host has claimed is booting there: what is left of that host's typical boot
 *   since the claim;
 * - a queued session waits behind the sessions queued before it (by seq), for the live
 *   hosts' pooled phones (temporary sessions only) and boot slots. Each host offers its
 *   `boot_slots`: those its claimed boots hold free when they should end, the rest are free
 *   now while it has room (phones its sessions leave), and a boot in a slot takes that host's
 *   typical boot time.
 * Hosts publish their pools by count only, not when each warming phone started: a warming
 * phone is taken to be half-way through its boot.
 */
import { queuedEtaSeconds, type EtaSlot } from '../runtime/eta.js';
import type { Db } from '../store/pg.js';

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

/** A live host as QUEUE_POSITION reads it. */
export interface LiveHost {
  boot_slots: number;
  phones: number;
  typical_boot_ms: number;
  warm: number;
  warming: number;
  held: number;
  claimed: number[];
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

/** The live hosts' slots and pools, in ms from `nowMs`. */
export function capacity(hosts: LiveHost[], nowMs: number): { slots: EtaSlot[]; pooled: number[] } {
  const slots: EtaSlot[] = [];
  const pooled: number[] = [];
  for (const h of hosts) {
    const typicalMs = Number(h.typical_boot_ms);
    const busy = [
      ...h.claimed.map((at) => Math.max(0, typicalMs - (nowMs - Number(at)))),
      ...Array.from({ length: Number(h.warming) }, () => typicalMs / 2),
    ].slice(0, Number(h.boot_slots));
    for (const freeInMs of busy) slots.push({ freeInMs, typicalMs });
    const free = Math.min(Number(h.boot_slots) - busy.length, Math.max(0, Number(h.phones) - Number(h.held)));
    for (let i = 0; i < free; i++) slots.push({ freeInMs: 0, typicalMs });
    for (let i = 0; i < Number(h.warm); i++) pooled.push(0);
    for (let i = 0; i < Number(h.warming); i++) pooled.push(typicalMs / 2);
  }
  return { slots, pooled };
}

/**
 * Sets eta_seconds on the provisioning rows among `rows` (the rest are left alone). Reads
 * the shared store only for a queued one: one statement each.
 */
export async function estimateEta(db: Db, rows: EtaRow[], nowMs: number): Promise<void> {
  for (const row of rows) {
    if (row.state !== 'provisioning') continue;
    const typicalMs = Number(row.typical_boot_ms);
    if (row.host_id !== null) {
      const since = row.claimed_ms === null ? 0 : nowMs - Number(row.claimed_ms);
      row.eta_seconds = Math.ceil(Math.max(0, typicalMs - since) / 1000);
      continue;
    }
    const q = (
      await db.query<{ ahead: number; temporary: number; hosts: LiveHost[] }>(QUEUE_POSITION, [row.seq])
    ).rows[0]!;
    const { slots, pooled } = capacity(q.hosts, nowMs);
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
