/**
 * `phonelease server --store URL --metrics` on an API node: GET /metrics (no API key) in the
 * Prometheus text format, with the deployment's state read from PostgreSQL (sessions by
 * state, the live hosts' phones and pools, hosts by state) and this node's own figures (the
 * creates it answered, its HTTP requests by route pattern), and no session id or key in it.
 * While the store is down it still answers, with phonelease_store_up 0.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Deployment } from '../support/deployment.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus.js';
import { postgresMissing, startPostgres, type PostgresCluster } from '../support/postgres.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the API node metrics tests: ${missing}`);

describe.skipIf(missing !== null)('API node --metrics', () => {
  let cluster: PostgresCluster;
  let d: Deployment | null = null;
  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterAll(async () => {
    await d?.stop();
    await cluster?.stop();
  });

  it("serves the deployment's state from the shared store and the node's own requests", async () => {
    d = await Deployment.start(cluster, {
      nodes: 1,
      hosts: [
        ['--phones', '2'],
        ['--phones', '3', '--pool', '1'],
      ],
    });
    const withMetrics = await d.startNode(['--metrics']);
    const plain = d.api(0, '');
    const scraper = d.api(1, '').as(null);
    const account = await d.account(['--billing-mode', 'disabled', '--session-limit', '2']);

    // Two sessions created through the other node; a third refused through this one.
    const created = await Promise.all(
      [0, 1].map(() => d!.api(0, account.key).post('/sessions', { body: { timeout_seconds: 300 } })),
    );
    for (const c of created) await d.api(1, account.key).waitFor(c.body.id, ['ready']);
    const refused = await d.api(1, account.key).post('/sessions', { body: { timeout_seconds: 300 } });
    expect(refused.body.code).toBe('session_limit');

    const scrape = async () => {
      const r = await scraper.get('/metrics');
      expect(r.status).toBe(200);
      expect(String(r.headers['content-type'])).toContain('text/plain');
      const text = r.raw.toString('utf8');
      return { text, families: parsePrometheusText(text) };
    };
    // The pool reports through heartbeats: wait for its phone to be counted.
    const { text, families } = await vi.waitFor(
      async () => {
        const s = await scrape();
        expect(sampleValue(s.families, 'phonelease_pool_phones', { state: 'ready' })).toBe(1);
        return s;
      },
      { timeout: 15_000, interval: 200 },
    );
    const value = (name: string, labels: Record<string, string> = {}) => sampleValue(families, name, labels);
    expect(value('phonelease_store_up')).toBe(1);
    expect(value('phonelease_sessions', { state: 'ready' })).toBe(2);
    expect(value('phonelease_sessions', { state: 'queued' })).toBe(0);
    expect(value('phonelease_phones_capacity')).toBe(5);
    expect(value('phonelease_pool_target')).toBe(1);
    expect(value('phonelease_pool_phones', { state: 'booting' })).toBe(0);
    expect(value('phonelease_hosts', { state: 'live' })).toBe(2);
    expect(value('phonelease_hosts', { state: 'dead' })).toBe(0);
    const [small, large] = d.hosts.map((h) => h.line.host);
    expect(value('phonelease_host_phones_capacity', { host: small! })).toBe(2);
    expect(value('phonelease_host_phones_capacity', { host: large! })).toBe(3);
    expect(
      (value('phonelease_host_sessions', { host: small! }) ?? 0) +
        (value('phonelease_host_sessions', { host: large! }) ?? 0),
    ).toBe(2);
    // This node's own figures: it admitted nothing (the other node did) and refused one.
    expect(value('phonelease_admissions_total', { outcome: 'admitted' })).toBe(0);
    expect(value('phonelease_admissions_total', { outcome: 'refused' })).toBe(1);
    expect(value('phonelease_admission_refusals_total', { code: 'session_limit' })).toBe(1);
    expect(
      value('phonelease_http_requests_total', {
        method: 'POST',
        route: '/sessions',
        status: String(refused.status),
      }),
    ).toBe(1);
    // Reads are labelled by their pattern, never by the session id in their path.
    expect(
      value('phonelease_http_requests_total', { method: 'GET', route: '/sessions/:sid' }),
    ).toBeGreaterThan(0);
    expect(
      value('phonelease_http_request_duration_seconds_count', { method: 'GET', route: '/sessions/:sid' }),
    ).toBeGreaterThan(0);
    for (const c of created) expect(text).not.toContain(c.body.id);
    expect(text).not.toContain(account.key);
    expect(text).not.toContain(account.uid);

    // Without --metrics there is no such endpoint.
    expect((await plain.as(null).get('/metrics')).status).toBe(404);
    expect(withMetrics.url).toBe(d.nodes[1]!.url);

    // The store down: the node still answers, saying so, with its own figures.
    await cluster.stopServer();
    try {
      const down = await scrape();
      expect(sampleValue(down.families, 'phonelease_store_up')).toBe(0);
      expect(sampleValue(down.families, 'phonelease_sessions', { state: 'ready' })).toBeUndefined();
      expect(sampleValue(down.families, 'phonelease_admissions_total', { outcome: 'refused' })).toBe(1);
    } finally {
      await cluster.startServer();
    }
  });
});
