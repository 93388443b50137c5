/**
 * eta_seconds of a queued session: one queue model, played forward, for the embedded runtime
 * and for a deployment's API nodes (which feed it the live hosts' slots and pools read from
 * the shared store). A typical remaining time, not a promise, as the contract says.
 *
 * Temporary sessions get pooled phones in order (warm ones at once, warming ones when their
 * boot ends); everything else waits for a boot slot: each slot frees when the boot it holds
 * should end, and the queued sessions the pool does not serve take slots in order, each boot
 * taking what boots typically take where that slot is.
 */

/** A boot slot: in how many ms it frees, and what a boot there typically takes. */
export interface EtaSlot {
  freeInMs: number;
  typicalMs: number;
}

export interface QueuePosition {
  /** Whether the session is temporary (pooled phones serve only those). */
  temporary: boolean;
  /** Queued sessions ahead of it, and how many of those are temporary. */
  ahead: number;
  temporaryAhead: number;
  /** When each pooled phone is ready, in ms from now, in the order they are handed out (warm: 0). */
  pooledReadyInMs: readonly number[];
  /** Every boot slot there is. */
  slots: readonly EtaSlot[];
}

/** Seconds until a queued session's phone is likely ready; undefined when there is no slot to model. */
export function queuedEtaSeconds(q: QueuePosition): number | undefined {
  const pooled = [...q.pooledReadyInMs].sort((a, b) => a - b);
  if (q.temporary && q.temporaryAhead < pooled.length) return Math.ceil(pooled[q.temporaryAhead]! / 1000);
  if (q.slots.length === 0) return undefined;
  const slots = q.slots.map((s) => ({ ...s }));
  const position = Math.max(0, q.ahead - Math.min(pooled.length, q.temporaryAhead));
  let readyInMs = 0;
  for (let i = 0; i <= position; i++) {
    slots.sort((a, b) => a.freeInMs - b.freeInMs);
    const slot = slots[0]!;
    readyInMs = slot.freeInMs + slot.typicalMs;
    slot.freeInMs = readyInMs;
  }
  return Math.ceil(readyInMs / 1000);
}
