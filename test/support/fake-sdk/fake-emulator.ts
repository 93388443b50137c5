/**
 * A fake Android SDK emulator for tests: it follows the real one's command line, console,
 * adb registration, lock files and snapshots as /work/shared/reference/android-emulator.md
 * describes them, and its guest is a virtual phone (server/devices/virtual) whose ADB service
 * is reached through the emulator's adb port, as QEMU passes that port to the guest's adbd;
 * the guest's adbd signs hosts in against its adb_keys first (guest-adbd.ts), and snapshots
 * are checked against the hardware config they were saved with (hardware.ts).
 *
 * Where the reference does not give the real tool's words (an unknown option, a missing
 * named snapshot), the fake says something plain and the backend does not depend on it.
 *
 * Environment switches (tests):
 *   FAKE_EMULATOR_COLD_BOOT_MS      cold boot time (default 1500)
 *   FAKE_EMULATOR_SNAPSHOT_LOAD_MS  snapshot load time (default 300)
 *   FAKE_EMULATOR_KVM               the host's KVM, as `-accel-check` reports it and x86_64
 *                                   images need it: `usable` (default), `missing` (no
 *                                   /dev/kvm), `denied` (no permission), `no-cpu` (no
 *                                   /dev/kvm and no vmx/svm: a VM without nested virtualisation)
 *   FAKE_EMULATOR_REFUSE_SNAPSHOT   `1`: every snapshot load that passes the checks fails while
 *                                   loading (`Failed to load snapshot`, then a cold boot)
 *   FAKE_EMULATOR_CRASH_AFTER_MS    the process dies (SIGKILL) this long after its boot
 *   FAKE_EMULATOR_VERSION           the emulator build it reports (default 35.2.10.0)
 *   FAKE_EMULATOR_LOSE_PORT_RACE    `1`: another program takes the console port between the
 *                                   caller's check and this emulator's bind, every time
 *   FAKE_EMULATOR_BOOT_CHATTER      lines of output a boot prints after choosing what to load
 *                                   (a real boot prints hundreds; default 0)
 *   FAKE_EMULATOR_ADB_CONNECTIONS   `1`: the adb port serves one host connection at a time, as
 *                                   builds before several AdbGuestPipe connections did
 *   FAKE_EMULATOR_SNAPSHOT_SAVE_MS  how long a console `avd snapshot save` takes, silent until
 *                                   its OK as a real save of GBs of RAM is (default 0)
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import type { DeviceLogger } from '../../../server/devices/types.js';
import type { VirtualPhone } from '../../../server/devices/virtual/phone.js';
import {
  hardwareConfig,
  readIni,
  refusal,
  systemImageOf,
  writeIni,
  type SnapshotRecord,
} from './hardware.js';
import { signInHost } from './guest-adbd.js';
import { Keyguard } from './keyguard.js';

const DEFAULT_VERSION = '35.2.10.0';
const BUILD_ID = '12414864';
/** Services a booting guest has published before the framework is up (Appium waits for the rest). */
const EARLY_SERVICES = new Set(['package']);

/** The guest's adb_keys beside the rest of its saved state (a snapshot, the disk). */
const ADB_KEYS = 'adb_keys';

const quiet: DeviceLogger = { debug() {}, info() {}, warn() {}, error() {} };

function say(level: 'INFO' | 'WARNING' | 'ERROR', message: string): void {
  process.stdout.write(`${level.padEnd(8)}| ${message}\n`);
}

function env(name: string): string | undefined {
  const v = process.env[name];
  return v === undefined || v === '' ? undefined : v;
}

function numberEnv(name: string, fallback: number): number {
  const v = env(name);
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : fallback;
}

function version(): string {
  return env('FAKE_EMULATOR_VERSION') ?? DEFAULT_VERSION;
}

