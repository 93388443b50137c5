/**
 * What the sweep of a dead device host costs in the shared store: a host's N sessions (ready
 * for five minutes, metered, so each has started minutes to debit at its end; or billing
 * disabled) are ended `lost` by one reap() (server/stores/postgres/sessions.ts), timed
 * in-process against a real PostgreSQL. This is the part of "the time to notice a dead host
 * and free its slots" (bench/scale.ts) that the store decides; the rest is the declared
 * lost-after time and how often nodes look (every second).
 *
 * Run: npx tsx bench/dead-host-sweep.ts [--sessions 334] [--runs 3]
 */
import { parseArgs } from 'node:util';
import { createLogger } from '../server/log.js';
import { reap } from '../server/stores/postgres/sessions.js';
import { migratePg, openPool } from '../server/stores/postgres/pool.js';
import { createdOn, admittedOn } from '../test/support/shared-store.js';
import { startPostgres } from '../test/support/postgres.js';

const { values } = parseArgs({
  options: { sessions: { type: 'string', default: '334' }, runs: { type: 'string', default: '3' } },
});
const sessions = Number(values.sessions);
const runs = Number(values.runs);
const log = createLogger({ level: 'silent' });

const cluster = await startPostgres();
try {
  console.log(`Dead-host sweep: ${sessions} sessions on the dead host, ${runs} runs each`);
  for (const billing of ['metered', 'disabled'] as const) {
    const times: number[] = [];
    for (let run = 0; run < runs; run++) {
      const db = openPool(await cluster.createDatabase(), log);
      try {
        await migratePg(db);
        const nowMs = Date.now();
        const now = Math.floor(nowMs / 1000);
        await db.query(
          `INSERT INTO hosts (id, url, adb_host, adb_port, phones, boot_slots, device, started, heartbeat_ms, lost_after_ms, typical_boot_ms, state)
           VALUES ('hst_dead', 'http://127.0.0.1:1', '127.0.0.1', 1, $1, 4, 'virtual', $2, $3, 3000, 1000, 'live')`,
          [sessions, now - 600, nowMs],
        );
        const account = await createdOn(db, {
          billingMode: billing,
          balanceCents: 1_000_000,
          sessionLimit: sessions,
        });
        for (let i = 0; i < sessions; i++)
          await admittedOn(db, account.uid, { timeout_seconds: 3600 }, (now - 600) * 1000);
        // Ready there for five minutes until its last heartbeat, 10 s ago.
        await db.query("UPDATE sessions SET host_id = 'hst_dead', state = 'ready', ready = $1", [now - 310]);
        await db.query("UPDATE hosts SET heartbeat_ms = $1 WHERE id = 'hst_dead'", [nowMs - 10_000]);
        const started = performance.now();
        await reap(db, nowMs, log);
        times.push(performance.now() - started);
        const left = await db.query('SELECT 1 FROM sessions WHERE done = 0');
        if (left.rowCount !== 0) throw new Error(`${left.rowCount} sessions were not ended`);
      } finally {
        await db.end();
      }
    }
    times.sort((a, b) => a - b);
    console.log(
      `  billing ${billing}: ${times.map((t) => `${t.toFixed(0)} ms`).join(', ')} (median ${times[Math.floor(times.length / 2)]!.toFixed(0)} ms)`,
    );
  }
} finally {
  await cluster.stop();
}
