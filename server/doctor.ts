/**
 * `phonelease doctor`: checks a machine for running the server over Android SDK emulators
 * (SDK root, emulator and adb, a system image, AVDs, KVM, the console token, free ports,
 * memory) and says what to install or fix, with the exact sdkmanager/avdmanager commands.
 *
 * KVM is usable when the emulator says so (`emulator -accel-check`), not when /dev/kvm
 * merely exists: the device may be there and refuse this user, or belong to a VM whose CPU
 * has no virtualisation. The embedded server's `device: 'auto'` runs emulators exactly when
 * no check fails (embeddedDevice).
 */
import { constants, accessSync, existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  BYTES_PER_EMULATOR,
  CORES_PER_EMULATOR,
  emulatorCapacity,
  type HostCapacity,
} from './devices/emulator/capacity.js';
import { UsageError } from '../src/cli/usage.js';
import {
  ONE_CONNECTION_FIX,
  SEVERAL_CONNECTIONS_NEEDED,
  acceptsAnotherAdbConnection,
} from './devices/emulator/adb-connections.js';
import { readAvd } from './devices/emulator/avd.js';
import { FIRST_CONSOLE_PORT, LAST_CONSOLE_PORT, PORT_PAIRS, freePairs } from './devices/emulator/ports.js';
import {
  avdHomeOf,
  onPath,
  parseAvdList,
  parseEmulatorVersion,
  runTool,
  sdkRootOf,
  tokenPathOf,
  type Environment,
} from './devices/emulator/sdk.js';

export const DEFAULT_SYSTEM_IMAGE = 'system-images;android-34;google_apis;x86_64';

export interface Finding {
  check:
    | 'sdk'
    | 'emulator'
    | 'adb'
    | 'adb-connections'
    | 'system-image'
    | 'avd'
    | 'kvm'
    | 'token'
    | 'ports'
    | 'capacity';
  status: 'ok' | 'warn' | 'fail';
  /** What was found, in plain words. */
  detail: string;
  /** Commands or steps that fix it (empty when ok). */
  fix: string[];
  /** A failure in a few words, for one-line summaries ("no Android SDK (ANDROID_HOME unset)"). */
  brief?: string;
}

export interface DoctorOptions {
  env?: Environment;
  /** The KVM device, checked when the emulator cannot be asked (tests point it elsewhere). */
  kvmPath?: string;
  /** Where the CPU's flags are read (default /proc/cpuinfo; tests point it elsewhere). */
  cpuinfoPath?: string;
  /** Host size for the capacity line (default: this machine). */
  host?: { cores: number; memoryBytes: number };
  /** Console ports whose pair is free (default: probed now). */
  freePorts?: () => Promise<number[]>;
}

/** The SDK's own command-line tool when it is installed, else the one on PATH. */
function cmdlineTool(root: string | null, name: 'sdkmanager' | 'avdmanager'): string {
  const inSdk = root ? join(root, 'cmdline-tools', 'latest', 'bin', name) : null;
  return inSdk && existsSync(inSdk) ? inSdk : name;
}

// The findings of each status, their keys in the order `doctor --json` prints them.
type Check = Finding['check'];
const ok = (check: Check, detail: string): Finding => ({ check, status: 'ok', detail, fix: [] });
function warn(check: Check, detail: string, fix: string[]): Finding {
  return { check, status: 'warn', detail, fix };
}
function fail(check: Check, detail: string, fix: string[], brief: string): Finding {
  return { check, status: 'fail', detail, fix, brief };
}

/** Fixes for a missing KVM, whether the emulator or /dev/kvm tells (shared: read, never changed). */
const ENABLE_KVM = [
  'Enable virtualization (VT-x/AMD-V) in the BIOS',
  'sudo modprobe kvm_intel  # or kvm_amd',
  'sudo apt-get install qemu-kvm  # Debian/Ubuntu',
];
const JOIN_KVM_GROUP = 'sudo usermod -aG kvm $USER  # then log out and in again';

