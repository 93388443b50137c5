/**
 * The dashboard's sign-in links and sessions in the single server's SQLite store
 * (DashboardStore, server/runtime/dashboard-sessions.ts). `phonelease dashboard --data DIR`
 * writes links through the same class while a server runs on that directory: nothing is
 * cached, so the server sees a new link at once.
 */
import type {
  AccountRef,
  DashboardSessionRow,
  DashboardStore,
  SignInLinkRow,
} from '../../runtime/dashboard-sessions.js';
import type { AccountRow } from '../../runtime/rows.js';
import type { SqliteStore } from './store.js';

export class SqliteDashboardStore implements DashboardStore {
  constructor(private readonly store: SqliteStore) {}

  async accounts(ref: AccountRef): Promise<AccountRow[]> {
    return 'uid' in ref
      ? this.store.query<[string], AccountRow>('SELECT * FROM accounts WHERE uid = ?').all(ref.uid)
      : this.store
          .query<[string], AccountRow>('SELECT * FROM accounts WHERE email = ? ORDER BY created, uid')
          .all(ref.email);
  }

  async insertLink(row: SignInLinkRow, forgetBefore: number): Promise<void> {
    this.store.transaction(() => {
      this.store.query('DELETE FROM sign_in_links WHERE created < ?').run(forgetBefore);
      this.store.insertRow('sign_in_links', row);
    });
  }

  async useLink(tokenHash: string, at: number, createdAfter: number): Promise<SignInLinkRow | undefined> {
    // The link as it was: read before the update, in the same transaction.
    return this.store.transaction(() => {
      const before = this.store
        .query<[string], SignInLinkRow>('SELECT * FROM sign_in_links WHERE token_hash = ?')
        .get(tokenHash);
      this.store
        .query('UPDATE sign_in_links SET used = ? WHERE token_hash = ? AND used IS NULL AND created > ?')
        .run(at, tokenHash, createdAfter);
      return before;
    });
  }

  async insertSession(row: DashboardSessionRow, forgetBefore: number): Promise<void> {
    this.store.transaction(() => {
      this.store.query('DELETE FROM dashboard_sessions WHERE expires_at < ?').run(forgetBefore);
      this.store.insertRow('dashboard_sessions', row);
    });
  }

  async session(jti: string): Promise<DashboardSessionRow | undefined> {
    return this.store
      .query<[string], DashboardSessionRow>('SELECT * FROM dashboard_sessions WHERE jti = ?')
      .get(jti);
  }

  async signOut(jti: string, at: number): Promise<void> {
    this.store.transaction(() =>
      this.store
        .query('UPDATE dashboard_sessions SET signed_out = ? WHERE jti = ? AND signed_out IS NULL')
        .run(at, jti),
    );
  }
}
