/**
 * The emulator path's edges against the fake SDK: the console's token, replies and limits,
 * lock files after a crash, the guest's lock screen, goldens across server runs (stale
 * locks, saves cut short, leftovers, refusals, a close mid-making), public startup failures
 * in the tool's own words, the port range, and `phonelease doctor` on machines with and
 * without each part.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { removeStaleLocks } from '../../server/devices/emulator/avd.js';
import { ConsoleError, EmulatorConsole, consoleCommand } from '../../server/devices/emulator/console.js';
import { createEmulatorBackend } from '../../server/devices/emulator/index.js';
import type { EmulatorPhone } from '../../server/devices/emulator/phone.js';
import { APP_RECORD_DIR } from '../../src/apk/app-files.js';
import { processAlive } from '../../server/devices/emulator/owners.js';
import { PortPool, PORT_PAIRS } from '../../server/devices/emulator/ports.js';
import {
  doctorBrief,
  formatFindings,
  parseAccelCheck,
  runDoctor,
  type Finding,
} from '../../server/doctor.js';
import { AdbGateway } from '../../server/adb-gateway.js';
import { createLogger } from '../../server/log.js';
import { adbConnect, runAdb, type StockAdbOptions } from '../../src/adb/stock-adb.js';
import { AdbError } from '../../src/errors.js';
import { gatewayTunnel } from '../support/adb.js';
import { buildTestApk } from '../support/apk-builder.js';
import type { TrackedServer } from '../support/tcp.js';
import { makeFakeSdk, type FakeSdk, type FakeSdkOptions } from '../support/fake-sdk/index.js';
import { quietPort } from '../support/ports.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const sdks: FakeSdk[] = [];
const children: ReturnType<typeof spawn>[] = [];

afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await Promise.all(sdks.splice(0).map((s) => s.close()));
});

async function fakeSdk(options: FakeSdkOptions = {}): Promise<FakeSdk> {
  const sdk = await makeFakeSdk(options);
  sdks.push(sdk);
  return sdk;
}

/** Starts the fake emulator directly; resolves once its output matches `until`. */
async function emulator(sdk: FakeSdk, args: string[], until: RegExp, env: Record<string, string> = {}) {
  const child = spawn(join(sdk.sdk, 'emulator', 'emulator'), args, {
    env: { ...process.env, ...sdk.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await new Promise<void>((resolve) => {
    const check = (b: Buffer) => {
      output += b.toString();
      if (until.test(output)) resolve();
    };
    child.stdout.on('data', check);
    child.stderr.on('data', check);
    void exited.then(() => resolve());
  });
  return { child, exited, output: () => output };
}

/** Reads console lines until one matches. */
async function rawConsole(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (b: Buffer) => (text += b.toString()));
  await new Promise((r) => socket.once('connect', r));
  const until = async (pattern: RegExp) => {
    for (let i = 0; i < 200 && !pattern.test(text); i++) await new Promise((r) => setTimeout(r, 25));
    const out = text;
    text = '';
    return out;
  };
  return { send: (line: string) => socket.write(`${line}\n`), until, close: () => socket.destroy() };
}

describe('the fake emulator console', () => {
  it('asks for the token, answers in the reference words, and refuses snapshots read-only', async () => {
    const sdk = await fakeSdk({ token: 'c2VrcmV0LXRva2VuLXZhbHVl' });
    const emu = await emulator(sdk, ['-avd', 'test_phone', '-port', '5580', '-read-only'], /Serial number/);
    const c = await rawConsole(5580);
    expect(await c.until(/^OK\r\n/m)).toBe(
      [
        'Android Console: Authentication required',
        "Android Console: type 'auth <auth_token>' to authenticate",
        'Android Console: you can find your <auth_token> in ',
        `'${join(sdk.home, '.emulator_console_auth_token')}'`,
        'OK',
        '',
      ].join('\r\n'),
    );
    c.send('avd name');
    expect(await c.until(/OK\r\n/)).toBe('test_phone\r\nOK\r\n');
    c.send('kill');
    expect(await c.until(/\r\n/)).toBe("KO: unknown command, try 'help'\r\n");
    c.send('auth wrong');
    expect(await c.until(/\r\n/)).toBe(
      'KO: authentication token does not match ~/.emulator_console_auth_token\r\n',
    );
    c.close();

    const console = await EmulatorConsole.connect(5580, join(sdk.home, '.emulator_console_auth_token'));
    try {
      expect(await console.command('ping')).toEqual(['I am alive!']);
      const refused = await console.command('avd snapshot save x').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ConsoleError);
      expect((refused as ConsoleError).reply).toBe(
        'KO: Snapshot save is disabled because "-read-only" was specified',
      );
      expect(await console.command('kill')).toEqual([]);
    } finally {
      console.close();
    }
    expect(await emu.exited).toBe(0);
  });

  it('refuses a second read-write instance, and a stale lock after a crash until it is removed', async () => {
    const sdk = await fakeSdk();
    const first = await emulator(sdk, ['-avd', 'test_phone', '-port', '5582'], /Serial number/);
    first.child.kill('SIGKILL');
    await first.exited;
    const again = await emulator(sdk, ['-avd', 'test_phone', '-port', '5582'], /Running multiple/);
    expect(await again.exited).toBe(1);
    expect(again.output()).toContain(
      'Running multiple emulators with the same AVD is an experimental feature.\nPlease use -read-only flag to enable this feature.',
    );
    expect(await removeStaleLocks(sdk.avdDir('test_phone'))).toEqual(['multiinstance.lock']);
    const third = await emulator(sdk, ['-avd', 'test_phone', '-port', '5582'], /Serial number|ERROR/);
    expect(third.output()).toContain('emulator-5582');
  });
});

describe('the fake emulator guest', () => {
  it('comes out of a cold boot locked until MENU (keyevent 82), and a snapshot keeps the lock as saved', async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_COLD_BOOT_MS: '300' } });
    await sdk.startAdbServer();
    const tokenPath = join(sdk.home, '.emulator_console_auth_token');
    const serial = 'emulator-5572';
    const dump = () => sdk.adb('-s', serial, 'exec-out', 'uiautomator dump /dev/tty');
    const boot = async (args: string[]) => {
      const emu = await emulator(
        sdk,
        ['-avd', 'test_phone', '-port', '5572', ...args],
        /Boot completed|Successfully loaded/,
      );
      await sdk.adb('-s', serial, 'wait-for-device');
      return emu;
    };
    let emu = await boot(['-no-snapshot-load']);
    expect(await dump()).toContain('com.android.systemui:id/keyguard_root_view');
    await consoleCommand(5572, tokenPath, 'avd snapshot save locked');
    await sdk.adb('-s', serial, 'shell', 'input tap 360 640; input keyevent 3');
    expect(await dump()).toContain('keyguard_root_view');
    await sdk.adb('-s', serial, 'shell', 'input keyevent 82');
    expect(await dump()).not.toContain('keyguard');
    await consoleCommand(5572, tokenPath, 'avd snapshot save unlocked');
    await consoleCommand(5572, tokenPath, 'kill');
    await emu.exited;

    emu = await boot(['-snapshot', 'unlocked', '-no-snapshot-save']);
    expect(await dump()).not.toContain('keyguard');
    await consoleCommand(5572, tokenPath, 'kill');
    await emu.exited;
    emu = await boot(['-snapshot', 'locked', '-no-snapshot-save']);
    expect(await dump()).toContain('keyguard_root_view');
    await consoleCommand(5572, tokenPath, 'kill');
    await emu.exited;
  });
});

