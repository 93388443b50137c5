/**
 * Latency across the nodes of a deployment: how long a session takes from its create on one
 * API node to ready as another API node reports it (GET /sessions/{sid}?wait=), and how long
 * DELETE on that other node takes to confirm cleanup done by the device host. Against the
 * single-process SQLite server in the same run (the baseline: no node boundary at all).
 *
 * Phones boot instantly (--boot-ms 0), so what is measured is the deployment's own signalling:
 * the hosts' claim of an admitted session, the ready state reaching the reading node, the end
 * reaching the host and its cleanup reaching the node that waits for it.
 *
 * Run: npm run build && npx tsx bench/deployment-latency.ts [--sessions 40]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { BenchProcesses, runCli } from './support/process.js';
import { startPostgres } from '../test/support/postgres.js';

const { values } = parseArgs({ options: { sessions: { type: 'string', default: '40' } } });
const sessions = Number(values.sessions);
const processes = new BenchProcesses();
const startJsonProcess = (args: string[]) => processes.cli(args);

async function account(store: string[]): Promise<string> {
  const line = await runCli([...['accounts', 'create'], ...store, '--json', '--billing-mode', 'disabled']);
  return (JSON.parse(line) as { key: string }).key;
}

interface Figures {
  toReady: number[];
  release: number[];
  releasedAt200: number;
}

/** Creates on `creator`, waits for ready and ends it on `reader`, one session at a time. */
async function measure(creator: string, reader: string, key: string): Promise<Figures> {
  const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const figures: Figures = { toReady: [], release: [], releasedAt200: 0 };
  for (let i = 0; i < sessions; i++) {
    const t0 = performance.now();
    const created = await request(`${creator}/sessions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ timeout_seconds: 600 }),
    });
    let session = (await created.body.json()) as { id: string; state: string };
    while (session.state === 'provisioning') {
      const read = await request(`${reader}/sessions/${session.id}?wait=10`, { headers: auth });
      session = (await read.body.json()) as { id: string; state: string };
    }
    if (session.state !== 'ready') throw new Error(`session ended ${session.state}, not ready`);
    const t1 = performance.now();
    const ended = await request(`${reader}/sessions/${session.id}`, { method: 'DELETE', headers: auth });
    await ended.body.dump();
    const t2 = performance.now();
    figures.toReady.push(t1 - t0);
    figures.release.push(t2 - t1);
    if (ended.statusCode === 200) figures.releasedAt200++;
  }
  return figures;
}

const pct = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const show = (xs: number[]) => `median ${pct(xs, 50).toFixed(1)} ms, p90 ${pct(xs, 90).toFixed(1)} ms`;

const cluster = await startPostgres();
const data = mkdtempSync(join(tmpdir(), 'phonelease-latency-'));
try {
  const sqlite = await processes.sqliteServer(data, ['--boot-ms', '0']);
  const base = await measure(sqlite.url, sqlite.url, await account(['--data', data]));

  const store = await cluster.createDatabase();
  const nodes = [];
  for (let i = 0; i < 2; i++)
    nodes.push(
      await startJsonProcess(['server', '--store', store, '--phones', '0', '--port', '0', '--json']),
    );
  for (let i = 0; i < 2; i++)
    await startJsonProcess(['host', '--store', store, '--phones', '8', '--boot-ms', '0', '--json']);
  const key = await account(['--store', store]);
  const deployed = await measure(nodes[0]!.url, nodes[1]!.url, key);

  console.log(`Deployment latency: ${sessions} sessions one at a time, phones booting instantly`);
  console.log(
    `  SQLite server (baseline):   create->ready ${show(base.toReady)}; DELETE ${show(base.release)}`,
  );
  console.log(
    `  2 API nodes + 2 hosts:      create->ready ${show(deployed.toReady)} (${(pct(deployed.toReady, 50) / pct(base.toReady, 50)).toFixed(1)}x baseline); DELETE ${show(deployed.release)} (${(pct(deployed.release, 50) / pct(base.release, 50)).toFixed(1)}x baseline)`,
  );
  console.log(
    `  DELETE answered 200 released (cleanup confirmed within the wait): ${deployed.releasedAt200} of ${sessions} (baseline ${base.releasedAt200})`,
  );
} finally {
  processes.killAll();
  await cluster.stop();
  rmSync(data, { recursive: true, force: true });
}
