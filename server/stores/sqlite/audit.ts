/**
 * An audit of the books: whatever happened to the process (kill -9 included), the history,
 * the recorded debits and the balances must tell one story. Used by tests and by
 * bench/crash.ts after every restart; it reads the store only.
 *
 * For every session: cost_cents is the sum of its recorded debits, one per minute, and the
 * count of debits is minutes_debited; every debit's time lies in [ready, ended] (or at or
 * after ready while the session is live). For every finished metered session, usage_minutes
 * as history reports it is exactly the number of minutes debited. For every account whose
 * opening balance is known, the balance is the opening balance minus its debits.
 */
import type { Database } from './sqlite.js';
import type { AccountRow, SessionRow } from '../../runtime/rows.js';
import { usageMinutes } from '../../runtime/rules.js';

interface DebitRow {
  sid: string;
  minute: number;
  uid: string;
  cents: number;
  at: number;
}

/** Every disagreement found, in words (empty when the books agree). */
export function auditBooks(db: Database, openingBalances: ReadonlyMap<string, number> = new Map()): string[] {
  const problems: string[] = [];
  const sessions = db.prepare<[], SessionRow>('SELECT * FROM sessions').all();
  const debits = db.prepare<[], DebitRow>('SELECT * FROM debits ORDER BY sid, minute').all();
  const accounts = db.prepare<[], AccountRow>('SELECT * FROM accounts').all();
  const bySid = new Map<string, DebitRow[]>();
  for (const d of debits) {
    const list = bySid.get(d.sid) ?? [];
    list.push(d);
    bySid.set(d.sid, list);
  }
  const sessionIds = new Set(sessions.map((s) => s.id));
  for (const d of debits) if (!sessionIds.has(d.sid)) problems.push(`debit of unknown session ${d.sid}`);

  for (const s of sessions) {
    const own = bySid.get(s.id) ?? [];
    const sum = own.reduce((n, d) => n + d.cents, 0);
    const where = `session ${s.id} (${s.state}${s.done ? ', done' : ''})`;
    if (sum !== s.cost_cents) problems.push(`${where}: cost_cents ${s.cost_cents} but debits sum to ${sum}`);
    if (own.length !== s.minutes_debited)
      problems.push(`${where}: minutes_debited ${s.minutes_debited} but ${own.length} debits`);
    own.forEach((d, i) => {
      if (d.minute !== i + 1) problems.push(`${where}: debit minutes are not 1..n`);
      if (d.uid !== s.uid) problems.push(`${where}: debit charged to another account`);
      if (s.ready === null || d.at < s.ready)
        problems.push(`${where}: debit at ${d.at} before ready ${s.ready}`);
      if (s.ended !== null && d.at > s.ended)
        problems.push(`${where}: debit at ${d.at} after ended ${s.ended}`);
    });
    if (s.billing_mode !== 'metered' && own.length > 0)
      problems.push(`${where}: debits on an unmetered session`);
    if (s.done) {
      // As history reports it (api/views.ts historyView).
      const ended = s.ended ?? s.last;
      const usage = usageMinutes(s.ready, ended);
      if (s.billing_mode === 'metered' && usage !== own.length)
        problems.push(`${where}: history usage_minutes ${usage} but ${own.length} minutes debited`);
      if (s.ready !== null && ended < s.ready)
        problems.push(`${where}: ended ${ended} before ready ${s.ready}`);
    }
  }

  for (const a of accounts) {
    const opening = openingBalances.get(a.uid);
    if (opening === undefined) continue;
    const charged = debits.filter((d) => d.uid === a.uid).reduce((n, d) => n + d.cents, 0);
    if (a.balance_cents !== opening - charged)
      problems.push(`account ${a.uid}: balance ${a.balance_cents}, expected ${opening} - ${charged}`);
  }
  return problems;
}