describe('the fake emulator snapshot checks', () => {
  it('refuses a snapshot under another AVD name or with a changed image, saying only "Cold boot: <reason>"', async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_COLD_BOOT_MS: '300' } });
    const tokenPath = join(sdk.home, '.emulator_console_auth_token');
    const boot = (avd: string, args: string[]) =>
      emulator(sdk, ['-avd', avd, '-port', '5570', ...args], /Boot completed|Successfully loaded/);
    const stop = async (emu: Awaited<ReturnType<typeof boot>>) => {
      await consoleCommand(5570, tokenPath, 'kill');
      await emu.exited;
    };
    let emu = await boot('test_phone', ['-no-snapshot-load']);
    expect(emu.output()).toContain('Cold boot:  requested by the user');
    // The emulator writes the identity it runs under into hardware-qemu.ini at every start.
    const hardware = readFileSync(join(sdk.avdDir('test_phone'), 'hardware-qemu.ini'), 'utf8');
    expect(hardware).toContain('avd.name = test_phone\n');
    expect(hardware).toContain(`android.avd.home = ${sdk.avdHome}\n`);
    await consoleCommand(5570, tokenPath, 'avd snapshot save saved');
    await stop(emu);

    emu = await boot('test_phone', ['-snapshot', 'saved', '-no-snapshot-save']);
    expect(emu.output()).toContain("Successfully loaded snapshot 'saved'");
    await stop(emu);

    // The same AVD directory under another name: its snapshot's avd.name no longer matches.
    writeFileSync(join(sdk.avdHome, 'renamed.ini'), `path=${sdk.avdDir('test_phone')}\ntarget=android-34\n`);
    emu = await boot('renamed', ['-snapshot', 'saved', '-no-snapshot-save']);
    expect(emu.output()).toContain('WARNING | Cold boot: Different AVD configuration\n');
    expect(emu.output()).not.toContain('Failed to load snapshot');
    await stop(emu);

    // A system image of another size (an update the AVD's config does not show).
    writeFileSync(join(sdk.sdk, 'system-images/android-34/google_apis/x86_64/system.img'), 'updated');
    emu = await boot('test_phone', ['-snapshot', 'saved', '-no-snapshot-save']);
    expect(emu.output()).toContain('WARNING | Cold boot: System image changed\n');
    expect(emu.output()).not.toContain('Failed to load snapshot');
    await stop(emu);
  });
});

