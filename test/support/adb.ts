/**
 * Stock adb (Debian's /usr/bin/adb) against a session's phone through the server's ADB
 * gateway: a local tunnel presents the unlock code, so adb sees a plain 127.0.0.1 device.
 * Each helper runs its own adb server on a free port, never the shared 5037.
 */
import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';
import type { Api } from './server.js';
import { relay } from '../../src/util/relay.js';
import { trackedServer, type TrackedServer } from './tcp.js';
import { quietPort } from './ports.js';

const run = promisify(execFile);
export const ADB = process.env.PHONELEASE_ADB ?? '/usr/bin/adb';

/** A local TCP port that relays to the gateway after sending the unlock line. */
export function gatewayTunnel(host: string, port: number, code: string): Promise<TrackedServer> {
  return trackedServer((local, track) => {
    local.pause();
    const remote = net.connect({ host, port }, () => remote.write(`UNLOCK ${code}\n`));
    track(remote);
    let head = Buffer.alloc(0);
    const onHead = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const nl = head.indexOf(0x0a);
      if (nl < 0) return;
      remote.off('data', onHead);
      if (head.subarray(0, nl).toString() !== 'OK') return local.destroy();
      const rest = head.subarray(nl + 1);
      if (rest.length) local.write(rest);
      relay(local, remote);
      local.resume();
    };
    remote.on('data', onHead);
    // Until the relay runs, either side going away ends both.
    const end = () => {
      if (remote.listeners('data').includes(onHead)) {
        local.destroy();
        remote.destroy();
      }
    };
    local.on('error', end).on('close', end);
    remote.on('error', end).on('close', end);
  });
}

export interface AdbSession {
  serial: string;
  adbPort: number;
  /** Runs `adb -s SERIAL ...args`; resolves with stdout (rejects on a non-zero exit). */
  adb(...args: string[]): Promise<string>;
  close(): Promise<void>;
}

/**
 * Connects stock adb to a ready session's phone through the gateway. `env` changes adb's
 * environment (HOME, for a client with another adb key).
 */
export async function connectAdb(
  api: Api,
  sid: string,
  options: { env?: Record<string, string> } = {},
): Promise<AdbSession> {
  const access = (await api.get(`/sessions/${sid}/adb`)).body as { host: string; port: number; code: string };
  const tunnel = await gatewayTunnel(access.host, access.port, access.code);
  const adbPort = await quietPort();
  const env = { ...process.env, ...options.env, ANDROID_ADB_SERVER_PORT: String(adbPort) };
  const serial = `127.0.0.1:${tunnel.port}`;
  const connect = await run(ADB, ['connect', serial], { env });
  // `adb connect` exits 0 even when it fails: read what it said.
  if (!/connected to/.test(connect.stdout))
    throw new Error(`adb connect failed: ${connect.stdout}${connect.stderr}`);
  return {
    serial,
    adbPort,
    adb: async (...args) =>
      (await run(ADB, ['-s', serial, ...args], { env, maxBuffer: 64 * 1024 * 1024 })).stdout,
    close: async () => {
      await run(ADB, ['disconnect', serial], { env }).catch(() => undefined);
      await run(ADB, ['kill-server'], { env }).catch(() => undefined);
      await tunnel.close();
    },
  };
}

/** The package of the app in front of a ready session's phone, read through stock adb. */
export async function foregroundPackage(api: Api, sid: string): Promise<string> {
  const adb = await connectAdb(api, sid);
  try {
    const xml = await adb.adb(
      'shell',
      'uiautomator dump /sdcard/window_dump.xml >/dev/null && cat /sdcard/window_dump.xml',
    );
    const m = /<node [^>]*package="([^"]+)"/.exec(xml);
    if (!m) throw new Error(`no hierarchy in: ${xml.slice(0, 200)}`);
    return m[1]!;
  } finally {
    await adb.close();
  }
}
