/**
 * A real PostgreSQL for the multi-node tests: its own cluster (initdb) in a temp dir, on a
 * free port, listening on 127.0.0.1 only, started and stopped with pg_ctl. Each test file
 * starts one and gets fresh databases from it.
 *
 * PostgreSQL refuses to run as root, and test runs here are often root: the cluster then
 * runs as the `postgres` system user that Debian's package creates (through runuser), in a
 * directory that user owns. As any other user it runs as that user.
 */
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../src/util/ports.js';

const run = promisify(execFile);

/**
 * Where Debian's `postgresql` package puts the server binaries (the newest version
 * installed), or PHONELEASE_PG_BIN.
 */
export const POSTGRES_BIN = process.env.PHONELEASE_PG_BIN ?? debianBin();

function debianBin(): string {
  let versions: string[] = [];
  try {
    versions = readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v));
  } catch {
    // not installed: postgresMissing() names the expected place
  }
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0] ?? '15';
  return `/usr/lib/postgresql/${newest}/bin`;
}
const SUPERUSER = 'phonelease';

/**
 * Why the PostgreSQL tests cannot run here, or null when they can. Tests skip with this
 * message (only ever for a missing platform, never for a failure of ours).
 */
export function postgresMissing(): string | null {
  for (const tool of ['initdb', 'pg_ctl', 'postgres']) {
    if (!existsSync(join(POSTGRES_BIN, tool))) {
      return `PostgreSQL server binaries are missing (${join(POSTGRES_BIN, tool)}): install Debian's postgresql package (apt-get install postgresql) to run the multi-node tests.`;
    }
  }
  if (userInfo().uid === 0 && !systemUser()) {
    return 'PostgreSQL refuses to run as root and there is no "postgres" system user to run it as: install Debian\'s postgresql package, which creates it.';
  }
  return null;
}

/** uid/gid of the `postgres` system user, when this process is root and must drop to it. */
function systemUser(): { uid: number; gid: number } | null {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) return null;
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

export interface PostgresCluster {
  readonly port: number;
  /** A new empty database; its connection URL. */
  createDatabase(name?: string): Promise<string>;
  /** Stops the server (fast shutdown: connections are cut) and starts it again on the same port. */
  restart(): Promise<void>;
  stopServer(): Promise<void>;
  startServer(): Promise<void>;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
}

let databases = 0;

export async function startPostgres(): Promise<PostgresCluster> {
  const missing = postgresMissing();
  if (missing) throw new Error(missing);
  const dir = mkdtempSync(join(tmpdir(), 'phonelease-pg-'));
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  const asUser = userInfo().uid === 0 ? systemUser() : null;
  if (asUser) {
    chownSync(dir, asUser.uid, asUser.gid);
    chmodSync(dir, 0o700);
  }
  const pgRun = (tool: string, args: string[]) =>
    asUser
      ? run('runuser', ['-u', 'postgres', '--', join(POSTGRES_BIN, tool), ...args], { cwd: dir })
      : run(join(POSTGRES_BIN, tool), args, { cwd: dir });

  await pgRun('initdb', ['-D', data, '-U', SUPERUSER, '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  // Unix sockets in the cluster's own dir (not /var/run/postgresql, which may not exist);
  // fsync off: a test cluster trades durability across an OS crash for speed.
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c max_connections=200`;
  const startServer = async () => {
    await pgRun('pg_ctl', ['-D', data, '-l', log, '-o', options, '-w', 'start']);
  };
  const stopServer = async () => {
    await pgRun('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
  };
  await startServer();
  let running = true;

  return {
    port,
    async createDatabase(name = `t${process.pid}_${++databases}`) {
      const admin = new pg.Client({ host: '127.0.0.1', port, user: SUPERUSER, database: 'postgres' });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${name}`);
      } finally {
        await admin.end();
      }
      return `postgres://${SUPERUSER}@127.0.0.1:${port}/${name}`;
    },
    async restart() {
      await stopServer();
      running = false;
      await startServer();
      running = true;
    },
    async stopServer() {
      await stopServer();
      running = false;
    },
    async startServer() {
      await startServer();
      running = true;
    },
    async stop() {
      if (running) await stopServer().catch(() => undefined);
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs one statement on its own connection (tests and benchmarks read the store with it). */
export async function sql<R extends pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  const c = new pg.Client(url);
  await c.connect();
  try {
    return (await c.query<R>(text, values)).rows;
  } finally {
    await c.end();
  }
}