describe('the backend console client', () => {
  it('gives a silent snapshot save its own limit, not the one for connecting', async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_SNAPSHOT_SAVE_MS: '1500' } });
    const emu = await emulator(sdk, ['-avd', 'test_phone', '-port', '5578'], /Boot completed/);
    const tokenPath = join(sdk.home, '.emulator_console_auth_token');
    // A connect limit shorter than the save: the save still gets its answer.
    const console = await EmulatorConsole.connect(5578, tokenPath, 500);
    try {
      expect(await console.command('avd snapshot save slow')).toEqual([]);
      expect(await console.command('avd snapshot list')).toContain('slow');
    } finally {
      console.close();
    }
    // A command past its own limit fails, saying which command did not answer.
    const late = await consoleCommand(5578, tokenPath, 'avd snapshot save later', { timeoutMs: 300 }).catch(
      (e: unknown) => e as Error,
    );
    expect(late).toBeInstanceOf(Error);
    expect((late as Error).message).toContain('did not answer "avd snapshot save later" within 300 ms');
    expect(await consoleCommand(5578, tokenPath, 'kill')).toEqual([]);
    expect(await emu.exited).toBe(0);
  });
});

/** A backend over a fake SDK, with its log lines and an environment a test may change. */
async function backendOn(sdk: FakeSdk, options: { workDir?: string; preinstall?: string[] } = {}) {
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), 'phonelease-emu-work-'));
  const lines: string[] = [];
  const record =
    (level: string) =>
    (message: string, fields?: Record<string, unknown>): void => {
      lines.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
    };
  const log = { debug() {}, info: record('info'), warn: record('warn'), error: record('error') };
  const env: Record<string, string | undefined> = { PATH: process.env.PATH, ...sdk.env };
  const backend = createEmulatorBackend({ log, env, workDir, preinstall: options.preinstall });
  const boot = (signal = new AbortController().signal) =>
    backend.boot({ sessionId: 's', restoreFrom: null, signal, log });
  return { backend, boot, env, lines, workDir, avdHome: join(workDir, 'avd') };
}

/** The fleet AVDs (`pl_<key>_<generation>`) in an AVD home, oldest first. */
const fleetAvds = (avdHome: string) =>
  readdirSync(avdHome)
    .filter((n) => /^pl_[0-9a-f]{12}_\d+\.avd$/.test(n))
    .sort();

/** A process id nothing runs under (above Linux's largest pid). */
const DEAD_PID = '99999999';

describe('golden snapshots across server runs', () => {
  it("clears the lock a killed host left in a reused golden, instead of failing every boot as 'busy'", async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_COLD_BOOT_MS: '300' } });
    await sdk.startAdbServer();
    const first = await backendOn(sdk);
    try {
      await (await first.boot()).shutdown({ saveTo: null });
    } finally {
      await first.backend.close();
    }
    const [fleet] = fleetAvds(first.avdHome);
    // The host died while an emulator held the golden AVD read-write.
    writeFileSync(join(first.avdHome, fleet!, 'multiinstance.lock'), DEAD_PID);

    const second = await backendOn(sdk, { workDir: first.workDir });
    try {
      const phone = await second.boot();
      expect(phone.startupSource).toBe('snapshot');
      await phone.shutdown({ saveTo: null });
      expect(second.lines.filter((l) => l.includes('golden snapshot made'))).toEqual([]);
      expect(second.lines.some((l) => l.includes('removed lock files'))).toBe(true);
      expect(existsSync(join(first.avdHome, fleet!, 'multiinstance.lock'))).toBe(false);
    } finally {
      await second.backend.close();
      rmSync(first.workDir, { recursive: true, force: true });
    }
  });

  it('never reuses a golden cut short, and removes leftovers no live process owns', async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_COLD_BOOT_MS: '300' } });
    await sdk.startAdbServer();
    const first = await backendOn(sdk);
    try {
      await (await first.boot()).shutdown({ saveTo: null });
    } finally {
      await first.backend.close();
    }
    const avdHome = first.avdHome;
    const [made] = fleetAvds(avdHome);
    const key = /^pl_([0-9a-f]{12})_/.exec(made!)![1]!;
    const leftover = (name: string, owner: string | null, golden = false) => {
      const dir = join(avdHome, `${name}.avd`);
      mkdirSync(golden ? join(dir, 'snapshots', 'phonelease_golden') : dir, { recursive: true });
      copyFileSync(join(sdk.avdDir('test_phone'), 'config.ini'), join(dir, 'config.ini'));
      if (owner) writeFileSync(join(dir, 'phonelease-owner'), owner);
      writeFileSync(join(avdHome, `${name}.ini`), `path=${dir}\ntarget=android-34\n`);
    };
    // A newer golden whose save the host did not live to finish (no completion marker).
    leftover(`pl_${key}_7`, DEAD_PID, true);
    leftover(`pl_${key}_8`, null, true);
    // Leftovers of dead servers, a profile copy of a live one, and an AVD an emulator runs.
    leftover(`pl_profile_${DEAD_PID}_1`, null);
    leftover('pl_0123456789ab_3', DEAD_PID);
    leftover(`pl_profile_${process.pid}_1`, null);
    leftover('pl_profile_0123456789ab', DEAD_PID);
    leftover('pl_profile_ba9876543210', String(process.pid));
    leftover('pl_feedfeedfeed_1', DEAD_PID);
    const running = await emulator(
      sdk,
      ['-avd', 'pl_feedfeedfeed_1', '-port', '5576', '-read-only'],
      /Serial number|ERROR/,
      { ANDROID_AVD_HOME: avdHome },
    );
    expect(running.output()).toContain('emulator-5576');

    const second = await backendOn(sdk, { workDir: first.workDir });
    try {
      const phone = await second.boot();
      expect(phone.startupSource).toBe('snapshot');
      await phone.shutdown({ saveTo: null });
      expect(second.lines.filter((l) => l.includes('golden snapshot made'))).toEqual([]);
      expect(
        readdirSync(avdHome)
          .filter((n) => n.endsWith('.avd'))
          .sort(),
      ).toEqual(
        [
          made!,
          'pl_feedfeedfeed_1.avd',
          `pl_profile_${process.pid}_1.avd`,
          'pl_profile_ba9876543210.avd',
        ].sort(),
      );
      expect(existsSync(join(avdHome, `pl_${key}_7.ini`))).toBe(false);
    } finally {
      await second.backend.close();
      rmSync(first.workDir, { recursive: true, force: true });
    }
  });
});

