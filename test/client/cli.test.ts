/**
 * The `phonelease` command as a child process against a real server: human and --json
 * output, exit codes (0 ok, 1 failure, 2 usage), and `lease` held then stopped with Ctrl-C.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdb } from '../../src/index.js';
import { runNode, type CliResult } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { probe } from '../support/video.js';
import { eventually, liveIds, tempDir } from './helpers.js';
import { quietPort } from '../support/ports.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

let t: TestServer;
/**
 * The adb server port of this file's commands: `lease` connects the stock adb, which must
 * never start (and leave) a server on the machine's 5037. Ended after the file.
 */
let adbServerPort: number;
beforeAll(async () => {
  t = await startTestServer({ bootMs: 50 });
  adbServerPort = await quietPort();
});
afterAll(async () => {
  await runAdb(['kill-server'], { serverPort: adbServerPort }).catch(() => undefined);
  await t.close();
});

function cliEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PHONELEASE_BASE_URL: t.url,
    PHONELEASE_API_KEY: t.account.key,
    PHONELEASE_LEDGER_DIR: tempDir(),
    PHONELEASE_REAPER: '0',
    ANDROID_ADB_SERVER_PORT: String(adbServerPort),
    ...extra,
  };
  for (const [k, v] of Object.entries(extra)) if (v === undefined) delete env[k];
  return env;
}

/** The CLI from source (tsx), so this file tests the code as it is, not the last build. */
function cli(args: string[], extra: Record<string, string | undefined> = {}): Promise<CliResult> {
  return runNode(['--import', 'tsx', MAIN, ...args], { cwd: ROOT, env: cliEnv(extra) });
}