export async function runDoctor(options: DoctorOptions = {}): Promise<Finding[]> {
  const env = options.env ?? process.env;
  const kvmPath = options.kvmPath ?? '/dev/kvm';
  const findings: Finding[] = [];
  const root = sdkRootOf(env);
  const sm = cmdlineTool(root, 'sdkmanager');
  const am = cmdlineTool(root, 'avdmanager');

  if (!root || !existsSync(root)) {
    // Written out, not fail(): its brief comes before its fix in `doctor --json`.
    findings.push({
      check: 'sdk',
      status: 'fail',
      detail: root
        ? `ANDROID_HOME points at ${root}, which does not exist.`
        : 'No Android SDK: ANDROID_HOME (or ANDROID_SDK_ROOT) is not set.',
      brief: root ? `no Android SDK at ${root}` : 'no Android SDK (ANDROID_HOME unset)',
      fix: [
        'Install the Android SDK command-line tools (https://developer.android.com/studio#command-line-tools-only) into $HOME/Android/Sdk/cmdline-tools/latest',
        'export ANDROID_HOME=$HOME/Android/Sdk',
      ],
    });
  } else findings.push(ok('sdk', `Android SDK at ${root}.`));

  const emulator = root ? join(root, 'emulator', 'emulator') : null;
  const installEmulator = [`${sm} --install "emulator"`];
  let emulatorRuns = false;
  if (emulator && existsSync(emulator)) {
    try {
      const out = await runTool(emulator, ['-version'], env, { timeoutMs: 20_000 });
      const version = parseEmulatorVersion(out.stdout + out.stderr) ?? 'an unknown version';
      findings.push(ok('emulator', `Emulator ${version}.`));
      emulatorRuns = true;
    } catch (error) {
      const why = `${emulator} does not run: ${String(error).split('\n')[0]}`;
      findings.push(fail('emulator', why, installEmulator, "the Android SDK's emulator does not run"));
    }
  } else {
    const why = root ? `No emulator in the SDK (${emulator} is missing).` : 'No emulator (no SDK).';
    findings.push(fail('emulator', why, installEmulator, `no emulator in the Android SDK at ${root}`));
  }

  const sdkAdb = root ? join(root, 'platform-tools', 'adb') : null;
  const adb = sdkAdb && existsSync(sdkAdb) ? sdkAdb : onPath('adb', env);
  const installAdb = `${sm} --install "platform-tools"`;
  if (adb) {
    try {
      const out = await runTool(adb, ['version'], env, { timeoutMs: 20_000 });
      const version = /Version (\S+)/.exec(out.stdout)?.[1] ?? /version (\S+)/.exec(out.stdout)?.[1] ?? '?';
      const detail = `adb ${version} (${adb}).`;
      findings.push(
        adb === sdkAdb
          ? ok('adb', detail)
          : warn('adb', detail, [`${installAdb}  # the SDK's adb matches its emulator`]),
      );
    } catch (error) {
      const why = `${adb} does not run: ${String(error).split('\n')[0]}`;
      findings.push(fail('adb', why, [installAdb], 'adb does not run'));
    }
  } else findings.push(fail('adb', 'No adb.', [installAdb], 'no adb'));

  if (adb && findings.at(-1)?.status !== 'fail') findings.push(await adbConnectionsFinding(adb, env));

  const images: string[] = [];
  const imagesDir = root ? join(root, 'system-images') : null;
  if (imagesDir && existsSync(imagesDir)) {
    for (const api of readdirSync(imagesDir))
      for (const tag of readdirSync(join(imagesDir, api)))
        for (const abi of readdirSync(join(imagesDir, api, tag)))
          if (existsSync(join(imagesDir, api, tag, abi, 'source.properties')))
            images.push(`system-images;${api};${tag};${abi}`);
  }
  findings.push(
    images.length > 0
      ? ok('system-image', `System images: ${images.join(', ')}.`)
      : fail(
          'system-image',
          'No system image installed.',
          [`${sm} --install "${DEFAULT_SYSTEM_IMAGE}"`],
          'no system image in the Android SDK',
        ),
  );

  const avdHome = avdHomeOf(env);
  let avds: string[] = [];
  if (emulatorRuns && emulator) {
    avds = parseAvdList((await runTool(emulator, ['-list-avds'], env).catch(() => ({ stdout: '' }))).stdout);
  }
  const create = `${am} create avd -n phonelease -k "${images[0] ?? DEFAULT_SYSTEM_IMAGE}" -d pixel_6`;
  const wanted = env.PHONELEASE_AVD;
  if (wanted && !avds.includes(wanted)) {
    const why = `PHONELEASE_AVD is "${wanted}", which the emulator does not list (${avds.length ? avds.join(', ') : 'no AVDs'} in ${avdHome}).`;
    const fix = [avds.length ? `export PHONELEASE_AVD=${avds[0]}` : create];
    findings.push(fail('avd', why, fix, `no AVD named "${wanted}"`));
  } else if (avds.length === 0) {
    findings.push(fail('avd', `No AVD in ${avdHome}.`, [create], 'no AVD to run'));
  } else {
    const name = wanted ?? avds[0]!;
    const sysdir = readAvd(avdHome, name)?.config.get('image.sysdir.1');
    const others = avds.length > 1 ? ` (of ${avds.join(', ')}; PHONELEASE_AVD picks another)` : '';
    findings.push(
      root && sysdir && !existsSync(join(root, sysdir))
        ? fail(
            'avd',
            `The AVD "${name}" needs ${sysdir}, which is not installed.`,
            [`${sm} --install "${sysdir.replace(/\/$/, '').replaceAll('/', ';')}"`],
            `the AVD "${name}" has no system image`,
          )
        : ok('avd', `The server runs the AVD "${name}"${others}.`),
    );
  }

  findings.push(
    emulatorRuns && emulator
      ? await kvmFinding(emulator, env, options.cpuinfoPath ?? '/proc/cpuinfo')
      : kvmDeviceFinding(kvmPath),
  );

  const token = tokenPathOf(env);
  const mode = existsSync(token) ? statSync(token).mode & 0o777 : null;
  findings.push(
    mode === null
      ? ok(
          'token',
          `No console token yet (${token}); the emulator creates it at its first start and the server reads it.`,
        )
      : mode & 0o077
        ? warn(
            'token',
            `The console token ${token} is readable by other users (mode ${mode.toString(8)}): they could drive your emulators.`,
            [`chmod 600 ${token}`],
          )
        : ok('token', `Console token ${token} (only you can read it).`),
  );

  const free = await (options.freePorts ?? freePairs)();
  const range = `${FIRST_CONSOLE_PORT}-${LAST_CONSOLE_PORT + 1}`;
  const ports = `${free.length} of ${PORT_PAIRS} emulator port pairs free (${range}).`;
  findings.push(
    free.length === 0
      ? fail(
          'ports',
          `No free emulator port pair in ${range}.`,
          ['adb devices  # lists running emulators', 'adb -s emulator-5554 emu kill  # stops one'],
          `no free emulator ports in ${range}`,
        )
      : free.length < PORT_PAIRS
        ? warn('ports', ports, ['adb devices  # other emulators hold the rest'])
        : ok('ports', ports),
  );

  const capacity: HostCapacity = emulatorCapacity(options.host);
  const small =
    Math.min(
      Math.floor(capacity.cores / CORES_PER_EMULATOR),
      Math.floor(capacity.memoryBytes / BYTES_PER_EMULATOR),
    ) < 1;
  const fits = `This host fits ${capacity.summary}.`;
  findings.push(
    small
      ? warn('capacity', fits, ['Use a host with at least 2 cores and 3 GB of memory per emulator'])
      : ok('capacity', fits),
  );
  return findings;
}

