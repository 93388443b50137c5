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
  private readonly s;

  constructor(private readonly store: SqliteStore) {
    const db = store.db;
    this.s = {
      accountByUid: db.prepare<[string], AccountRow>('SELECT * FROM accounts WHERE uid = ?'),
      accountsByEmail: db.prepare<[string], AccountRow>(
        'SELECT * FROM accounts WHERE email = ? ORDER BY created, uid',
      ),
      linkInsert: db.prepare<[string, string, number]>(
        'INSERT INTO sign_in_links (token_hash, uid, created, used) VALUES (?, ?, ?, NULL)',
      ),
      linkForget: db.prepare<[number]>('DELETE FROM sign_in_links WHERE created < ?'),
      linkGet: db.prepare<[string], SignInLinkRow>('SELECT * FROM sign_in_links WHERE token_hash = ?'),
      linkUse: db.prepare<[number, string, number]>(
        'UPDATE sign_in_links SET used = ? WHERE token_hash = ? AND used IS NULL AND created > ?',
      ),
      sessionInsert: db.prepare<[string, string, number, number]>(
        'INSERT INTO dashboard_sessions (jti, uid, created, expires_at, signed_out) VALUES (?, ?, ?, ?, NULL)',
      ),
      sessionForget: db.prepare<[number]>('DELETE FROM dashboard_sessions WHERE expires_at < ?'),
      sessionGet: db.prepare<[string], DashboardSessionRow>('SELECT * FROM dashboard_sessions WHERE jti = ?'),
      signOut: db.prepare<[number, string]>(
        'UPDATE dashboard_sessions SET signed_out = ? WHERE jti = ? AND signed_out IS NULL',
      ),
    };
  }

  accounts(ref: AccountRef): Promise<AccountRow[]> {
    return Promise.resolve(
      'uid' in ref ? this.s.accountByUid.all(ref.uid) : this.s.accountsByEmail.all(ref.email),
    );
  }

  insertLink(row: SignInLinkRow, forgetBefore: number): Promise<void> {
    this.store.transaction(() => {
      this.s.linkForget.run(forgetBefore);
      this.s.linkInsert.run(row.token_hash, row.uid, row.created);
    });
    return Promise.resolve();
  }

  useLink(tokenHash: string, at: number, createdAfter: number): Promise<SignInLinkRow | undefined> {
    // The link as it was: read before the update, in the same transaction.
    const link = this.store.transaction(() => {
      const before = this.s.linkGet.get(tokenHash);
      this.s.linkUse.run(at, tokenHash, createdAfter);
      return before;
    });
    return Promise.resolve(link);
  }

  insertSession(row: DashboardSessionRow, forgetBefore: number): Promise<void> {
    this.store.transaction(() => {
      this.s.sessionForget.run(forgetBefore);
      this.s.sessionInsert.run(row.jti, row.uid, row.created, row.expires_at);
    });
    return Promise.resolve();
  }

  session(jti: string): Promise<DashboardSessionRow | undefined> {
    return Promise.resolve(this.s.sessionGet.get(jti));
  }

  signOut(jti: string, at: number): Promise<void> {
    this.store.transaction(() => this.s.signOut.run(at, jti));
    return Promise.resolve();
  }
}