describe('temporary phones of the backend', () => {
  it('makes a new golden when another instance holds the golden AVD, instead of failing', async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_COLD_BOOT_MS: '300' } });
    await sdk.startAdbServer();
    const b = await backendOn(sdk);
    try {
      await (await b.boot()).shutdown({ saveTo: null });
      const [fleet] = fleetAvds(b.avdHome);
      writeFileSync(join(b.avdHome, fleet!, 'multiinstance.lock'), DEAD_PID);
      const phone = await b.boot();
      expect(phone.startupSource).toBe('snapshot');
      await phone.shutdown({ saveTo: null });
      expect(b.lines.filter((l) => l.includes('golden snapshot made'))).toHaveLength(2);
      expect(fleetAvds(b.avdHome)).not.toContain(fleet);
    } finally {
      await b.backend.close();
      rmSync(b.workDir, { recursive: true, force: true });
    }
  });

  it('stops making goldens, once, when the emulator refuses the one it just saved', async () => {
    const sdk = await fakeSdk({
      env: { FAKE_EMULATOR_COLD_BOOT_MS: '300', FAKE_EMULATOR_REFUSE_SNAPSHOT: '1' },
    });
    await sdk.startAdbServer();
    const b = await backendOn(sdk);
    try {
      for (let i = 0; i < 3; i++) {
        const phone = await b.boot();
        expect(phone.startupSource).toBe('cold');
        await phone.shutdown({ saveTo: null });
      }
      expect(b.lines.filter((l) => l.includes('golden snapshot made'))).toHaveLength(1);
      expect(b.lines.filter((l) => l.includes('cold-boot from now on'))).toHaveLength(1);
    } finally {
      await b.backend.close();
      rmSync(b.workDir, { recursive: true, force: true });
    }
  });

  it('stops the emulator making a golden when it closes, and waits for it', async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_COLD_BOOT_MS: '8000' } });
    await sdk.startAdbServer();
    const b = await backendOn(sdk);
    let pid = 0;
    try {
      const booting = b.boot().then(
        () => null,
        (e: unknown) => e as Error,
      );
      // The golden's emulator is up once its lock is in the fleet AVD.
      await expect
        .poll(
          () => {
            const [fleet] = existsSync(b.avdHome) ? fleetAvds(b.avdHome) : [];
            const lock = fleet ? join(b.avdHome, fleet, 'multiinstance.lock') : '';
            return lock && existsSync(lock) ? (pid = Number(readFileSync(lock, 'utf8'))) : 0;
          },
          { timeout: 20_000 },
        )
        .toBeGreaterThan(0);
      await b.backend.close();
      expect(processAlive(pid)).toBe(false);
      expect(await booting).toBeInstanceOf(Error);
      expect(fleetAvds(b.avdHome)).toEqual([]);
    } finally {
      if (pid && processAlive(pid)) process.kill(pid, 'SIGKILL');
      await b.backend.close();
      rmSync(b.workDir, { recursive: true, force: true });
    }
  });

  it('says the ports are used up after losing the race for a port pair four times', async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_LOSE_PORT_RACE: '1' } });
    await sdk.startAdbServer();
    const b = await backendOn(sdk);
    try {
      const e = await b.boot().then(
        () => null,
        (err: unknown) => err as { code: string },
      );
      expect(e).toMatchObject({ code: 'emulator_ports_exhausted' });
    } finally {
      await b.backend.close();
      rmSync(b.workDir, { recursive: true, force: true });
    }
  });

  it("sees a golden refused with only 'Cold boot: <reason>', hands the phone out unlocked, and replaces the golden", async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_COLD_BOOT_MS: '300' } });
    await sdk.startAdbServer();
    const b = await backendOn(sdk);
    try {
      await (await b.boot()).shutdown({ saveTo: null });
      // An updated system image of the same revision: the golden key cannot see it, the
      // emulator's own check does ("Cold boot: System image changed", and nothing else).
      writeFileSync(join(sdk.sdk, 'system-images/android-34/google_apis/x86_64/system.img'), 'updated');
      const phone = (await b.boot()) as EmulatorPhone;
      expect(phone.startupSource).toBe('cold');
      expect(b.lines.some((l) => l.includes('Cold boot: System image changed'))).toBe(true);
      expect(await sdk.adb('-s', phone.serial, 'exec-out', 'uiautomator dump /dev/tty')).not.toContain(
        'keyguard',
      );
      await phone.shutdown({ saveTo: null });
      expect(b.lines.some((l) => l.includes('the next boot makes a new one'))).toBe(true);
      const next = await b.boot();
      expect(next.startupSource).toBe('snapshot');
      await next.shutdown({ saveTo: null });
      expect(b.lines.filter((l) => l.includes('golden snapshot made'))).toHaveLength(2);
    } finally {
      await b.backend.close();
      rmSync(b.workDir, { recursive: true, force: true });
    }
  });

  it('sees a refused snapshot however much the emulator prints after it', async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_COLD_BOOT_MS: '300' } });
    await sdk.startAdbServer();
    const b = await backendOn(sdk);
    try {
      b.env.FAKE_EMULATOR_REFUSE_SNAPSHOT = '1';
      b.env.FAKE_EMULATOR_BOOT_CHATTER = '200';
      const phone = await b.boot();
      expect(phone.startupSource).toBe('cold');
      expect(b.lines.some((l) => l.includes('refused the golden snapshot; this phone cold-booted'))).toBe(
        true,
      );
      await phone.shutdown({ saveTo: null });
    } finally {
      await b.backend.close();
      rmSync(b.workDir, { recursive: true, force: true });
    }
  });
});

