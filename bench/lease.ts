/**
 * What leasePhone() adds on top of the phone's boot.
 *
 * Starts a real server whose virtual phones boot in BOOT_MS and records, from the server's
 * own log, how long each boot took (the baseline). Then:
 *  1. sequential leases: lease-to-ready time as the caller sees it, minus that session's
 *     server-side boot time = the client's overhead (admission, polling, crash-safety
 *     bookkeeping); p50 and p95, and GET polls per lease;
 *  2. CONCURRENT leases at once on the same server: time until all are ready, failures,
 *     and time to end them all with cleanup confirmed;
 *  3. FAULT-LEASES sequential leases through a fault-injecting proxy (test/support) at
 *     FAULT-RATE random faults of every kind (HTML 429s, 502/504 pages after the server
 *     answered, lost answers, delays): lease success rate (goal 100%), p50/p95 lease and end
 *     time against the same leases without the proxy measured in this run, and phones
 *     still alive 10 s after end() returned (goal 0).
 * Prints the figures and the overhead's ratio to the boot time measured in the same run.
 *
 * Run: npx tsx bench/lease.ts [--boot-ms 1000] [--leases 30] [--concurrent 50]
 *        [--fault-leases 30] [--fault-rate 0.15] [--seed 1]
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startServer } from '../server/main.js';
import type { Logger } from '../server/log.js';
import { leasePhone, silentLogger, type Lease, type LeaseOptions } from '../src/index.js';
import { FaultProxy } from '../test/support/fault-proxy.js';

const { values } = parseArgs({
  options: {
    'boot-ms': { type: 'string', default: '1000' },
    leases: { type: 'string', default: '30' },
    concurrent: { type: 'string', default: '50' },
    'fault-leases': { type: 'string', default: '30' },
    'fault-rate': { type: 'string', default: '0.15' },
    seed: { type: 'string', default: '1' },
  },
});
const bootMs = Number(values['boot-ms']);
const sequential = Number(values.leases);
const concurrent = Number(values.concurrent);
const faultLeases = Number(values['fault-leases']);
const faultRate = Number(values['fault-rate']);
const seed = Number(values.seed);

/** A server logger that keeps each session's measured boot time ("phone ready", boot_ms). */
function bootRecorder(): { log: Logger; boots: Map<string, number> } {
  const boots = new Map<string, number>();
  const log: Logger = {
    level: 'info',
    enabled: (level) => level !== 'debug',
    child: () => log,
    debug: () => undefined,
    info: (msg, fields) => {
      if (msg === 'phone ready' && typeof fields?.session === 'string')
        boots.set(fields.session, Number(fields.boot_ms));
    },
    warn: () => undefined,
    error: (msg, fields) => console.error('server error:', msg, fields),
  };
  return { log, boots };
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
const ms = (n: number) => `${n.toFixed(1)} ms`;

interface LeaseRun {
  leaseMs: number;
  endMs: number;
}

/**
 * `n` sequential leases with `options`: each timed to ready and through end(); 10 s after
 * each end() returned, the server itself (not through any proxy) is asked whether the
 * phone is still live.
 */
async function leaseRuns(
  options: LeaseOptions,
  n: number,
  serverUrl: string,
): Promise<{
  ok: number;
  runs: LeaseRun[];
  aliveAfter10s: number;
  outcomes: string;
  firstError: string | null;
}> {
  const runs: LeaseRun[] = [];
  const checks: Array<Promise<boolean>> = [];
  const outcomes = new Map<string, number>();
  let firstError: string | null = null;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    let phone: Lease;
    try {
      phone = await leasePhone(options);
    } catch (error) {
      firstError ??= String(error);
      continue;
    }
    const leaseMs = performance.now() - t0;
    const t1 = performance.now();
    const ended = await phone.end();
    runs.push({ leaseMs, endMs: performance.now() - t1 });
    outcomes.set(ended.outcome, (outcomes.get(ended.outcome) ?? 0) + 1);
    const id = phone.id;
    checks.push(
      new Promise((resolve) => setTimeout(resolve, 10_000)).then(async () => {
        const res = await fetch(`${serverUrl}/sessions/${id}`, {
          headers: { authorization: `Bearer ${options.apiKey}` },
        });
        return res.status !== 404;
      }),
    );
  }
  const alive = (await Promise.all(checks)).filter(Boolean).length;
  return {
    ok: runs.length,
    runs,
    aliveAfter10s: alive,
    outcomes: [...outcomes].map(([k, v]) => `${k} ${v}`).join(', '),
    firstError,
  };
}

