/**
 * The shared store of a deployment, driven the way its nodes drive it, for tests and
 * benchmarks that set up sessions without running the nodes: accounts as `phonelease
 * accounts create --store` makes them, and creates as an API node admits them.
 */
import type { CreateSessionBody } from '../../src/api/schemas.js';
import { ManualClock, systemClock } from '../../server/clock.js';
import { newAccountRows, type CreatedAccount, type NewAccount } from '../../server/runtime/accounts.js';
import { SessionChanges } from '../../server/runtime/directory.js';
import type { RemotePhones } from '../../server/runtime/ports.js';
import { SharedDirectory } from '../../server/runtime/shared-directory.js';
import { cryptoRandom } from '../../server/secrets.js';
import { insertAccount, type Db } from '../../server/stores/postgres/pool.js';
import { PostgresStore } from '../../server/stores/postgres/store.js';

/** Creates an account on the shared store, as `phonelease accounts create --store` does. */
export async function createdOn(db: Db, opts: NewAccount): Promise<CreatedAccount> {
  const rows = newAccountRows(systemClock, cryptoRandom, opts);
  await insertAccount(db, rows);
  return rows.created;
}

/** No device host answers here: these sessions' phones are never asked for. */
const NO_PHONES: RemotePhones = {
  frame: () => Promise.reject(new Error('no device host in this test')),
  input: () => Promise.reject(new Error('no device host in this test')),
  apps: () => Promise.reject(new Error('no device host in this test')),
  revokeAdb: () => Promise.reject(new Error('no device host in this test')),
};

/** Admits a create at `nowMs` as an API node does; the new session's id. */
export async function admittedOn(
  db: Db,
  uid: string,
  body: CreateSessionBody,
  nowMs: number,
): Promise<string> {
  const directory = new SharedDirectory({
    store: new PostgresStore(db),
    phones: NO_PHONES,
    changes: new SessionChanges(),
    clock: new ManualClock(nowMs),
    random: cryptoRandom,
  });
  return (await directory.admit(uid, body, null)).session.row.id;
}
