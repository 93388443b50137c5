/**
 * kill -9 soak: N cycles of concurrent keyed creates and ends against a real
 * `phonelease server` process, SIGKILL at a random moment, restart. After every kill it
 * checks, offline, that the store's books agree (server/store/audit.ts), and after every
 * restart, through the API, that every acknowledged create left its receipt, that no
 * idempotency key made two sessions, and that history and balances agree.
 *
 * Goals: duplicates 0; books agree after every cycle.
 * Run: npm run build && npx tsx bench/crash.ts [--cycles 20] [--concurrency 12] [--seed N]
 */
import { Database } from '../server/stores/sqlite/sqlite.js';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { auditBooks } from '../server/stores/sqlite/audit.js';
import { BenchProcesses, runCli } from './support/process.js';

const { values } = parseArgs({
  options: {
    cycles: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '12' },
    seed: { type: 'string' },
  },
});
const cycles = Number(values.cycles);
const concurrency = Number(values.concurrency);

// A small seeded generator, so a run that finds a problem can be repeated with --seed.
let seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
const firstSeed = seed;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

async function call(
  url: string,
  key: string,
  method: 'GET' | 'POST' | 'DELETE',
  headers = {},
): Promise<Reply> {
  const res = await request(url, {
    method,
    headers: { authorization: `Bearer ${key}`, ...headers },
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const processes = new BenchProcesses();

/** The server under test; each cycle kills it itself. */
function startServer(data: string): Promise<{ url: string; child: ChildProcess }> {
  return processes.sqliteServer(data, ['--boot-ms', '20', '--phones', '64', '--boot-slots', '8']);
}

interface Account {
  uid: string;
  key: string;
  opening: number;
}

const data = mkdtempSync(join(tmpdir(), 'phonelease-crash-'));
const figures = {
  cycles: 0,
  acknowledged: 0,
  receiptsFound: 0,
  receiptsMissing: 0,
  duplicates: 0,
  debitedCents: 0,
  cyclesBooksAgree: 0,
  cyclesApiAgree: 0,
};
const problems: string[] = [];
let child: ChildProcess | null = null;

try {
  const accounts: Account[] = [];
  for (let i = 0; i < 2; i++) {
    const opening = 1_000_000;
    const created = JSON.parse(
      await runCli([
        'accounts',
        'create',
        '--data',
        data,
        '--json',
        '--billing-mode',
        'metered',
        '--balance-cents',
        String(opening),
        '--price-cents-per-minute',
        '7',
        '--session-limit',
        '1000',
      ]),
    ) as { uid: string; key: string };
    accounts.push({ ...created, opening });
  }
  const openings = new Map(accounts.map((a) => [a.uid, a.opening]));
  /** Acknowledged creates since the last restart: idempotency key -> account and session id. */
  let acked = new Map<string, { account: Account; sid: string }>();

  console.log(
    `phonelease kill -9 soak: ${cycles} cycles, ${concurrency} concurrent clients, seed ${firstSeed} (repeat with --seed ${firstSeed})`,
  );
  // One start more than cycles: the last one only checks what the last kill left.
  for (let cycle = 0; cycle <= cycles; cycle++) {
    const server = await startServer(data);
    child = server.child;
    const url = server.url;

    // 1. After the restart: every acknowledged create has its receipt, naming its session.
    for (const [key, { account, sid }] of acked) {
      figures.acknowledged++;
      const r = await call(`${url}/sessions/requests/${key}`, account.key, 'GET');
      if (r.status === 200 && r.body.id === sid) figures.receiptsFound++;
      else {
        figures.receiptsMissing++;
        problems.push(
          `cycle ${cycle}: receipt of ${key} is ${r.status} ${JSON.stringify(r.body.id ?? r.body.code)}`,
        );
      }
    }
    // 2. End what survived (re-provisioned requests), then history and balances must agree.
    let apiAgrees = true;
    for (const account of accounts) {
      const live = (await call(`${url}/sessions`, account.key, 'GET')).body as unknown as Array<{
        id: string;
      }>;
      for (const s of live) await call(`${url}/sessions/${s.id}`, account.key, 'DELETE');
      for (let i = 0; i < 200; i++) {
        const left = (await call(`${url}/sessions`, account.key, 'GET')).body as unknown as unknown[];
        if (left.length === 0) break;
        await sleep(20);
      }
      let cost = 0;
      let cursor: string | null = null;
      do {
        const page = (
          await call(
            `${url}/history/page?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
            account.key,
            'GET',
          )
        ).body as {
          items: Array<{ sid: string; cost_cents: number; billable_minutes: number }>;
          next_cursor: string | null;
        };
        for (const h of page.items) {
          cost += h.cost_cents;
          if (h.cost_cents !== h.billable_minutes * 7) {
            apiAgrees = false;
            problems.push(
              `cycle ${cycle}: ${h.sid} costs ${h.cost_cents} for ${h.billable_minutes} billable minutes`,
            );
          }
        }
        cursor = page.next_cursor;
      } while (cursor);
      const balance = (await call(`${url}/me`, account.key, 'GET')).body.balance_cents as number;
      if (balance !== account.opening - cost) {
        apiAgrees = false;
        problems.push(`cycle ${cycle}: balance ${balance} but opening ${account.opening} - history ${cost}`);
      }
    }
    if (cycle > 0 && apiAgrees) figures.cyclesApiAgree++;
    acked = new Map();
    if (cycle === cycles) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
      child = null;
      break;
    }

    // 3. Load: concurrent keyed creates (some retried with the same key) and ends, until
    //    the kill at a random moment.
    let killed = false;
    const worker = async (w: number) => {
      for (let i = 0; !killed; i++) {
        const account = accounts[(w + i) % accounts.length]!;
        const key = `crash-${firstSeed}-${cycle}-${w}-${i}-xxxxxxxx`;
        try {
          const r = await call(`${url}/sessions`, account.key, 'POST', { 'idempotency-key': key });
          if (r.status !== 202 && r.status !== 503) continue;
          if (typeof r.body.id !== 'string') continue;
          acked.set(key, { account, sid: r.body.id });
          if (random() < 0.3) {
            const again = await call(`${url}/sessions`, account.key, 'POST', { 'idempotency-key': key });
            if (again.status === 202 && again.body.id !== r.body.id) {
              figures.duplicates++;
              problems.push(`cycle ${cycle}: the retry of ${key} made ${String(again.body.id)}`);
            }
          }
          await sleep(between(0, 2500));
          await call(`${url}/sessions/${r.body.id}`, account.key, 'DELETE');
        } catch {
          // The server was killed mid-request: the create may or may not be acknowledged.
        }
      }
    };
    const workers = Array.from({ length: concurrency }, (_, w) => worker(w));
    await sleep(between(300, 4000));
    killed = true;
    child.kill('SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    child = null;
    await Promise.all(workers);
    figures.cycles++;

    // 4. Offline: the store's books agree, and no key made two sessions.
    const db = new Database(join(data, 'phonelease.db'));
    try {
      const found = auditBooks(db, openings);
      if (found.length === 0) figures.cyclesBooksAgree++;
      else problems.push(...found.map((p) => `cycle ${cycle}: ${p}`));
      const dup = db
        .prepare<[], { n: number }>(
          'SELECT COUNT(*) AS n FROM (SELECT uid, request_key FROM sessions WHERE request_key IS NOT NULL GROUP BY uid, request_key HAVING COUNT(*) > 1)',
        )
        .get()!.n;
      figures.duplicates += dup;
      figures.debitedCents =
        db.prepare<[], { n: number | null }>('SELECT SUM(cents) AS n FROM debits').get()!.n ?? 0;
    } finally {
      db.close();
    }
  }

  const agree = (n: number) =>
    `${n} of ${figures.cycles} cycles${n === figures.cycles ? ' (goal: always) met' : ' NOT MET'}`;
  console.log(`cycles (SIGKILL + restart):        ${figures.cycles}`);
  console.log(`acknowledged creates:              ${figures.acknowledged}`);
  console.log(
    `receipts found after restarts:     ${figures.receiptsFound} (missing ${figures.receiptsMissing})`,
  );
  console.log(
    `duplicates:                        ${figures.duplicates} (goal 0) ${figures.duplicates === 0 ? 'met' : 'NOT MET'}`,
  );
  console.log(`minutes debited in all:            ${figures.debitedCents / 7}`);
  console.log(`store books agree after the kill:  ${agree(figures.cyclesBooksAgree)}`);
  console.log(`history = debits = balance (API):  ${agree(figures.cyclesApiAgree)}`);
  for (const p of problems.slice(0, 20)) console.log(`  problem: ${p}`);
  if (problems.length > 20) console.log(`  ... and ${problems.length - 20} more`);
  process.exitCode = problems.length === 0 && figures.duplicates === 0 ? 0 : 1;
} finally {
  child?.kill('SIGKILL');
  rmSync(data, { recursive: true, force: true });
}
