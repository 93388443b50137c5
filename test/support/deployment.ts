/**
 * A multi-node deployment for tests, started the way operators start one: a PostgreSQL
 * database, API nodes (`phonelease server --store URL --phones 0`) and device hosts
 * (`phonelease host --store URL --json`), each its own process through the built CLI.
 */
import { Api } from './server.js';
import { runCli, startJsonProcess, startServerProcess, type CliProcess, type ServerProcess } from './cli.js';
import { sql, type PostgresCluster } from './postgres.js';

export type HostProcess = CliProcess<{ host: string; url: string }>;

export interface CreatedAccountLine {
  uid: string;
  key: string;
  profile_id: string;
}

export class Deployment {
  readonly nodes: ServerProcess[] = [];
  readonly hosts: HostProcess[] = [];

  constructor(
    readonly cluster: PostgresCluster,
    readonly store: string,
    /** Environment of every process (e.g. a short PHONELEASE_HOST_LOST_AFTER_MS). */
    readonly env: NodeJS.ProcessEnv = {},
  ) {}

  static async start(
    cluster: PostgresCluster,
    opts: { nodes?: number; hosts?: Array<string[]>; env?: NodeJS.ProcessEnv } = {},
  ): Promise<Deployment> {
    const d = new Deployment(cluster, await cluster.createDatabase(), opts.env);
    try {
      // The first node migrates; the others start together and find it done (or wait on its lock).
      await Promise.all(Array.from({ length: opts.nodes ?? 2 }, () => d.startNode()));
      for (const args of opts.hosts ?? []) await d.startHost(args);
    } catch (err) {
      await d.stop();
      throw err;
    }
    return d;
  }

  async startNode(args: string[] = []): Promise<ServerProcess> {
    const node = await startServerProcess(['--store', this.store, '--phones', '0', ...args], {
      PHONELEASE_LOG_LEVEL: 'warn',
      ...this.env,
    });
    this.nodes.push(node);
    return node;
  }

  async startHost(args: string[] = []): Promise<HostProcess> {
    const host = await startJsonProcess<{ host: string; url: string }>(
      ['host', '--store', this.store, '--port', '0', '--boot-ms', '50', '--json', ...args],
      { PHONELEASE_LOG_LEVEL: 'warn', ...this.env },
    );
    this.hosts.push(host);
    return host;
  }

  async account(args: string[] = ['--billing-mode', 'disabled']): Promise<CreatedAccountLine> {
    const r = await runCli(['accounts', 'create', '--store', this.store, '--json', ...args]);
    if (r.code !== 0) throw new Error(`accounts create failed: ${r.stderr}`);
    return JSON.parse(r.stdout) as CreatedAccountLine;
  }

  /** A client of API node `i` (modulo the number of nodes). */
  api(i: number, key: string): Api {
    return new Api(this.nodes[i % this.nodes.length]!.url, key);
  }

  /** Waits until the session is gone from the live list; says where it stands and what the processes logged if not. */
  async waitGone(api: Api, sid: string, timeoutMs = 20_000): Promise<void> {
    try {
      await api.waitGone(sid, timeoutMs);
    } catch (err) {
      // Where it stands, never its unlock code.
      const [row] = await sql(
        this.store,
        'SELECT id, state, done, host_id, end_reason, cleanup_status FROM sessions WHERE id = $1',
        [sid],
      );
      throw new Error(`${String(err)}: ${JSON.stringify(row)}\n${this.logs()}`, { cause: err });
    }
  }

  /** What every process logged (for a failing test's message). */
  logs(): string {
    return [...this.nodes, ...this.hosts].map((p, i) => `--- process ${i}\n${p.stderr()}`).join('\n');
  }

  async stop(): Promise<void> {
    await Promise.all(this.hosts.map((h) => h.stop()));
    await Promise.all(this.nodes.map((n) => n.stop()));
  }
}
