/**
 * The reaper process (like testcontainers' Ryuk). A lease process starts one, detached, and
 * keeps a pipe to its stdin over which it registers and unregisters leases.
 *
 * - `end`: the lease gave up ending its session within its own budget (a rate limit that
 *   outlasted it, a service restarting): the reaper takes over at once.
 * - The pipe closes (the process exited, crashed or was killed with SIGKILL): the reaper
 *   ends every lease still registered.
 * Either way it keeps trying until the session is confirmed ended or its server deadline
 * passes (after which the server has ended it anyway), then exits once nothing is left.
 *
 * It writes what it did to the file named by PHONELEASE_REAPER_LOG (created only when there
 * is something to say), redacted.
 */
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { PhoneSessionClient } from '../client.js';
import { endAndConfirm, type EndResult } from '../end-session.js';
import { redact } from '../util/redact.js';
import { sleep } from '../util/time.js';
import type { ReaperMessage } from './reaper-protocol.js';

interface Registered {
  baseUrl: string;
  apiKey: string;
  sid: string | null;
  /** ms since the epoch: past it, the server has ended the session itself. */
  deadline: number;
}

/** The longest pause between two rounds of trying to end one session. */
const MAX_PAUSE_MS = 30_000;

function log(message: string): void {
  const line = redact(`${new Date().toISOString()} reaper[${process.pid}] ${message}`) + '\n';
  const file = process.env.PHONELEASE_REAPER_LOG;
  try {
    if (file) appendFileSync(file, line, { mode: 0o600 });
    else process.stderr.write(line);
  } catch {
    // Nowhere to write: the reaping matters more than its log.
  }
}

/** Ends one lease's session, round after round, until it is confirmed ended or its deadline passes. */
async function reap(key: string, r: Registered): Promise<EndResult> {
  const client = new PhoneSessionClient({
    baseUrl: r.baseUrl,
    apiKey: r.apiKey,
    retry: { budgetMs: 10_000, maxRetries: 6 },
  });
  for (let round = 0; ; round++) {
    const left = r.deadline - Date.now();
    // A create cut off mid-flight may land a moment later: look for its receipt for a few seconds.
    const result = await endAndConfirm(
      client,
      { sessionId: r.sid, requestKey: key },
      { findMs: 3000, confirmMs: 15_000, retryMs: Math.max(1000, Math.min(60_000, left)) },
    );
    r.sid = result.sessionId ?? r.sid;
    const detail = result.error instanceof Error ? `: ${result.error.message}` : '';
    log(
      `session ${result.sessionId ?? '(none)'} for key ${key.slice(0, 6)}…: ${result.outcome}${result.cleanupConfirmed ? ', cleanup confirmed' : ''}${detail}`,
    );
    // Done once the end is confirmed; a cleanup still pending is asked about again (the
    // DELETE is idempotent) until it is confirmed or the deadline passes.
    if (result.outcome !== 'failed' && result.cleanupConfirmed) return result;
    const pause = Math.min(MAX_PAUSE_MS, 1000 * 2 ** round);
    if (Date.now() + pause >= r.deadline) {
      log(`gave up on key ${key.slice(0, 6)}…: its deadline has passed, so the server has ended it`);
      return result;
    }
    await sleep(pause);
  }
}

async function main(): Promise<void> {
  // Detached from the terminal's process group already; a stray Ctrl-C must not stop the reaping.
  process.on('SIGINT', () => undefined);
  const registered = new Map<string, Registered>();
  const handedOver: Array<Promise<EndResult>> = [];

  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    let m: ReaperMessage;
    try {
      m = JSON.parse(line) as ReaperMessage;
    } catch {
      continue;
    }
    switch (m.op) {
      case 'register':
        registered.set(m.key, { baseUrl: m.base_url, apiKey: m.api_key, sid: null, deadline: m.deadline });
        break;
      case 'session': {
        const r = registered.get(m.key);
        if (r) {
          r.sid = m.sid;
          if (m.deadline !== undefined) r.deadline = m.deadline;
        }
        break;
      }
      case 'end': {
        const r = registered.get(m.key);
        if (!r) break;
        registered.delete(m.key);
        log(`took over ending the session of key ${m.key.slice(0, 6)}… from its lease`);
        handedOver.push(reap(m.key, r));
        break;
      }
      case 'unregister':
        registered.delete(m.key);
        break;
    }
  }

  // The pipe closed: the lease process is gone.
  if (registered.size > 0)
    log(`lease process vanished with ${registered.size} lease(s) still live; ending them`);
  const results = await Promise.all([...handedOver, ...[...registered].map(([key, r]) => reap(key, r))]);
  if (results.some((r) => r.outcome === 'failed')) process.exitCode = 1;
}

main().catch((error: unknown) => {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