/**
 * Whether the emulators running now serve ADB clients beside the adb server (see
 * devices/emulator/adb-connections.ts; which version began to is not documented, so each
 * running emulator is asked, and the server asks each build it runs).
 */
async function adbConnectionsFinding(adb: string, env: Environment): Promise<Finding> {
  const listed = await runTool(adb, ['devices'], env, { timeoutMs: 20_000 }).catch(() => ({ stdout: '' }));
  const consolePorts = [...listed.stdout.matchAll(/^emulator-(\d+)\tdevice$/gm)].map((m) => Number(m[1]));
  if (consolePorts.length === 0) {
    return ok(
      'adb-connections',
      `${SEVERAL_CONNECTIONS_NEEDED} No emulator runs now to ask; the server asks each emulator build on its first phone and says in its log when one cannot.`,
    );
  }
  const refusing: string[] = [];
  for (const port of consolePorts)
    if (!(await acceptsAnotherAdbConnection(port + 1))) refusing.push(`emulator-${port}`);
  return refusing.length > 0
    ? warn(
        'adb-connections',
        `${refusing.join(', ')} serve${refusing.length === 1 ? 's' : ''} one ADB connection at a time (the adb server's). ${SEVERAL_CONNECTIONS_NEEDED}`,
        [ONE_CONNECTION_FIX],
      )
    : ok(
        'adb-connections',
        `The running emulators (${consolePorts.map((p) => `emulator-${p}`).join(', ')}) serve several ADB connections at once, as the gateway needs.`,
      );
}

