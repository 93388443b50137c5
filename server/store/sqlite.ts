/**
 * The SQLite driver this Node can run. better-sqlite3 12 is a classic addon built on Node's
 * raw ObjectWrap, whose destructor on Node 24 asserts that a JavaScript environment is
 * current: a prepared statement collected at the wrong moment (or at exit) aborts the
 * process. better-sqlite3 13 is a Node-API addon without that flaw, but needs Node 22 and
 * crashes on Node 20. So Node 22 and later load 13 (the optional dependency
 * `better-sqlite3-napi`, which npm installs only where it can run), Node 20 loads 12. Both
 * have the same API.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

export type Database = BetterSqlite3.Database;
export type Transaction<F extends (...args: never[]) => unknown> = BetterSqlite3.Transaction<F>;
export type Statement<P extends unknown[] | object = unknown[]> = P extends unknown[]
  ? BetterSqlite3.Statement<P>
  : BetterSqlite3.Statement<[P]>;

/** What phonelease uses of the driver: opening a database file. */
export interface DatabaseConstructor {
  new (filename: string, options?: BetterSqlite3.Options): Database;
}

function load(): DatabaseConstructor {
  if (NODE_MAJOR >= 22) {
    try {
      return require('better-sqlite3-napi') as DatabaseConstructor;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error;
      process.emitWarning(
        `phonelease: better-sqlite3-napi is not installed, so Node ${process.versions.node} uses better-sqlite3 12, which can abort the process on Node 24; reinstall phonelease with this Node (npm ci) to get it.`,
      );
    }
  }
  return require('better-sqlite3') as DatabaseConstructor;
}

export const Database: DatabaseConstructor = load();
