/**
 * The reaper process (like testcontainers' Ryuk). A lease process starts one, detached, and
 * keeps a pipe to its stdin over which it registers and unregisters leases. When the pipe
 * closes (the process exited, crashed or was killed with SIGKILL), the reaper ends every
 * lease still registered, confirms cleanup through the create receipt, and exits.
 *
 * It writes what it did to the file named by PHONELEASE_REAPER_LOG (created only when there
 * is something to say), redacted.
 */
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { PhoneSessionClient } from '../client.js';
import { endAndConfirm } from '../lease/end.js';
import { redact } from '../util/redact.js';
import type { ReaperMessage } from './reaper-protocol.js';

interface Registered {
  baseUrl: string;
  apiKey: string;
  sid: string | null;
}

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

async function main(): Promise<void> {
  // Detached from the terminal's process group already; a stray Ctrl-C must not stop the reaping.
  process.on('SIGINT', () => undefined);
  const registered = new Map<string, Registered>();

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
        registered.set(m.key, { baseUrl: m.base_url, apiKey: m.api_key, sid: null });
        break;
      case 'session': {
        const r = registered.get(m.key);
        if (r) r.sid = m.sid;
        break;
      }
      case 'unregister':
        registered.delete(m.key);
        break;
    }
  }

  // The pipe closed: the lease process is gone.
  if (registered.size === 0) return;
  log(`lease process vanished with ${registered.size} lease(s) still live; ending them`);
  const results = await Promise.all(
    [...registered].map(async ([key, r]) => {
      const client = new PhoneSessionClient({
        baseUrl: r.baseUrl,
        apiKey: r.apiKey,
        retry: { budgetMs: 10_000, maxRetries: 6 },
      });
      // A create cut off mid-flight may land a moment later: look for its receipt for a few seconds.
      const result = await endAndConfirm(
        client,
        { sessionId: r.sid, requestKey: key },
        { findMs: 3000, confirmMs: 15_000 },
      );
      const detail = result.error instanceof Error ? `: ${result.error.message}` : '';
      log(
        `session ${result.sessionId ?? '(none)'} for key ${key.slice(0, 6)}…: ${result.outcome}${result.cleanupConfirmed ? ', cleanup confirmed' : ''}${detail}`,
      );
      return result;
    }),
  );
  if (results.some((r) => r.outcome === 'failed')) process.exitCode = 1;
}

main().catch((error: unknown) => {
  log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
