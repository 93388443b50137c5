/**
 * The session lifecycle in the shared store, as every node of a deployment records it: API
 * nodes admit and end sessions, device hosts record their phones' moves, and any node ends
 * what expired or what a dead host held. Each step is one transaction that locks the rows it
 * decides on, so whichever node gets there first does it, exactly once, and the others find
 * it done:
 * - admission locks the account row (idempotency receipts, session_limit and the profile
 *   hold are per account) and, only when it is about to admit, the deployment's capacity
 *   (an advisory lock), then counts live sessions against the phones of live hosts;
 * - a session's end locks its row; debits are keyed (session, minute), so a minute is never
 *   debited twice whoever records it;
 * - a dead host is claimed by flipping its row from live to dead.
 * The decisions are the runtime's (the admission is decided by the caller, billing and the
 * end of a lost session by the rules of runtime/rules.ts); the SQL here records them.
 */
import type { EndReason } from '../../../src/api/schemas.js';
import { seconds } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { Verdict } from '../../runtime/admission.js';
import type { SharedAdmissionFacts } from '../../runtime/ports.js';
import {
  SESSION_COLUMNS,
  type AccountRow,
  type HostRow,
  type Placement,
  type ProfileRow,
  type ReceiptRow,
  type SessionRow,
} from '../../runtime/rows.js';
import { endingOf, lostEndTime, minutesDue, planDebits, retryAfterSeconds } from '../../runtime/rules.js';
import { HOST_CHANNEL, QUEUE_CHANNEL, SESSION_CHANNEL } from './notifications.js';
import { all, count, insertRow, one, tx, type Db, type Tx } from './pool.js';

/** A session row of the shared store, with where it runs. */
export type Stored = SessionRow & Placement;

/** The deployment's capacity is decided under this advisory lock, one admission at a time. */
const CAPACITY_LOCK = 7_204_119;

/** The session insert; its seq comes from the deployment's sequence, the rest from the row. */
const INSERTED_COLUMNS = SESSION_COLUMNS.filter((c) => c !== 'seq');
const INSERT_SESSION = `INSERT INTO sessions (${SESSION_COLUMNS.join(', ')}) VALUES (${SESSION_COLUMNS.map(
  (c) => (c === 'seq' ? "nextval('session_seq')" : `$${INSERTED_COLUMNS.indexOf(c) + 1}`),
).join(', ')})`;

/**
 * POST /sessions in the shared store: a replay, a refusal (thrown) or an admission, decided
 * by `decide` on facts read under the account's row lock, and for an admission once more
 * under the deployment's capacity lock.
 */
export async function admit(
  db: Db,
  a: { uid: string; requestKey: string | null; bodyHash: string; wantsProfile: boolean },
  decide: (facts: SharedAdmissionFacts) => Verdict,
): Promise<{ outcome: 'admitted' | 'replayed'; id: string }> {
  const { uid, requestKey } = a;
  return tx(db, async (c) => {
    const account = await one<AccountRow>(c, 'SELECT * FROM accounts WHERE uid = $1 FOR UPDATE', [uid]);
    if (!account) throw new Error(`account ${uid} vanished from the store`);
    const receipt = requestKey
      ? await one<ReceiptRow>(c, 'SELECT * FROM receipts WHERE uid = $1 AND request_key = $2', [
          uid,
          requestKey,
        ])
      : undefined;
    const receiptRow = receipt
      ? await one<Stored>(c, 'SELECT * FROM sessions WHERE id = $1', [receipt.sid])
      : undefined;
    const facts: SharedAdmissionFacts = {
      receipt,
      receiptSession: receipt ? { live: receiptRow?.done === 0, state: receiptRow?.state ?? null } : null,
      account,
      activeSessions: await count(c, 'SELECT count(*) AS n FROM sessions WHERE uid = $1 AND done = 0', [uid]),
      profile: a.wantsProfile
        ? await one<ProfileRow>(c, 'SELECT * FROM profiles WHERE uid = $1 FOR UPDATE', [uid])
        : undefined,
      // Capacity is decided only for a request that passes everything else (below).
      capacity: null,
    };
    let verdict = decide(facts);
    if (verdict.kind === 'admit') {
      await c.query('SELECT pg_advisory_xact_lock($1)', [CAPACITY_LOCK]);
      // Everything under the capacity lock is one round trip here and one insert below: the
      // lock is the deployment's one queue, and its hold time bounds creates per second.
      const load = (await one<{ live: number; closing: number; soonest: number | null; phones: number }>(
        c,
        `SELECT count(*) AS live, count(*) FILTER (WHERE state = 'closing') AS closing, min(expires_at) AS soonest,
                (SELECT coalesce(sum(phones), 0) FROM hosts WHERE state = 'live') AS phones
           FROM sessions WHERE done = 0`,
      ))!;
      const now = verdict.row.created;
      verdict = decide({
        ...facts,
        capacity: {
          liveSessions: load.live,
          phones: load.phones,
          retryAfterSeconds: () =>
            retryAfterSeconds({ closing: load.closing, soonestExpiresAt: load.soonest }, now),
        },
      });
    }
    if (verdict.kind === 'replay') {
      if (!receiptRow || receiptRow.uid !== uid) throw new Error('receipt points at another account');
      return { outcome: 'replayed', id: receiptRow.id };
    }
    const row = verdict.row;
    // The session, its receipt and the hosts' wake-up (delivered on commit) in one statement.
    const values = INSERTED_COLUMNS.map((k) => row[k]);
    const withReceipt = requestKey
      ? `, r AS (INSERT INTO receipts (uid, request_key, body_hash, sid, created) VALUES ($${values.length + 1}, $${values.length + 2}, $${values.length + 3}, $${values.length + 4}, $${values.length + 5}))`
      : '';
    await c.query(
      `WITH s AS (${INSERT_SESSION} RETURNING seq)${withReceipt} SELECT s.seq, pg_notify('${QUEUE_CHANNEL}', '') FROM s`,
      requestKey ? [...values, uid, requestKey, a.bodyHash, row.id, row.created] : values,
    );
    if (verdict.holdProfile)
      await c.query('UPDATE profiles SET holder = $1 WHERE id = $2', [row.id, verdict.holdProfile.id]);
    return { outcome: 'admitted', id: row.id };
  });
}

