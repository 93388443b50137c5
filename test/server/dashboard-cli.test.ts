/**
 * `phonelease dashboard` as people run it, through the built CLI, against a server process on
 * the same data directory: the link it prints signs in while the server runs.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, runCli, startServerProcess, type ServerProcess } from '../support/cli.js';
import { Api } from '../support/server.js';

let dir: string;
let server: ServerProcess;
let account: { uid: string; key: string };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'phonelease-dashboard-cli-'));
  server = await startServerProcess(['--data', dir, '--boot-ms', '50'], { PHONELEASE_LOG_LEVEL: 'debug' });
  const created = await runCli([
    'accounts',
    'create',
    '--data',
    dir,
    '--email',
    'lead@example.com',
    '--operator',
    '--json',
  ]);
  expect(created.code, created.stderr).toBe(0);
  account = JSON.parse(created.stdout) as { uid: string; key: string };
}, 60_000);
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const signIn = (link: string) =>
  new Api(server.url, null).post('/dashboard/api/sign-in', {
    body: { link: new URL(link).hash.replace('#token=', '') },
  });

describe('phonelease dashboard', () => {
  it('--json prints exactly one line with a link that signs in once, while the server runs', async () => {
    const r = await runCli([
      'dashboard',
      '--data',
      dir,
      '--email',
      'lead@example.com',
      '--base-url',
      server.url,
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.endsWith('\n')).toBe(true);
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
    const { url } = JSON.parse(r.stdout) as { url: string };
    expect(Object.keys(JSON.parse(r.stdout) as object)).toEqual(['url']);
    expect(url).toMatch(new RegExp(`^${server.url}/dashboard/sign-in#token=psl_\\w{43}$`));
    const first = await signIn(url);
    expect(first.status).toBe(200);
    expect(first.body.account).toEqual({
      uid: account.uid,
      email: 'lead@example.com',
      name: 'Local account',
      operator: true,
    });
    expect((await new Api(server.url, first.body.token as string).get('/dashboard/api/fleet')).status).toBe(
      200,
    );
    expect((await signIn(url)).body.code).toBe('sign_in_link_used');
    // Neither the link's token nor the session's token reached the server's log.
    await new Api(server.url, first.body.token as string).get('/me');
    expect(server.stderr()).toContain('/dashboard/api/sign-in');
    expect(server.stderr()).not.toContain(new URL(url).hash.slice('#token=psl_'.length));
    expect(server.stderr()).not.toContain((first.body.token as string).split('.')[2]);
  });

  it('--uid names the account; without --base-url the link is for the default address', async () => {
    const r = await runCli(['dashboard', '--data', dir, '--uid', account.uid]);
    expect(r.code, r.stderr).toBe(0);
    const url = /http:\/\/\S+/.exec(r.stdout)![0];
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/dashboard\/sign-in#token=psl_/);
    expect((await signIn(url)).status).toBe(200);
  });

  it('refuses what it cannot make a link for, saying what to do', async () => {
    const neither = await runCli(['dashboard', '--data', dir]);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/--email E or --uid U/);
    const both = await runCli(['dashboard', '--data', dir, '--email', 'a@b', '--uid', 'acc_x']);
    expect(both.code).toBe(2);
    const unknown = await runCli(['dashboard', '--data', dir, '--email', 'nobody@example.com']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /No account has the email nobody@example.com; create one with phonelease accounts create/,
    );
    expect(unknown.stdout).toBe('');
    const base = await runCli(['dashboard', '--data', dir, '--uid', account.uid, '--base-url', 'ftp://x']);
    expect(base.code).toBe(2);
  });
});

/** util-linux `script` gives a command a terminal, as a person's shell does. */
const noScript = spawnSync('script', ['--version']).error
  ? 'util-linux script (a terminal for the server) is not installed'
  : null;

describe.skipIf(noScript !== null)('phonelease server on a terminal, at first start', () => {
  it('prints a sign-in link for the local account beside its key', async () => {
    const data = mkdtempSync(join(tmpdir(), 'phonelease-first-start-'));
    const command = [process.execPath, CLI, 'server', '--data', data, '--port', '0', '--json'].join(' ');
    const child = spawn('script', ['-qefc', command, '/dev/null'], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /\{"url":"([^"]+)"\}/.exec(out);
          if (m) resolve(m[1]!);
        });
        child.once('exit', () => reject(new Error(`the server exited: ${out}`)));
      });
      expect(out).toMatch(/API key, shown only now:\s+pck_\w+/);
      const link = new RegExp(`${url}/dashboard/sign-in#token=(psl_\\w+)`).exec(out);
      expect(link, out).not.toBeNull();
      const r = await new Api(url, null).post('/dashboard/api/sign-in', { body: { link: link![1] } });
      expect(r.status).toBe(200);
      expect(r.body.account).toMatchObject({ name: 'Local account', operator: false });
    } finally {
      // The terminal's whole process group: script and the server under it.
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
      await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(null)));
      rmSync(data, { recursive: true, force: true });
    }
  });
});
