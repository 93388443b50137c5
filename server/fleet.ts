/**
 * The fleet as the dashboard's operators see it (GET /dashboard/api/fleet): phones by state,
 * the warm pool, the boot queue, how long phones take to start, and a deployment's device
 * hosts. The counts come from the same reads the /metrics gauges make (the runtime's stats
 * on the single server, the shared store's state on an API node), so the two never disagree.
 *
 * Start times are recorded as the runtime reports them (the observer /metrics histograms
 * are fed by too), exactly rather than in buckets, without loading the metrics library: a
 * server started without --metrics still has them.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { StartupSource } from './runtime/rows.js';
import type { DeploymentState } from './stores/postgres/state.js';
import type { RuntimeObserver, RuntimeStats } from './runtime/runtime.js';

const SOURCES: readonly StartupSource[] = ['cold', 'snapshot', 'pool'];
/** Percentiles are over the latest starts of each source, at most this many. */
const SAMPLES = 1000;

const StartTimes = Type.Object({
  /** Starts of this source since the server started (the histogram's count on /metrics). */
  count: Type.Integer(),
  /** Median and 95th percentile of admission to ready, in ms; null before the first start. */
  p50_ms: Type.Union([Type.Number(), Type.Null()]),
  p95_ms: Type.Union([Type.Number(), Type.Null()]),
});
/** The fleet as GET /dashboard/api/fleet answers it; `phones`: live sessions' phones by state (the phonelease_sessions gauge). */
export const Fleet = Type.Object({
  phones: Type.Record(Type.String(), Type.Integer()),
  /** Phones the server (the deployment's live hosts) runs at most. */
  capacity: Type.Integer(),
  pool: Type.Object({ target: Type.Integer(), ready: Type.Integer(), booting: Type.Integer() }),
  queue: Type.Object({ queued: Type.Integer(), boot_slots: Type.Integer(), booting: Type.Integer() }),
  boot_times: Type.Object({ cold: StartTimes, snapshot: StartTimes, pool: StartTimes }),
  /** The device hosts of a deployment; null on the single server. */
  hosts: Type.Union([
    Type.Array(
      Type.Object({
        id: Type.String(),
        url: Type.String(),
        phones: Type.Integer(),
        boot_slots: Type.Integer(),
        /** Live sessions it holds. */
        sessions: Type.Integer(),
        /** Unix seconds. */
        last_heartbeat: Type.Integer(),
      }),
    ),
    Type.Null(),
  ]),
});

export type FleetView = Static<typeof Fleet>;
type StartTimes = Static<typeof StartTimes>;

/** The p-th percentile (nearest rank) of sorted values, or null for none. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Start times of a list of durations (ms), `count` of them in all. */
export function startTimes(durations: readonly number[], count = durations.length): StartTimes {
  const sorted = [...durations].sort((a, b) => a - b);
  return { count, p50_ms: percentile(sorted, 50), p95_ms: percentile(sorted, 95) };
}

/** The single server's fleet: the runtime's stats and the start times it reported. */
export class FleetFigures implements RuntimeObserver {
  readonly #samples = new Map<StartupSource, { recent: number[]; next: number; count: number }>(
    SOURCES.map((s) => [s, { recent: [], next: 0, count: 0 }]),
  );

  phoneBooted(): void {
    // Boots for the pool have no session waiting on them: the fleet shows what sessions waited.
  }

  sessionReady(start: { source: StartupSource; leaseToReadyMs: number }): void {
    const s = this.#samples.get(start.source)!;
    s.count++;
    if (s.recent.length < SAMPLES) s.recent.push(start.leaseToReadyMs);
    else s.recent[s.next] = start.leaseToReadyMs;
    s.next = (s.next + 1) % SAMPLES;
  }

  view(stats: RuntimeStats): FleetView {
    return {
      phones: stats.sessions,
      capacity: stats.phones,
      pool: { target: stats.pool.target, ready: stats.pool.warm, booting: stats.pool.warming },
      queue: { queued: stats.sessions.queued, boot_slots: stats.bootSlots, booting: stats.sessions.booting },
      boot_times: Object.fromEntries(
        SOURCES.map((source) => {
          const s = this.#samples.get(source)!;
          return [source, startTimes(s.recent, s.count)];
        }),
      ) as FleetView['boot_times'],
      hosts: null,
    };
  }
}

/** Tells every observer: the metrics and the fleet both hear what the runtime reports. */
export function observers(...all: RuntimeObserver[]): RuntimeObserver {
  return {
    phoneBooted: (boot) => all.forEach((o) => o.phoneBooted(boot)),
    sessionReady: (start) => all.forEach((o) => o.sessionReady(start)),
  };
}

/** A deployment's fleet, from what its shared store holds (the reads its API nodes' /metrics make). */
export function deploymentFleet(
  state: DeploymentState,
  starts: ReadonlyArray<{ source: StartupSource; ms: number }>,
): FleetView {
  const live = state.hosts.filter((h) => h.state === 'live');
  const sum = (pick: (h: DeploymentState['hosts'][number]) => number) =>
    live.reduce((n, h) => n + Number(pick(h)), 0);
  const phones = Object.fromEntries(
    Object.entries(state.sessions).map(([k, n]) => [k, Number(n)]),
  ) as DeploymentState['sessions'];
  return {
    phones,
    capacity: sum((h) => h.phones),
    pool: { target: sum((h) => h.pool_target), ready: sum((h) => h.warm), booting: sum((h) => h.warming) },
    queue: { queued: phones.queued, boot_slots: sum((h) => h.boot_slots), booting: phones.booting },
    boot_times: Object.fromEntries(
      SOURCES.map((source) => [
        source,
        startTimes(starts.filter((s) => s.source === source).map((s) => Number(s.ms))),
      ]),
    ) as FleetView['boot_times'],
    hosts: live.map((h) => ({
      id: h.id,
      url: h.url,
      phones: Number(h.phones),
      boot_slots: Number(h.boot_slots),
      sessions: Number(h.sessions),
      last_heartbeat: Math.floor(Number(h.heartbeat_ms) / 1000),
    })),
  };
}
