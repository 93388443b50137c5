/**
 * API throughput: GET /sessions/{sid} and POST /sessions (fresh idempotency keys, virtual
 * phones with --boot-ms 0 and ample capacity) against the real server in its own process,
 * and the ratio of GET to a bare fastify route returning the same JSON, measured in the
 * same run with the same load generator.
 *
 * The machine may be shared, so the GET and bare runs alternate for `--rounds` rounds and
 * the ratio is the median of the rounds' ratios; each server's CPU time per request (from
 * /proc) is printed too, as it does not depend on what else the machine runs.
 *
 * Goals on a 2-core machine: GET >= 0.85 of the bare route; POST >= 1,500/s.
 * Run: npm run build && npx tsx bench/api.ts [--seconds 3] [--rounds 3] [--concurrency 32]
 */
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { load, type LoadResult } from './support/load.js';
import { BenchProcesses, runCli } from './support/process.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '32' },
  },
});
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);
const processes = new BenchProcesses({});

/** CPU seconds (user + system) a process has used so far, or null where /proc is missing. */
function cpuSeconds(pid: number | undefined): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** A load run, and the server's CPU time per completed request (µs) during it. */
async function measured(
  child: ChildProcess,
  run: () => Promise<LoadResult>,
): Promise<LoadResult & { cpuUs: number | null }> {
  const before = cpuSeconds(child.pid);
  const result = await run();
  const after = cpuSeconds(child.pid);
  // The warm-up second is in the CPU time too; count its requests as the run's rate.
  const all = result.requests * (1 + 1 / result.seconds);
  return { ...result, cpuUs: before !== null && after !== null ? ((after - before) / all) * 1e6 : null };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const fmt = (r: LoadResult) =>
  `${Math.round(r.perSecond).toLocaleString('en-US')}/s (${r.requests} requests in ${r.seconds.toFixed(1)} s, ${r.errors} errors, statuses ${JSON.stringify(r.statuses)})`;

const data = mkdtempSync(join(tmpdir(), 'phonelease-bench-'));
try {
  const server = await processes.sqliteServer(
    data,
    ['--boot-ms', '0', '--phones', '1000000', '--boot-slots', '64'],
    {
      PHONELEASE_LOG_LEVEL: 'warn',
    },
  );
  const account = JSON.parse(
    await runCli([
      'accounts',
      'create',
      '--data',
      data,
      '--json',
      '--billing-mode',
      'disabled',
      '--session-limit',
      '1000000',
    ]),
  ) as {
    key: string;
  };
  const auth = { authorization: `Bearer ${account.key}` };

  const created = await request(`${server.url}/sessions`, { method: 'POST', headers: auth });
  const session = (await created.body.json()) as { id: string; state: string };
  let view: Record<string, unknown> = {};
  for (let i = 0; i < 200; i++) {
    const r = await request(`${server.url}/sessions/${session.id}`, { headers: auth });
    view = (await r.body.json()) as Record<string, unknown>;
    if (view.state === 'ready') break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const bare = await processes.startNode(
    ['--import', 'tsx', fileURLToPath(new URL('./support/bare-server.ts', import.meta.url))],
    {
      BARE_BODY: JSON.stringify(view),
    },
  );

  console.log(
    `phonelease API benchmark: ${rounds} rounds of ${seconds} s per route, ${concurrency} connections`,
  );
  const bareRuns: Array<LoadResult & { cpuUs: number | null }> = [];
  const getRuns: Array<LoadResult & { cpuUs: number | null }> = [];
  for (let round = 0; round < rounds; round++) {
    bareRuns.push(
      await measured(bare.child, () =>
        load(bare.url, () => ({ method: 'GET', path: `/sessions/${session.id}` }), { seconds, concurrency }),
      ),
    );
    getRuns.push(
      await measured(server.child, () =>
        load(server.url, () => ({ method: 'GET', path: `/sessions/${session.id}`, headers: auth }), {
          seconds,
          concurrency,
        }),
      ),
    );
  }
  const runId = Date.now().toString(36);
  const post = await measured(server.child, () =>
    load(
      server.url,
      (i) => ({
        method: 'POST',
        path: '/sessions',
        headers: { ...auth, 'idempotency-key': `bench-${runId}-${i}-xxxxxxxx` },
      }),
      { seconds, concurrency },
    ),
  );

  const cpu = (r: { cpuUs: number | null }) => (r.cpuUs === null ? 'n/a' : `${Math.round(r.cpuUs)} µs`);
  const ratio = median(getRuns.map((g, i) => g.perSecond / bareRuns[i]!.perSecond));
  for (let i = 0; i < rounds; i++) {
    console.log(`round ${i + 1}`);
    console.log(`  bare fastify route (baseline): ${fmt(bareRuns[i]!)}, CPU/request ${cpu(bareRuns[i]!)}`);
    console.log(`  GET /sessions/{sid}:           ${fmt(getRuns[i]!)}, CPU/request ${cpu(getRuns[i]!)}`);
  }
  console.log(
    `GET ratio to baseline (median): ${ratio.toFixed(2)}  (goal >= 0.85)  ${ratio >= 0.85 ? 'met' : 'NOT MET'}`,
  );
  const bareCpu = median(bareRuns.map((r) => r.cpuUs ?? NaN));
  const getCpu = median(getRuns.map((r) => r.cpuUs ?? NaN));
  if (Number.isFinite(bareCpu) && Number.isFinite(getCpu)) {
    console.log(
      `  CPU per request (median):     bare ${Math.round(bareCpu)} µs, GET ${Math.round(getCpu)} µs (bare/GET ${(bareCpu / getCpu).toFixed(2)})`,
    );
  }
  console.log(`POST /sessions (fresh keys):   ${fmt(post)}, CPU/request ${cpu(post)}`);
  console.log(`  goal >= 1,500/s:             ${post.perSecond >= 1500 ? 'met' : 'NOT MET'}`);
} finally {
  processes.killAll();
  rmSync(data, { recursive: true, force: true });
}