/** What `emulator -accel-check` said: the emulator's AndroidCpuAcceleration code and status. */
export interface AccelCheck {
  /** 0 when KVM is installed and usable; else why not (3 no CPU support, 8 no /dev/kvm, 11 permission, ...). */
  code: number;
  /** The emulator's words, e.g. "KVM (version 12) is installed and usable." */
  status: string;
}

/**
 * Reads `emulator -accel-check`. Current emulators hand it to `emulator-check accel`, which
 * prints `accel:`, the code, the status (sometimes several lines) and `accel`; older ones
 * printed the status alone. Either way the exit status is the code.
 */
export function parseAccelCheck(stdout: string, stderr: string, exitCode: number): AccelCheck {
  const lines = stdout.split('\n').map((l) => l.trimEnd());
  const start = lines.indexOf('accel:');
  if (start >= 0 && /^-?\d+$/.test(lines[start + 1] ?? '')) {
    const end = lines.lastIndexOf('accel');
    const status = lines
      .slice(start + 2, end > start ? end : undefined)
      .join('\n')
      .trim();
    return { code: Number(lines[start + 1]), status };
  }
  return { code: exitCode, status: `${stdout}\n${stderr}`.trim() };
}

/** Runs `emulator -accel-check` (a failing check exits with its code). */
export async function accelCheck(emulator: string, env: Environment): Promise<AccelCheck> {
  try {
    const out = await runTool(emulator, ['-accel-check'], env, { timeoutMs: 30_000 });
    return parseAccelCheck(out.stdout, out.stderr, 0);
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return parseAccelCheck(failed.stdout ?? '', failed.stderr ?? '', failed.code);
  }
}

