/**
 * The single server's SessionLedger (server/runtime/ports.ts): each move of a session's
 * lifecycle recorded in the SQLite store at once, when the runtime makes it. Moves join the
 * group commit of the turn (the API answers nothing that reflects them before it commits);
 * debits, which move balances, commit in a transaction of their own. The runtime is the only writer of its sessions here, so every record is
 * unconditional and applies to the row in memory as it applies to the store.
 */
import type { EndReason } from '../../../src/api/schemas.js';
import type { CleanupOutcome, ReadyChange, SessionLedger } from '../../runtime/ports.js';
import type { ProfileRow, SessionRow } from '../../runtime/rows.js';
import { endingOf, planDebits } from '../../runtime/rules.js';
import type { SqliteStore } from './store.js';

/**
 * Every record is synchronous: the methods are async only to answer as a ledger does, and
 * each applies in full before it returns its (settled) promise.
 */
export class SqliteLedger implements SessionLedger {
  /** The state of each profile before its save began, to go back to when the save fails. */
  private readonly beforeSave = new Map<string, ProfileRow['state']>();

  constructor(
    private readonly store: SqliteStore,
    private readonly now: () => number,
  ) {}

  /** Grouped: only what this move changes (every other column is stored already). */
  private update(row: SessionRow, change: Partial<Omit<SessionRow, 'id'>>): void {
    this.store.grouped(() => this.store.updateSession(row.id, change));
    Object.assign(row, change);
  }

  async savedHere(): Promise<boolean> {
    // The single server's saves are all on its own disk.
    return true;
  }

  async ready(row: SessionRow, change: ReadyChange): Promise<boolean> {
    this.update(row, { ...change, state: 'ready' });
    return true;
  }

  async failed(row: SessionRow, failure: { code: string; message: string }): Promise<void> {
    this.update(row, { state: 'error', failure_code: failure.code, failure_message: failure.message });
  }

  async bill(row: SessionRow, upto: number): Promise<number | null> {
    return this.debit(row, upto);
  }

  /** Debits what is due by `upto` in one transaction; when the paid minutes ran out, else null. */
  private debit(row: SessionRow, upto: number): number | null {
    const account = this.store.account(row.uid);
    if (!account) throw new Error(`account ${row.uid} vanished from the store`);
    const plan = planDebits(row, account.balance_cents, upto);
    if (plan.debits.length > 0) {
      this.store.transaction(() => {
        for (const d of plan.debits) this.store.insertDebit(row.id, d.minute, row.uid, d.cents, d.at);
        this.store.setBalance(row.uid, plan.balance);
        row.minutes_debited += plan.debits.length;
        row.cost_cents += plan.debits.reduce((n, d) => n + d.cents, 0);
        this.store.updateSession(row.id, {
          minutes_debited: row.minutes_debited,
          cost_cents: row.cost_cents,
        });
      });
    }
    return plan.exhaustedAt;
  }

  async end(row: SessionRow, end: { reason: EndReason; at: number; last: number }): Promise<void> {
    const exhaustedAt = row.state === 'ready' ? this.debit(row, end.at) : null;
    const { reason, at } = endingOf(row.state, end.reason, end.at, exhaustedAt);
    this.update(row, {
      state: 'closing',
      close_requested: at,
      ended: at,
      end_reason: reason,
      cleanup_status: 'pending',
      last: end.last,
    });
  }

  async uncertain(row: SessionRow): Promise<void> {
    row.cleanup_status = 'allocation_uncertain';
    this.store.updateSession(row.id, { cleanup_status: row.cleanup_status });
  }

  async saving(row: SessionRow, saving: boolean): Promise<void> {
    const profile = this.store.profileOf(row.uid);
    if (!profile) return;
    if (saving) {
      this.beforeSave.set(row.id, profile.state);
      this.store.saveProfile({ ...profile, state: 'saving' });
    } else {
      this.store.saveProfile({ ...profile, state: this.beforeSave.get(row.id) ?? profile.state });
      this.beforeSave.delete(row.id);
    }
  }

  async cleaned(row: SessionRow, outcome: CleanupOutcome): Promise<boolean> {
    const now = Math.floor(this.now() / 1000);
    this.beforeSave.delete(row.id);
    // With its profile's new save, in one (grouped) transaction: a crash leaves both or neither.
    this.store.grouped(() => {
      if (row.profile_id !== null) {
        const current = this.store.profileOf(row.uid)!;
        if (outcome.saved && !outcome.lostProfile) outcome.commitSave();
        this.store.saveProfile({
          ...current,
          state: outcome.stored ? 'stored' : 'empty',
          holder: current.holder === row.id ? null : current.holder,
          exact: outcome.saved ? 1 : outcome.lostProfile ? 0 : current.exact,
          saved_at: outcome.saved ? now : current.saved_at,
        });
      }
      this.store.updateSession(row.id, { cleanup_status: 'complete', done: 1 });
    });
    row.cleanup_status = 'complete';
    row.done = 1;
    return true;
  }

  active(): void {
    // The single server keeps activity in memory; its heartbeat stores it (local-directory.ts).
  }
}