export function avdHome(): string {
  const explicit = env('ANDROID_AVD_HOME');
  if (explicit) return explicit;
  const sdkHome = env('ANDROID_SDK_HOME');
  if (sdkHome) return join(sdkHome, '.android', 'avd');
  return join(env('HOME') ?? homedir(), '.android', 'avd');
}

function sdkRoot(): string | undefined {
  return env('ANDROID_HOME') ?? env('ANDROID_SDK_ROOT');
}

interface Options {
  avd: string | null;
  port: number | null;
  ports: [number, number] | null;
  readOnly: boolean;
  snapshot: string | null;
  noSnapshotLoad: boolean;
  noSnapshotSave: boolean;
  wipeData: boolean;
  cores: number | null;
  memory: number | null;
  gpu: string;
  listAvds: boolean;
  version: boolean;
  accelCheck: boolean;
}

class UsageFailure extends Error {}

const FLAGS_WITHOUT_VALUE = new Set([
  '-no-window',
  '-no-audio',
  '-no-boot-anim',
  '-delay-adb',
  '-no-metrics',
  '-verbose',
]);
const FLAGS_WITH_IGNORED_VALUE = new Set(['-accel', '-grpc', '-idle-grpc-timeout', '-camera-back']);

function parse(argv: string[]): Options {
  const o: Options = {
    avd: null,
    port: null,
    ports: null,
    readOnly: false,
    snapshot: null,
    noSnapshotLoad: false,
    noSnapshotSave: false,
    wipeData: false,
    cores: null,
    memory: null,
    gpu: 'auto',
    listAvds: false,
    version: false,
    accelCheck: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new UsageFailure(`option ${a} needs an argument`);
      return v;
    };
    if (a.startsWith('@')) o.avd = a.slice(1);
    else if (a === '-avd') o.avd = value();
    else if (a === '-list-avds') o.listAvds = true;
    else if (a === '-version') o.version = true;
    else if (a === '-accel-check') o.accelCheck = true;
    else if (a === '-port') {
      const v = value();
      if (!/^\d+$/.test(v)) throw new UsageFailure(`-port must be a number (got ${v})`);
      o.port = Number(v);
    } else if (a === '-ports') {
      const m = /^(\d+),(\d+)$/.exec(value());
      if (!m) throw new UsageFailure('-ports must be <console>,<adb>');
      o.ports = [Number(m[1]), Number(m[2])];
    } else if (a === '-read-only') o.readOnly = true;
    else if (a === '-snapshot') o.snapshot = value();
    else if (a === '-no-snapshot-load') o.noSnapshotLoad = true;
    else if (a === '-no-snapshot-save') o.noSnapshotSave = true;
    else if (a === '-no-snapshot') o.noSnapshotLoad = o.noSnapshotSave = true;
    else if (a === '-wipe-data') o.wipeData = true;
    else if (a === '-cores') o.cores = Number(value());
    else if (a === '-memory') o.memory = Number(value());
    else if (a === '-gpu') o.gpu = value();
    else if (FLAGS_WITHOUT_VALUE.has(a)) continue;
    else if (FLAGS_WITH_IGNORED_VALUE.has(a)) value();
    else throw new UsageFailure(`unknown option: ${a}`);
  }
  if (o.port !== null && o.ports !== null) throw new UsageFailure('-port and -ports cannot be used together');
  return o;
}