describe('ADB through the gateway to an emulator', () => {
  const CODE = 'adbcode-for-the-emulator-test-0123456789';

  it("signs in for a client with any key; when the phone refuses the server's key, the client signs in itself and the lease names why", async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_COLD_BOOT_MS: '300' } });
    await sdk.startAdbServer();
    const b = await backendOn(sdk);
    const gatewayLog: string[] = [];
    const homes: string[] = [];
    const adbServers: StockAdbOptions[] = [];
    let gateway: AdbGateway | null = null;
    let tunnel: TrackedServer | null = null;
    /** Stock adb with a HOME (so an adb key) of its own, or the given one, on its own server. */
    const adbClient = async (home?: string): Promise<StockAdbOptions> => {
      if (!home) homes.push((home = mkdtempSync(join(tmpdir(), 'phonelease-adb-home-'))));
      const options = { env: { ...process.env, HOME: home }, serverPort: await quietPort() };
      adbServers.push(options);
      return options;
    };
    try {
      const phone = await b.boot();
      const live = { row: { id: 'emu-session', adb_code: CODE }, phone };
      gateway = new AdbGateway(
        { sessionForAdbCode: (c) => (c === CODE ? live : null), all: () => [live], on: () => undefined },
        createLogger({ level: 'debug', write: (l) => gatewayLog.push(l) }),
      );
      tunnel = await gatewayTunnel('127.0.0.1', await gateway.listen('127.0.0.1'), CODE);
      const serial = `127.0.0.1:${tunnel.port}`;

      const stranger = await adbClient();
      await adbConnect(serial, stranger);
      expect((await runAdb(['-s', serial, 'shell', 'echo in'], stranger)).stdout.trim()).toBe('in');
      expect(gatewayLog.some((l) => l.includes('signed in to the phone'))).toBe(true);

      // The server's adb key is now one the phone never saw (its AVD was made elsewhere).
      const serverHome = mkdtempSync(join(tmpdir(), 'phonelease-adb-home-'));
      homes.push(serverHome);
      mkdirSync(join(serverHome, '.android'));
      await runAdb(['keygen', join(serverHome, '.android', 'adbkey')], { env: process.env });
      b.env.HOME = serverHome;

      const refused = await adbConnect(serial, await adbClient(), 10_000).then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect(refused).toBeInstanceOf(AdbError);
      expect(refused!.message).toContain('the phone did not accept an adb key');
      expect(refused!.message).not.toContain('daemon');
      expect(gatewayLog.some((l) => l.includes("the phone refused this server's adb keys"))).toBe(true);
      expect(gatewayLog.join('\n')).toContain(join(serverHome, '.android', 'adbkey'));

      // A client whose own key the phone trusts still gets in: the gateway stepped aside.
      const trusted = await adbClient(sdk.home);
      await adbConnect(serial, trusted);
      expect((await runAdb(['-s', serial, 'shell', 'echo in'], trusted)).stdout.trim()).toBe('in');
      await phone.shutdown({ saveTo: null });
    } finally {
      for (const options of adbServers) await runAdb(['kill-server'], options).catch(() => undefined);
      await tunnel?.close();
      await gateway?.close();
      await b.backend.close();
      for (const home of homes) rmSync(home, { recursive: true, force: true });
      rmSync(b.workDir, { recursive: true, force: true });
    }
  });
});