/** `phonelease lease ...` as a child process, its output collected as it comes. */
function startLease(args: string[], extra: Record<string, string | undefined> = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'lease', ...args], {
    cwd: ROOT,
    env: cliEnv(extra),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (output.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output.stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return {
    child,
    output,
    exited,
    /** Resolves once stdout or stderr matches (both as they are then). */
    waitFor: (pattern: RegExp) =>
      eventually(
        async () => output,
        (o) => pattern.test(o.stdout) || pattern.test(o.stderr),
        30_000,
      ),
  };
}

describe('phonelease (client commands)', () => {
  it('me: aligned fields by default, the account as JSON with --json', async () => {
    const human = await cli(['me']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^account +${t.account.uid} `, 'm'));
    expect(human.stdout).toMatch(/^sessions +0 of \d+ in use/m);
    const json = await cli(['me', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      uid: t.account.uid,
      profile: { id: t.account.profile_id },
    });
  });

  it('sessions --json lists live sessions without their secrets; end SID ends one and confirms', async () => {
    expect(JSON.parse((await cli(['sessions', '--json'])).stdout)).toEqual([]);
    const created = (await t.api.post('/sessions', { body: { timeout_seconds: 120 } })).body;
    const ready = await t.api.waitFor(created.id, ['ready']);

    const listed = await cli(['sessions', '--json']);
    expect(listed.code).toBe(0);
    const sessions = JSON.parse(listed.stdout);
    expect(sessions.map((s: { id: string }) => s.id)).toEqual([created.id]);
    expect(listed.stdout).not.toContain(ready.adb.code);
    expect(listed.stdout).not.toContain('pvg_');
    expect(sessions[0].adb).toEqual({
      host: ready.adb.host,
      port: ready.adb.port,
      expires_at: ready.adb.expires_at,
    });

    const table = await cli(['sessions']);
    expect(table.stdout).toMatch(/^SESSION +STATE +DEVICE +AGE +EXPIRES$/m);
    expect(table.stdout).toMatch(new RegExp(`^${created.id} +ready +Virtual`, 'm'));

    const ended = await cli(['end', created.id]);
    expect(ended).toMatchObject({ code: 0, stdout: `Ended ${created.id}; cleanup confirmed.\n` });
    expect(await liveIds(t)).toEqual([]);
    const again = await cli(['end', created.id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no live session ${created.id}`);

    const history = await cli(['history', '--json']);
    expect(JSON.parse(history.stdout)[0]).toMatchObject({ sid: created.id, end_reason: 'released' });
    expect((await cli(['history'])).stdout).toMatch(
      new RegExp(`^${created.id} +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC +released`, 'm'),
    );
  });

  it('keys: create shows the key once, list never does, revoke stops it', async () => {
    const created = await cli(['keys', 'create', 'cli test']);
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^pck_/);
    expect(created.stderr).toContain('only time it is shown');
    const list = await cli(['keys', 'list', '--json']);
    expect(list.stdout).not.toContain(key);
    const entry = JSON.parse(list.stdout).find((k: { label: string }) => k.label === 'cli test');
    expect(entry.key_hash).toMatch(/^[a-f0-9]{64}$/);
    expect((await cli(['me'], { PHONELEASE_API_KEY: key })).code).toBe(0);
    expect((await cli(['keys', 'revoke', entry.key_hash])).code).toBe(0);
    const refused = await cli(['me'], { PHONELEASE_API_KEY: key });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^phonelease: .*\[unauthenticated\]$/m);
    expect(refused.stderr).not.toContain(key);
  });

  it('exit codes: 2 for usage and missing configuration, 1 for failures; --help everywhere', async () => {
    const unconfigured = await cli(['me'], { PHONELEASE_BASE_URL: undefined, PHONELEASE_API_KEY: undefined });
    expect(unconfigured.code).toBe(2);
    expect(unconfigured.stderr).toContain('PHONELEASE_BASE_URL');
    expect(unconfigured.stderr).toContain('PHONELEASE_API_KEY');
    expect((await cli(['frobnicate'])).code).toBe(2);
    expect((await cli(['sessions', '--frobnicate'])).code).toBe(2);
    expect((await cli(['end'])).code).toBe(2);
    expect((await cli(['keys', 'revoke', 'not-a-hash'])).code).toBe(2);
    expect((await cli(['history', '--limit', 'zero'])).code).toBe(2);
    expect((await cli([])).code).toBe(2);
    const unreachable = await cli(['me'], { PHONELEASE_BASE_URL: `http://127.0.0.1:${await quietPort()}` });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/Could not reach the phone-session service/);

    for (const command of ['lease', 'sessions', 'end', 'history', 'me', 'keys']) {
      const help = await cli([command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).toMatch(new RegExp(`^Usage: phonelease ${command}`));
    }
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('lease [--profile] [--timeout S]');
    // Sixteen processes in a row: give a loaded machine room.
  }, 120_000);

  it('an unknown option is named with the closest known one, then the usage hint; exit 2', async () => {
    const [lease, sessions] = await Promise.all([cli(['lease', '--profle']), cli(['sessions', '--jsn'])]);
    expect(lease.code).toBe(2);
    expect(lease.stderr).toMatch(
      /^phonelease: unknown option --profle \(did you mean --profile\?\)\n\nUsage: phonelease lease /,
    );
    expect(lease.stderr).toContain('Run "phonelease lease --help" for details.');
    expect(lease.stderr).not.toContain('positional argument');
    expect(sessions.code).toBe(2);
    expect(sessions.stderr).toMatch(/^phonelease: unknown option --jsn \(did you mean --json\?\)/);
  });

  it('a negative number is a value out of range, however it is written', async () => {
    const [spaced, inline, limit] = await Promise.all([
      cli(['lease', '--timeout', '-5']),
      cli(['lease', '--timeout=-5']),
      cli(['history', '--limit', '-3']),
    ]);
    for (const r of [spaced, inline])
      expect(r).toMatchObject({
        code: 2,
        stderr: 'phonelease: --timeout must be a whole number of at least 1 (got "-5")\n',
      });
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain('--limit must be a whole number of at least 1 (got "-3")');
  });

  it('--version and -v print the package version; help COMMAND is COMMAND --help', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const [long, short, help] = await Promise.all([cli(['--version']), cli(['-v']), cli(['help', 'lease'])]);
    expect(long).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' });
    expect(short).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: phonelease lease /);
  });

  it('missing configuration is explained in command-line terms: variables, --base-url, how to get a key', async () => {
    const [noKey, noUrl] = await Promise.all([
      cli(['me'], { PHONELEASE_API_KEY: undefined }),
      cli(['sessions'], { PHONELEASE_BASE_URL: undefined }),
    ]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/^phonelease: missing an API key: set PHONELEASE_API_KEY /);
    expect(noKey.stderr).toContain('"phonelease keys create LABEL"');
    expect(noKey.stderr).toContain('"phonelease accounts create"');
    expect(noKey.stderr).not.toContain('pass { baseUrl, apiKey }');
    expect(noUrl).toMatchObject({
      code: 2,
      stderr:
        'phonelease: missing the service address: set PHONELEASE_BASE_URL, or pass --base-url (e.g. --base-url http://127.0.0.1:8080)\n',
    });
  });

  it('an unreachable --base-url is reported as that flag, not as PHONELEASE_BASE_URL', async () => {
    const url = `http://127.0.0.1:${await quietPort()}`;
    const r = await cli(['me', '--base-url', url]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`Could not reach the phone-session service at ${url}`);
    expect(r.stderr).toContain('check --base-url');
    expect(r.stderr).not.toContain('PHONELEASE_BASE_URL');
  });

  it('server and accounts are still served by the same command', async () => {
    const data = tempDir();
    const created = await cli(['accounts', 'create', '--data', data, '--json']);
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({
      uid: expect.any(String),
      key: expect.stringMatching(/^pck_/),
    });
    const help = await cli(['server', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: phonelease server');
  });
});

