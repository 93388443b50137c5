/**
 * The dashboard on a deployment: two API nodes over one PostgreSQL store and a device host,
 * each its own process. A link made by the CLI against the store signs in through either
 * node, a session token from one node works on the other, a sign-out on one holds on both,
 * and the fleet an operator sees is what the nodes' /metrics say.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { Deployment, type CreatedAccountLine } from '../support/deployment.js';
import { postgresMissing, startPostgres, type PostgresCluster } from '../support/postgres.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus.js';
import { Api } from '../support/server.js';

const missing = postgresMissing();
if (missing) console.warn(`skipping the deployment dashboard tests: ${missing}`);

describe.skipIf(missing !== null)('the dashboard on API nodes', () => {
  let cluster: PostgresCluster;
  let d: Deployment;
  let operator: CreatedAccountLine;
  let plain: CreatedAccountLine;

  beforeAll(async () => {
    cluster = await startPostgres();
    d = await Deployment.start(cluster, { nodes: 0 });
    await Promise.all([d.startNode(['--metrics']), d.startNode(['--metrics'])]);
    await d.startHost(['--phones', '2', '--boot-slots', '1']);
    operator = await d.account(['--billing-mode', 'disabled', '--operator', '--email', 'ops@example.com']);
    plain = await d.account();
  }, 120_000);
  afterAll(async () => {
    await d?.stop();
    await cluster?.stop();
  });

  const link = async (args: string[]) => {
    const r = await runCli([
      'dashboard',
      '--store',
      d.store,
      '--base-url',
      d.nodes[0]!.url,
      '--json',
      ...args,
    ]);
    expect(r.code, r.stderr).toBe(0);
    return new URL((JSON.parse(r.stdout) as { url: string }).url).hash.replace('#token=', '');
  };
  const signIn = (node: number, body: unknown) =>
    new Api(d.nodes[node]!.url, null).post('/dashboard/api/sign-in', { body });

  it('a CLI link signs in through either node, once; the token works on both; sign-out holds on both', async () => {
    const token = await link(['--email', 'ops@example.com']);
    const signedIn = await signIn(1, { link: token });
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.account).toMatchObject({ uid: operator.uid, operator: true });
    const reused = await signIn(0, { link: token });
    expect(reused.status).toBe(401);
    expect(reused.body.code).toBe('sign_in_link_used');

    const jwt = signedIn.body.token as string;
    const [a, b] = [d.api(0, jwt), d.api(1, jwt)];
    expect((await a.get('/me')).body.uid).toBe(operator.uid);
    const sid = (await a.post('/sessions', { body: { timeout_seconds: 120 } })).body.id as string;
    await b.waitFor(sid, ['ready']);
    expect((await b.get('/sessions')).body.map((s: { id: string }) => s.id)).toEqual([sid]);
    expect((await b.get(`/sessions/${sid}/frame.png`)).headers['content-type']).toBe('image/png');
    expect((await b.delete(`/sessions/${sid}`)).status).toBe(200);
    await d.waitGone(b, sid);

    expect((await a.post('/dashboard/api/sign-out')).status).toBe(204);
    for (const api of [a, b]) expect((await api.get('/me')).status).toBe(401);
  });

  it('a key signs in through a node; another account reads 404 with the token, as with a key', async () => {
    const sid = (await d.api(0, operator.key).post('/sessions', { body: { timeout_seconds: 60 } })).body
      .id as string;
    const jwt = (await signIn(0, { key: plain.key })).body.token as string;
    for (const node of [0, 1]) {
      const viaJwt = await d.api(node, jwt).get(`/sessions/${sid}`);
      const viaKey = await d.api(node, plain.key).get(`/sessions/${sid}`);
      expect(viaJwt.status).toBe(404);
      expect(viaJwt.body).toEqual(viaKey.body);
      expect((await d.api(node, jwt).get('/dashboard/api/fleet')).status).toBe(404);
    }
    await d.api(1, operator.key).delete(`/sessions/${sid}`);
    await d.waitGone(d.api(1, operator.key), sid);
  });

  it("the fleet on either node is what the nodes' /metrics say, hosts included", async () => {
    const api = d.api(0, operator.key);
    const sid = (await api.post('/sessions', { body: { timeout_seconds: 120 } })).body.id as string;
    await api.waitFor(sid, ['ready']);
    const host = d.hosts[0]!.line;
    for (const node of [0, 1]) {
      const jwt = (await signIn(node, { key: operator.key })).body.token as string;
      const fleet = (await d.api(node, jwt).get('/dashboard/api/fleet')).body;
      const metrics = parsePrometheusText(
        (await new Api(d.nodes[node]!.url, null).get('/metrics')).raw.toString(),
      );
      const gauge = (name: string, labels: Record<string, string> = {}) => sampleValue(metrics, name, labels);
      for (const state of ['queued', 'booting', 'ready', 'error', 'closing'])
        expect(fleet.phones[state], state).toBe(gauge('phonelease_sessions', { state }));
      expect(fleet.phones.ready).toBe(1);
      expect(fleet.capacity).toBe(gauge('phonelease_phones_capacity'));
      expect(fleet.capacity).toBe(2);
      expect(fleet.pool).toEqual({
        target: gauge('phonelease_pool_target'),
        ready: gauge('phonelease_pool_phones', { state: 'ready' }),
        booting: gauge('phonelease_pool_phones', { state: 'booting' }),
      });
      expect(fleet.queue).toEqual({ queued: 0, boot_slots: 1, booting: 0 });
      expect(fleet.boot_times.cold.count).toBeGreaterThanOrEqual(1);
      expect(fleet.hosts).toHaveLength(1);
      expect(fleet.hosts[0]).toMatchObject({
        id: host.host,
        url: host.url,
        phones: gauge('phonelease_host_phones_capacity', { host: host.host }),
        boot_slots: 1,
        sessions: gauge('phonelease_host_sessions', { host: host.host }),
      });
      expect(Math.abs(fleet.hosts[0].last_heartbeat - Date.now() / 1000)).toBeLessThan(30);
    }
    await api.delete(`/sessions/${sid}`);
    await d.waitGone(api, sid);
  });

  it('pages come from every node with the dashboard headers', async () => {
    for (const node of d.nodes) {
      const r = await new Api(node.url, null).get('/dashboard/sessions');
      expect(r.status).toBe(200);
      expect(r.headers['cache-control']).toBe('private, no-store');
      expect(String(r.headers['content-security-policy'])).toContain("script-src 'self'");
      expect(String(r.headers['content-security-policy'])).not.toContain('unsafe-inline');
    }
  });
});
