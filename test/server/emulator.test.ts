/**
 * The server over `--device emulator`, end to end against the fake Android SDK (a virtual
 * phone inside an emulator that follows the reference): sessions boot emulators that stock
 * adb discovers, temporary phones start from a golden snapshot made once, a refused snapshot
 * falls back to a cold boot and a new golden, an emulator that dies ends its session `lost`,
 * and a profile phone keeps an app and a login across sessions until it is reset.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../server/log.js';
import { connectAdb, type AdbSession } from '../support/adb.js';
import { buildTestApk } from '../support/apk-builder.js';
import { makeFakeSdk, type FakeSdk } from '../support/fake-sdk/index.js';
import { startTestServer, type TestServer } from '../support/server.js';

let sdk: FakeSdk;
let t: TestServer;
const logs: string[] = [];
const saved: Record<string, string | undefined> = {};

function setEnv(values: Record<string, string | undefined>): void {
  for (const [k, v] of Object.entries(values)) {
    if (!(k in saved)) saved[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}

const avdRoot = () => join(sdk.root, 'cache', 'phonelease', 'emulator', 'avd');
const fleetAvds = () =>
  readdirSync(avdRoot())
    .filter((n) => /^pl_[0-9a-f]+_\d+\.avd$/.test(n))
    .sort();

beforeAll(async () => {
  sdk = await makeFakeSdk();
  await sdk.startAdbServer();
  // The server finds the SDK, the AVD, the token and the adb server the way a user's does.
  setEnv({ ...sdk.env, XDG_CACHE_HOME: join(sdk.root, 'cache') });
  t = await startTestServer({
    device: 'emulator',
    phones: 1,
    log: createLogger({ level: 'info', write: (line) => logs.push(line) }),
  });
}, 120_000);

afterAll(async () => {
  await t?.close();
  await sdk?.close();
  setEnv(saved);
});

async function readySession(body: Record<string, unknown> = {}): Promise<string> {
  const s = (await t.api.post('/sessions', { body: { timeout_seconds: 900, ...body } })).body;
  const ready = await t.api.waitFor(s.id, ['ready', 'error'], 90_000);
  expect(ready.state, JSON.stringify(ready.failure)).toBe('ready');
  return s.id as string;
}

async function end(sid: string): Promise<void> {
  expect((await t.api.delete(`/sessions/${sid}`)).status).toBeLessThan(300);
  await t.api.waitGone(sid, 60_000);
}

/** Centre of the node whose resource-id ends with `suffix` in a uiautomator dump. */
function centre(xml: string, suffix: string): string {
  const m = new RegExp(
    `<node [^>]*resource-id="[^"]*${suffix}"[^>]*bounds="\\[(\\d+),(\\d+)\\]\\[(\\d+),(\\d+)\\]"`,
  ).exec(xml);
  if (!m) throw new Error(`no ${suffix} on screen`);
  const [x1, y1, x2, y2] = m.slice(1, 5).map(Number) as [number, number, number, number];
  return `${Math.round((x1 + x2) / 2)} ${Math.round((y1 + y2) / 2)}`;
}