function listAvds(): string[] {
  const home = avdHome();
  if (!existsSync(home)) return [];
  return readdirSync(home)
    .filter((n) => n.endsWith('.ini'))
    .map((n) => n.slice(0, -4))
    .sort();
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** Listens on a port, or null when it is taken (by another emulator, between check and bind). */
function listen(port: number, onConnection: (s: net.Socket) => void): Promise<net.Server | null> {
  return new Promise((resolve) => {
    const server = net.createServer(onConnection);
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * The host's KVM as the emulator's CPU accelerator probe sees it (QEMU
 * android-emu/android/emulation/CpuAccelerator.cpp, ProbeKVM): its AndroidCpuAcceleration
 * code (0 ready, 3 no CPU support, 8 device not found, 11 permission) and status text.
 */
function kvmStatus(): { code: number; status: string } {
  switch (env('FAKE_EMULATOR_KVM') ?? 'usable') {
    case 'missing':
      return {
        code: 8,
        status: '/dev/kvm is not found: VT disabled in BIOS or KVM kernel module not loaded',
      };
    case 'no-cpu':
      return { code: 3, status: 'KVM requires a CPU that supports vmx or svm' };
    case 'denied':
      return {
        code: 11,
        status:
          "This user doesn't have permissions to use KVM (/dev/kvm).\n" +
          'The KVM line in /etc/group is: [LINE_NOT_FOUND]\n\n' +
          'If the current user has KVM permissions,\nthe KVM line in /etc/group should end with ":" followed by your username.\n\n' +
          'If we see LINE_NOT_FOUND, the kvm group may need to be created along with permissions:\n' +
          '    sudo groupadd -r kvm\n' +
          '    # Then ensure /lib/udev/rules.d/50-udev-default.rules contains something like:\n' +
          '    # KERNEL=="kvm", GROUP="kvm", MODE="0660"\n' +
          '    # and then run:\n' +
          '    sudo gpasswd -a $USER kvm\n\n' +
          'You may need to log out and back in for changes to take effect.\n',
      };
    default:
      return { code: 0, status: 'KVM (version 12) is installed and usable.' };
  }
}

/**
 * `emulator -accel-check`: the launcher hands it to `emulator-check accel`, which prints
 * `accel:`, the code, the status and `accel` again, and exits with the code. A refused
 * permission is also printed by the probe itself on stderr, as ProbeKVM does.
 */
function accelCheck(): number {
  const { code, status } = kvmStatus();
  if (code === 11) process.stderr.write(`ProbeKVM: ${status}\n`);
  process.stdout.write(`accel:\n${code}\n${status}\naccel\n`);
  return code;
}

export async function main(argv: string[]): Promise<number> {
  let o: Options;
  try {
    o = parse(argv);
  } catch (error) {
    if (!(error instanceof UsageFailure)) throw error;
    say('ERROR', error.message);
    return 1;
  }
  if (o.version) {
    process.stdout.write(
      `INFO    | Android emulator version ${version()} (build_id ${BUILD_ID}) (CL:N/A)\nAndroid emulator version ${version()} (build_id ${BUILD_ID}) (CL:N/A)\nCopyright (C) 2006-2024 The Android Open Source Project and many others.\n`,
    );
    return 0;
  }
  if (o.accelCheck) return accelCheck();
  if (o.listAvds) {
    say('INFO', `Storing crashdata in: /tmp/android-${process.env.USER ?? 'user'}/emu-crash-${version()}.db`);
    for (const name of listAvds()) process.stdout.write(`${name}\n`);
    return 0;
  }
  if (!o.avd) {
    say('ERROR', "No AVD specified. Use '@foo' or '-avd foo' to launch a virtual device named 'foo'");
    return 1;
  }
  const iniPath = join(avdHome(), `${o.avd}.ini`);
  if (!existsSync(iniPath)) {
    say('ERROR', `Unknown AVD name [${o.avd}], use -list-avds to see valid list.`);
    return 1;
  }
  const avdDir = readIni(iniPath).get('path') ?? join(avdHome(), `${o.avd}.avd`);
  const config = readIni(join(avdDir, 'config.ini'));
  const accel = kvmStatus();
  if ((config.get('abi.type') ?? 'x86_64').startsWith('x86') && accel.code !== 0) {
    say('ERROR', 'x86_64 emulation currently requires hardware acceleration!');
    process.stdout.write(`CPU acceleration status: ${accel.status.split('\n')[0]}\n`);
    process.stdout.write(
      'More info on configuring VM acceleration on Linux:\nhttps://developer.android.com/studio/run/emulator-acceleration#vm-linux\n',
    );
    return 1;
  }

  // Lock files: one read-write instance per AVD, any number of read-only ones, never both.
  const locks = existsSync(avdDir) ? readdirSync(avdDir).filter((n) => n.endsWith('.lock')) : [];
  const writerLock = locks.includes('multiinstance.lock');
  if (o.readOnly ? writerLock : locks.length > 0) {
    if (!o.readOnly && writerLock) {
      say('ERROR', 'Running multiple emulators with the same AVD is an experimental feature.');
      process.stdout.write('Please use -read-only flag to enable this feature.\n');
    } else {
      say(
        'ERROR',
        'Another emulator instance is running. Please close it or run all emulators with -read-only flag.',
      );
    }
    return 1;
  }

  // Ports: an explicit port must be free; otherwise the first free pair of 16 from 5554.
  let consolePort: number;
  let adbPort: number;
  if (o.port !== null || o.ports !== null) {
    consolePort = o.ports ? o.ports[0] : o.port!;
    adbPort = o.ports ? o.ports[1] : o.port! + 1;
  } else {
    let found: number | null = null;
    for (let p = 5554; p < 5554 + 32; p += 2) {
      if ((await portFree(p)) && (await portFree(p + 1))) {
        found = p;
        break;
      }
    }
    if (found === null) {
      say('ERROR', 'It seems too many emulator instances are running on this machine. Aborting.');
      return 1;
    }
    consolePort = found;
    adbPort = found + 1;
  }

  const guest = new Guest(avdDir, o, o.avd, config);
  const consoleServer =
    env('FAKE_EMULATOR_LOSE_PORT_RACE') === '1' ? null : await listen(consolePort, (s) => guest.console(s));
  const adbServer = consoleServer ? await listenAdb(adbPort, (s) => guest.forward(s)) : null;
  if (!consoleServer || !adbServer) {
    consoleServer?.close();
    say('ERROR', 'It seems too many emulator instances are running on this machine. Aborting.');
    return 1;
  }
  guest.lock(consolePort);
  guest.writeHardwareConfig();
  say('INFO', `Android emulator version ${version()} (build_id ${BUILD_ID}) (CL:N/A)`);
  say('INFO', `Serial number of this emulator (for ADB): emulator-${consolePort}`);
  registerWithAdbServer(adbPort);
  process.once('SIGINT', () => void guest.exit(true));
  process.once('SIGTERM', () => void guest.exit(true));
  await guest.boot();
  const crashAfter = env('FAKE_EMULATOR_CRASH_AFTER_MS');
  if (crashAfter !== undefined) setTimeout(() => process.kill(process.pid, 'SIGKILL'), Number(crashAfter));
  return new Promise<number>(() => undefined); // runs until killed
}

/**
 * The emulator's adb port. Builds before AdbGuestPipe served several connections stopped
 * listening once a host connected and listened again when it left (FAKE_EMULATOR_ADB_CONNECTIONS=1):
 * a second host was refused while the adb server held its connection.
 */
async function listenAdb(port: number, onConnection: (s: net.Socket) => void): Promise<net.Server | null> {
  if (env('FAKE_EMULATOR_ADB_CONNECTIONS') !== '1') return listen(port, onConnection);
  const one = (socket: net.Socket) => {
    server?.close();
    socket.once('close', () => {
      void listen(port, one).then((s) => (server = s));
    });
    onConnection(socket);
  };
  let server = await listen(port, one);
  return server;
}

/** The one message an emulator sends to the adb server at start: no reply, no retry. */
function registerWithAdbServer(adbPort: number): void {
  const port = numberEnv('ANDROID_ADB_SERVER_PORT', 5037);
  const payload = `host:emulator:${adbPort}`;
  const s = net.connect(port, '127.0.0.1', () => {
    s.end(payload.length.toString(16).padStart(4, '0') + payload);
  });
  s.on('error', () => undefined);
}

class Guest {
  private phone: VirtualPhone | null = null;
  /** The public keys the guest's adbd trusts (/data/misc/adb/adb_keys). */
  private adbKeys: string[] = [];
  /** The lock screen in front of the phone (keyguard.ts); a snapshot keeps its state. */
  private keyguard: Keyguard | null = null;
  /** Connections to the adb port that wait for the guest's adbd (adb shows `offline`). */
  private readonly waiting: net.Socket[] = [];
  private adbdUp = false;
  private lockFile: string | null = null;
  private exiting = false;
  private readonly token: string;
  private readonly tokenPath: string;

  /** The hardware config this instance runs with (hardware.ts). */
  private readonly hardware: Map<string, string>;

  constructor(
    private readonly avdDir: string,
    private readonly o: Options,
    private readonly name: string,
    config: ReadonlyMap<string, string>,
  ) {
    this.hardware = hardwareConfig({
      avdName: name,
      avdDir,
      avdHome: avdHome(),
      sdkRoot: sdkRoot() ?? '',
      config,
      cores: o.cores,
      memory: o.memory,
      gpu: o.gpu,
    });
    this.tokenPath = join(env('HOME') ?? homedir(), '.emulator_console_auth_token');
    if (!existsSync(this.tokenPath)) {
      writeFileSync(this.tokenPath, randomBytes(18).toString('base64'), { mode: 0o600 });
      chmodSync(this.tokenPath, 0o600);
    }
    this.token = readFileSync(this.tokenPath, 'utf8').trim();
  }

  private get disk(): string {
    return join(this.avdDir, 'userdata-qemu.img.d');
  }

  private snapshotDir(name: string): string {
    return join(this.avdDir, 'snapshots', name);
  }

  lock(consolePort: number): void {
    this.lockFile = join(
      this.avdDir,
      this.o.readOnly ? `read-only-${consolePort}.lock` : 'multiinstance.lock',
    );
    writeFileSync(this.lockFile, String(process.pid));
  }

  /**
   * Written at every start: `hardware-qemu.ini` of a read-write instance; a read-only one
   * keeps its config to itself (the real one writes a temporary file), as the AVD is shared.
   */
  writeHardwareConfig(): void {
    if (!this.o.readOnly) writeIni(join(this.avdDir, 'hardware-qemu.ini'), this.hardware);
  }

  /**
   * The snapshot to load, or null for a cold boot, said the way Quickboot says it: a load the
   * user turned off, a snapshot that is missing, one that failed while loading, and one
   * refused by checkValid (a changed config, image or emulator build: `Cold boot: <reason>`
   * alone, as Quickboot's failure report prints it).
   */
  private chooseSnapshot(): string | null {
    if (this.o.wipeData) return null;
    if (this.o.noSnapshotLoad) {
      say('WARNING', 'Cold boot:  requested by the user');
      return null;
    }
    const name = this.o.snapshot ?? 'default_boot';
    const dir = this.snapshotDir(name);
    if (!existsSync(join(dir, 'snapshot.pb'))) {
      if (this.o.snapshot) say('WARNING', `Failed to load snapshot '${name}'`);
      return null;
    }
    const saved = JSON.parse(readFileSync(join(dir, 'snapshot.pb'), 'utf8')) as SnapshotRecord;
    const reason = refusal(saved, readIni(join(dir, 'hardware.ini')), {
      emulator: this.build,
      hardware: this.hardware,
    });
    if (reason) {
      say('WARNING', `Cold boot: ${reason}`);
      return null;
    }
    if (env('FAKE_EMULATOR_REFUSE_SNAPSHOT') === '1') {
      say('WARNING', `Failed to load snapshot '${name}'`);
      say('WARNING', 'Cold boot: snapshot failed to load');
      return null;
    }
    return name;
  }

  private get build(): string {
    return `${version()} (build_id ${BUILD_ID})`;
  }

  async boot(): Promise<void> {
    if (this.o.wipeData && !this.o.readOnly) rmSync(this.disk, { recursive: true, force: true });
    const snapshot = this.chooseSnapshot();
    const chatter = numberEnv('FAKE_EMULATOR_BOOT_CHATTER', 0);
    for (let i = 1; i <= chatter; i++) say('INFO', `boot progress ${i}/${chatter}: ${'.'.repeat(72)}`);
    const started = Date.now();
    const total = snapshot
      ? numberEnv('FAKE_EMULATOR_SNAPSHOT_LOAD_MS', 300)
      : numberEnv('FAKE_EMULATOR_COLD_BOOT_MS', 1500);
    const from = snapshot ? this.snapshotDir(snapshot) : existsSync(this.disk) ? this.disk : null;
    this.adbKeys = this.loadAdbKeys(from);
    // The guest is loaded only to boot: `-version`, `-list-avds` and `-accel-check` (which
    // phonelease doctor runs) answer at once, as the real launcher does.
    const [{ VirtualPhone }, { buildSystemImage }, { createCommandTable }] = await Promise.all([
      import('../../../server/devices/virtual/phone.js'),
      import('../../../server/devices/virtual/system-image.js'),
      import('../../../server/devices/virtual/shell/commands/index.js'),
    ]);
    const phone = new VirtualPhone({
      systemRoot: buildSystemImage(),
      commands: createCommandTable(),
      log: quiet,
      host: '127.0.0.1',
      restoreFrom: from,
    });
    await phone.start();
    this.phone = phone;
    const { props, system } = phone.device;
    if (!snapshot) {
      // A cold boot starts at the home screen; what was on screen lived in RAM.
      await phone.input({ type: 'key', key: 'home' });
      props.set('sys.boot_completed', '');
      props.set('dev.bootcomplete', '');
    }
    // A cold boot comes up locked; a snapshot as it was saved.
    this.keyguard = Keyguard.install(phone.device.ui, snapshot ? this.savedKeyguard(snapshot) : true);
    // A restored snapshot already says boot_completed=1 (the reference's trap): only the boot
    // animation and the services tell that the framework is back.
    props.set('init.svc.bootanim', 'running');
    system.publishedServices = EARLY_SERVICES;
    await sleep(total * (snapshot ? 0.5 : 0.4));
    this.startAdbd();
    if (!snapshot) {
      await sleep(total * 0.45);
      props.set('sys.boot_completed', '1');
      props.set('dev.bootcomplete', '1');
      await sleep(total * 0.15);
    } else {
      await sleep(total * 0.5);
    }
    props.set('init.svc.bootanim', 'stopped');
    system.publishedServices = null;
    if (snapshot) say('INFO', `Successfully loaded snapshot '${snapshot}' using ${Date.now() - started} ms`);
    else say('INFO', `Boot completed in ${Date.now() - started} ms`);
  }

  private startAdbd(): void {
    this.adbdUp = true;
    for (const s of this.waiting.splice(0)) this.relay(s);
  }

  /** The emulator's adb port: forwarded to the guest's adbd once it runs. */
  forward(socket: net.Socket): void {
    socket.on('error', () => socket.destroy());
    if (!this.adbdUp) {
      socket.pause();
      this.waiting.push(socket);
      return;
    }
    this.relay(socket);
  }

  /** The guest's adbd: signs the host in against adb_keys (guest-adbd.ts), then serves it. */
  private relay(socket: net.Socket): void {
    if (socket.destroyed) return;
    signInHost(
      socket,
      () => this.adbKeys,
      (signedIn, early) => {
        if (!this.phone || signedIn.destroyed) return void signedIn.destroy();
        this.phone.serveAdb(signedIn, early);
        signedIn.resume();
      },
    );
  }

  /**
   * adb_keys as the guest has it: from the snapshot or the disk it boots from, else seeded at
   * this first boot from the host key the emulator passes in (ro.boot.qemu.adb.pubkey), which
   * it reads from its user directory (ANDROID_EMULATOR_HOME, else $ANDROID_SDK_HOME/.android,
   * else ~/.android). A host key made later is not seen by this AVD.
   */
  private loadAdbKeys(from: string | null): string[] {
    const saved = from ? join(from, ADB_KEYS) : null;
    if (saved && existsSync(saved)) return readFileSync(saved, 'utf8').split('\n').filter(Boolean);
    const sdkHome = env('ANDROID_SDK_HOME');
    const userDir =
      env('ANDROID_EMULATOR_HOME') ??
      (sdkHome ? join(sdkHome, '.android') : join(env('HOME') ?? homedir(), '.android'));
    const hostKey = join(userDir, 'adbkey.pub');
    return existsSync(hostKey) ? [readFileSync(hostKey, 'utf8').trim()] : [];
  }

  private snapshotNames(): string[] {
    const dir = join(this.avdDir, 'snapshots');
    return existsSync(dir) ? readdirSync(dir).filter((n) => existsSync(join(dir, n, 'snapshot.pb'))) : [];
  }

  private async saveSnapshot(name: string): Promise<void> {
    const dir = this.snapshotDir(name);
    rmSync(dir, { recursive: true, force: true });
    await this.phone!.saveState(dir);
    writeFileSync(join(dir, ADB_KEYS), this.adbKeys.join('\n'));
    const record: SnapshotRecord = {
      emulator: this.build,
      cores: this.hardware.get('hw.cpu.ncore')!,
      ram: this.hardware.get('hw.ramSize')!,
      systemImage: systemImageOf(this.hardware),
      keyguard: this.keyguard?.showing ? 'showing' : 'dismissed',
    };
    writeFileSync(join(dir, 'snapshot.pb'), JSON.stringify(record));
    writeIni(join(dir, 'hardware.ini'), this.hardware);
  }

  /** Whether the lock screen showed when `name` was saved. */
  private savedKeyguard(name: string): boolean {
    const saved = JSON.parse(
      readFileSync(join(this.snapshotDir(name), 'snapshot.pb'), 'utf8'),
    ) as Partial<SnapshotRecord>;
    return saved.keyguard === 'showing';
  }

  /** The console: the reference's line protocol, token and replies. */
  console(socket: net.Socket): void {
    let authed = this.token === '';
    const send = (...lines: string[]) => socket.write(lines.map((l) => `${l}\r\n`).join(''));
    socket.on('error', () => socket.destroy());
    if (authed) send("Android Console: type 'help' for a list of commands", 'OK');
    else
      send(
        'Android Console: Authentication required',
        "Android Console: type 'auth <auth_token>' to authenticate",
        'Android Console: you can find your <auth_token> in ',
        `'${this.tokenPath}'`,
        'OK',
      );
    let buffered = '';
    let queue = Promise.resolve();
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).replace(/\r/g, '').trim();
        buffered = buffered.slice(nl + 1);
        queue = queue.then(() => this.command(line, socket, send, authed, () => (authed = true)));
      }
    });
  }

  private async command(
    line: string,
    socket: net.Socket,
    send: (...lines: string[]) => void,
    authed: boolean,
    authenticate: () => void,
  ): Promise<void> {
    const words = line.split(/\s+/).filter(Boolean);
    const cmd = words.join(' ');
    if (words.length === 0) return;
    if (words[0] === 'auth') {
      if (words[1] === this.token) {
        authenticate();
        send('OK');
      } else send('KO: authentication token does not match ~/.emulator_console_auth_token');
      return;
    }
    if (cmd === 'quit' || cmd === 'exit') {
      socket.end();
      return;
    }
    if (cmd === 'ping') return send('I am alive!', 'OK');
    if (cmd === 'avd name') return send(this.name, 'OK');
    if (cmd === 'help')
      return send(
        'Android console commands:',
        '',
        '    help|h|?         print a list of commands',
        '    ping             check if the emulator is alive',
        '    avd              control virtual device execution',
        '    kill             kill the emulator instance',
        '    quit|exit        quit control session',
        '',
        "try 'help <command>' for command-specific help",
        'OK',
      );
    if (!authed) return send("KO: unknown command, try 'help'");
    if (cmd === 'kill') {
      send('OK: killing emulator, bye bye');
      socket.end();
      await this.exit(true);
      return;
    }
    if (cmd === 'avd status') return send('virtual device is running', 'OK');
    if (cmd === 'avd stop' || cmd === 'avd start') return send('OK');
    if (words[0] === 'avd' && words[1] === 'snapshot') {
      const [verb, name] = [words[2], words[3]];
      if (verb === 'list') {
        const names = this.snapshotNames();
        if (names.length === 0) return send('There is no snapshot available.', 'OK');
        return send('List of snapshots present on all disks:', ...names.map((n) => `${n}`), 'OK');
      }
      if (!name || !['save', 'load', 'delete'].includes(verb ?? ''))
        return send("KO: bad sub-command, try 'help avd snapshot'");
      if (this.o.readOnly) return send('KO: Snapshot save is disabled because "-read-only" was specified');
      try {
        if (verb === 'save') {
          await sleep(numberEnv('FAKE_EMULATOR_SNAPSHOT_SAVE_MS', 0));
          await this.saveSnapshot(name);
        } else if (verb === 'delete') rmSync(this.snapshotDir(name), { recursive: true, force: true });
        else if (!existsSync(join(this.snapshotDir(name), 'snapshot.pb')))
          return send(`KO: Snapshot '${name}' does not exist`);
        else await this.reload(name);
        return send('OK');
      } catch (error) {
        return send(`KO: ${(error as Error).message.split('\n')[0]}`);
      }
    }
    send("KO: unknown command, try 'help'");
  }

  /** `avd snapshot load`: the guest becomes the snapshot's phone; adb connections drop. */
  private async reload(name: string): Promise<void> {
    const old = this.phone;
    // The guest is loaded only to boot: `-version`, `-list-avds` and `-accel-check` (which
    // phonelease doctor runs) answer at once, as the real launcher does.
    const [{ VirtualPhone }, { buildSystemImage }, { createCommandTable }] = await Promise.all([
      import('../../../server/devices/virtual/phone.js'),
      import('../../../server/devices/virtual/system-image.js'),
      import('../../../server/devices/virtual/shell/commands/index.js'),
    ]);
    const phone = new VirtualPhone({
      systemRoot: buildSystemImage(),
      commands: createCommandTable(),
      log: quiet,
      host: '127.0.0.1',
      restoreFrom: this.snapshotDir(name),
    });
    await phone.start();
    this.keyguard = Keyguard.install(phone.device.ui, this.savedKeyguard(name));
    this.adbKeys = this.loadAdbKeys(this.snapshotDir(name));
    this.phone = phone;
    await old?.shutdown({ saveTo: null });
  }

  /** Stops the emulator: saves quickboot and the disk when this instance may write them. */
  async exit(save: boolean): Promise<void> {
    if (this.exiting) return;
    this.exiting = true;
    if (save && this.phone && !this.o.readOnly) {
      const quickboot = !this.o.noSnapshotSave && this.o.snapshot === null;
      if (quickboot) await this.saveSnapshot('default_boot');
      rmSync(this.disk, { recursive: true, force: true });
      await this.phone.saveState(this.disk);
      writeFileSync(join(this.disk, ADB_KEYS), this.adbKeys.join('\n'));
    }
    await this.phone?.shutdown({ saveTo: null });
    if (this.lockFile) {
      try {
        unlinkSync(this.lockFile);
      } catch {
        // already gone
      }
    }
    process.exit(0);
  }
}