describe('APKs preinstalled into the golden snapshot', () => {
  it('puts them on every phone with their hashes; the same build reuses its golden, a new build makes one', async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_COLD_BOOT_MS: '300' } });
    await sdk.startAdbServer();
    const apk = join(sdk.root, 'app-debug.apk');
    const build = (versionName: string) => {
      const bytes = buildTestApk({
        package: 'com.example.pre',
        label: 'Pre',
        versionName,
        activities: ['.Main'],
        launcher: true,
      });
      writeFileSync(apk, bytes);
      // The lease's app hash: SHA-256 over the app's APKs' SHA-256s (here, one).
      return createHash('sha256').update(createHash('sha256').update(bytes).digest('hex')).digest('hex');
    };
    const workDir = mkdtempSync(join(tmpdir(), 'phonelease-emu-work-'));
    /** A server run: boots one phone and returns what it has and what the run did. */
    const run = async () => {
      const b = await backendOn(sdk, { workDir, preinstall: [apk] });
      try {
        const phone = (await b.boot()) as EmulatorPhone;
        const shell = (cmd: string) => sdk.adb('-s', phone.serial, 'shell', cmd);
        const seen = {
          source: phone.startupSource,
          packages: await shell('pm list packages -3'),
          // The record the lease's app install writes and reads: `<app hash> <pm path's APK>`.
          recorded: (await shell(`cat ${APP_RECORD_DIR}/com.example.pre`)).trim(),
          installedAt: (await shell('pm path com.example.pre')).trim().replace(/^package:/, ''),
          version: /versionName=(\S+)/.exec(await shell('dumpsys package com.example.pre'))?.[1],
          made: b.lines.filter((l) => l.includes('golden snapshot made')).length,
          fleets: fleetAvds(b.avdHome),
        };
        await phone.shutdown({ saveTo: null });
        return seen;
      } finally {
        await b.backend.close();
      }
    };
    try {
      const first = build('1.0');
      const made = await run();
      expect(made).toMatchObject({ made: 1, recorded: `${first} ${made.installedAt}`, version: '1.0' });
      expect(made.installedAt).toMatch(/^\/data\/app\/.*\/base\.apk$/);
      expect(made.packages).toContain('package:com.example.pre');

      const reused = await run();
      expect(reused).toMatchObject({
        made: 0,
        source: 'snapshot',
        recorded: made.recorded,
        fleets: made.fleets,
      });

      const second = build('2.0');
      const rebuilt = await run();
      expect(rebuilt).toMatchObject({
        made: 1,
        recorded: `${second} ${rebuilt.installedAt}`,
        version: '2.0',
      });
      // A golden of its own (the old build's goes at a later start, once its server is gone).
      expect(rebuilt.fleets.filter((f) => !made.fleets.includes(f))).toHaveLength(1);
    } finally {
      rmSync(workDir, { recursive: true, force: true });
    }
  });

  it('refuses, when the backend is made, a file that is missing or is not an APK, naming it', async () => {
    const sdk = await fakeSdk();
    const notApk = join(sdk.root, 'notes.txt');
    writeFileSync(notApk, 'not a zip');
    const made = (preinstall: string[]) => {
      try {
        createEmulatorBackend({ log: quiet, env: { PATH: process.env.PATH, ...sdk.env }, preinstall });
        return null;
      } catch (error) {
        return error as { code: string; message: string };
      }
    };
    // A bad --preinstall stops the server at its start, before any phone is asked for.
    expect(made([notApk])).toMatchObject({
      code: 'emulator_preinstall_failed',
      message: expect.stringContaining(`${notApk} is not an APK`),
    });
    const missing = made(['build/missing.apk']);
    expect(missing).toMatchObject({ code: 'emulator_preinstall_failed' });
    // A relative path is taken from where the server was started, and said in full.
    expect(missing!.message).toContain(
      `build/missing.apk not found (looked at ${join(process.cwd(), 'build/missing.apk')})`,
    );
  });
});

describe('emulator builds that serve one ADB connection at a time', () => {
  it("are found on the first phone, named in the server's log, refused to gateway clients with the reason, and reported by doctor", async () => {
    const sdk = await fakeSdk({
      env: { FAKE_EMULATOR_COLD_BOOT_MS: '300', FAKE_EMULATOR_ADB_CONNECTIONS: '1' },
    });
    await sdk.startAdbServer();
    const b = await backendOn(sdk);
    try {
      const phone = await b.boot();
      // The server's own use of the phone goes through the adb server's one connection.
      expect(phone.startupSource).toBe('snapshot');
      expect((await phone.capture()).subarray(1, 4).toString()).toBe('PNG');
      const refused = await phone.adbEndpoint().then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect(refused?.message).toContain(
        'emulator 35.2.10.0 (build_id 12414864) serves one ADB connection at a time',
      );
      expect(refused?.message).toContain('sdkmanager --install "emulator"');
      expect(b.lines.filter((l) => l.includes('serves one ADB connection at a time'))).toHaveLength(1);

      const doctor = await runDoctor({ env: { PATH: process.env.PATH, ...sdk.env } });
      expect(doctor.find((f) => f.check === 'adb-connections')).toMatchObject({
        status: 'warn',
        fix: ['sdkmanager --install "emulator"  # a current emulator build'],
      });
      expect(doctor.find((f) => f.check === 'adb-connections')!.detail).toMatch(
        /^emulator-\d+ serves one ADB connection at a time/,
      );
      await phone.shutdown({ saveTo: null });
    } finally {
      await b.backend.close();
      rmSync(b.workDir, { recursive: true, force: true });
    }
  });
});

