/**
 * Scale-out benchmark: the deployment on PostgreSQL against the single-process SQLite server,
 * measured in the same run on the same machine.
 *
 * 1. API throughput: POST /sessions (fresh idempotency keys) and GET /sessions/{sid} against
 *    the SQLite server (the baseline), then 1 and 2 API nodes (`server --store --phones 0`)
 *    over one database, each with a device host registered so there is capacity. Every server
 *    boots at most one phone at a time (--boot-slots 1), so the figures are the API's.
 * 2. Live phones: N virtual phones (default 1,000) across 3 device hosts, created through 2
 *    API nodes; the time until all are ready and the hosts' memory.
 * 3. A dead host: a host with live sessions is killed with SIGKILL; the time until every node
 *    agrees it is dead and its sessions ended `lost`, against its declared lost-after time.
 *
 * Run: npm run build && npx tsx bench/scale.ts [--seconds 3] [--concurrency 32] [--phones 1000]
 *        [--skip-throughput] (parts 2 and 3 only)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { load, type LoadResult } from './support/load.js';
import { BenchProcesses, runCli } from './support/process.js';
import { sql, startPostgres } from '../test/support/postgres.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '32' },
    phones: { type: 'string', default: '1000' },
    'lost-after-ms': { type: 'string', default: '3000' },
    'skip-throughput': { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const phoneGoal = Number(values.phones);
const lostAfterMs = Number(values['lost-after-ms']);
const processes = new BenchProcesses();
const startJsonProcess = (args: string[], env: NodeJS.ProcessEnv = {}) => processes.cli(args, env);

const fmt = (r: LoadResult) =>
  `${Math.round(r.perSecond).toLocaleString('en')}/s${r.errors ? ` (${r.errors} errors)` : ''}${
    Object.keys(r.statuses).some((s) => s !== '200' && s !== '202')
      ? ` statuses ${JSON.stringify(r.statuses)}`
      : ''
  }`;

function rssMb(pid: number | undefined): number {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return Math.round(Number(kb) / 1024);
  } catch {
    return NaN;
  }
}

async function account(store: string[]): Promise<string> {
  const line = await runCli([
    'accounts',
    'create',
    ...store,
    '--json',
    '--billing-mode',
    'disabled',
    '--session-limit',
    '1000000',
  ]);
  return (JSON.parse(line) as { key: string }).key;
}

/** Creates (fresh keys) and reads of one session, spread over `urls`, `concurrency` in flight in all. */
async function throughput(urls: string[], key: string): Promise<{ post: LoadResult; get: LoadResult }> {
  const auth = { authorization: `Bearer ${key}` };
  const created = await request(`${urls[0]}/sessions`, { method: 'POST', headers: auth });
  const sid = ((await created.body.json()) as { id: string }).id;
  const run = async (
    make: (i: number) => Parameters<typeof load>[1] extends (i: number) => infer R ? R : never,
  ) => {
    const parts = await Promise.all(
      urls.map((u) =>
        load(u, make, { seconds, concurrency: Math.max(1, Math.floor(concurrency / urls.length)) }),
      ),
    );
    const requests = parts.reduce((n, p) => n + p.requests, 0);
    const statuses: Record<number, number> = {};
    for (const p of parts)
      for (const [s, n] of Object.entries(p.statuses)) statuses[Number(s)] = (statuses[Number(s)] ?? 0) + n;
    return {
      requests,
      seconds,
      perSecond: parts.reduce((n, p) => n + p.perSecond, 0),
      errors: parts.reduce((n, p) => n + p.errors, 0),
      statuses,
    };
  };
  const runId = Date.now().toString(36);
  const get = await run(() => ({ method: 'GET', path: `/sessions/${sid}`, headers: auth }));
  const post = await run((i) => ({
    method: 'POST',
    path: '/sessions',
    headers: { ...auth, 'idempotency-key': `scale-${runId}-${i}-${Math.random().toString(36).slice(2, 10)}` },
  }));
  return { post, get };
}