describe('phonelease lease', () => {
  it('prints the adb serial and viewer URL, keeps the tunnel until Ctrl-C, then ends the session', async () => {
    const adbPort = await quietPort();
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'lease', '--json', '--timeout', '600'], {
      cwd: ROOT,
      env: cliEnv({ ANDROID_ADB_SERVER_PORT: String(adbPort) }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).once('line', resolve);
        void exited.then((code) => reject(new Error(`lease exited ${code}: ${stderr}`)));
      });
      const out = JSON.parse(line) as {
        session: string;
        serial: string;
        viewer_url: string;
        expires_at: number;
      };
      expect(out.serial).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(out.viewer_url.startsWith(`${t.url}/v/`)).toBe(true);
      expect(await liveIds(t)).toEqual([out.session]);
      expect(stderr).toMatch(new RegExp(`${out.session}: .*ready in`));
      // The stock adb reaches the phone through the command's tunnel.
      const hi = await runAdb(['-s', out.serial, 'shell', 'echo', 'hi'], { serverPort: adbPort });
      expect(hi.stdout).toBe('hi\n');

      child.kill('SIGINT');
      // The shell's code for SIGINT, once the session has ended.
      expect(await exited).toBe(130);
      expect(await liveIds(t)).toEqual([]);
      expect(stderr).toContain(`${out.session}: ended (released, cleanup confirmed`);
      expect(stderr).not.toContain(t.account.key);
      expect((await runAdb(['devices'], { serverPort: adbPort })).stdout).not.toContain(out.serial);
    } finally {
      child.kill('SIGKILL');
      await runAdb(['kill-server'], { serverPort: adbPort }).catch(() => undefined);
    }
  });

  it('--app installs the app before the phone is shown; a missing file fails before any phone', async () => {
    const missing = await cli(['lease', '--app', './build/app-debug.apk']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('App file ./build/app-debug.apk not found');
    expect(await liveIds(t)).toEqual([]);
    // The command connects the stock adb: to a private adb server, never the machine's 5037.
    const adbPort = await quietPort();
    const lease = startLease(
      [
        '--app',
        'node_modules/appium-uiautomator2-driver/node_modules/io.appium.settings/apks/settings_apk-debug.apk',
      ],
      { ANDROID_ADB_SERVER_PORT: String(adbPort) },
    );
    try {
      const { stderr } = await lease.waitFor(/Press Ctrl-C/);
      expect(stderr).toMatch(
        /installed io\.appium\.settings \(.*settings_apk-debug\.apk, 2\.9 MB\) on phone ses_/,
      );
      lease.child.kill('SIGINT');
      expect(await lease.exited).toBe(130);
    } finally {
      lease.child.kill('SIGKILL');
      await runAdb(['kill-server'], { serverPort: adbPort }).catch(() => undefined);
    }
  });

  it('Ctrl-C while the phone is still starting ends it, reports the end like after ready, and exits 130', async () => {
    const slow = await startTestServer({ bootMs: 20_000 });
    try {
      const lease = startLease([], { PHONELEASE_BASE_URL: slow.url, PHONELEASE_API_KEY: slow.account.key });
      try {
        const { stderr } = await lease.waitFor(/: booting/);
        const sid = /(ses_\w+): booting/.exec(stderr)![1]!;
        lease.child.kill('SIGINT');
        expect(await lease.exited).toBe(130);
        expect(lease.output.stderr).toContain(`${sid}: ended (released, cleanup confirmed in `);
        expect((await slow.api.get('/sessions')).body).toEqual([]);
      } finally {
        lease.child.kill('SIGKILL');
      }
    } finally {
      await slow.close();
    }
  });

  it('--record FILE saves the screen from ready until Ctrl-C as one H.264 MP4', async () => {
    const file = join(tempDir(), 'lease.mp4');
    const lease = startLease(['--json', '--record', file]);
    try {
      const { stdout } = await lease.waitFor(/"session"/);
      const { session } = JSON.parse(stdout) as { session: string };
      lease.child.kill('SIGINT');
      expect(await lease.exited).toBe(130);
      expect(lease.output.stderr).toMatch(
        new RegExp(`phonelease: screen recording saved to ${file.replace(/[.]/g, '\\.')} \\(\\d+\\.\\d s\\)`),
      );
      expect(lease.output.stderr).toContain(`${session}: ended (released, cleanup confirmed in `);
      expect((await probe(file)).stream).toMatchObject({ codec_name: 'h264', width: 720, height: 1280 });
    } finally {
      lease.child.kill('SIGKILL');
    }
  });

  it('SIGTERM on a ready phone ends the session, then exits 143', async () => {
    const lease = startLease(['--json']);
    try {
      const { stdout } = await lease.waitFor(/"session"/);
      const { session } = JSON.parse(stdout) as { session: string };
      lease.child.kill('SIGTERM');
      expect(await lease.exited).toBe(143);
      expect(lease.output.stderr).toContain(`${session}: ended (released, cleanup confirmed in `);
      expect(await liveIds(t)).toEqual([]);
    } finally {
      lease.child.kill('SIGKILL');
    }
  });

  it('notices within seconds when the session is ended from another terminal, and exits 1 saying so', async () => {
    const lease = startLease(['--json']);
    try {
      const { stdout } = await lease.waitFor(/"session"/);
      const { session } = JSON.parse(stdout) as { session: string };
      expect((await cli(['end', session])).code).toBe(0);
      const endedAt = Date.now();
      expect(await lease.exited).toBe(1);
      // It polls every 2 s; the rest is room for a loaded machine.
      expect(Date.now() - endedAt).toBeLessThan(6000);
      expect(lease.output.stderr).toContain(
        `phonelease: session ${session} was ended elsewhere (phonelease end, the API or the dashboard); the phone is gone.`,
      );
    } finally {
      lease.child.kill('SIGKILL');
    }
  });

  it('says so when the session reaches its deadline, and exits 1', async () => {
    const lease = startLease(['--json', '--timeout', '3']);
    try {
      const { stdout } = await lease.waitFor(/"session"/);
      const { session } = JSON.parse(stdout) as { session: string };
      expect(await lease.exited).toBe(1);
      expect(lease.output.stderr).toContain(
        `phonelease: session ${session} reached its deadline (raise --timeout for a longer lease); the phone is gone.`,
      );
    } finally {
      lease.child.kill('SIGKILL');
    }
  });

  it('without a stock adb, says adb is not installed and how to get it, and still prints the serial', async () => {
    // An empty PATH and no SDK: no adb anywhere (node itself runs by its absolute path).
    const lease = startLease([], {
      PATH: tempDir(),
      ANDROID_HOME: undefined,
      ANDROID_SDK_ROOT: undefined,
    });
    try {
      const { stdout } = await lease.waitFor(/Press Ctrl-C/);
      const serial = /^adb serial +(127\.0\.0\.1:\d+) \(not connected: see below\)$/m.exec(stdout)?.[1];
      expect(serial, stdout).toBeDefined();
      expect(stdout).toContain('adb is not installed, so the phone is not connected to it.');
      expect(stdout).toContain('Debian/Ubuntu: sudo apt-get install adb');
      expect(stdout).toContain('set ANDROID_HOME to an Android SDK with platform-tools');
      expect(stdout).toContain(`then: adb connect ${serial}`);
      expect(stdout).not.toContain('Try: adb');
      expect(stdout).not.toContain('stock adb not found');
      lease.child.kill('SIGINT');
      await lease.exited;
      expect(await liveIds(t)).toEqual([]);
    } finally {
      lease.child.kill('SIGKILL');
    }
  });
});
