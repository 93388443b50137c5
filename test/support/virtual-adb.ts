/**
 * Test helper: boots a virtual phone and drives it with the stock adb client over the
 * phone's real TCP port, on a private adb server port (never 5037). Transport details stay
 * in here so tests can later go through the server's ADB gateway instead.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { DeviceBackend, DeviceLogger } from '../../server/devices/types.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import type { VirtualPhone } from '../../server/devices/virtual/phone.js';

export const ADB_BINARY = process.env.PHONELEASE_ADB ?? '/usr/bin/adb';

export interface AdbResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout as bytes (binary output such as screencap). */
  raw: Buffer;
}

export interface AdbRunOptions {
  /** Bytes written to adb's stdin (then closed). Without it stdin is closed at once. */
  input?: Buffer | string;
  timeoutMs?: number;
  env?: Record<string, string>;
}

export interface VirtualAdb {
  serial: string;
  phone: VirtualPhone;
  backend: DeviceBackend;
  /** The private adb server port (ANDROID_ADB_SERVER_PORT for tools like Appium). */
  adbServerPort: number;
  /** Runs `adb -P PORT -s SERIAL ...args`. */
  adb(args: string[], options?: AdbRunOptions): Promise<AdbResult>;
  /** Runs adb and returns stdout; throws with the output when the exit code is not 0. */
  adbOk(args: string[], options?: AdbRunOptions): Promise<string>;
  /** Runs adb without `-s SERIAL` (host commands). */
  adbHost(args: string[], options?: AdbRunOptions): Promise<AdbResult>;
  close(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export function runAdb(argv: string[], options: AdbRunOptions = {}): Promise<AdbResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(ADB_BINARY, argv, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...options.env } });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 45_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const raw = Buffer.concat(out);
      resolve({ code: code ?? (signal ? 128 : 1), stdout: raw.toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), raw });
    });
    child.stdin.on('error', () => undefined);
    if (options.input !== undefined) child.stdin.end(options.input);
    else child.stdin.end();
  });
}

export const quietLog: DeviceLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

export interface StartOptions {
  restoreFrom?: string | null;
  log?: DeviceLogger;
  /** Reuse a backend (e.g. to boot a second phone of the same backend). */
  backend?: DeviceBackend;
  /** Reuse an adb server port (another phone on the same adb server). */
  adbServerPort?: number;
}

/** Boots a phone and connects the stock adb client to it. */
export async function startVirtualAdb(options: StartOptions = {}): Promise<VirtualAdb> {
  const ownBackend = !options.backend;
  const backend = options.backend ?? createVirtualBackend({ bootMs: 0 });
  const phone = (await backend.boot({
    sessionId: `test-${process.pid}-${Date.now()}`,
    restoreFrom: options.restoreFrom ?? null,
    signal: new AbortController().signal,
    log: options.log ?? quietLog,
  })) as VirtualPhone;
  const adbServerPort = options.adbServerPort ?? (await freePort());
  const serial = `${phone.adb.host}:${phone.adb.port}`;
  const host = (args: string[], o?: AdbRunOptions) => runAdb(['-P', String(adbServerPort), ...args], o);
  try {
    // `adb connect` exits 0 even when it fails: read what it says.
    let connected = false;
    let last = '';
    for (let attempt = 0; attempt < 3 && !connected; attempt++) {
      const r = await host(['connect', serial]);
      last = r.stdout + r.stderr;
      connected = /connected to/.test(r.stdout) && !/failed|unable|cannot/i.test(last);
    }
    if (!connected) throw new Error(`adb connect ${serial} failed: ${last}`);
    await host(['-s', serial, 'wait-for-device'], { timeoutMs: 20_000 });
  } catch (error) {
    await host(['kill-server']).catch(() => undefined);
    if (ownBackend) await backend.close();
    else await phone.shutdown({ saveTo: null });
    throw error;
  }
  const adb = (args: string[], o?: AdbRunOptions) => host(['-s', serial, ...args], o);
  return {
    serial,
    phone,
    backend,
    adbServerPort,
    adb,
    adbHost: host,
    async adbOk(args, o) {
      const r = await adb(args, o);
      if (r.code !== 0) throw new Error(`adb ${args.join(' ')} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
      return r.stdout;
    },
    async close() {
      await host(['disconnect', serial]).catch(() => undefined);
      if (options.adbServerPort === undefined) await host(['kill-server']).catch(() => undefined);
      if (ownBackend) await backend.close();
    },
  };
}
