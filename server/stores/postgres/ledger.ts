/**
 * A device host's SessionLedger (server/runtime/ports.ts): each move of the lifecycle of a
 * session whose phone the host runs, recorded in the shared store in a transaction that locks
 * the session's row. Any node may end a session (an API node's DELETE, a sweep of passed
 * deadlines or of a host declared dead), so a record that only the running host may make
 * (ready, failed, cleanup confirmed) first checks that the session is still live and still
 * this host's; the runtime hears "no" as "it ended elsewhere". Each commit announces the
 * change to API nodes (notifications.ts).
 */
import type { EndReason } from '../../../src/api/schemas.js';
import { seconds } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { CleanupOutcome, ReadyChange, SessionLedger } from '../../runtime/ports.js';
import type { SessionRow, StartupSource } from '../../runtime/rows.js';
import { one, tx, type Db, type Tx } from './pool.js';
import { billUpTo, completeCleanup, endSession, notifySessions, type Stored } from './sessions.js';

export class PostgresLedger implements SessionLedger {
  /** When each session's activity was last stored (seconds): at most once a second. */
  private readonly activeAt = new Map<string, number>();

  constructor(
    private readonly db: Db,
    /** The id of the host this ledger records for (it changes when the host joins again). */
    private readonly hostId: () => string,
    /** Now, in ms. */
    private readonly now: () => number,
    private readonly log: Logger,
  ) {}

  /** The session's row, locked, while it is live and this host's; else undefined. */
  private async mine(c: Tx, sid: string): Promise<Stored | undefined> {
    const row = await one<Stored>(c, 'SELECT * FROM sessions WHERE id = $1 FOR UPDATE', [sid]);
    return row && row.done === 0 && row.host_id === this.hostId() ? row : undefined;
  }

  async savedHere(profileId: string): Promise<boolean> {
    // A profile restores its save while it is stored (a reset forgets it) and the save is on
    // this host's disk (the claim brings a profile to the host that holds its save).
    const profile = await one<{ state: string; saved_host: string | null }>(
      this.db,
      'SELECT state, saved_host FROM profiles WHERE id = $1',
      [profileId],
    );
    return profile?.state === 'stored' && profile.saved_host === this.hostId();
  }

  /**
   * Ends the provisioning of a session of this host's (`set`: the columns, from $2 on) and
   * tells the API nodes; false when it is provisioning no longer (ended meanwhile, or lost).
   */
  private async provisioned(id: string, set: string, values: unknown[]): Promise<boolean> {
    return tx(this.db, async (c) => {
      const r = await this.mine(c, id);
      if (r?.state !== 'provisioning') return false;
      await c.query(`UPDATE sessions SET ${set} WHERE id = $1`, [id, ...values]);
      await notifySessions(c, [id]);
      return true;
    });
  }

  async ready(row: SessionRow, change: ReadyChange, source: StartupSource): Promise<boolean> {
    const mine = await this.provisioned(
      row.id,
      "state = 'ready', ready = $2, device = $3, screen_w = $4, screen_h = $5, adb_code = $6, startup_source = $7",
      [change.ready, change.device, change.screen_w, change.screen_h, change.adb_code, source],
    );
    if (mine) Object.assign(row, change, { state: 'ready' });
    return mine;
  }

  async failed(row: SessionRow, failure: { code: string; message: string }): Promise<void> {
    const recorded = await this.provisioned(
      row.id,
      "state = 'error', failure_code = $2, failure_message = $3",
      [failure.code, failure.message],
    );
    if (recorded)
      Object.assign(row, { state: 'error', failure_code: failure.code, failure_message: failure.message });
  }

  async bill(row: SessionRow, upto: number): Promise<number | null> {
    return tx(this.db, async (c) => {
      const r = await one<Stored>(c, 'SELECT * FROM sessions WHERE id = $1 FOR UPDATE', [row.id]);
      if (!r || r.state !== 'ready' || r.ready === null) return null;
      const exhaustedAt = await billUpTo(c, r, upto);
      row.minutes_debited = r.minutes_debited;
      row.cost_cents = r.cost_cents;
      return exhaustedAt;
    });
  }

  async end(row: SessionRow, end: { reason: EndReason; at: number }): Promise<void> {
    const ended = await tx(this.db, (c) => endSession(c, row.id, end.reason, end.at));
    if (ended) {
      const { state, close_requested, ended: at, end_reason, cleanup_status, done } = ended;
      Object.assign(row, { state, close_requested, ended: at, end_reason, cleanup_status, done });
    }
  }

  async uncertain(row: SessionRow): Promise<void> {
    await tx(this.db, async (c) => {
      if (!(await this.mine(c, row.id))) return;
      await c.query("UPDATE sessions SET cleanup_status = 'allocation_uncertain' WHERE id = $1", [row.id]);
      await notifySessions(c, [row.id]);
    });
    row.cleanup_status = 'allocation_uncertain';
  }

  async saving(): Promise<void> {
    // The profile stays held by its session until its cleanup is confirmed: nothing to record.
  }

  async cleaned(row: SessionRow, outcome: CleanupOutcome): Promise<boolean> {
    this.activeAt.delete(row.id);
    return tx(this.db, async (c) => {
      const r = await this.mine(c, row.id);
      if (!r) return false;
      // Its end not recorded yet (the host is stopping, or its phone was lost): now.
      const current = r.state === 'closing' ? r : (await endSession(c, row.id, 'lost', seconds(this.now())))!;
      if (current.done === 1) return false;
      if (outcome.saved) outcome.commitSave();
      await completeCleanup(c, current, {
        savedOn: outcome.saved ? this.hostId() : null,
        lostProfile: outcome.lostProfile,
        nowSec: seconds(this.now()),
      });
      Object.assign(row, { done: 1, cleanup_status: 'complete' });
      return true;
    });
  }

  active(row: SessionRow, at: number): void {
    // Viewer input on this host is activity (idle_s), as API calls are on API nodes.
    if ((this.activeAt.get(row.id) ?? 0) >= at) return;
    this.activeAt.set(row.id, at);
    this.db
      .query('UPDATE sessions SET last = $2 WHERE id = $1 AND last < $2', [row.id, at])
      .catch((err: unknown) =>
        this.log.debug('could not record activity', { session: row.id, error: String(err) }),
      );
  }
}
