/**
 * Crash safety with real processes: a child holding two leases is interrupted (SIGINT,
 * SIGTERM) or killed outright (SIGKILL); nothing may stay live on the server. Without the
 * reaper, the run ledger lets endLeftovers() end what the killed process left.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunLedger, endLeftovers } from '../../src/index.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { eventually, liveIds, tempDir } from './helpers.js';

const HOLDER = fileURLToPath(new URL('./fixtures/hold-leases.ts', import.meta.url));

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ bootMs: 100 });
});
afterAll(() => t.close());

interface Holder {
  child: ChildProcess;
  sessions: string[];
  reaper: number | null;
  stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function spawnHolder(server: TestServer, env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', HOLDER], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: {
      ...process.env,
      PHONELEASE_BASE_URL: server.url,
      PHONELEASE_API_KEY: server.account.key,
      PHONELEASE_LEDGER_DIR: tempDir(),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stderr, exited };
}

async function holdLeases(env: Record<string, string> = {}): Promise<Holder> {
  const { child, stderr, exited } = spawnHolder(t, env);
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    void exited.then(({ code }) =>
      reject(new Error(`holder exited (${code}) before leasing: ${stderr.join('')}`)),
    );
  });
  const { sessions, reaper } = JSON.parse(first) as { sessions: string[]; reaper: number | null };
  return { child, sessions, reaper, stderr, exited };
}

const noneLive = () =>
  eventually(
    () => liveIds(t),
    (ids) => ids.length === 0,
    15_000,
  );

describe('crash safety', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal}: the process ends its leases, then exits by the signal`, async () => {
      const h = await holdLeases({ PHONELEASE_REAPER: '0' });
      expect(h.sessions).toHaveLength(2);
      expect((await liveIds(t)).sort()).toEqual([...h.sessions].sort());
      h.child.kill(signal);
      const exit = await h.exited;
      // Re-raised with the default behaviour: the exit status says "killed by SIGINT/SIGTERM".
      expect(exit.signal).toBe(signal);
      // Ended by the process itself (no reaper here), before it exited.
      expect(await liveIds(t)).toEqual([]);
      expect(h.stderr.join('')).toContain(`${signal}: ending 2 live lease(s)`);
      const history = (await t.api.get('/history')).body as Array<{ sid: string; end_reason: string }>;
      for (const sid of h.sessions) expect(history.find((r) => r.sid === sid)?.end_reason).toBe('released');
    });
  }

  it('SIGINT while the phones are still starting: the starts are cancelled and what they made is ended', async () => {
    const slow = await startTestServer({ bootMs: 30_000 });
    try {
      const h = spawnHolder(slow, { PHONELEASE_REAPER: '0' });
      const ids = await eventually(
        async () => (await slow.api.get('/sessions')).body as unknown[],
        (s) => s.length === 2,
      );
      expect(ids).toHaveLength(2);
      h.child.kill('SIGINT');
      // The cancelled starts end what they made, then the signal is raised again.
      expect((await h.exited).signal).toBe('SIGINT');
      expect(h.stderr.join('')).toContain('start failed: The process is exiting.');
      expect((await slow.api.get('/sessions')).body).toEqual([]);
    } finally {
      await slow.close();
    }
  });

  it('SIGKILL: the reaper ends every lease of the killed process', async () => {
    const h = await holdLeases();
    expect(h.reaper).toEqual(expect.any(Number));
    // The key reaches the reaper over its pipe only: not its command line, not its environment.
    const cmdline = readFileSync(`/proc/${h.reaper}/cmdline`, 'utf8');
    const environ = readFileSync(`/proc/${h.reaper}/environ`, 'utf8');
    expect(cmdline).toContain('reaper-main');
    expect(cmdline).not.toContain(t.account.key);
    expect(environ).not.toContain(t.account.key);

    h.child.kill('SIGKILL');
    expect((await h.exited).signal).toBe('SIGKILL');
    await noneLive();
    const history = (await t.api.get('/history')).body as Array<{ sid: string; end_reason: string }>;
    for (const sid of h.sessions) expect(history.find((r) => r.sid === sid)?.end_reason).toBe('released');
    // Its work done, the reaper exits, leaving a redacted note of what it did.
    await eventually(
      async () => isAlive(h.reaper!),
      (alive) => !alive,
      15_000,
    );
    const log = readFileSync(join(tmpdir(), 'phonelease', 'reaper', `${h.child.pid}.log`), 'utf8');
    expect(log).toContain('lease process vanished with 2 lease(s) still live');
    for (const sid of h.sessions) expect(log).toContain(`session ${sid} for key`);
    expect(log).not.toContain(t.account.key);
  });

  it('without a reaper, endLeftovers() ends what the ledger holds open; the ledger has no secret', async () => {
    const dir = tempDir();
    const runId = `crash-test-${Date.now()}`;
    const h = await holdLeases({
      PHONELEASE_REAPER: '0',
      PHONELEASE_LEDGER_DIR: dir,
      PHONELEASE_RUN_ID: runId,
    });
    h.child.kill('SIGKILL');
    await h.exited;
    expect((await liveIds(t)).sort()).toEqual([...h.sessions].sort());

    const file = join(dir, `${runId}.jsonl`);
    expect(readdirSync(dir)).toEqual([`${runId}.jsonl`]);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(t.account.key);
    expect(
      new RunLedger(file)
        .open()
        .map((l) => l.sessionId)
        .sort(),
    ).toEqual([...h.sessions].sort());

    const results = await endLeftovers({
      runId,
      dir,
      apiKey: t.account.key,
      logger: { info: () => undefined, warn: () => undefined },
    });
    expect(results.map((r) => [r.sessionId, r.outcome, r.cleanupConfirmed]).sort()).toEqual(
      [...h.sessions].sort().map((sid) => [sid, 'released', true]),
    );
    expect(await liveIds(t)).toEqual([]);
    // Recorded as ended: a second pass has nothing to do.
    expect(new RunLedger(file).open()).toEqual([]);
    expect(await endLeftovers({ runId, dir, apiKey: t.account.key })).toEqual([]);
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