describe('public startup failures', () => {
  const boot = async (env: Record<string, string | undefined>) => {
    const workDir = mkdtempSync(join(tmpdir(), 'phonelease-emu-work-'));
    const backend = createEmulatorBackend({ log: quiet, env: { PATH: process.env.PATH, ...env }, workDir });
    try {
      return await backend
        .boot({ sessionId: 's', restoreFrom: null, signal: new AbortController().signal, log: quiet })
        .then(
          () => null,
          (e: unknown) => e as { code: string; message: string },
        );
    } finally {
      await backend.close();
      rmSync(workDir, { recursive: true, force: true });
    }
  };

  it('says what to install without an SDK', async () => {
    const e = await boot({ HOME: tmpdir() });
    expect(e).toMatchObject({ name: 'PhoneBootError', code: 'emulator_unavailable' });
    expect(e!.message).toContain('ANDROID_HOME');
    expect(e!.message).toContain('sdkmanager "emulator" "platform-tools"');
  });

  it('says how to make an AVD when there is none', async () => {
    const sdk = await fakeSdk({ avds: [] });
    await sdk.startAdbServer();
    const e = await boot(sdk.env);
    expect(e).toMatchObject({ code: 'emulator_no_avd' });
    expect(e!.message).toContain('avdmanager create avd -n phonelease');
  });

  it("quotes the emulator's own words without KVM", async () => {
    const sdk = await fakeSdk({ env: { FAKE_EMULATOR_KVM: 'denied' } });
    await sdk.startAdbServer();
    const e = await boot(sdk.env);
    expect(e).toMatchObject({ code: 'emulator_no_kvm' });
    expect(e!.message).toContain('x86_64 emulation currently requires hardware acceleration!');
    expect(e!.message).toContain("This user doesn't have permissions to use KVM (/dev/kvm).");
    expect(e!.message).toContain('usermod -aG kvm');
  });

  it('refuses a port once the range the adb server scans is used up', async () => {
    const pool = new PortPool();
    const held: number[] = [];
    const e = await (async () => {
      for (;;) held.push(await pool.acquire());
    })().catch((err: unknown) => err as { code: string; message: string });
    expect(held.length).toBeLessThanOrEqual(PORT_PAIRS);
    expect(held.every((p) => p >= 5554 && p <= 5584 && p % 2 === 0)).toBe(true);
    expect(e).toMatchObject({ code: 'emulator_ports_exhausted' });
    expect(e.message).toContain('5554-5584');
  });
});

