/**
 * What leasePhone() adds on top of the phone's boot.
 *
 * Starts a real server whose virtual phones boot in BOOT_MS and records, from the server's
 * own log, how long each boot took (the baseline). Then:
 *  1. sequential leases: lease-to-ready time as the caller sees it, minus that session's
 *     server-side boot time = the client's overhead (admission, polling, crash-safety
 *     bookkeeping); p50 and p95, and GET polls per lease;
 *  2. CONCURRENT leases at once on the same server: time until all are ready, failures,
 *     and time to end them all with cleanup confirmed.
 * Prints the figures and the overhead's ratio to the boot time measured in the same run.
 *
 * Run: npx tsx bench/lease.ts [--boot-ms 1000] [--leases 30] [--concurrent 50]
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startServer } from '../server/main.js';
import type { Logger } from '../server/log.js';
import { leasePhone, silentLogger, type Lease, type LeaseOptions } from '../src/index.js';

const { values } = parseArgs({
  options: {
    'boot-ms': { type: 'string', default: '1000' },
    leases: { type: 'string', default: '30' },
    concurrent: { type: 'string', default: '50' },
  },
});
const bootMs = Number(values['boot-ms']);
const sequential = Number(values.leases);
const concurrent = Number(values.concurrent);

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
} finally {
  await server.close();
}