/**
 * Debits every started minute of a ready metered session up to `upto` (seconds), as the
 * single server does. Returns null, or the time the paid minutes ran out. The caller
 * holds the session's row lock; the account row is locked here.
 */
export async function billUpTo(c: Tx, row: Stored, upto: number): Promise<number | null> {
  if (minutesDue(row, upto) <= row.minutes_debited) return null;
  const account = await one<AccountRow>(c, 'SELECT * FROM accounts WHERE uid = $1 FOR UPDATE', [row.uid]);
  const plan = planDebits(row, account!.balance_cents, upto);
  for (const d of plan.debits) {
    await insertRow(c, 'debits', { sid: row.id, minute: d.minute, uid: row.uid, cents: d.cents, at: d.at });
    row.minutes_debited = d.minute;
    row.cost_cents += d.cents;
  }
  await c.query('UPDATE accounts SET balance_cents = $1 WHERE uid = $2', [plan.balance, row.uid]);
  await c.query('UPDATE sessions SET minutes_debited = $1, cost_cents = $2 WHERE id = $3', [
    row.minutes_debited,
    row.cost_cents,
    row.id,
  ]);
  return plan.exhaustedAt;
}

/**
 * Records a session's end (billing stops there) in the caller's transaction: once, whoever
 * calls first; later calls return the row as it is. A session no host holds (still queued,
 * or its host is gone) is cleaned up at once; otherwise its host is told and stops the phone.
 */
export async function endSession(
  c: Tx,
  sid: string,
  reason: EndReason,
  at: number,
): Promise<Stored | undefined> {
  const row = await one<Stored>(c, 'SELECT * FROM sessions WHERE id = $1 FOR UPDATE', [sid]);
  if (!row || row.done === 1 || row.state === 'closing') return row;
  const failed = row.state === 'error';
  const exhaustedAt = row.state === 'ready' ? await billUpTo(c, row, at) : null;
  const { reason: endReason, at: endAt } = endingOf(row.state, reason, at, exhaustedAt);
  Object.assign(row, {
    state: 'closing',
    close_requested: endAt,
    ended: endAt,
    end_reason: endReason,
    cleanup_status: 'pending',
  } satisfies Partial<Stored>);
  await c.query(
    "UPDATE sessions SET state = 'closing', close_requested = $2, ended = $2, end_reason = $3, cleanup_status = 'pending' WHERE id = $1",
    [sid, endAt, endReason],
  );
  // A failed boot left no phone to stop: nothing for its host to do.
  if (row.host_id === null || failed) await completeCleanup(c, row, { savedOn: null, lostProfile: false });
  else await c.query(`SELECT pg_notify('${HOST_CHANNEL}', $1)`, [row.host_id]);
  await notifySessions(c, [sid]);
  return row;
}

/**
 * Tells API nodes that these sessions changed (state, placement or cleanup), on commit: a
 * long poll or a DELETE waiting on one reads it again at once.
 */
export async function notifySessions(c: Tx, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await c.query(`SELECT pg_notify('${SESSION_CHANNEL}', id) FROM unnest($1::text[]) AS id`, [ids]);
}

