/**
 * What a server contract test runs against: the single-process server (the embedded
 * default), or a deployment (PostgreSQL, 2 API nodes with `--phones 0`, 2 device hosts, all
 * started through the built CLI) whose client sends each request to the next API node in
 * turn. PHONELEASE_TEST_TARGET=deployment selects the deployment (the vitest project
 * `deployment` sets it); anything else, the single process.
 *
 * A contract test that speaks only HTTP and ADB gets a Target and does not know which one it
 * has. A test that needs the server in its own process (an injected clock, a custom device
 * backend, runtime internals) uses test/support/server.ts instead and stays out of the
 * deployment project.
 */
import { afterAll, afterEach } from 'vitest';
import type { NewAccount } from '../../server/runtime/accounts.js';
import { Deployment } from './deployment.js';
import { startPostgres, type PostgresCluster } from './postgres.js';
import { Api, startTestServer, type CallOptions, type Reply } from './server.js';

export type TargetKind = 'single-process' | 'deployment';

export const TARGET_KIND: TargetKind =
  process.env.PHONELEASE_TEST_TARGET === 'deployment' ? 'deployment' : 'single-process';

/** Server options that both targets honour (the deployment through the CLI's flags). */
export interface TargetOptions {
  /** Shared capacity; on a deployment split over its 2 hosts (host --phones). Default 20. */
  phones?: number;
  /**
   * Phones booting at once (default 4 per server or host). On a deployment split over its
   * hosts like the phones (host --boot-slots); a single boot slot means a single host.
   */
  bootSlots?: number;
  /** Boot time of a virtual phone (--boot-ms). Default 50. */
  bootMs?: number;
  /** Which phones to serve (--device). */
  device?: 'virtual' | 'emulator';
  /** Origin allowed to embed the viewer pages (--dashboard-origin). */
  dashboardOrigin?: string;
  /** The first account (default: billing disabled). */
  account?: NewAccount;
}

export interface TargetAccount {
  account: { uid: string; key: string; profile_id: string };
  api: Api;
}

export interface Target extends TargetAccount {
  readonly kind: TargetKind;
  /** Base URLs of the API: one server, or each API node. */
  readonly urls: string[];
  /** Another account on the same server or deployment. */
  other(opts?: NewAccount): Promise<TargetAccount>;
  /** Ends what this target started: the server, or on a deployment its accounts' sessions. */
  close(): Promise<void>;
}

/**
 * A client that sends each request to the next of `urls` in turn. Every client derived
 * from it (`as`) shares the turn, so consecutive requests of a test alternate between API
 * nodes whichever credential they carry.
 */
export class AlternatingApi extends Api {
  constructor(
    readonly urls: string[],
    key: string | null,
    private readonly turn: { next: number } = { next: 0 },
  ) {
    super(urls[0]!, key);
  }

  override as(key: string | null): AlternatingApi {
    return new AlternatingApi(this.urls, key, this.turn);
  }

  override call<T = any>(method: string, path: string, opts: CallOptions = {}): Promise<Reply<T>> {
    const url = this.urls[this.turn.next++ % this.urls.length]!;
    return new Api(url, this.key).call<T>(method, path, opts);
  }
}

const DEFAULT_ACCOUNT: NewAccount = { billingMode: 'disabled' };

/**
 * Targets for one test file. `perTest` gives a target closed after the running test;
 * `start` one that the caller closes (for a `beforeAll`/`afterAll` pair). Call at the top
 * level of the file: it registers the hooks that close what the file started.
 *
 * On a deployment, the file starts one PostgreSQL cluster and one deployment per distinct
 * shape (phones, boot slots, boot time, device, dashboard origin), each in a fresh database,
 * and reuses it across the file's tests: each target gets its own accounts, and closing it
 * ends their sessions and waits until their phones are free again, as closing a single
 * server would.
 */
export function useTargets(): {
  kind: TargetKind;
  perTest(opts?: TargetOptions): Promise<Target>;
  start(opts?: TargetOptions): Promise<Target>;
} {
  const started: Target[] = [];
  const deployments = TARGET_KIND === 'deployment' ? new DeploymentPool() : null;
  const start = (opts: TargetOptions = {}) => (deployments ? deployments.target(opts) : singleProcess(opts));
  afterEach(async () => {
    await Promise.all(started.splice(0).map((t) => t.close()));
  });
  afterAll(async () => {
    await deployments?.stop();
  });
  return {
    kind: TARGET_KIND,
    start,
    async perTest(opts) {
      const t = await start(opts);
      started.push(t);
      return t;
    },
  };
}

