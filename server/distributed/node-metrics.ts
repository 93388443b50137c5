/**
 * Metrics of an API node (`phonelease server --store URL --metrics`, GET /metrics in the
 * Prometheus text format): the series of the single server's --metrics that describe the
 * deployment's state, read from PostgreSQL when scraped, so every node reports the same
 * values for them (sessions by state, the hosts' phones and pools), plus what the deployment
 * adds (hosts by state, each live host's phones and sessions) and what this node itself did
 * (the creates it answered, its HTTP requests). Boots and phones becoming ready happen on
 * device hosts and are not counted here.
 *
 * A scrape while the store is unreachable still answers: the node's own series, and
 * phonelease_store_up 0 in place of the shared state. Nothing is per account or secret: host
 * ids (which name machines, not customers) are the only ids in labels.
 */
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ErrorCode } from '../../src/api/schemas.js';
import type { Db } from '../stores/postgres/pool.js';
import { readDeploymentState, type DeploymentState } from '../stores/postgres/state.js';

/** API answers take from about a millisecond (a read) to the 30 s of a long poll. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const HOST_STATES = ['live', 'dead', 'stopped'] as const;

export class ApiNodeMetrics {
  readonly registry = new Registry();
  /** Read at the start of each scrape; null when the store did not answer. */
  #shared: DeploymentState | null = null;

  readonly #admissions = new Counter({
    name: 'phonelease_admissions_total',
    help: 'Session creates this API node answered, by outcome (admitted, replayed, refused).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly #refusals = new Counter({
    name: 'phonelease_admission_refusals_total',
    help: 'Session creates this API node refused, by error code (phones_busy, session_limit, ...).',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly #requests = new Counter({
    name: 'phonelease_http_requests_total',
    help: 'HTTP requests this API node answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly #durations = new Histogram({
    name: 'phonelease_http_request_duration_seconds',
    help: 'Time this API node took to answer, by method and route pattern (long polls included).',
    labelNames: ['method', 'route'] as const,
    buckets: HTTP_BUCKETS,
    registers: [this.registry],
  });

  constructor(private readonly db: Db) {
    const shared = () => this.#shared;
    const live = () => shared()?.hosts.filter((h) => h.state === 'live') ?? [];
    const sum = (pick: (h: DeploymentState['hosts'][number]) => number) =>
      live().reduce((n, h) => n + Number(pick(h)), 0);
    const registers = [this.registry];
    // Each gauge of the shared state starts every scrape empty: the last scrape's values must
    // not stand in for a store that did not answer this one.
    new Gauge({
      name: 'phonelease_store_up',
      help: 'Whether the shared store (PostgreSQL) answered this scrape; the deployment series are absent when not.',
      registers,
      collect() {
        this.set(shared() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'phonelease_sessions',
      help: 'Live sessions of the deployment by state (queued and booting are the API state provisioning).',
      labelNames: ['state'] as const,
      registers,
      collect() {
        this.reset();
        const s = shared();
        if (s) for (const [state, n] of Object.entries(s.sessions)) this.set({ state }, Number(n));
      },
    });
    new Gauge({
      name: 'phonelease_pool_phones',
      help: "Phones in the live device hosts' warm pools: ready (booted, waiting for a session) and booting.",
      labelNames: ['state'] as const,
      registers,
      collect() {
        this.reset();
        if (!shared()) return;
        this.set(
          { state: 'ready' },
          sum((h) => h.warm),
        );
        this.set(
          { state: 'booting' },
          sum((h) => h.warming),
        );
      },
    });
    new Gauge({
      name: 'phonelease_pool_target',
      help: 'Phones the live device hosts keep booted ahead of demand (the sum of their --pool).',
      registers,
      collect() {
        this.reset();
        if (shared()) this.set(sum((h) => h.pool_target));
      },
    });
    new Gauge({
      name: 'phonelease_phones_capacity',
      help: "Phones the deployment runs at most: the sum of the live device hosts' --phones.",
      registers,
      collect() {
        this.reset();
        if (shared()) this.set(sum((h) => h.phones));
      },
    });
    new Gauge({
      name: 'phonelease_hosts',
      help: 'Device hosts that registered, by state (live; dead: stopped heartbeating; stopped).',
      labelNames: ['state'] as const,
      registers,
      collect() {
        this.reset();
        const s = shared();
        if (!s) return;
        for (const state of HOST_STATES) this.set({ state }, s.hosts.filter((h) => h.state === state).length);
      },
    });
    new Gauge({
      name: 'phonelease_host_phones_capacity',
      help: 'Phones each live device host runs at most (its --phones).',
      labelNames: ['host'] as const,
      registers,
      collect() {
        this.reset();
        for (const h of live()) this.set({ host: h.id }, Number(h.phones));
      },
    });
    new Gauge({
      name: 'phonelease_host_sessions',
      help: 'Live sessions each live device host holds (booting, ready or being cleaned up).',
      labelNames: ['host'] as const,
      registers,
      collect() {
        this.reset();
        for (const h of live()) this.set({ host: h.id }, Number(h.sessions));
      },
    });
    // Every outcome appears from the start (at 0), so rates work from the first scrape.
    for (const outcome of ['admitted', 'replayed', 'refused']) this.#admissions.inc({ outcome }, 0);
  }

  admission(outcome: 'admitted' | 'replayed' | { refused: ErrorCode }): void {
    if (typeof outcome === 'string') this.#admissions.inc({ outcome });
    else {
      this.#admissions.inc({ outcome: 'refused' });
      this.#refusals.inc({ code: outcome.refused });
    }
  }

  /** Counts and times every answer of `app`, labelled by route pattern (never by a path with ids in it). */
  observe(app: FastifyInstance): void {
    app.addHook('onResponse', async (req, reply) => {
      const route = req.routeOptions.url ?? 'unmatched';
      this.#requests.inc({ method: req.method, route, status: String(reply.statusCode) });
      this.#durations.observe({ method: req.method, route }, reply.elapsedTime / 1000);
    });
  }

  /** The exposition: Prometheus text format, version 0.0.4. */
  async text(): Promise<{ contentType: string; body: string }> {
    // Scrapes are rare (seconds apart); a concurrent one reads again, which is harmless.
    this.#shared = await readDeploymentState(this.db).catch(() => null);
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
