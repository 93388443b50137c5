import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer } from '../../server/main.js';
import { runCli, startServerProcess, type ServerProcess } from '../support/cli.js';
import { Api, newKey, startTestServer } from '../support/server.js';
import { trackedServer } from '../support/tcp.js';

const dirs: string[] = [];
const procs: ServerProcess[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'phonelease-test-'));
  dirs.push(d);
  return d;
};
afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop('SIGKILL')));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('runtime unavailable: 503 create_request_recorded', () => {
  it('records the admission, answers 503 with id and request_key, and provisions it later exactly once', async () => {
    const t = await startTestServer();
    try {
      t.server.runtime.pause();
      const key = newKey();
      const r = await t.api.post('/sessions', {
        body: { timeout_seconds: 120 },
        headers: { 'idempotency-key': key },
      });
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({
        code: 'create_request_recorded',
        request_key: key,
        id: expect.stringMatching(/^ses_/),
      });
      const receipt = await t.api.get(`/sessions/requests/${key}`);
      expect(receipt.body).toMatchObject({ id: r.body.id, state: 'provisioning', cleanup_complete: false });
      const listed = (await t.api.get('/sessions')).body;
      expect(listed).toHaveLength(1);
      expect(listed[0]).toMatchObject({ id: r.body.id, state: 'provisioning', location: 'queued' });
      // The retry with the same key and body is a replay, not a second session.
      const retry = await t.api.post('/sessions', {
        body: { timeout_seconds: 120 },
        headers: { 'idempotency-key': key },
      });
      expect(retry.status).toBe(202);
      expect(retry.body.id).toBe(r.body.id);
      t.server.runtime.resume();
      await t.api.waitFor(r.body.id, ['ready']);
      expect((await t.api.get('/sessions')).body).toHaveLength(1);
    } finally {
      await t.close();
    }
  });
});