const { log, boots } = bootRecorder();
// Every phone boots at once: the concurrent run measures the client and the API, not a boot queue.
const server = await startServer({ bootMs, phones: concurrent + 10, bootSlots: concurrent + 10, log });
try {
  const { key } = server.createAccount({ billingMode: 'disabled', sessionLimit: concurrent + 10 });
  // Library defaults (ledger, reaper, signal handlers), the ledger in a scratch directory.
  const options: LeaseOptions = {
    baseUrl: server.url,
    apiKey: key,
    logger: silentLogger,
    ledger: { dir: mkdtempSync(join(tmpdir(), 'phonelease-bench-')) },
  };

  // Warm-up: JIT, connection pool, the reaper process.
  for (let i = 0; i < 3; i++) await (await leasePhone(options)).end();

  const overheads: number[] = [];
  const serverBoots: number[] = [];
  let polls = 0;
  for (let i = 0; i < sequential; i++) {
    const t0 = performance.now();
    const phone = await leasePhone(options);
    const readyMs = performance.now() - t0;
    const boot = boots.get(phone.id);
    if (boot === undefined) throw new Error(`no boot time recorded for ${phone.id}`);
    overheads.push(readyMs - boot);
    serverBoots.push(boot);
    polls += phone.startStats.polls;
    await phone.end();
  }
  overheads.sort((a, b) => a - b);
  serverBoots.sort((a, b) => a - b);
  const baseline = percentile(serverBoots, 50);

  const t0 = performance.now();
  const settled = await Promise.allSettled(Array.from({ length: concurrent }, () => leasePhone(options)));
  const allReadyMs = performance.now() - t0;
  const phones = settled
    .filter((s): s is PromiseFulfilledResult<Lease> => s.status === 'fulfilled')
    .map((s) => s.value);
  const failures = settled.length - phones.length;
  const t1 = performance.now();
  const ended = await Promise.all(phones.map((p) => p.end()));
  const endAllMs = performance.now() - t1;
  const unconfirmed = ended.filter((e) => !e.cleanupConfirmed).length;

  console.log(`phonelease lease benchmark: virtual phones booting in ${bootMs} ms (configured)`);
  console.log(
    `baseline: server-side boot time, p50 ${ms(baseline)} (p95 ${ms(percentile(serverBoots, 95))}) over ${sequential} boots`,
  );
  console.log(`sequential leases (${sequential}): lease-to-ready minus server boot`);
  console.log(
    `  overhead p50 ${ms(percentile(overheads, 50))}, p95 ${ms(percentile(overheads, 95))}, max ${ms(overheads.at(-1) ?? NaN)}`,
  );
  console.log(`  GET polls per lease: ${(polls / sequential).toFixed(2)}`);
  console.log(
    `  overhead p50 / boot time: ${(percentile(overheads, 50) / baseline).toFixed(3)}  (goal: p50 < 30 ms)`,
  );
  console.log(`${concurrent} concurrent leases on one server:`);
  console.log(
    `  all ready after ${ms(allReadyMs)} (${(allReadyMs / baseline).toFixed(2)}x one boot), failures: ${failures}`,
  );
  console.log(`  all ended with cleanup confirmed after ${ms(endAllMs)} (unconfirmed: ${unconfirmed})`);
  if (failures > 0) {
    const reasons = settled
      .filter((s): s is PromiseRejectedResult => s.status === 'rejected')
      .map((s) => String(s.reason));
    console.log(`  first failure: ${reasons[0]}`);
  }

  // 3. The same sequential leases, first straight to the server, then through the proxy.
  const proxy = await FaultProxy.start(server.url, { seed });
  try {
    const direct = await leaseRuns(options, faultLeases, server.url);
    proxy.random(faultRate);
    const faulty = await leaseRuns({ ...options, baseUrl: proxy.url }, faultLeases, server.url);
    proxy.clear();
    const faults = proxy.log.filter((e) => e.fault !== null);
    const kinds = new Map<string, number>();
    for (const e of faults) kinds.set(e.fault!, (kinds.get(e.fault!) ?? 0) + 1);
    const p = (xs: number[], q: number) =>
      percentile(
        [...xs].sort((a, b) => a - b),
        q,
      );
    console.log(
      `${faultLeases} sequential leases through a proxy at ${(faultRate * 100).toFixed(0)}% random faults (seed ${seed}):`,
    );
    console.log(
      `  ${proxy.log.length} requests, ${faults.length} faults: ${[...kinds].map(([k, n]) => `${k} ${n}`).join(', ')}`,
    );
    console.log(
      `  lease success: ${faulty.ok}/${faultLeases} (${((100 * faulty.ok) / faultLeases).toFixed(1)}%, goal 100%); without faults ${direct.ok}/${faultLeases}`,
    );
    for (const [name, pick] of [
      ['lease-to-ready', (r: LeaseRun) => r.leaseMs],
      ['end()', (r: LeaseRun) => r.endMs],
    ] as const) {
      const withFaults = faulty.runs.map(pick);
      const without = direct.runs.map(pick);
      console.log(
        `  ${name}: p50 ${ms(p(withFaults, 50))} (${(p(withFaults, 50) / p(without, 50)).toFixed(2)}x no faults: ${ms(p(without, 50))}), p95 ${ms(p(withFaults, 95))} (${(p(withFaults, 95) / p(without, 95)).toFixed(2)}x no faults: ${ms(p(without, 95))})`,
      );
    }
    console.log(
      `  phones alive 10 s after end(): ${faulty.aliveAfter10s} (goal 0); end outcomes: ${faulty.outcomes}`,
    );
    if (faulty.firstError) console.log(`  first failure: ${faulty.firstError}`);
  } finally {
    await proxy.close();
  }
} finally {
  await server.close();
}