const cluster = await startPostgres();
const data = mkdtempSync(join(tmpdir(), 'phonelease-scale-'));
try {
  console.log(`phonelease scale benchmark: ${seconds} s per run, ${concurrency} connections in all`);

  // 1. Throughput: SQLite baseline, then 1 and 2 API nodes.
  if (!values['skip-throughput']) {
    const sqlite = await processes.sqliteServer(data, [
      '--phones',
      '1000000',
      '--boot-slots',
      '1',
      '--boot-ms',
      '0',
    ]);
    const base = await throughput([sqlite.url], await account(['--data', data]));
    sqlite.child.kill('SIGKILL');

    const results: Array<{ nodes: number; post: LoadResult; get: LoadResult }> = [];
    for (const nodes of [1, 2]) {
      const store = await cluster.createDatabase();
      const api: Array<Awaited<ReturnType<typeof startJsonProcess>>> = [];
      for (let i = 0; i < nodes; i++)
        api.push(
          await startJsonProcess(['server', '--store', store, '--phones', '0', '--port', '0', '--json']),
        );
      const host = await startJsonProcess([
        'host',
        '--store',
        store,
        '--phones',
        '1000000',
        '--boot-slots',
        '1',
        '--boot-ms',
        '0',
        '--json',
      ]);
      results.push({
        nodes,
        ...(await throughput(
          api.map((a) => a.url),
          await account(['--store', store]),
        )),
      });
      for (const p of [...api, host]) p.child.kill('SIGKILL');
    }
    console.log('API throughput (creates with fresh keys; reads of one session)');
    console.log(`  SQLite server (baseline):  POST ${fmt(base.post)}, GET ${fmt(base.get)}`);
    for (const r of results) {
      console.log(
        `  ${r.nodes} API node${r.nodes > 1 ? 's' : ' '} on PostgreSQL:  POST ${fmt(r.post)} (${(r.post.perSecond / base.post.perSecond).toFixed(2)} of baseline), GET ${fmt(r.get)} (${(r.get.perSecond / base.get.perSecond).toFixed(2)} of baseline)`,
      );
    }
  }
  // 2. Live phones across 3 hosts.
  const store = await cluster.createDatabase();
  const nodes: Array<Awaited<ReturnType<typeof startJsonProcess>>> = [];
  for (let i = 0; i < 2; i++)
    nodes.push(
      await startJsonProcess(['server', '--store', store, '--phones', '0', '--port', '0', '--json']),
    );
  const perHost = Math.ceil(phoneGoal / 3);
  const hosts: Array<Awaited<ReturnType<typeof startJsonProcess>>> = [];
  for (let i = 0; i < 3; i++) {
    hosts.push(
      await startJsonProcess(
        [
          'host',
          '--store',
          store,
          '--phones',
          String(perHost),
          '--boot-slots',
          '16',
          '--boot-ms',
          '0',
          '--json',
        ],
        { PHONELEASE_HOST_LOST_AFTER_MS: String(lostAfterMs) },
      ),
    );
  }
  const key = await account(['--store', store]);
  const started = performance.now();
  let refused = 0;
  const batch = 32;
  for (let i = 0; i < phoneGoal; i += batch) {
    const replies = await Promise.all(
      Array.from({ length: Math.min(batch, phoneGoal - i) }, (_, j) =>
        request(`${nodes[(i + j) % 2]!.url}/sessions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ timeout_seconds: 3600 }),
        }).then(async (r) => {
          await r.body.dump();
          return r.statusCode;
        }),
      ),
    );
    refused += replies.filter((s) => s !== 202).length;
  }
  const admittedMs = performance.now() - started;
  let ready = 0;
  const readyDeadline = Date.now() + 600_000;
  while (Date.now() < readyDeadline) {
    ready = Number(
      (
        await sql<{ n: string }>(
          store,
          "SELECT count(*) AS n FROM sessions WHERE state = 'ready' AND done = 0",
        )
      )[0]!.n,
    );
    if (ready >= phoneGoal - refused) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const readyMs = performance.now() - started;
  console.log(
    `Live phones: ${ready} of ${phoneGoal} virtual phones ready across 3 hosts (${refused} creates refused)`,
  );
  console.log(
    `  admitted in ${(admittedMs / 1000).toFixed(1)} s, all ready in ${(readyMs / 1000).toFixed(1)} s; host RSS ${hosts.map((h) => `${rssMb(h.child.pid)} MB`).join(', ')}`,
  );

  // 3. A dead host: SIGKILL, then the time until its sessions are lost and it is marked dead.
  const victim = hosts[0]!;
  const held = Number(
    (
      await sql<{ n: string }>(store, 'SELECT count(*) AS n FROM sessions WHERE host_id = $1 AND done = 0', [
        victim.line.host!,
      ])
    )[0]!.n,
  );
  const killedAt = performance.now();
  victim.child.kill('SIGKILL');
  for (;;) {
    const left = Number(
      (
        await sql<{ n: string }>(
          store,
          'SELECT count(*) AS n FROM sessions WHERE host_id = $1 AND done = 0',
          [victim.line.host!],
        )
      )[0]!.n,
    );
    if (left === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const noticedMs = performance.now() - killedAt;
  const freedAtMs = Date.now();
  // When it became due: its last heartbeat plus its lost-after. What follows is how soon a
  // node looked (every second) and the sweep itself.
  const { due } = (
    await sql<{ due: string }>(store, 'SELECT heartbeat_ms + lost_after_ms AS due FROM hosts WHERE id = $1', [
      victim.line.host!,
    ])
  )[0]!;
  console.log(
    `Dead host: ${held} sessions ended lost and their slots freed ${(noticedMs / 1000).toFixed(2)} s after SIGKILL (declared lost-after ${(lostAfterMs / 1000).toFixed(1)} s; ratio ${(noticedMs / lostAfterMs).toFixed(2)}), ${freedAtMs - Number(due)} ms after it was due (last heartbeat + lost-after)`,
  );
} finally {
  processes.killAll();
  await cluster.stop();
  rmSync(data, { recursive: true, force: true });
}
