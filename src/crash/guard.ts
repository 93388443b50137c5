/**
 * The process guard: what keeps a phone from outliving the process that leased it.
 *
 * - SIGINT and SIGTERM: live leases are ended (bounded by a budget), then the signal is
 *   raised again with our handler removed, so the process exits the way it would have.
 *   Handlers are installed only while a lease that asked for them is live, so a process
 *   with no lease keeps Node's default behaviour.
 * - SIGKILL and crashes: a reaper process (reaper.ts) ends what is still registered.
 * - An end that failed within the lease's own budget is handed to the reaper, which keeps
 *   trying until the session is confirmed ended or its deadline passes.
 *
 * There is one guard per process, kept on globalThis under a Symbol.for key. That is on
 * purpose: signals and the process's lifetime are per process, and two copies of this
 * module (say the built package and its sources loaded side by side) must share one set
 * of handlers and one reaper instead of racing each other.
 */
import { ReaperLink } from './reaper.js';

export interface Guarded {
  readonly requestKey: string;
  /** Ends the lease; must never throw. */
  end(): Promise<unknown>;
}

export interface TrackOptions {
  /** End this lease on SIGINT / SIGTERM (default true). */
  signals: boolean;
  /**
   * Hand the lease to the reaper with these credentials, or null for no reaper. `deadline`
   * (ms since the epoch): when the server ends the session on its own at the latest.
   */
  reaper: { baseUrl: string; apiKey: string; deadline: number } | null;
}

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
/** How long a signal may wait for leases to end before the process exits anyway (the reaper finishes). */
const SIGNAL_BUDGET_MS = 10_000;

export class ProcessGuard {
  readonly #signalLeases = new Set<Guarded>();
  readonly #reaped = new Set<string>();
  #reaper: ReaperLink | null = null;
  #installed = false;
  #exiting = false;

  /** Starts guarding a lease (before its create is sent, so a crash mid-create is covered). */
  track(lease: Guarded, options: TrackOptions): void {
    if (options.signals) {
      this.#signalLeases.add(lease);
      this.#install();
    }
    if (options.reaper) {
      this.#reaper ??= new ReaperLink();
      this.#reaper.send({
        op: 'register',
        key: lease.requestKey,
        base_url: options.reaper.baseUrl,
        api_key: options.reaper.apiKey,
        deadline: options.reaper.deadline,
      });
      this.#reaped.add(lease.requestKey);
    }
  }

  /** The lease's session id is known, and when the server ends it at the latest (ms since the epoch). */
  session(lease: Guarded, sessionId: string, deadline?: number): void {
    if (this.#reaped.has(lease.requestKey))
      this.#reaper?.send({
        op: 'session',
        key: lease.requestKey,
        sid: sessionId,
        ...(deadline !== undefined ? { deadline } : {}),
      });
  }

  /**
   * The lease ended, or gave up ending its session. With handOver, the reaper takes over
   * at once and keeps trying until the session is confirmed ended or its deadline passes.
   * Returns whether a reaper took it (false: no reaper for this lease).
   */
  untrack(lease: Guarded, options: { handOver?: boolean } = {}): boolean {
    this.#signalLeases.delete(lease);
    if (this.#signalLeases.size === 0) this.#uninstall();
    if (!this.#reaped.delete(lease.requestKey) || !this.#reaper) return false;
    this.#reaper.send({ op: options.handOver ? 'end' : 'unregister', key: lease.requestKey });
    return options.handOver === true;
  }

  /** The reaper's pid, once one was started (tests, diagnostics). */
  get reaperPid(): number | null {
    return this.#reaper?.pid ?? null;
  }

  /** Leases a signal would end now. */
  get liveCount(): number {
    return this.#signalLeases.size;
  }

  #onSignal = (signal: NodeJS.Signals): void => {
    if (this.#exiting) return;
    this.#exiting = true;
    // A second Ctrl-C while we end leases gets Node's default: exit now (the reaper finishes).
    this.#uninstall();
    const leases = [...this.#signalLeases];
    process.stderr.write(`phonelease: ${signal}: ending ${leases.length} live lease(s) before exiting\n`);
    const ended = Promise.allSettled(leases.map((l) => l.end()));
    const budget = new Promise<void>((resolve) => setTimeout(resolve, SIGNAL_BUDGET_MS).unref());
    void Promise.race([ended, budget]).finally(() => {
      this.#exiting = false;
      // Our handler is gone, so this gets the default behaviour (or whoever else listens).
      process.kill(process.pid, signal);
    });
  };

  #install(): void {
    if (this.#installed) return;
    this.#installed = true;
    for (const s of SIGNALS) process.on(s, this.#onSignal);
  }

  #uninstall(): void {
    if (!this.#installed) return;
    this.#installed = false;
    for (const s of SIGNALS) process.off(s, this.#onSignal);
  }
}

const GUARD_KEY = Symbol.for('phonelease.processGuard');

/** This process's guard (created on first use). */
export function processGuard(): ProcessGuard {
  const holder = globalThis as unknown as Record<symbol, ProcessGuard | undefined>;
  return (holder[GUARD_KEY] ??= new ProcessGuard());
}