describe('phonelease doctor', () => {
  const byCheck = (findings: Finding[]) => Object.fromEntries(findings.map((f) => [f.check, f]));
  /** A /proc/cpuinfo stand-in with these CPU flags. */
  const cpuinfo = (flags: string) => {
    const file = join(mkdtempSync(join(tmpdir(), 'phonelease-cpuinfo-')), 'cpuinfo');
    writeFileSync(file, `processor\t: 0\nflags\t\t: ${flags}\n`);
    return file;
  };
  const bigHost = { cores: 16, memoryBytes: 64 * 1024 ** 3 };

  it('passes a machine with every part', async () => {
    const sdk = await fakeSdk({ token: 'dG9rZW4tdG9rZW4tdG9rZW4t' });
    const kvm = join(sdk.root, 'kvm');
    writeFileSync(kvm, '');
    const findings = await runDoctor({
      env: { PATH: process.env.PATH, ...sdk.env },
      kvmPath: kvm,
      cpuinfoPath: cpuinfo('fpu vme vmx sse2'),
      host: bigHost,
      freePorts: async () => Array.from({ length: PORT_PAIRS }, (_, i) => 5554 + 2 * i),
    });
    const f = byCheck(findings);
    expect(findings.filter((x) => x.status !== 'ok')).toEqual([]);
    expect(doctorBrief(findings)).toBeNull();
    expect(f.kvm!.detail).toBe('emulator -accel-check: "KVM (version 12) is installed and usable."');
    expect(f.emulator!.detail).toBe('Emulator 35.2.10.0 (build_id 12414864).');
    expect(f['adb-connections']!.detail).toContain('No emulator runs now to ask');
    expect(f.avd!.detail).toContain('"test_phone"');
    expect(f.capacity!.detail).toContain('8 emulators at once');
    expect(formatFindings(findings)).toContain('This machine can run phonelease over emulators');
  });

  it('names the fix for each missing part', async () => {
    const home = mkdtempSync(join(tmpdir(), 'phonelease-doctor-home-'));
    try {
      const findings = await runDoctor({
        env: { PATH: '/nonexistent', HOME: home },
        kvmPath: join(home, 'no-kvm'),
        host: { cores: 1, memoryBytes: 2 * 1024 ** 3 },
        freePorts: async () => [],
      });
      const f = byCheck(findings);
      expect(f.sdk!.status).toBe('fail');
      expect(f.emulator!.fix).toEqual(['sdkmanager --install "emulator"']);
      expect(f.adb!.fix).toEqual(['sdkmanager --install "platform-tools"']);
      expect(f['system-image']!.fix).toEqual([
        'sdkmanager --install "system-images;android-34;google_apis;x86_64"',
      ]);
      expect(f.avd!.fix).toEqual([
        'avdmanager create avd -n phonelease -k "system-images;android-34;google_apis;x86_64" -d pixel_6',
      ]);
      expect(f.kvm!.detail).toContain('is not found');
      expect(f.ports!.status).toBe('fail');
      expect(f.capacity!.status).toBe('warn');
      expect(formatFindings(findings)).toMatch(/\d+ problems to fix/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("takes KVM's state from emulator -accel-check, not from /dev/kvm being there", async () => {
    const kvmOf = async (kvm: string, flags = 'fpu vmx sse2') => {
      const sdk = await fakeSdk({ env: { FAKE_EMULATOR_KVM: kvm } });
      // /dev/kvm "exists" for every case: only the emulator's answer differs.
      const device = join(sdk.root, 'kvm');
      writeFileSync(device, '');
      const findings = await runDoctor({
        env: { PATH: process.env.PATH, ...sdk.env },
        kvmPath: device,
        cpuinfoPath: cpuinfo(flags),
        host: bigHost,
      });
      return { kvm: byCheck(findings).kvm!, brief: doctorBrief(findings) };
    };
    const [denied, noCpu, paravirtual] = await Promise.all([
      kvmOf('denied'),
      kvmOf('no-cpu'),
      kvmOf('usable', 'fpu sse2 hypervisor'),
    ]);
    expect(denied.kvm).toMatchObject({
      status: 'fail',
      detail:
        "emulator -accel-check says KVM is not usable (code 11): This user doesn't have permissions to use KVM (/dev/kvm).",
      fix: [expect.stringContaining('usermod -aG kvm'), expect.stringContaining('udev/rules.d')],
    });
    expect(denied.brief).toBe("KVM not usable (This user doesn't have permissions to use KVM (/dev/kvm))");
    expect(noCpu.kvm.detail).toContain('(code 3): KVM requires a CPU that supports vmx or svm');
    // Usable by the emulator's probe, on a CPU that shows no virtualisation: said, not hidden.
    expect(paravirtual.kvm).toMatchObject({ status: 'warn' });
    expect(paravirtual.kvm.detail).toContain('the CPU shows no vmx or svm flag');
    expect(paravirtual.brief).toBeNull();
  });

  it('reads -accel-check as current emulators print it and as older ones did', () => {
    expect(parseAccelCheck('accel:\n0\nKVM (version 12) is installed and usable.\naccel\n', '', 0)).toEqual({
      code: 0,
      status: 'KVM (version 12) is installed and usable.',
    });
    expect(
      parseAccelCheck('accel:\n11\nThis user cannot.\nSecond line.\naccel\n', 'ProbeKVM: x', 11),
    ).toEqual({
      code: 11,
      status: 'This user cannot.\nSecond line.',
    });
    expect(parseAccelCheck('', '/dev/kvm is not found: VT disabled in BIOS\n', 8)).toEqual({
      code: 8,
      status: '/dev/kvm is not found: VT disabled in BIOS',
    });
  });

  it('finds an SDK without AVDs, an AVD whose image is gone, and a token others can read', async () => {
    const noAvd = await fakeSdk({ avds: [] });
    const env = { PATH: process.env.PATH, ...noAvd.env };
    const kvm = join(noAvd.root, 'kvm');
    writeFileSync(kvm, '');
    expect(byCheck(await runDoctor({ env, kvmPath: kvm, host: bigHost })).avd).toMatchObject({
      status: 'fail',
      fix: [
        'avdmanager create avd -n phonelease -k "system-images;android-34;google_apis;x86_64" -d pixel_6',
      ],
    });

    const noImage = await fakeSdk({ noSystemImage: true, token: 'dG9rZW4tdG9rZW4tdG9rZW4t' });
    chmodSync(join(noImage.home, '.emulator_console_auth_token'), 0o644);
    const f = byCheck(
      await runDoctor({ env: { PATH: process.env.PATH, ...noImage.env }, kvmPath: kvm, host: bigHost }),
    );
    expect(f.avd).toMatchObject({
      status: 'fail',
      fix: ['sdkmanager --install "system-images;android-34;google_apis;x86_64"'],
    });
    expect(f.token).toMatchObject({
      status: 'warn',
      fix: [`chmod 600 ${join(noImage.home, '.emulator_console_auth_token')}`],
    });
  });
});
