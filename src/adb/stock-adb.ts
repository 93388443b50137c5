/**
 * The stock `adb` binary, for users who drive the phone with their own tools (adb, Appium):
 * which binary, which adb server port, and `adb connect` that actually reports failure
 * (adb exits 0 even when it could not connect, so its output is what tells).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AdbError } from '../errors.js';
import { sleep } from '../util/time.js';

export interface StockAdbOptions {
  /** The adb binary (default $ANDROID_HOME/platform-tools/adb if present, else `adb` on PATH). */
  adbPath?: string;
  /** The adb server port (default ANDROID_ADB_SERVER_PORT, else adb's own default 5037). */
  serverPort?: number;
  env?: NodeJS.ProcessEnv;
}

export function resolveAdbPath(options: StockAdbOptions = {}): string {
  if (options.adbPath) return options.adbPath;
  const env = options.env ?? process.env;
  for (const root of [env.ANDROID_HOME, env.ANDROID_SDK_ROOT]) {
    if (!root) continue;
    const candidate = join(root, 'platform-tools', 'adb');
    if (existsSync(candidate)) return candidate;
  }
  return 'adb';
}

/** The adb server port these options select (stock adb reads ANDROID_ADB_SERVER_PORT itself). */
export function adbServerPort(options: StockAdbOptions = {}): number {
  if (options.serverPort) return options.serverPort;
  const fromEnv = Number((options.env ?? process.env).ANDROID_ADB_SERVER_PORT);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : 5037;
}

export interface AdbRun {
  stdout: string;
  stderr: string;
  code: number;
}

/** Runs the stock adb with the selected server port; never throws for a non-zero exit. */
export function runAdb(args: string[], options: StockAdbOptions = {}, timeoutMs = 30_000): Promise<AdbRun> {
  const env = { ...(options.env ?? process.env), ANDROID_ADB_SERVER_PORT: String(adbServerPort(options)) };
  const adb = resolveAdbPath(options);
  return new Promise((resolve, reject) => {
    execFile(adb, args, { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = (error as (NodeJS.ErrnoException & { code?: unknown }) | null)?.code;
      if (error && typeof code === 'string') {
        reject(
          new AdbError(
            'adb_unavailable',
            code === 'ENOENT'
              ? `The adb binary was not found (${adb}); install Android platform-tools (Debian: apt-get install adb) or set ANDROID_HOME.`
              : `Running ${adb} failed: ${error.message}`,
            { cause: error },
          ),
        );
        return;
      }
      resolve({
        stdout: String(stdout),
        stderr: String(stderr),
        code: typeof code === 'number' ? code : error ? 1 : 0,
      });
    });
  });
}

/**
 * `adb connect SERIAL`, then waits until adb lists the device as `device` (not offline or
 * unauthorized). Throws an AdbError with adb's own words when it could not connect.
 */
export async function adbConnect(
  serial: string,
  options: StockAdbOptions = {},
  timeoutMs = 20_000,
): Promise<void> {
  let r = await runAdb(['connect', serial], options, timeoutMs);
  // Two processes that find no adb server both start one; the loser's command fails with
  // "cannot connect to daemon" although the winner's server is up a moment later.
  for (let attempt = 1; attempt <= 3 && DAEMON_RACE.test(`${r.stdout}\n${r.stderr}`); attempt++) {
    await sleep(200 * attempt);
    r = await runAdb(['connect', serial], options, timeoutMs);
  }
  const output = `${r.stdout}\n${r.stderr}`;
  if (!new RegExp(`^(already )?connected to ${escape(serial)}`, 'm').test(output)) {
    if (UNAUTHORIZED.test(output)) throw unauthorized(serial);
    throw new AdbError(
      'adb_failed',
      `adb could not connect to ${serial}: ${said(r) || `exit code ${r.code}`}.`,
    );
  }
  const until = Date.now() + timeoutMs;
  let state = '';
  for (let delay = 50; ; delay = Math.min(500, delay * 2)) {
    const s = await runAdb(['-s', serial, 'get-state'], options, timeoutMs);
    state = s.stdout.trim();
    if (state === 'device') return;
    // `get-state` says nothing on stdout for a phone that did not accept the key.
    if (UNAUTHORIZED.test(s.stderr)) throw unauthorized(serial);
    if (Date.now() + delay > until) break;
    await sleep(delay);
  }
  throw new AdbError(
    'adb_failed',
    `adb connected to ${serial} but the device stayed "${state || 'unknown'}"; check the phone is still running.`,
  );
}

/** `adb disconnect SERIAL`; never throws (used in teardown). */
export async function adbDisconnect(serial: string, options: StockAdbOptions = {}): Promise<void> {
  await runAdb(['disconnect', serial], options, 10_000).catch(() => undefined);
}

const DAEMON_RACE = /cannot connect to daemon|failed to start daemon|didn't ACK/;
/** adb's words for a phone whose adbd did not accept its key (`connect`, `get-state`, `devices`). */
const UNAUTHORIZED = /failed to authenticate|device unauthorized|\tunauthorized/;
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * What adb said about the connection: its last line that is not about its own server
 * ("* daemon not running; starting now", "* daemon started successfully" come last on
 * stderr and say nothing about the phone).
 */
function said(r: AdbRun): string {
  const lines = `${r.stdout}\n${r.stderr}`
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('* daemon'));
  return lines.pop() ?? '';
}

function unauthorized(serial: string): AdbError {
  return new AdbError(
    'adb_failed',
    `adb could not sign in to ${serial}: the phone did not accept an adb key (adb lists it "unauthorized"). An emulator's adbd trusts only the key of the machine its AVD was first started on; phonelease's ADB gateway signs in with the server's key for you, and this phone refused that key too. The server's log names the keys it tried; start the phone from an AVD made on the server, or end this lease and start a new one.`,
  );
}