describe('command line', () => {
  it('server --json prints exactly one URL line; accounts create works while it runs', async () => {
    const data = tempDir();
    const srv = await startServerProcess(['--data', data, '--boot-ms', '10']);
    procs.push(srv);
    expect(srv.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // The first key went to an owner-only file, not to the logs.
    const keyFile = join(data, 'first-key.txt');
    const firstKey = readFileSync(keyFile, 'utf8').trim();
    expect(firstKey).toMatch(/^pck_/);
    expect(statSync(keyFile).mode & 0o077).toBe(0);
    expect(srv.stderr()).not.toContain(firstKey);
    expect((await new Api(srv.url, firstKey).get('/me')).body.billing_mode).toBe('disabled');

    const created = await runCli([
      'accounts',
      'create',
      '--data',
      data,
      '--json',
      '--email',
      'ci@example.com',
      '--balance-cents',
      '500',
      '--session-limit',
      '3',
    ]);
    expect(created.code).toBe(0);
    const account = JSON.parse(created.stdout);
    expect(Object.keys(account).sort()).toEqual(['key', 'profile_id', 'uid']);
    const me = await new Api(srv.url, account.key).get('/me');
    expect(me.body).toMatchObject({
      uid: account.uid,
      email: 'ci@example.com',
      balance_cents: 500,
      session_limit: 3,
      profile: { id: account.profile_id },
    });

    expect(srv.stdout().trim().split('\n')).toHaveLength(1);
    expect(await srv.stop('SIGTERM')).toBe(0);
  });

  it('exits with a clear message when its port is taken, and the first key is still handed over later', async () => {
    const data = tempDir();
    const taken = await trackedServer(() => undefined);
    try {
      const r = await runCli(['server', '--port', String(taken.port), '--data', data, '--json']);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`Port ${taken.port} on 127.0.0.1 is already in use`);
      expect(r.stderr).toContain('--port');
      expect(r.stdout).toBe('');
      expect(existsSync(join(data, 'first-key.txt'))).toBe(false);
    } finally {
      await taken.close();
    }
    // Nothing was created by the failed start: the next start still makes the local account.
    const srv = await startServerProcess(['--data', data, '--boot-ms', '10']);
    procs.push(srv);
    const firstKey = readFileSync(join(data, 'first-key.txt'), 'utf8').trim();
    expect((await new Api(srv.url, firstKey).get('/me')).status).toBe(200);
    expect(statSync(join(data, 'phonelease.db')).mode & 0o077).toBe(0);
    expect(await srv.stop('SIGTERM')).toBe(0);
  });

  it('rejects bad flags with exit code 2 and a message', async () => {
    const r = await runCli(['server', '--phones', 'many']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--phones must be an integer');
    const u = await runCli(['accounts', 'create', '--billing-mode', 'free', '--data', tempDir()]);
    expect(u.code).toBe(2);
  });

  it('accounts create prints text by default and exactly the JSON line with --json, as docs/server.md says', async () => {
    const [text, json] = await Promise.all([
      runCli(['accounts', 'create', '--data', tempDir()]),
      runCli(['accounts', 'create', '--data', tempDir(), '--json']),
    ]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /^Created account \S+\n {2}profile: \S+\n {2}API key \(shown only now\): pck_\S+\n$/,
    );
    expect(json.code).toBe(0);
    expect(json.stdout.split('\n')).toHaveLength(2);
    expect(Object.keys(JSON.parse(json.stdout)).sort()).toEqual(['key', 'profile_id', 'uid']);
    const serverDocs = readFileSync(new URL('../../docs/server.md', import.meta.url), 'utf8');
    expect(serverDocs).toContain(
      'with `--json` it prints exactly one line `{"uid":"...","key":"pck_...","profile_id":"..."}`',
    );
  });

  it('--help and -h print the usage to stdout and exit 0 on server, accounts and accounts create', async () => {
    const runs = [
      ['server', '--help'],
      ['server', '-h'],
      ['accounts', '--help'],
      ['accounts', '-h'],
      ['accounts', 'create', '--help'],
      ['accounts', 'create', '-h'],
    ];
    const results = await Promise.all(runs.map((args) => runCli(args)));
    results.forEach((r, i) => {
      const args = runs[i]!.join(' ');
      expect(r.code, args).toBe(0);
      expect(r.stderr, args).toBe('');
      expect(r.stdout, args).toMatch(new RegExp(`^Usage: phonelease ${runs[i]![0]} `));
    });
    // Without its subcommand, accounts is a usage error that says what is missing.
    const bare = await runCli(['accounts']);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/^phonelease: accounts needs a command \(its one command is create\)/);
  });

  it('names unknown options with the closest known one and reads negative numbers as values', async () => {
    const [typo, unknown, negative, balance] = await Promise.all([
      runCli(['server', '--prot', '0']),
      runCli(['accounts', 'create', '--emial', 'a@example.com', '--data', tempDir()]),
      runCli(['server', '--phones', '-1']),
      runCli(['accounts', 'create', '--balance-cents', '-5', '--data', tempDir()]),
    ]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(
      /^phonelease: unknown option --prot \(did you mean --port\?\)\n\nUsage: phonelease server /,
    );
    expect(typo.stderr).toContain('Run "phonelease server --help" for details.');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(
      /^phonelease: unknown option --emial \(did you mean --email\?\)\n\nUsage: phonelease accounts create /,
    );
    expect(negative).toMatchObject({
      code: 2,
      stderr: 'phonelease: --phones must be an integer >= 1 (got "-1")\n',
    });
    expect(balance).toMatchObject({
      code: 2,
      stderr: 'phonelease: --balance-cents must be an integer >= 0 (got "-5")\n',
    });
  });
});

describe('restart after kill -9', () => {
  it('loses no acknowledged session, receipt, debit or history record; dead phones end as lost', async () => {
    const data = tempDir();
    const first = await startServerProcess(['--data', data, '--boot-ms', '20']);
    procs.push(first);
    const acct = JSON.parse(
      (
        await runCli([
          'accounts',
          'create',
          '--data',
          data,
          '--json',
          '--billing-mode',
          'metered',
          '--balance-cents',
          '1000',
          '--price-cents-per-minute',
          '10',
        ])
      ).stdout,
    );
    const api = new Api(first.url, acct.key);

    const keys = { ended: newKey(), ready: newKey(), profile: newKey() };
    const ended = (await api.post('/sessions', { headers: { 'idempotency-key': keys.ended } })).body;
    await api.waitFor(ended.id, ['ready']);
    await api.delete(`/sessions/${ended.id}`);
    const ready = (await api.post('/sessions', { headers: { 'idempotency-key': keys.ready } })).body;
    const profile = (
      await api.post('/sessions', {
        body: { profile_id: acct.profile_id },
        headers: { 'idempotency-key': keys.profile },
      })
    ).body;
    await api.waitFor(ready.id, ['ready']);
    await api.waitFor(profile.id, ['ready']);
    // Let the first minute start so a debit is acknowledged.
    await new Promise((r) => setTimeout(r, 2200));
    const before = (await api.get('/me')).body;
    expect(before.balance_cents).toBeLessThan(1000);
    const historyBefore = (await api.get('/history')).body;
    expect(historyBefore).toHaveLength(1);

    first.child.kill('SIGKILL');
    await first.stop();

    const second = await startServerProcess(['--data', data, '--boot-ms', '20']);
    procs.push(second);
    const api2 = new Api(second.url, acct.key);
    expect((await api2.get('/sessions')).body).toEqual([]);
    const history = (await api2.get('/history')).body;
    const bySid = Object.fromEntries(history.map((h: { sid: string }) => [h.sid, h]));
    expect(bySid[ended.id]).toMatchObject(historyBefore[0]);
    expect(bySid[ready.id]).toMatchObject({ end_reason: 'lost', billing_mode: 'metered' });
    expect(bySid[profile.id]).toMatchObject({ end_reason: 'lost' });
    const after = (await api2.get('/me')).body;
    // Every acknowledged debit survived; nothing was refunded or billed twice.
    expect(after.balance_cents).toBeLessThanOrEqual(before.balance_cents);
    const cost = history.reduce((sum: number, h: { cost_cents: number }) => sum + h.cost_cents, 0);
    expect(after.balance_cents).toBe(1000 - cost);
    expect(after).toMatchObject({ active_session_count: 0, profile: { session: null, exact: false } });
    for (const [name, key] of Object.entries(keys)) {
      const receipt = await api2.get(`/sessions/requests/${key}`);
      expect(receipt.status, name).toBe(200);
      expect(receipt.body.cleanup_complete, name).toBe(true);
    }
    // The freed profile starts again.
    expect((await api2.post('/sessions', { body: { profile_id: acct.profile_id } })).status).toBe(202);
    await second.stop();
  });

  it('re-provisions a request that was admitted but not ready when the process died', async () => {
    const data = tempDir();
    const first = await startServerProcess(['--data', data, '--boot-ms', '60000']);
    procs.push(first);
    const key = readFileSync(join(data, 'first-key.txt'), 'utf8').trim();
    const api = new Api(first.url, key);
    const rk = newKey();
    const s = (
      await api.post('/sessions', { body: { timeout_seconds: 600 }, headers: { 'idempotency-key': rk } })
    ).body;
    expect(s.state).toBe('provisioning');
    first.child.kill('SIGKILL');
    await first.stop();

    const second = await startServerProcess(['--data', data, '--boot-ms', '20']);
    procs.push(second);
    const api2 = new Api(second.url, key);
    const ready = await api2.waitFor(s.id, ['ready']);
    expect(ready.expires_at).toBe(s.expires_at);
    expect((await api2.get('/sessions')).body).toHaveLength(1);
    const replay = await api2.post('/sessions', {
      body: { timeout_seconds: 600 },
      headers: { 'idempotency-key': rk },
    });
    expect(replay.body.id).toBe(s.id);
    await second.stop();
  });
});

describe('shutdown', () => {
  it('closes with a connected client that never sent a request (an aborted request), instead of waiting for its timeout', async () => {
    const server = await startServer({ bootMs: 0, log: 'warn' });
    const silent = net.connect(Number(new URL(server.url).port), '127.0.0.1');
    await new Promise((resolve) => silent.once('connect', resolve));
    // Node's headers timeout is 60 s; 10 s is a wide margin for a loaded machine.
    const outcome = await Promise.race([
      server.close().then(() => 'closed'),
      new Promise((resolve) => setTimeout(() => resolve('still closing'), 10_000)),
    ]);
    silent.destroy();
    expect(outcome).toBe('closed');
  });
});
