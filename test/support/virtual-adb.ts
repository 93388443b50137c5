/**
 * Test helper: a virtual phone driven by the stock adb client the way users reach one —
 * a session on a real phonelease server, its ADB gateway, and a local tunnel that presents
 * the unlock code — on a private adb server port (never 5037). Tests still get the
 * VirtualPhone object (recorded as the backend boots it) to look inside.
 *
 * Only the device-level save/restore tests use `restoreFrom`, which boots a phone straight
 * from a save directory without a server.
 */
import { spawn } from 'node:child_process';
import type { DeviceBackend, DeviceLogger } from '../../server/devices/types.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import type { VirtualPhone } from '../../server/devices/virtual/phone.js';
import { startServer, type RunningServer } from '../../server/main.js';
import { ADB, gatewayTunnel } from './adb.js';
import { wrapBackend } from './backends.js';
import { Api } from './server.js';
import { quietPort } from './ports.js';

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
  /** The server and account the phone's session belongs to (null in restoreFrom mode). */
  host: PhoneServer | null;
  /** The session id (null in restoreFrom mode). */
  sessionId: string | null;
  /** The private adb server port (ANDROID_ADB_SERVER_PORT for tools like Appium). */
  adbServerPort: number;
  /** Runs `adb -P PORT -s SERIAL ...args`. */
  adb(args: string[], options?: AdbRunOptions): Promise<AdbResult>;
  /** Runs adb and returns stdout; throws with the output when the exit code is not 0. */
  adbOk(args: string[], options?: AdbRunOptions): Promise<string>;
  /** Runs adb without `-s SERIAL` (host commands). */
  adbHost(args: string[], options?: AdbRunOptions): Promise<AdbResult>;
  /** Ends the session (a profile phone is saved) and disconnects; stops what it started. */
  close(): Promise<void>;
}

export function runAdb(argv: string[], options: AdbRunOptions = {}): Promise<AdbResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(ADB, argv, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
    });
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
      resolve({
        code: code ?? (signal ? 128 : 1),
        stdout: raw.toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        raw,
      });
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
  /** Another phone on this server, account and adb server (default: its own). */
  on?: PhoneServer;
  /** Start the account's profile phone instead of a temporary one. */
  profile?: boolean;
  /** Boot straight from a save directory, without a server (device-level save/restore tests). */
  restoreFrom?: string | null;
  /** With restoreFrom: the backend's Chromium (a missing path: a server machine without one). */
  chromium?: string;
  log?: DeviceLogger;
}

/** A real server whose virtual backend records the phones it boots, one account, one adb server. */
export interface PhoneServer {
  server: RunningServer;
  api: Api;
  backend: DeviceBackend;
  adbServerPort: number;
  phoneOf(sessionId: string): VirtualPhone;
  close(): Promise<void>;
}

export async function startPhoneServer(options: { log?: DeviceLogger } = {}): Promise<PhoneServer> {
  const inner = createVirtualBackend({ bootMs: 0 });
  const phones = new Map<string, VirtualPhone>();
  const backend = wrapBackend(
    options.log ? { ...inner, boot: (request) => inner.boot({ ...request, log: options.log! }) } : inner,
    (phone, request) => {
      phones.set(request.sessionId, phone as VirtualPhone);
      return phone;
    },
  );
  const server = await startServer({ backend, log: 'warn', phones: 50 });
  const { key } = server.createAccount({ billingMode: 'disabled', sessionLimit: 50 });
  const adbServerPort = await quietPort();
  return {
    server,
    api: new Api(server.url, key),
    backend,
    adbServerPort,
    phoneOf(sessionId) {
      const phone = phones.get(sessionId);
      if (!phone) throw new Error(`no phone was booted for ${sessionId}`);
      return phone;
    },
    async close() {
      await runAdb(['-P', String(adbServerPort), 'kill-server']).catch(() => undefined);
      await server.close();
    },
  };
}

async function connect(
  host: (args: string[], o?: AdbRunOptions) => Promise<AdbResult>,
  serial: string,
): Promise<void> {
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
}