/**
 * Cleanup confirmed: the session moves to history and lets go of its profile phone.
 * `savedOn` names the host whose disk now holds the profile's save (null: nothing saved).
 */
export async function completeCleanup(
  c: Tx,
  row: Stored,
  opts: { savedOn: string | null; lostProfile: boolean; nowSec?: number },
): Promise<void> {
  row.done = 1;
  row.cleanup_status = 'complete';
  await c.query("UPDATE sessions SET done = 1, cleanup_status = 'complete' WHERE id = $1", [row.id]);
  await notifySessions(c, [row.id]);
  if (row.profile_id === null) return;
  if (opts.savedOn !== null) {
    await c.query(
      "UPDATE profiles SET holder = NULL, state = 'stored', exact = 1, saved_at = $2, saved_host = $3 WHERE holder = $1",
      [row.id, opts.nowSec ?? row.ended ?? row.last, opts.savedOn],
    );
  } else {
    // Its previous save stays; a lost phone makes it inexact.
    await c.query(
      `UPDATE profiles SET holder = NULL, exact = CASE WHEN $2 THEN 0 ELSE exact END WHERE holder = $1`,
      [row.id, opts.lostProfile],
    );
  }
}

/**
 * What any node does now and then: hosts silent for longer than they declared are dead,
 * their ready sessions end `lost` (billed up to the host's last heartbeat) and their queued
 * boots go back to the queue; sessions past their deadline end `expired`. Each is claimed
 * by one node only (a host row flips once; session rows are locked, skipping those another
 * node holds).
 */
export async function reap(db: Db, nowMs: number, log: Logger): Promise<void> {
  const dead = await tx(db, async (c) => {
    const hosts = await all<HostRow>(
      c,
      "UPDATE hosts SET state = 'dead' WHERE state = 'live' AND heartbeat_ms < $1 - lost_after_ms RETURNING *",
      [nowMs],
    );
    const ids = hosts.map((h) => h.id);
    if (ids.length === 0) return { ids, ended: 0 };
    const ended = await endDeadHostSessions(c, hosts, nowMs);
    await forgetSavesOn(c, ids);
    return { ids, ended };
  });
  if (dead.ids.length > 0)
    log.warn('device hosts stopped heartbeating; their sessions ended lost and their slots are free', {
      hosts: dead.ids,
      sessions_ended: dead.ended,
    });

  const now = seconds(nowMs);
  await tx(db, async (c) => {
    const due = await all<{ id: string; expires_at: number }>(
      c,
      "SELECT id, expires_at FROM sessions WHERE done = 0 AND state <> 'closing' AND expires_at <= $1 ORDER BY expires_at LIMIT 100 FOR UPDATE SKIP LOCKED",
      [now],
    );
    // Their accounts' rows in uid order first, as the dead-host sweep takes them, so the two
    // (on any nodes) never wait on each other in a cycle.
    if (due.length > 0)
      await c.query(
        'SELECT 1 FROM accounts WHERE uid IN (SELECT uid FROM sessions WHERE id = ANY($1)) ORDER BY uid FOR UPDATE',
        [due.map((d) => d.id)],
      );
    for (const { id, expires_at } of due) await endSession(c, id, 'expired', expires_at);
  });
}

/**
 * The profile saves on these hosts' disks went with them (a dead host, or one that left):
 * their profiles start fresh next time, and say that what they held was lost.
 */
export async function forgetSavesOn(c: Tx | Db, hostIds: string[]): Promise<void> {
  await c.query(
    "UPDATE profiles SET state = 'empty', exact = 0, saved_host = NULL WHERE saved_host = ANY($1)",
    [hostIds],
  );
}

/** A session a dead host held, as its sweep ends it. */
interface Ended {
  id: string;
  at: number;
  reason: EndReason;
  minutes: number;
  cost: number;
}

/**
 * Ends what dead hosts held, in the caller's transaction (the one that flipped them dead),
 * in a fixed number of set-based statements whatever the count: a host of hundreds of phones
 * frees its slots in one round of the sweep, not one session's transaction after another.
 * The outcome is endSession's and completeCleanup's for each session (the host is gone, so
 * there is no phone to stop and no save to keep):
 * - provisioning: back to the queue, for another host to boot;
 * - ready: ended `lost` at the host's last heartbeat (never before a debit already recorded,
 *   nor past the deadline), its started minutes up to then debited once (debits are keyed by
 *   session and minute), `credit_exhausted` when the balance ran out first;
 * - error: ended `failed`; closing: its cleanup completes;
 * and a held profile is released, its previous save marked inexact.
 * Returns how many sessions it ended.
 */
