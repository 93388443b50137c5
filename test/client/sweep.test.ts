/**
 * The end-of-run sweep's report (fixtures/shared/sweep.ts, run by both runners): what it says
 * when it ends a leftover phone, and when it cannot end one or cannot even tell whether an
 * unfinished start left one. The key and the session it would need are never printed.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sweepRun } from '../../fixtures/shared/sweep.js';
import { RunLedger } from '../../src/index.js';
import { newKey, serverPerTest } from '../support/server.js';

const startServer = serverPerTest();
let dir: string;
let stderr: string[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'phonelease-sweep-'));
  vi.stubEnv('PHONELEASE_LEDGER_DIR', dir);
  stderr = [];
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr.push(String(chunk));
    return true;
  });
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

/** A ledger as a killed worker leaves it: a start, and its session when it had one. */
function leftover(runId: string, baseUrl: string, requestKey: string, sessionId: string | null): void {
  const ledger = RunLedger.open({ runId, dir });
  const at = new Date().toISOString();
  ledger.append({ event: 'start', request_key: requestKey, base_url: baseUrl, pid: 1, at });
  if (sessionId) ledger.append({ event: 'session', request_key: requestKey, session_id: sessionId, at });
}

describe('end-of-run sweep', () => {
  it('ends a phone a killed worker left and names it', async () => {
    const t = await startServer();
    const requestKey = newKey();
    const created = await t.api.post('/sessions', { body: {}, headers: { 'idempotency-key': requestKey } });
    expect(created.status).toBe(202);
    const runId = `sweep-${Date.now()}`;
    leftover(runId, t.url, requestKey, created.body.id);

    const results = await sweepRun({ runId, apiKey: t.account.key });

    expect(results.map((r) => [r.sessionId, r.outcome])).toEqual([[created.body.id, 'released']]);
    expect(stderr.join('')).toContain(
      `[phonelease] ended 1 phone(s) left by workers that did not finish (${created.body.id})`,
    );
    expect((await t.api.get(`/sessions/${created.body.id}`)).status).toBe(404);
  });

  it('says which phones it could not end, and why, without the key', async () => {
    const t = await startServer();
    const requestKey = newKey();
    const created = await t.api.post('/sessions', { body: {}, headers: { 'idempotency-key': requestKey } });
    const runId = `sweep-${Date.now()}`;
    leftover(runId, t.url, requestKey, created.body.id);
    leftover(runId, t.url, newKey(), null);
    const wrongKey = 'pck_' + 'x'.repeat(40);

    const results = await sweepRun({ runId, apiKey: wrongKey });

    expect(results.map((r) => r.outcome)).toEqual(['failed', 'failed']);
    const out = stderr.join('');
    expect(out).toMatch(
      new RegExp(
        `\\[phonelease\\] warning: could not end 1 phone\\(s\\) left by workers that did not finish \\(${created.body.id}\\): .*API key.*They end at their deadline; \`phonelease end SID\` ends one sooner\\.`,
      ),
    );
    expect(out).toContain(
      '[phonelease] warning: could not check whether 1 unfinished start(s) left a phone: ',
    );
    expect(out).not.toContain(wrongKey);
    // Nothing was ended: the phone is still there for its owner.
    expect((await t.api.get(`/sessions/${created.body.id}`)).status).toBe(200);
  });

  it('says it could not look when the ledger cannot be read, and never throws', async () => {
    const runId = `sweep-${Date.now()}`;
    // A directory where the ledger file should be: reading it fails.
    mkdirSync(join(dir, `${runId}.jsonl`));

    expect(await sweepRun({ runId, apiKey: 'pck_unused' })).toEqual([]);
    expect(stderr.join('')).toContain(
      '[phonelease] warning: could not look for phones left by workers that did not finish: ',
    );
  });
});
