/**
 * The run ledger: one JSONL file per run that records every lease as it starts and ends,
 * so that whoever runs after a crash (the WebdriverIO launcher's onComplete, a CI step,
 * `endLeftovers()`) can end what a killed process left running.
 *
 * It holds no secret: the base URL, the create request key, the session id, the pid and
 * times. Ending a leftover needs the API key, which the caller supplies.
 *
 * Lines are appended synchronously: the "start" line is on disk before the create request
 * leaves, so even a process killed mid-create leaves a key that resolves to its session.
 */
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type LedgerEvent =
  | { event: 'start'; request_key: string; base_url: string; pid: number; at: string }
  | { event: 'session'; request_key: string; session_id: string; at: string }
  | { event: 'end'; request_key: string; session_id: string | null; outcome: string; at: string };

/** A lease as the ledger knows it, folded from its events. */
export interface LedgerLease {
  requestKey: string;
  baseUrl: string;
  pid: number;
  sessionId: string | null;
  startedAt: string;
  /** null while the lease has not recorded its end. */
  endedAt: string | null;
  outcome: string | null;
}

export interface LedgerLocation {
  /** Run id: PHONELEASE_RUN_ID, so that a test runner and its workers share one ledger. */
  runId?: string;
  /** Directory of ledgers (default $TMPDIR/phonelease/ledger, or PHONELEASE_LEDGER_DIR). */
  dir?: string;
  env?: NodeJS.ProcessEnv;
}

export function ledgerDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.PHONELEASE_LEDGER_DIR ?? join(tmpdir(), 'phonelease', 'ledger');
}

/** This process's run id: PHONELEASE_RUN_ID when set, else one per process. */
export function currentRunId(env: NodeJS.ProcessEnv = process.env): string {
  // pid plus the process's start time: stable for the whole process, unique across runs.
  return env.PHONELEASE_RUN_ID ?? `run-${process.pid}-${Math.floor(performance.timeOrigin).toString(36)}`;
}

export function ledgerPath(location: LedgerLocation = {}): string {
  const env = location.env ?? process.env;
  const runId = location.runId ?? currentRunId(env);
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(runId))
    throw new Error(`run id "${runId}" may only use letters, digits, ".", "_" and "-".`);
  return join(location.dir ?? ledgerDir(env), `${runId}.jsonl`);
}

export class RunLedger {
  constructor(readonly path: string) {}

  static open(location: LedgerLocation = {}): RunLedger {
    return new RunLedger(ledgerPath(location));
  }

  append(entry: LedgerEvent): void {
    const dir = join(this.path, '..');
    if (entry.event === 'start' && !existsSync(this.path)) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      // A new run: ledgers of runs long gone are no use to anyone.
      pruneOlderThan(dir, LEDGER_MAX_AGE_MS, '.jsonl');
    }
    appendFileSync(this.path, JSON.stringify(entry) + '\n', { mode: 0o600 });
  }

  /** Every lease recorded, in start order. Missing file: none. Torn last line (crash): skipped. */
  read(): LedgerLease[] {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const leases = new Map<string, LedgerLease>();
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      let e: LedgerEvent;
      try {
        e = JSON.parse(line) as LedgerEvent;
      } catch {
        continue;
      }
      if (e.event === 'start') {
        leases.set(e.request_key, {
          requestKey: e.request_key,
          baseUrl: e.base_url,
          pid: e.pid,
          sessionId: null,
          startedAt: e.at,
          endedAt: null,
          outcome: null,
        });
        continue;
      }
      const lease = leases.get(e.request_key);
      if (!lease) continue;
      if (e.event === 'session') lease.sessionId = e.session_id;
      else {
        lease.sessionId = e.session_id ?? lease.sessionId;
        lease.endedAt = e.at;
        lease.outcome = e.outcome;
      }
    }
    return [...leases.values()];
  }

  /**
   * Leases that may still hold a phone: no end recorded, an end that failed or whose
   * cleanup was not confirmed (the phone may still be up), or a start whose cleanup could
   * not be confirmed.
   */
  open(): LedgerLease[] {
    return this.read().filter(
      (l) =>
        l.endedAt === null ||
        l.outcome === 'failed' ||
        l.outcome === 'cleanup_pending' ||
        l.outcome === 'start_unresolved',
    );
  }
}

/** Ledgers are kept a week: long enough for any CI job to clean up after itself. */
const LEDGER_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

/** Deletes files ending in `suffix` not modified for `maxAgeMs`; best effort. */
export function pruneOlderThan(dir: string, maxAgeMs: number, suffix: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  const cutoff = Date.now() - maxAgeMs;
  for (const name of names) {
    if (!name.endsWith(suffix)) continue;
    const file = join(dir, name);
    try {
      if (statSync(file).mtimeMs < cutoff) unlinkSync(file);
    } catch {
      // gone already, or not ours to delete
    }
  }
}
