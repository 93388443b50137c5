/**
 * The virtual phone over ADB:
 * - `shell echo` round trip through the local tunnel and the server's ADB gateway vs
 *   straight to the phone's own port, in the same run (goal: ratio <= 1.3), both with an
 *   in-process ADB client (the transport alone) and with the stock adb (end to end, a
 *   process per command);
 * - push throughput with the stock adb, straight (goal >= 50 MB/s) and through the gateway;
 * - screencap latency;
 * - memory of one idle phone (goal < 30 MB) and of 50 phones.
 *
 * Run: npm run build && node --expose-gc --import tsx bench/phone.ts
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Adb, AdbDaemonTransport } from '@yume-chan/adb';
import { LazyAdbCredentialStore } from '../src/adb/credentials.js';
import { socketToAdbConnection } from '../src/adb/packet-stream.js';
import { AdbTunnel } from '../src/adb/tunnel.js';
import { startServer } from '../server/main.js';
import { recordingBackend } from '../test/support/backends.js';
import { Api } from '../test/support/server.js';
import { quietPort } from '../test/support/ports.js';

const run = promisify(execFile);
const ADB = '/usr/bin/adb';
const gc = (globalThis as { gc?: () => void }).gc;

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const ms = (x: number) => `${x.toFixed(2)} ms`;

async function inProcessAdb(host: string, port: number): Promise<Adb> {
  const socket = net.connect({ host, port });
  socket.setNoDelay(true);
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const transport = await AdbDaemonTransport.authenticate({
    serial: `${host}:${port}`,
    connection: socketToAdbConnection(socket),
    credentialStore: new LazyAdbCredentialStore(),
  });
  return new Adb(transport);
}

async function echoTimes(adb: Adb, n: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const out = await adb.subprocess.shellProtocol!.spawnWaitText('echo hi');
    if (out.stdout.trim() !== 'hi') throw new Error(`unexpected echo output ${JSON.stringify(out.stdout)}`);
    times.push(performance.now() - t0);
  }
  return times;
}

async function stockTimes(
  env: NodeJS.ProcessEnv,
  serial: string,
  args: string[],
  n: number,
): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await run(ADB, ['-s', serial, ...args], { env, encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 });
    times.push(performance.now() - t0);
  }
  return times;
}

function memory(): number {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

const { backend, phones } = recordingBackend(0);
const server = await startServer({ backend, phones: 200, log: 'warn' });
const work = mkdtempSync(join(tmpdir(), 'phonelease-bench-phone-'));
const adbEnv = { ...process.env, ANDROID_ADB_SERVER_PORT: String(await quietPort()) };
const tunnels: AdbTunnel[] = [];
try {
  const { key } = server.createAccount({ billingMode: 'disabled', sessionLimit: 200 });
  const api = new Api(server.url, key);
  const s = (await api.post('/sessions', { body: { timeout_seconds: 3600 } })).body;
  await api.waitFor(s.id, ['ready']);
  const access = (await api.get(`/sessions/${s.id}/adb`)).body as {
    host: string;
    port: number;
    code: string;
  };
  const phone = phones.get(s.id)!;
  const tunnel = await AdbTunnel.open(access);
  tunnels.push(tunnel);
  const [tunnelHost, tunnelPort] = tunnel.serial.split(':') as [string, string];

  console.log('phonelease virtual phone benchmark');

  // 1. The transport: in-process client, straight vs tunnel + gateway.
  const straight = await phone.adbEndpoint();
  const straightAdb = await inProcessAdb(straight.host, straight.port);
  const gatewayAdb = await inProcessAdb(tunnelHost, Number(tunnelPort));
  await echoTimes(straightAdb, 50);
  await echoTimes(gatewayAdb, 50);
  const st: number[] = [];
  const gw: number[] = [];
  for (let i = 0; i < 400; i++) {
    st.push(...(await echoTimes(straightAdb, 1)));
    gw.push(...(await echoTimes(gatewayAdb, 1)));
  }
  console.log(
    `shell echo, in-process client: straight p50 ${ms(pct(st, 0.5))}, via tunnel+gateway p50 ${ms(pct(gw, 0.5))}; ratio ${(pct(gw, 0.5) / pct(st, 0.5)).toFixed(2)} (goal <= 1.30)`,
  );

  // 2. End to end with the stock adb (one adb process per command, as people use it).
  const straightSerial = `${straight.host}:${straight.port}`;
  for (const serial of [straightSerial, tunnel.serial]) {
    const { stdout } = await run(ADB, ['connect', serial], { env: adbEnv });
    if (!/connected to/.test(stdout)) throw new Error(`adb connect ${serial}: ${stdout}`);
  }
  await stockTimes(adbEnv, straightSerial, ['shell', 'echo', 'hi'], 5);
  await stockTimes(adbEnv, tunnel.serial, ['shell', 'echo', 'hi'], 5);
  // Interleaved, so drift in the machine's load hits both sides alike.
  const stS: number[] = [];
  const gwS: number[] = [];
  for (let i = 0; i < 100; i++) {
    stS.push(...(await stockTimes(adbEnv, straightSerial, ['shell', 'echo', 'hi'], 1)));
    gwS.push(...(await stockTimes(adbEnv, tunnel.serial, ['shell', 'echo', 'hi'], 1)));
  }
  console.log(
    `shell echo, stock adb:         straight p50 ${ms(pct(stS, 0.5))}, via tunnel+gateway p50 ${ms(pct(gwS, 0.5))}; ratio ${(pct(gwS, 0.5) / pct(stS, 0.5)).toFixed(2)} (goal <= 1.30)`,
  );

  // 3. Push throughput.
  const size = 64 * 1024 * 1024;
  const file = join(work, 'push.bin');
  writeFileSync(file, randomBytes(size));
  for (const [name, serial] of [
    ['straight', straightSerial],
    ['via tunnel+gateway', tunnel.serial],
  ] as const) {
    const best: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      await run(ADB, ['-s', serial, 'push', file, `/data/local/tmp/push-${i}.bin`], { env: adbEnv });
      best.push(performance.now() - t0);
      await run(ADB, ['-s', serial, 'shell', 'rm', `/data/local/tmp/push-${i}.bin`], { env: adbEnv });
    }
    const mbps = size / 1024 / 1024 / (Math.min(...best) / 1000);
    console.log(
      `push 64 MB, stock adb, ${name.padEnd(18)} ${mbps.toFixed(0)} MB/s (best of 3)${name === 'straight' ? `  (goal >= 50 MB/s: ${mbps >= 50 ? 'met' : 'NOT MET'})` : ''}`,
    );
  }

  // 4. Screencap latency (the screen changes between captures, so each one renders).
  const caps: number[] = [];
  for (let i = 0; i < 15; i++) {
    // Alternate between two apps so every capture has a new screen to render.
    await straightAdb.subprocess.shellProtocol!.spawnWaitText(
      i % 2 ? 'input keyevent 3' : 'am start -n com.android.settings/.Settings',
    );
    const t0 = performance.now();
    await run(ADB, ['-s', straightSerial, 'exec-out', 'screencap', '-p'], {
      env: adbEnv,
      encoding: 'buffer',
      maxBuffer: 16 * 1024 * 1024,
    });
    caps.push(performance.now() - t0);
  }
  const baseline = await stockTimes(adbEnv, straightSerial, ['exec-out', 'echo', 'hi'], 15);
  console.log(
    `screencap -p, stock adb:       p50 ${ms(pct(caps, 0.5))} (an exec-out round trip alone: ${ms(pct(baseline, 0.5))})`,
  );

  await straightAdb.close();
  await gatewayAdb.close();

  // 5. Memory: one idle phone, then 50.
  if (!gc) console.log('memory: run with node --expose-gc for exact figures');
  const before = memory();
  const one = (await api.post('/sessions', { body: { timeout_seconds: 3600 } })).body;
  await api.waitFor(one.id, ['ready']);
  const afterOne = memory();
  const ids: string[] = [];
  for (let i = 0; i < 50; i++)
    ids.push((await api.post('/sessions', { body: { timeout_seconds: 3600 } })).body.id);
  for (const id of ids) await api.waitFor(id, ['ready']);
  const afterFifty = memory();
  // A phone whose screen was drawn once (a test took a screenshot) also holds its UI.
  const shown = (await api.post('/sessions', { body: { timeout_seconds: 3600 } })).body;
  await api.waitFor(shown.id, ['ready']);
  const beforeShown = memory();
  await api.get(`/sessions/${shown.id}/frame.png`);
  const afterShown = memory();
  const mb = (b: number) => `${(b / 1024 / 1024).toFixed(2)} MB`;
  console.log(
    `memory of one idle phone:      ${mb(afterOne - before)} (JS heap + external)  (goal < 30 MB: ${afterOne - before < 30 * 1024 * 1024 ? 'met' : 'NOT MET'})`,
  );
  console.log(
    `memory of 50 more idle phones: ${mb(afterFifty - afterOne)} in all, ${mb((afterFifty - afterOne) / 50)} each; process RSS ${mb(process.memoryUsage().rss)}`,
  );
  console.log(
    `memory of a phone's first screen: ${mb(afterShown - beforeShown)} more once its screen was drawn (goal for the whole phone < 30 MB: ${afterOne - before + afterShown - beforeShown < 30 * 1024 * 1024 ? 'met' : 'NOT MET'})`,
  );
} finally {
  await run(ADB, ['kill-server'], { env: adbEnv }).catch(() => undefined);
  for (const t of tunnels) await t.close();
  await server.close();
  rmSync(work, { recursive: true, force: true });
}