async function singleProcess(opts: TargetOptions): Promise<Target> {
  const { account, ...serverOpts } = opts;
  const t = await startTestServer({
    ...serverOpts,
    account: { ...DEFAULT_ACCOUNT, ...account },
  });
  return {
    kind: 'single-process',
    urls: [t.url],
    account: t.account,
    api: t.api,
    other: async (o) => t.other(o),
    close: () => t.close(),
  };
}

/** The `phonelease accounts create` flags for an account's options. */
function accountArgs(opts: NewAccount): string[] {
  if (opts.rentBlockedReason !== undefined)
    throw new Error(
      'accounts create has no flag for rentBlockedReason: test it on the single-process server',
    );
  const args: string[] = [];
  const flag = (name: string, value: string | number | undefined) => {
    if (value !== undefined) args.push(name, String(value));
  };
  flag('--email', opts.email);
  flag('--name', opts.name);
  flag('--balance-cents', opts.balanceCents);
  flag('--price-cents-per-minute', opts.priceCentsPerMinute);
  flag('--session-limit', opts.sessionLimit);
  flag('--billing-mode', opts.billingMode);
  if (opts.canRent === false) args.push('--no-rent');
  return args;
}

/** One PostgreSQL cluster for the file and its deployments, by shape. */
class DeploymentPool {
  private cluster: Promise<PostgresCluster> | null = null;
  private readonly byShape = new Map<string, Promise<Deployment>>();

  async target(opts: TargetOptions): Promise<Target> {
    const d = await this.deployment(opts);
    const urls = d.nodes.map((n) => n.url);
    const turn = { next: 0 };
    const accounts: TargetAccount[] = [];
    const create = async (o: NewAccount = {}): Promise<TargetAccount> => {
      const account = await d.account(accountArgs({ ...DEFAULT_ACCOUNT, ...o }));
      const created = { account, api: new AlternatingApi(urls, account.key, turn) };
      accounts.push(created);
      return created;
    };
    const first = await create(opts.account);
    return {
      kind: 'deployment',
      urls,
      ...first,
      other: create,
      async close() {
        // The deployment outlives the test: hand its phones back for the next one.
        await Promise.all(accounts.map((a) => endSessions(d, a.api)));
      },
    };
  }

  private deployment(opts: TargetOptions): Promise<Deployment> {
    const hostArgs = ['--boot-ms', String(opts.bootMs ?? 50)];
    if (opts.device) hostArgs.push('--device', opts.device);
    const nodeArgs = opts.dashboardOrigin ? ['--dashboard-origin', opts.dashboardOrigin] : [];
    // Phones and boot slots are split over the two hosts (the first takes the odd one); a
    // host has at least one of each, so a target of 1 phone or 1 boot slot is one host.
    const count =
      opts.bootSlots === undefined
        ? Math.min(2, opts.phones ?? 20)
        : Math.min(2, opts.phones ?? 20, opts.bootSlots);
    const share = (total: number, i: number) => Math.floor(total / count) + (i < total % count ? 1 : 0);
    const hosts = Array.from({ length: count }, (_, i) => [
      ...hostArgs,
      '--phones',
      String(share(opts.phones ?? 20, i)),
      ...(opts.bootSlots === undefined ? [] : ['--boot-slots', String(share(opts.bootSlots, i))]),
    ]);
    const shape = JSON.stringify({ hosts, nodeArgs });
    let d = this.byShape.get(shape);
    if (!d) {
      d = this.startDeployment(hosts, nodeArgs);
      this.byShape.set(shape, d);
    }
    return d;
  }

  private async startDeployment(hosts: string[][], nodeArgs: string[]): Promise<Deployment> {
    this.cluster ??= startPostgres();
    const d = await Deployment.start(await this.cluster, { nodes: 0 });
    try {
      // All at once: whichever process comes first migrates, the others wait on its lock.
      await Promise.all([d.startNode(nodeArgs), d.startNode(nodeArgs), ...hosts.map((a) => d.startHost(a))]);
    } catch (err) {
      await d.stop();
      throw err;
    }
    return d;
  }

  async stop(): Promise<void> {
    const all = await Promise.allSettled(this.byShape.values());
    this.byShape.clear();
    // A deployment that failed to start has stopped its processes already.
    await Promise.all(all.flatMap((r) => (r.status === 'fulfilled' ? [r.value.stop()] : [])));
    const cluster = this.cluster;
    this.cluster = null;
    // A cluster that failed to start failed the tests that needed it already.
    await cluster?.then(
      (c) => c.stop(),
      () => undefined,
    );
  }
}

/** Ends every live session of the account and waits until each is gone (its phone is free). */
async function endSessions(d: Deployment, api: Api): Promise<void> {
  const live = (await api.get<Array<{ id: string }>>('/sessions')).body;
  for (const s of live) await api.delete(`/sessions/${s.id}`);
  for (const s of live) await d.waitGone(api, s.id);
}
