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

/** What the capacity gauges read: live sessions by state, pooled phones, the pool's target and the phones. */
interface Capacity {
  sessions: Record<string, number>;
  warm: number;
  warming: number;
  target: number;
  phones: number;
}

/**
 * What the single server's metrics and an API node's share: their own Registry, the creates
 * they answered (`help`: who answered them), and the exposition.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly #admissions: Counter<'outcome'>;
  readonly #refusals: Counter<'code'>;

  constructor(help: { admissions: string; refusals: string }, outcomes: readonly string[]) {
    const registers = [this.registry];
    this.#admissions = new Counter({
      name: 'phonelease_admissions_total',
      help: help.admissions,
      labelNames: ['outcome'],
      registers,
    });
    this.#refusals = new Counter({
      name: 'phonelease_admission_refusals_total',
      help: help.refusals,
      labelNames: ['code'],
      registers,
    });
    // Every outcome appears from the start (at 0), so rates work from the first scrape.
    for (const outcome of outcomes) this.#admissions.inc({ outcome }, 0);
  }

  admission(outcome: Admission['outcome'] | { refused: ErrorCode }): void {
    if (typeof outcome === 'string') this.#admissions.inc({ outcome });
    else {
      this.#admissions.inc({ outcome: 'refused' });
      this.#refusals.inc({ code: outcome.refused });
    }
  }

  /**
   * A gauge set when scraped from what `read` returns then, and absent while that is
   * null: the last scrape's values never stand in for a source that did not answer.
   */
  protected gauge<S>(
    name: string,
    help: string,
    read: () => S | null | undefined,
    set: (g: Gauge, s: S) => void,
    labelNames: string[] = [],
  ): void {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        const s = read();
        if (s !== null && s !== undefined) set(this, s);
      },
    });
  }

  /**
   * The four gauges of what runs and what could: sessions by state, the warm pool, its target
   * and the capacity, from what `read` returns when scraped (`help`: whose figures they are).
   */
  protected capacityGauges(
    help: Record<'sessions' | 'pool' | 'target' | 'phones', string>,
    read: () => Capacity | null | undefined,
  ): void {
    this.gauge(
      'phonelease_sessions',
      help.sessions,
      read,
      (g, c) => Object.entries(c.sessions).forEach(([state, n]) => g.set({ state }, Number(n))),
      ['state'],
    );
    this.gauge(
      'phonelease_pool_phones',
      help.pool,
      read,
      (g, c) => {
        g.set({ state: 'ready' }, c.warm);
        g.set({ state: 'booting' }, c.warming);
      },
      ['state'],
    );
    this.gauge('phonelease_pool_target', help.target, read, (g, c) => g.set(c.target));
    this.gauge('phonelease_phones_capacity', help.phones, read, (g, c) => g.set(c.phones));
  }

  /** The exposition: Prometheus text format, version 0.0.4. */
  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

export class ServerMetrics extends Metrics implements RuntimeObserver {
  #stats: (() => RuntimeStats) | null = null;

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
    super(
      {
        admissions:
          'Session creates the runtime answered, by outcome (admitted, replayed, recorded, refused).',
        refusals: 'Session creates refused by the runtime, by error code (phones_busy, session_limit, ...).',
      },
      ['admitted', 'replayed', 'recorded', 'refused'],
    );
    // Read from the runtime when scraped (nothing before it exists).
    this.capacityGauges(
      {
        sessions: 'Live sessions by state (queued and booting are the API state provisioning).',
        pool: 'Phones in the warm pool: ready (booted, waiting for a session) and booting.',
        target: 'Phones the warm pool keeps booted ahead of demand (--pool).',
        phones: 'Phones this server runs at most (--phones), sessions and pool together.',
      },
      () => {
        const s = this.#stats?.();
        return s && { sessions: s.sessions, ...s.pool, phones: s.phones };
      },
    );
    for (const source of ['pool', 'snapshot', 'cold']) this.#starts.inc({ source }, 0);
  }

  /** Where the gauges read the runtime's state (set once the runtime exists). */
  watch(stats: () => RuntimeStats): void {
    this.#stats = stats;
  }

  phoneBooted(boot: { source: 'cold' | 'snapshot'; purpose: 'session' | 'pool'; ms: number }): void {
    this.#boots.observe({ source: boot.source, purpose: boot.purpose }, boot.ms / 1000);
  }

  sessionReady(start: { source: StartupSource; leaseToReadyMs: number }): void {
    this.#starts.inc({ source: start.source });
    this.#leaseToReady.observe({ source: start.source }, start.leaseToReadyMs / 1000);
  }
}
