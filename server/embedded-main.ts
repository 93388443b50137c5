/**
 * The embedded default server as its own process, for test runners whose workers must all
 * share one server (Playwright workers are separate processes). It starts the server with
 * virtual phones, creates a local account, writes {url, key} to a state file only its
 * owner can read, and stops — ending every live session — when the process it watches
 * (the test runner) exits, or on SIGTERM/SIGINT.
 *
 *   node embedded-main.js --data DIR --state FILE --watch-pid PID [--phones N] [--boot-ms MS] [--boot-slots N]
 */
import { createWriteStream, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger, levelFromEnv } from './log.js';
import { startServer } from './main.js';

export interface EmbeddedState {
  url: string;
  key: string;
  pid: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      data: { type: 'string' },
      state: { type: 'string' },
      'watch-pid': { type: 'string' },
      phones: { type: 'string', default: '16' },
      'boot-ms': { type: 'string', default: '500' },
      'boot-slots': { type: 'string', default: '4' },
    },
  });
  if (!values.data || !values.state || !values['watch-pid']) {
    throw new Error('usage: embedded-main --data DIR --state FILE --watch-pid PID');
  }
  const watchPid = Number(values['watch-pid']);
  const logFile = createWriteStream(join(values.data, 'server.log'), { flags: 'a' });
  const log = createLogger({
    level: levelFromEnv(process.env, 'info'),
    write: (line) => logFile.write(line + '\n'),
  });

  const server = await startServer({
    dataDir: values.data,
    port: 0,
    phones: Number(values.phones),
    bootMs: Number(values['boot-ms']),
    bootSlots: Number(values['boot-slots']),
    log,
  });
  const { key } = server.createAccount({
    name: 'Embedded test account',
    billingMode: 'disabled',
    sessionLimit: 10_000,
  });
  const state: EmbeddedState = { url: server.url, key, pid: process.pid };
  // Written whole or not at all: readers poll for the file and must never see half of it.
  const tmp = `${values.state}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(state), { mode: 0o600 });
  renameSync(tmp, values.state);

  let stopping = false;
  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    log.info('embedded server stopping', { why });
    clearInterval(watch);
    void server.close().finally(() => {
      logFile.end(() => process.exit(0));
    });
  };
  const watch = setInterval(() => {
    try {
      process.kill(watchPid, 0);
    } catch {
      stop('the test runner exited');
    }
  }, 250);
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // Detached from the runner's terminal: a closed stdio must not kill it before cleanup.
  process.on('SIGHUP', () => undefined);
}

main().catch((err: unknown) => {
  process.stderr.write(
    `phonelease embedded server failed: ${err instanceof Error ? err.stack : String(err)}\n`,
  );
  process.exit(1);
});
