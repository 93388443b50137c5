/**
 * The dashboard's sign-in links and sessions in a deployment's PostgreSQL store
 * (DashboardStore, server/runtime/dashboard-sessions.ts): every API node reads the same rows,
 * so a link made by `phonelease dashboard --store URL` signs in through any node, and a
 * sign-out holds on all of them at once.
 */
import type {
  AccountRef,
  DashboardSessionRow,
  DashboardStore,
  SignInLinkRow,
} from '../../runtime/dashboard-sessions.js';
import type { AccountRow } from '../../runtime/rows.js';
import { all, insertRow, one, tx, type Db } from './pool.js';

export class PostgresDashboardStore implements DashboardStore {
  constructor(private readonly db: Db) {}

  accounts(ref: AccountRef): Promise<AccountRow[]> {
    return 'uid' in ref
      ? all(this.db, 'SELECT * FROM accounts WHERE uid = $1', [ref.uid])
      : all(this.db, 'SELECT * FROM accounts WHERE email = $1 ORDER BY created, uid', [ref.email]);
  }

  async insertLink(row: SignInLinkRow, forgetBefore: number): Promise<void> {
    await tx(this.db, async (c) => {
      await c.query('DELETE FROM sign_in_links WHERE created < $1', [forgetBefore]);
      await insertRow(c, 'sign_in_links', row);
    });
  }

  useLink(tokenHash: string, at: number, createdAfter: number): Promise<SignInLinkRow | undefined> {
    return tx(this.db, async (c) => {
      // Locked while it is decided: of two sign-ins with one link, the second reads it used.
      const before = await one<SignInLinkRow>(
        c,
        'SELECT * FROM sign_in_links WHERE token_hash = $1 FOR UPDATE',
        [tokenHash],
      );
      await c.query(
        'UPDATE sign_in_links SET used = $1 WHERE token_hash = $2 AND used IS NULL AND created > $3',
        [at, tokenHash, createdAfter],
      );
      return before;
    });
  }

  async insertSession(row: DashboardSessionRow, forgetBefore: number): Promise<void> {
    await tx(this.db, async (c) => {
      await c.query('DELETE FROM dashboard_sessions WHERE expires_at < $1', [forgetBefore]);
      await insertRow(c, 'dashboard_sessions', row);
    });
  }

  session(jti: string): Promise<DashboardSessionRow | undefined> {
    return one<DashboardSessionRow>(this.db, 'SELECT * FROM dashboard_sessions WHERE jti = $1', [jti]);
  }

  async signOut(jti: string, at: number): Promise<void> {
    await this.db.query(
      'UPDATE dashboard_sessions SET signed_out = $1 WHERE jti = $2 AND signed_out IS NULL',
      [at, jti],
    );
  }
}
