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
import { Counter, Histogram } from 'prom-client';
import { Metrics } from '../metrics.js';
import type { Db } from '../stores/postgres/pool.js';
import { readDeploymentState, type DeploymentState } from '../stores/postgres/state.js';

/** API answers take from about a millisecond (a read) to the 30 s of a long poll. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const HOST_STATES = ['live', 'dead', 'stopped'] as const;
type Host = DeploymentState['hosts'][number];

export class ApiNodeMetrics extends Metrics {
  /** Read at the start of each scrape; null when the store did not answer. */
  #shared: DeploymentState | null = null;

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
    super(
      {
        admissions: 'Session creates this API node answered, by outcome (admitted, replayed, refused).',
        refusals: 'Session creates this API node refused, by error code (phones_busy, session_limit, ...).',
      },
      ['admitted', 'replayed', 'refused'],
    );
    const live = () => this.#shared?.hosts.filter((h) => h.state === 'live') ?? [];
    const sum = (pick: (h: Host) => number) => live().reduce((n, h) => n + Number(pick(h)), 0);
    const shared = () => this.#shared;
    this.gauge(
      'phonelease_store_up',
      'Whether the shared store (PostgreSQL) answered this scrape; the deployment series are absent when not.',
      () => (this.#shared ? 1 : 0),
      (g, up) => g.set(up),
    );
    this.capacityGauges(
      {
        sessions:
          'Live sessions of the deployment by state (queued and booting are the API state provisioning).',
        pool: "Phones in the live device hosts' warm pools: ready (booted, waiting for a session) and booting.",
        target: 'Phones the live device hosts keep booted ahead of demand (the sum of their --pool).',
        phones: "Phones the deployment runs at most: the sum of the live device hosts' --phones.",
      },
      () =>
        this.#shared && {
          sessions: this.#shared.sessions,
          warm: sum((h) => h.warm),
          warming: sum((h) => h.warming),
          target: sum((h) => h.pool_target),
          phones: sum((h) => h.phones),
        },
    );
    this.gauge(
      'phonelease_hosts',
      'Device hosts that registered, by state (live; dead: stopped heartbeating; stopped).',
      shared,
      (g, s) =>
        HOST_STATES.forEach((state) => g.set({ state }, s.hosts.filter((h) => h.state === state).length)),
      ['state'],
    );
    this.gauge(
      'phonelease_host_phones_capacity',
      'Phones each live device host runs at most (its --phones).',
      shared,
      (g) => live().forEach((h) => g.set({ host: h.id }, Number(h.phones))),
      ['host'],
    );
    this.gauge(
      'phonelease_host_sessions',
      'Live sessions each live device host holds (booting, ready or being cleaned up).',
      shared,
      (g) => live().forEach((h) => g.set({ host: h.id }, Number(h.sessions))),
      ['host'],
    );
  }

  /** Counts and times every answer of `app`, labelled by route pattern (never by a path with ids in it). */
  observe(app: FastifyInstance): void {
    app.addHook('onResponse', async (req, reply) => {
      const route = req.routeOptions.url ?? 'unmatched';
      this.#requests.inc({ method: req.method, route, status: String(reply.statusCode) });
      this.#durations.observe({ method: req.method, route }, reply.elapsedTime / 1000);
    });
  }

  override async text(): Promise<{ contentType: string; body: string }> {
    // Scrapes are rare (seconds apart); a concurrent one reads again, which is harmless.
    this.#shared = await readDeploymentState(this.db).catch(() => null);
    return super.text();
  }
}
