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

export type { Statement, Transaction } from 'better-sqlite3';
export type Database = BetterSqlite3.Database;

/** The driver module to load: the Node-API build on Node 22+, where npm installed it. */
function driverModule(): string {
  if (NODE_MAJOR >= 22) {
    try {
      return require.resolve('better-sqlite3-napi');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error;
      process.emitWarning(
        `phonelease: better-sqlite3-napi is not installed, so Node ${process.versions.node} uses better-sqlite3 12, which can abort the process on Node 24; reinstall phonelease with this Node (npm ci) to get it.`,
      );
    }
  }
  return require.resolve('better-sqlite3');
}

/** The resolved path of the driver this process uses; a worker thread loads the same one. */
export const DRIVER_PATH = driverModule();
export const Database = require(DRIVER_PATH) as typeof BetterSqlite3;