async function endDeadHostSessions(c: Tx, hosts: HostRow[], nowMs: number): Promise<number> {
  const lastAlive = new Map(hosts.map((h) => [h.id, seconds(h.heartbeat_ms)]));
  // Locked in seq order, as every other path that locks sessions one at a time meets them.
  const held = await all<Stored>(
    c,
    'SELECT * FROM sessions WHERE host_id = ANY($1) AND done = 0 ORDER BY seq FOR UPDATE',
    [hosts.map((h) => h.id)],
  );
  if (held.length === 0) return 0;

  const requeued = held.filter((r) => r.state === 'provisioning').map((r) => r.id);
  const closing = held.filter((r) => r.state === 'closing').map((r) => r.id);
  const ending = held.filter((r) => r.state === 'ready' || r.state === 'error');

  // Billing: the started minutes of ready metered sessions up to their end, per account in seq
  // order (the balance runs out for the later ones first), as billUpTo does one at a time.
  const lastDebit = new Map(
    (
      await all<{ sid: string; at: number }>(
        c,
        'SELECT sid, max(at) AS at FROM debits WHERE sid = ANY($1) GROUP BY sid',
        [ending.map((r) => r.id)],
      )
    ).map((r) => [r.sid, Number(r.at)]),
  );
  const endAt = (r: Stored) =>
    lostEndTime({
      ready: r.ready,
      created: r.created,
      expiresAt: r.expires_at,
      lastAlive: lastAlive.get(r.host_id ?? '') ?? r.ready ?? r.created,
      lastDebit: lastDebit.get(r.id) ?? null,
      now: seconds(nowMs),
    });
  const billed = ending.filter((r) => r.state === 'ready' && minutesDue(r, endAt(r)) > r.minutes_debited);
  const balances = new Map(
    (
      await all<AccountRow>(c, 'SELECT * FROM accounts WHERE uid = ANY($1) ORDER BY uid FOR UPDATE', [
        [...new Set(billed.map((r) => r.uid))],
      ])
    ).map((a) => [a.uid, a.balance_cents]),
  );
  const debits: Array<[sid: string, minute: number, uid: string, cents: number, at: number]> = [];
  const ended: Ended[] = ending.map((r) => {
    const at = endAt(r);
    const out: Ended = {
      id: r.id,
      at,
      reason: r.state === 'error' ? 'failed' : 'lost',
      minutes: r.minutes_debited,
      cost: r.cost_cents,
    };
    if (r.state !== 'ready') return out;
    const plan = planDebits(r, balances.get(r.uid) ?? 0, at);
    for (const d of plan.debits) debits.push([r.id, d.minute, r.uid, d.cents, d.at]);
    if (plan.debits.length > 0) balances.set(r.uid, plan.balance);
    out.minutes += plan.debits.length;
    out.cost += plan.debits.reduce((n, d) => n + d.cents, 0);
    if (plan.exhaustedAt !== null) {
      out.reason = 'credit_exhausted';
      out.at = plan.exhaustedAt;
    }
    return out;
  });

  if (debits.length > 0) {
    await c.query(
      `INSERT INTO debits (sid, minute, uid, cents, at)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[])`,
      [0, 1, 2, 3, 4].map((k) => debits.map((d) => d[k])),
    );
    await c.query(
      'UPDATE accounts a SET balance_cents = v.balance FROM unnest($1::text[], $2::bigint[]) AS v(uid, balance) WHERE a.uid = v.uid',
      [[...balances.keys()], [...balances.values()]],
    );
  }
  if (ended.length > 0) {
    // Ended and cleaned up at once: the host that would have stopped the phone is gone.
    await c.query(
      `UPDATE sessions s SET state = 'closing', close_requested = v.at, ended = v.at, end_reason = v.reason,
              minutes_debited = v.minutes, cost_cents = v.cost, cleanup_status = 'complete', done = 1
         FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[]) AS v(id, at, reason, minutes, cost)
        WHERE s.id = v.id`,
      (['id', 'at', 'reason', 'minutes', 'cost'] as const).map((k) => ended.map((e) => e[k])),
    );
  }
  if (closing.length > 0)
    await c.query("UPDATE sessions SET done = 1, cleanup_status = 'complete' WHERE id = ANY($1)", [closing]);
  const finished = [...ended.map((e) => e.id), ...closing];
  // Their phones died with the host: a held profile keeps its previous save, now inexact.
  if (finished.length > 0)
    await c.query('UPDATE profiles SET holder = NULL, exact = 0 WHERE holder = ANY($1)', [finished]);
  if (requeued.length > 0) {
    // Never booted there: another host can still start them.
    await c.query('UPDATE sessions SET host_id = NULL, claimed_ms = NULL WHERE id = ANY($1)', [requeued]);
    await c.query(`NOTIFY ${QUEUE_CHANNEL}`);
  }
  const heldIds = held.map((r) => r.id);
  await notifySessions(c, heldIds);
  return finished.length;
}