function wrap(
  fields: Omit<VirtualAdb, 'adb' | 'adbOk' | 'adbHost'>,
  host: (args: string[], o?: AdbRunOptions) => Promise<AdbResult>,
): VirtualAdb {
  const adb = (args: string[], o?: AdbRunOptions) => host(['-s', fields.serial, ...args], o);
  return {
    ...fields,
    adb,
    adbHost: host,
    async adbOk(args, o) {
      const r = await adb(args, o);
      if (r.code !== 0)
        throw new Error(`adb ${args.join(' ')} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
      return r.stdout;
    },
  };
}

/** A phone connected to the stock adb through its session's gateway (or, with restoreFrom, straight). */
export async function startVirtualAdb(options: StartOptions = {}): Promise<VirtualAdb> {
  if (options.restoreFrom !== undefined)
    return startDirect(options.restoreFrom, options.log, options.chromium);
  const own = !options.on;
  const ps = options.on ?? (await startPhoneServer(options.log ? { log: options.log } : {}));
  const host = (args: string[], o?: AdbRunOptions) => runAdb(['-P', String(ps.adbServerPort), ...args], o);
  let sessionId: string | null = null;
  let tunnel: { port: number; close(): Promise<void> } | null = null;
  try {
    const body = options.profile
      ? { timeout_seconds: 3600, profile_id: (await ps.api.get('/me')).body.profile.id }
      : { timeout_seconds: 3600 };
    const created = await ps.api.post('/sessions', { body });
    if (created.status !== 202)
      throw new Error(`create failed: ${created.status} ${JSON.stringify(created.body)}`);
    sessionId = created.body.id as string;
    await ps.api.waitFor(sessionId, ['ready']);
    const access = (await ps.api.get(`/sessions/${sessionId}/adb`)).body as {
      host: string;
      port: number;
      code: string;
    };
    tunnel = await gatewayTunnel(access.host, access.port, access.code);
    const serial = `127.0.0.1:${tunnel.port}`;
    await connect(host, serial);
    const sid = sessionId;
    const t = tunnel;
    return wrap(
      {
        serial,
        phone: ps.phoneOf(sid),
        backend: ps.backend,
        adbServerPort: ps.adbServerPort,
        host: ps,
        sessionId: sid,
        async close() {
          await host(['disconnect', serial]).catch(() => undefined);
          await t.close();
          // Ending the session is what saves a profile phone; wait until cleanup is confirmed.
          await ps.api.delete(`/sessions/${sid}`);
          await ps.api.waitGone(sid);
          if (own) await ps.close();
        },
      },
      host,
    );
  } catch (error) {
    await tunnel?.close();
    if (sessionId) await ps.api.delete(`/sessions/${sessionId}`).catch(() => undefined);
    if (own) await ps.close();
    throw error;
  }
}

/** Boots a phone from a save directory and connects adb straight to its port. */
async function startDirect(
  restoreFrom: string | null,
  log: DeviceLogger | undefined,
  chromium: string | undefined,
): Promise<VirtualAdb> {
  const backend = createVirtualBackend({ bootMs: 0, ...(chromium ? { chromium } : {}) });
  const phone = (await backend.boot({
    sessionId: `test-${process.pid}-${Date.now()}`,
    restoreFrom,
    signal: new AbortController().signal,
    log: log ?? quietLog,
  })) as VirtualPhone;
  const adbServerPort = await quietPort();
  const adb = await phone.adbEndpoint();
  const serial = `${adb.host}:${adb.port}`;
  const host = (args: string[], o?: AdbRunOptions) => runAdb(['-P', String(adbServerPort), ...args], o);
  try {
    await connect(host, serial);
  } catch (error) {
    await host(['kill-server']).catch(() => undefined);
    await backend.close();
    throw error;
  }
  return wrap(
    {
      serial,
      phone,
      backend,
      adbServerPort,
      host: null,
      sessionId: null,
      async close() {
        await host(['disconnect', serial]).catch(() => undefined);
        await host(['kill-server']).catch(() => undefined);
        await backend.close();
      },
    },
    host,
  );
}
