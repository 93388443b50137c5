/**
 * The emulator path's edges against the fake SDK: the console's token, replies and limits,
 * lock files after a crash, the guest's lock screen, goldens across server runs (stale
 * locks, saves cut short, leftovers, refusals, a close mid-making), public startup failures
 * in the tool's own words, the port range, and `phonelease doctor` on machines with and
 * without each part.
 */
import { spawn } from 'node:child_process';
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
import { processAlive } from '../../server/devices/emulator/owners.js';
import { PortPool, PORT_PAIRS } from '../../server/devices/emulator/ports.js';
import {
  doctorBrief,
  formatFindings,
  parseAccelCheck,
  runDoctor,
  type Finding,
} from '../../server/doctor.js';
import { makeFakeSdk, type FakeSdk, type FakeSdkOptions } from '../support/fake-sdk/index.js';

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
async function backendOn(sdk: FakeSdk, options: { workDir?: string } = {}) {
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), 'phonelease-emu-work-'));
  const lines: string[] = [];
  const record =
    (level: string) =>
    (message: string, fields?: Record<string, unknown>): void => {
      lines.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
    };
  const log = { debug() {}, info: record('info'), warn: record('warn'), error: record('error') };
  const env: Record<string, string | undefined> = { PATH: process.env.PATH, ...sdk.env };
  const backend = createEmulatorBackend({ log, env, workDir });
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
      ).toEqual([made!, 'pl_feedfeedfeed_1.avd', `pl_profile_${process.pid}_1.avd`].sort());
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
