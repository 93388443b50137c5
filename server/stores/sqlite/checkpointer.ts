/**
 * WAL checkpoints on a worker thread. SQLite's automatic checkpoint runs inside the commit
 * that fills the WAL past 1,000 pages: that commit copies the WAL back into the database
 * file and syncs it, on the server's main thread, in the middle of answering a request
 * (3-5% of the server's time per create under load). Here the main connection never
 * checkpoints; a connection of its own on a worker thread runs a PASSIVE checkpoint every
 * interval, which waits for no one and leaves every transaction as it was. Durability does
 * not change: a commit is in the WAL either way.
 */
import { Worker } from 'node:worker_threads';
import { DRIVER_PATH, type Database } from './sqlite.js';

const CHECKPOINT_INTERVAL_MS = 1000;

/**
 * The worker's whole program, as CommonJS source: a worker runs plain JavaScript, and under
 * the test runner this package's modules are TypeScript.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
const checkpoint = () => db.pragma('wal_checkpoint(PASSIVE)');
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.once('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  /** Runs a last checkpoint and stops the worker (before the store closes). */
  stop(): Promise<void>;
}

/**
 * Moves the checkpoints of `db` (a file database in WAL mode) to a worker thread. If the
 * worker fails, the connection checkpoints by itself again, as before, and `onError` hears why.
 */
export function startCheckpointer(
  db: Database,
  onError: (error: Error) => void,
  intervalMs = CHECKPOINT_INTERVAL_MS,
): Checkpointer {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { driver: DRIVER_PATH, file: db.name, intervalMs },
  });
  // A server that is not closed (an embedding test's) must not stay alive for its checkpoints.
  worker.unref();
  db.pragma('wal_autocheckpoint = 0');
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.once('error', (error) => {
    if (db.open) db.pragma('wal_autocheckpoint = 1000');
    onError(error);
  });
  let stopping: Promise<void> | null = null;
  return {
    stop() {
      stopping ??= (async () => {
        // Held while it finishes: a process with nothing else left would exit under it.
        worker.ref();
        worker.postMessage('stop');
        await exited;
        if (db.open) db.pragma('wal_autocheckpoint = 1000');
      })();
      return stopping;
    },
  };
}