/** KVM as the emulator sees it, with the fix for each reason it gives. */
async function kvmFinding(emulator: string, env: Environment, cpuinfoPath: string): Promise<Finding> {
  let check: AccelCheck;
  try {
    check = await accelCheck(emulator, env);
  } catch (error) {
    const why = `emulator -accel-check did not answer: ${String(error).split('\n')[0]}`;
    const fix = [`${emulator} -accel-check  # run it yourself to see why`];
    return fail('kvm', why, fix, 'emulator -accel-check did not answer');
  }
  const said = check.status.split('\n')[0] ?? '';
  if (check.code === 0) {
    // The emulator opens /dev/kvm and asks its version; a paravirtual KVM (in a VM whose
    // CPU shows no vmx or svm) answers that too, and may still not run the emulator.
    const flags = cpuFlags(cpuinfoPath);
    return flags && !flags.has('vmx') && !flags.has('svm')
      ? warn(
          'kvm',
          `emulator -accel-check: "${said}", but the CPU shows no vmx or svm flag (a VM without nested virtualisation?): emulators may not boot here.`,
          ['Use a machine (or a CI runner) with hardware virtualisation if emulators do not boot'],
        )
      : ok('kvm', `emulator -accel-check: "${said}"`);
  }
  const fixes: Record<number, string[]> = {
    3: [
      'This CPU (or the VM it runs in) has no hardware virtualisation (vmx/svm): use a machine or CI runner that has it, or virtual phones here',
    ],
    8: ENABLE_KVM,
    11: [
      JOIN_KVM_GROUP,
      `echo 'KERNEL=="kvm", GROUP="kvm", MODE="0666", OPTIONS+="static_node=kvm"' | sudo tee /etc/udev/rules.d/99-kvm.rules  # CI runners`,
    ],
  };
  return fail(
    'kvm',
    `emulator -accel-check says KVM is not usable (code ${check.code}): ${said}`,
    fixes[check.code] ?? [`${emulator} -accel-check  # the emulator's whole answer`],
    `KVM not usable (${said.replace(/\.$/, '')})`,
  );
}

/** The CPU's flags from /proc/cpuinfo, or null where there is none to read (macOS). */
function cpuFlags(path: string): Set<string> | null {
  try {
    const line = /^flags\s*:(.*)$/m.exec(readFileSync(path, 'utf8'))?.[1];
    return line === undefined ? null : new Set(line.trim().split(/\s+/));
  } catch {
    return null;
  }
}

/** Without an emulator to ask: /dev/kvm exists and this user may open it, at least. */
function kvmDeviceFinding(kvmPath: string): Finding {
  if (!existsSync(kvmPath)) {
    const why = `${kvmPath} is not found: no hardware acceleration, so x86_64 images will not start (and others boot in minutes).`;
    return fail('kvm', why, ENABLE_KVM, `no KVM (${kvmPath} not found)`);
  }
  try {
    accessSync(kvmPath, constants.R_OK | constants.W_OK);
  } catch {
    const why = `This user doesn't have permissions to use KVM (${kvmPath}).`;
    return fail('kvm', why, [JOIN_KVM_GROUP], `no permission to use KVM (${kvmPath})`);
  }
  return ok(
    'kvm',
    `${kvmPath} is usable (the emulator's own check, -accel-check, runs once the emulator is installed).`,
  );
}

/** The first failure in a few words, or null when every check passed. */
export function doctorBrief(findings: readonly Finding[]): string | null {
  const failed = findings.find((f) => f.status === 'fail');
  return failed ? (failed.brief ?? failed.detail) : null;
}

const MARK = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const;

export function formatFindings(findings: Finding[]): string {
  const lines: string[] = [];
  for (const f of findings) {
    lines.push(`[${MARK[f.status]}] ${f.check}: ${f.detail}`);
    for (const step of f.fix) lines.push(`         ${step}`);
  }
  const failed = findings.filter((f) => f.status === 'fail').length;
  lines.push(
    '',
    failed === 0
      ? 'This machine can run phonelease over emulators: phonelease server --device emulator'
      : `${failed} problem${failed === 1 ? '' : 's'} to fix before phonelease server --device emulator works.`,
  );
  return lines.join('\n');
}

export const DOCTOR_USAGE = `Usage: phonelease doctor [--json]

Checks this machine for running the server over Android SDK emulators and prints what to
install or fix. Exits 1 when something must be fixed.`;

/** `phonelease doctor`: returns the exit code. */
export async function runDoctorCommand(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(DOCTOR_USAGE);
    return 0;
  }
  const unknown = argv.find((a) => a !== '--json');
  if (unknown !== undefined) throw new UsageError(`doctor: unknown argument ${unknown}\n\n${DOCTOR_USAGE}`);
  const findings = await runDoctor();
  if (argv.includes('--json')) process.stdout.write(JSON.stringify(findings) + '\n');
  else process.stdout.write(formatFindings(findings) + '\n');
  return findings.some((f) => f.status === 'fail') ? 1 : 0;
}