describe('temporary emulator phones', () => {
  it('boots one that stock adb discovers and the gateway reaches, and stops it at the end', async () => {
    const sid = await readySession();
    const view = (await t.api.get(`/sessions/${sid}`)).body;
    expect(view.device).toBe('Android emulator (Pixel 8, Android 14)');
    // The emulator registered itself with the adb server: it is listed as a device.
    expect(await sdk.adb('devices')).toMatch(/^emulator-55\d\d\tdevice$/m);
    const adb = await connectAdb(t.api, sid);
    try {
      expect((await adb.adb('shell', 'getprop sys.boot_completed')).trim()).toBe('1');
      expect(await adb.adb('shell', 'service list')).toMatch(/\twindow: /);
      // Its golden was saved after the cold boot's lock screen was dismissed.
      expect(await adb.adb('exec-out', 'uiautomator dump /dev/tty')).not.toContain('keyguard');
    } finally {
      await adb.close();
    }
    const png = (await t.api.get(`/sessions/${sid}/frame.png`)).raw;
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    await end(sid);
    // The emulator has exited; the adb server drops it once it sees the transport close.
    await expect.poll(() => sdk.adb('devices'), { timeout: 10_000 }).not.toMatch(/\tdevice$/m);
    const history = (await t.api.get('/history')).body as { sid: string; end_reason: string }[];
    expect(history.find((h) => h.sid === sid)).toMatchObject({ end_reason: 'released' });
    // The first phone waits for the golden's cold boot: readySession's budget, not the default.
  }, 120_000);

  it('lets in a client whose adb key the emulator does not trust, as the virtual phone does', async () => {
    const sid = await readySession();
    // Another machine's adb: a HOME of its own, so a key of its own (adb makes one).
    const elsewhere = { HOME: mkdtempSync(join(tmpdir(), 'phonelease-other-adb-')) };
    const adb = await connectAdb(t.api, sid, { env: elsewhere });
    try {
      expect((await adb.adb('shell', 'echo signed in')).trim()).toBe('signed in');
      expect(await adb.adb('devices')).toMatch(
        new RegExp(`^${adb.serial.replace(/\./g, '\\.')}\tdevice$`, 'm'),
      );
      // The emulator itself would not let that key in: its adbd trusts only this host's key.
      const port = Number(/^emulator-(\d+)\tdevice$/m.exec(await sdk.adb('devices'))![1]) + 1;
      const direct = await adb.adb('connect', `127.0.0.1:${port}`);
      expect(direct).toContain(`failed to authenticate to 127.0.0.1:${port}`);
    } finally {
      await adb.close();
      rmSync(elsewhere.HOME, { recursive: true, force: true });
    }
    await end(sid);
  });

  it('makes the golden snapshot once and starts the next phones from it', async () => {
    expect(fleetAvds()).toHaveLength(1);
    const golden = join(avdRoot(), fleetAvds()[0]!, 'snapshots', 'phonelease_golden', 'snapshot.pb');
    const madeAt = statSync(golden).mtimeMs;
    await end(await readySession());
    expect(fleetAvds()).toHaveLength(1);
    expect(statSync(golden).mtimeMs).toBe(madeAt);
    expect(logs.filter((l) => l.includes('golden snapshot made'))).toHaveLength(1);
    expect(logs.filter((l) => l.includes('refused'))).toHaveLength(0);
  });

  it('cold-boots when the emulator refuses the golden, says so, and makes a new one', async () => {
    const before = fleetAvds();
    setEnv({ FAKE_EMULATOR_REFUSE_SNAPSHOT: '1' });
    let sid: string;
    try {
      sid = await readySession();
    } finally {
      setEnv({ FAKE_EMULATOR_REFUSE_SNAPSHOT: undefined });
    }
    expect(logs.some((l) => l.includes('refused the golden snapshot; this phone cold-booted'))).toBe(true);
    // A cold-booted phone is handed out unlocked.
    const adb = await connectAdb(t.api, sid);
    try {
      expect(await adb.adb('exec-out', 'uiautomator dump /dev/tty')).not.toContain('keyguard');
    } finally {
      await adb.close();
    }
    await end(sid);
    // The next phone makes the next generation, and the refused one is removed.
    await end(await readySession());
    const after = fleetAvds();
    expect(after).toHaveLength(1);
    expect(after).not.toEqual(before);
    expect(logs.filter((l) => l.includes('golden snapshot made'))).toHaveLength(2);
  }, 120_000);

  it('ends a session lost when its emulator dies, and frees its slot', async () => {
    const sid = await readySession();
    const fleet = join(avdRoot(), fleetAvds()[0]!);
    const lock = readdirSync(fleet).find((n) => n.endsWith('.lock'))!;
    const pid = Number(readFileSync(join(fleet, lock), 'utf8'));
    process.kill(pid, 'SIGKILL');
    await t.api.waitGone(sid, 30_000);
    const history = (await t.api.get('/history')).body as { sid: string; end_reason: string }[];
    expect(history.find((h) => h.sid === sid)).toMatchObject({ end_reason: 'lost' });
    // With --phones 1, the next session gets the slot back.
    await end(await readySession());
  }, 120_000);
});

describe('the profile phone on an emulator', () => {
  const apkFile = () => join(sdk.root, 'kept.apk');

  async function onProfile<T>(run: (adb: AdbSession, source: string) => Promise<T>): Promise<T> {
    const sid = await readySession({ profile_id: t.account.profile_id });
    const source = (await t.api.get(`/sessions/${sid}`)).body.startup?.source as string;
    const adb = await connectAdb(t.api, sid);
    try {
      return await run(adb, source);
    } finally {
      await adb.close();
      await end(sid);
    }
  }

  it('keeps an installed app and the login app signed in across sessions, and loses them after reset', async () => {
    writeFileSync(
      apkFile(),
      buildTestApk({
        package: 'com.example.kept',
        label: 'Kept',
        versionName: '1.0',
        activities: ['.Main'],
        launcher: true,
      }),
    );
    await onProfile(async (adb, source) => {
      // A fresh profile cold-boots from the fleet AVD's disks: the golden was saved under
      // the fleet AVD's name, and the emulator would refuse it under the profile's.
      expect(source).toBe('cold');
      expect(await adb.adb('exec-out', 'uiautomator dump /dev/tty')).not.toContain('keyguard');
      await adb.adb('install', apkFile());
      await adb.adb('shell', 'am start -W -n com.phonelease.login/.LoginActivity');
      const form = await adb.adb('exec-out', 'uiautomator dump /dev/tty');
      await adb.adb('shell', `input tap ${centre(form, 'username')}`);
      await adb.adb('shell', 'input text demo; input keyevent 66; input text secret; input keyevent 66');
      expect(await adb.adb('exec-out', 'uiautomator dump /dev/tty')).toContain('Welcome, demo!');
    });
    expect((await t.api.get('/me')).body.profile).toMatchObject({ state: 'stored', exact: true });

    // The second session loads the snapshot the first one saved: the emulator checks that the
    // AVD runs under the name (and id and home) it was saved with, so the screen and the
    // login held in memory are back, not only what is on disk.
    await onProfile(async (adb, source) => {
      expect(source).toBe('snapshot');
      expect(await adb.adb('shell', 'pm list packages -3')).toContain('package:com.example.kept');
      expect(await adb.adb('exec-out', 'uiautomator dump /dev/tty')).toContain('Welcome, demo!');
    });
    expect(logs.some((l) => l.includes('refused the profile snapshot'))).toBe(false);

    expect((await t.api.post('/me/profile/reset')).status).toBe(200);
    await onProfile(async (adb) => {
      expect(await adb.adb('shell', 'pm list packages -3')).not.toContain('com.example.kept');
      expect(await adb.adb('exec-out', 'uiautomator dump /dev/tty')).not.toContain('Welcome, demo!');
    });
  }, 180_000);
});
