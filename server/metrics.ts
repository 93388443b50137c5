/**
 * Metrics for people who run the server (`--metrics`, served at GET /metrics in the
 * Prometheus text format): what the runtime holds (sessions by state, the warm pool) is read
 * when scraped; what happens (admissions, boots, phones becoming ready) is counted as it
 * happens. One Registry per server, never prom-client's global one: two servers in one
 * process (tests, embedded servers) keep their own series.
 *
 * Nothing here is per account or secret: no session ids, uids, keys or codes in any label.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ErrorCode } from '../src/api/schemas.js';
import type { StartupSource } from './runtime/rows.js';
import type { Admission } from './runtime/directory.js';
import type { RuntimeObserver, RuntimeStats } from './runtime/runtime.js';

/** Boots of real phones take from about a second (a snapshot) to minutes (a cold emulator on CI). */
const BOOT_BUCKETS = [0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300];
/** Lease to ready spans a pool handout (milliseconds) to a queued cold boot (minutes). */
const LEASE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300];

export class ServerMetrics implements RuntimeObserver {
  readonly registry = new Registry();
  #stats: (() => RuntimeStats) | null = null;

  readonly #admissions = new Counter({
    name: 'phonelease_admissions_total',
    help: 'Session creates the runtime answered, by outcome (admitted, replayed, recorded, refused).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly #refusals = new Counter({
    name: 'phonelease_admission_refusals_total',
    help: 'Session creates refused by the runtime, by error code (phones_busy, session_limit, ...).',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly #starts = new Counter({
    name: 'phonelease_phone_starts_total',
    help: 'Sessions whose phone became ready, by startup source (pool: handed from the warm pool; snapshot; cold).',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });
  readonly #boots = new Histogram({
    name: 'phonelease_boot_duration_seconds',
    help: 'Phone boots that succeeded, by how the phone started and what it was booted for (session or pool).',
    labelNames: ['source', 'purpose'] as const,
    buckets: BOOT_BUCKETS,
    registers: [this.registry],
  });
  readonly #leaseToReady = new Histogram({
    name: 'phonelease_lease_to_ready_seconds',
    help: 'Time from a session admitted to its phone ready, by startup source.',
    labelNames: ['source'] as const,
    buckets: LEASE_BUCKETS,
    registers: [this.registry],
  });

  constructor() {
    const stats = () => this.#stats?.() ?? null;
    new Gauge({
      name: 'phonelease_sessions',
      help: 'Live sessions by state (queued and booting are the API state provisioning).',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const s = stats();
        if (!s) return;
        for (const [state, n] of Object.entries(s.sessions)) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'phonelease_pool_phones',
      help: 'Phones in the warm pool: ready (booted, waiting for a session) and booting.',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const s = stats();
        if (!s) return;
        this.set({ state: 'ready' }, s.pool.ready);
        this.set({ state: 'booting' }, s.pool.booting);
      },
    });
    new Gauge({
      name: 'phonelease_pool_target',
      help: 'Phones the warm pool keeps booted ahead of demand (--pool).',
      registers: [this.registry],
      collect() {
        const s = stats();
        if (s) this.set(s.pool.target);
      },
    });
    new Gauge({
      name: 'phonelease_phones_capacity',
      help: 'Phones this server runs at most (--phones), sessions and pool together.',
      registers: [this.registry],
      collect() {
        const s = stats();
        if (s) this.set(s.phones);
      },
    });
    // Every outcome and source appears from the start (at 0), so rates work from the first scrape.
    for (const outcome of ['admitted', 'replayed', 'recorded', 'refused'])
      this.#admissions.inc({ outcome }, 0);
    for (const source of ['pool', 'snapshot', 'cold']) this.#starts.inc({ source }, 0);
  }

  /** Where the gauges read the runtime's state (set once the runtime exists). */
  watch(stats: () => RuntimeStats): void {
    this.#stats = stats;
  }

  admission(outcome: Admission['outcome'] | { refused: ErrorCode }): void {
    if (typeof outcome === 'string') this.#admissions.inc({ outcome });
    else {
      this.#admissions.inc({ outcome: 'refused' });
      this.#refusals.inc({ code: outcome.refused });
    }
  }

  phoneBooted(boot: { source: 'cold' | 'snapshot'; purpose: 'session' | 'pool'; ms: number }): void {
    this.#boots.observe({ source: boot.source, purpose: boot.purpose }, boot.ms / 1000);
  }

  sessionReady(start: { source: StartupSource; leaseToReadyMs: number }): void {
    this.#starts.inc({ source: start.source });
    this.#leaseToReady.observe({ source: start.source }, start.leaseToReadyMs / 1000);
  }

  /** The exposition: Prometheus text format, version 0.0.4. */
  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
