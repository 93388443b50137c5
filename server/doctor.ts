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

function sdkmanager(root: string | null): string {
  const inSdk = root ? join(root, 'cmdline-tools', 'latest', 'bin', 'sdkmanager') : null;
  return inSdk && existsSync(inSdk) ? inSdk : 'sdkmanager';
}

function avdmanager(root: string | null): string {
  const inSdk = root ? join(root, 'cmdline-tools', 'latest', 'bin', 'avdmanager') : null;
  return inSdk && existsSync(inSdk) ? inSdk : 'avdmanager';
}

export async function runDoctor(options: DoctorOptions = {}): Promise<Finding[]> {
  const env = options.env ?? process.env;
  const kvmPath = options.kvmPath ?? '/dev/kvm';
  const findings: Finding[] = [];
  const root = sdkRootOf(env);
  const sm = sdkmanager(root);
  const am = avdmanager(root);

  if (!root || !existsSync(root)) {
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
  } else findings.push({ check: 'sdk', status: 'ok', detail: `Android SDK at ${root}.`, fix: [] });

  const emulator = root ? join(root, 'emulator', 'emulator') : null;
  let emulatorRuns = false;
  if (emulator && existsSync(emulator)) {
    try {
      const out = await runTool(emulator, ['-version'], env, { timeoutMs: 20_000 });
      const version = parseEmulatorVersion(out.stdout + out.stderr) ?? 'an unknown version';
      findings.push({ check: 'emulator', status: 'ok', detail: `Emulator ${version}.`, fix: [] });
      emulatorRuns = true;
    } catch (error) {
      findings.push({
        check: 'emulator',
        status: 'fail',
        detail: `${emulator} does not run: ${String(error).split('\n')[0]}`,
        fix: [`${sm} --install "emulator"`],
        brief: "the Android SDK's emulator does not run",
      });
    }
  } else {
    findings.push({
      check: 'emulator',
      status: 'fail',
      detail: root ? `No emulator in the SDK (${emulator} is missing).` : 'No emulator (no SDK).',
      fix: [`${sm} --install "emulator"`],
      brief: `no emulator in the Android SDK at ${root}`,
    });
  }

  const sdkAdb = root ? join(root, 'platform-tools', 'adb') : null;
  const adb = sdkAdb && existsSync(sdkAdb) ? sdkAdb : onPath('adb', env);
  if (adb) {
    try {
      const out = await runTool(adb, ['version'], env, { timeoutMs: 20_000 });
      const version = /Version (\S+)/.exec(out.stdout)?.[1] ?? /version (\S+)/.exec(out.stdout)?.[1] ?? '?';
      findings.push({
        check: 'adb',
        status: adb === sdkAdb ? 'ok' : 'warn',
        detail: `adb ${version} (${adb}).`,
        fix: adb === sdkAdb ? [] : [`${sm} --install "platform-tools"  # the SDK's adb matches its emulator`],
      });
    } catch (error) {
      findings.push({
        check: 'adb',
        status: 'fail',
        detail: `${adb} does not run: ${String(error).split('\n')[0]}`,
        fix: [`${sm} --install "platform-tools"`],
        brief: 'adb does not run',
      });
    }
  } else {
    findings.push({
      check: 'adb',
      status: 'fail',
      detail: 'No adb.',
      fix: [`${sm} --install "platform-tools"`],
      brief: 'no adb',
    });
  }

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
      ? { check: 'system-image', status: 'ok', detail: `System images: ${images.join(', ')}.`, fix: [] }
      : {
          check: 'system-image',
          status: 'fail',
          detail: 'No system image installed.',
          fix: [`${sm} --install "${DEFAULT_SYSTEM_IMAGE}"`],
          brief: 'no system image in the Android SDK',
        },
  );

  const avdHome = avdHomeOf(env);
  let avds: string[] = [];
  if (emulatorRuns && emulator) {
    avds = parseAvdList((await runTool(emulator, ['-list-avds'], env).catch(() => ({ stdout: '' }))).stdout);
  }
  const create = `${am} create avd -n phonelease -k "${images[0] ?? DEFAULT_SYSTEM_IMAGE}" -d pixel_6`;
  const wanted = env.PHONELEASE_AVD;
  if (wanted && !avds.includes(wanted)) {
    findings.push({
      check: 'avd',
      status: 'fail',
      detail: `PHONELEASE_AVD is "${wanted}", which the emulator does not list (${avds.length ? avds.join(', ') : 'no AVDs'} in ${avdHome}).`,
      fix: [avds.length ? `export PHONELEASE_AVD=${avds[0]}` : create],
      brief: `no AVD named "${wanted}"`,
    });
  } else if (avds.length === 0) {
    findings.push({
      check: 'avd',
      status: 'fail',
      detail: `No AVD in ${avdHome}.`,
      fix: [create],
      brief: 'no AVD to run',
    });
  } else {
    const name = wanted ?? avds[0]!;
    const avd = readAvd(avdHome, name);
    const sysdir = avd?.config.get('image.sysdir.1');
    const missingImage = root && sysdir && !existsSync(join(root, sysdir));
    findings.push({
      check: 'avd',
      status: missingImage ? 'fail' : 'ok',
      detail: missingImage
        ? `The AVD "${name}" needs ${sysdir}, which is not installed.`
        : `The server runs the AVD "${name}"${avds.length > 1 ? ` (of ${avds.join(', ')}; PHONELEASE_AVD picks another)` : ''}.`,
      fix: missingImage ? [`${sm} --install "${sysdir!.replace(/\/$/, '').replaceAll('/', ';')}"`] : [],
      ...(missingImage ? { brief: `the AVD "${name}" has no system image` } : {}),
    });
  }

  findings.push(
    emulatorRuns && emulator
      ? await kvmFinding(emulator, env, options.cpuinfoPath ?? '/proc/cpuinfo')
      : kvmDeviceFinding(kvmPath),
  );

  const token = tokenPathOf(env);
  if (!existsSync(token)) {
    findings.push({
      check: 'token',
      status: 'ok',
      detail: `No console token yet (${token}); the emulator creates it at its first start and the server reads it.`,
      fix: [],
    });
  } else {
    const mode = statSync(token).mode & 0o777;
    findings.push(
      mode & 0o077
        ? {
            check: 'token',
            status: 'warn',
            detail: `The console token ${token} is readable by other users (mode ${mode.toString(8)}): they could drive your emulators.`,
            fix: [`chmod 600 ${token}`],
          }
        : { check: 'token', status: 'ok', detail: `Console token ${token} (only you can read it).`, fix: [] },
    );
  }

  const free = await (options.freePorts ?? freePairs)();
  const range = `${FIRST_CONSOLE_PORT}-${LAST_CONSOLE_PORT + 1}`;
  findings.push(
    free.length === 0
      ? {
          check: 'ports',
          status: 'fail',
          detail: `No free emulator port pair in ${range}.`,
          fix: ['adb devices  # lists running emulators', 'adb -s emulator-5554 emu kill  # stops one'],
          brief: `no free emulator ports in ${range}`,
        }
      : {
          check: 'ports',
          status: free.length < PORT_PAIRS ? 'warn' : 'ok',
          detail: `${free.length} of ${PORT_PAIRS} emulator port pairs free (${range}).`,
          fix: free.length < PORT_PAIRS ? ['adb devices  # other emulators hold the rest'] : [],
        },
  );

  const capacity: HostCapacity = emulatorCapacity(options.host);
  const small =
    Math.min(
      Math.floor(capacity.cores / CORES_PER_EMULATOR),
      Math.floor(capacity.memoryBytes / BYTES_PER_EMULATOR),
    ) < 1;
  findings.push({
    check: 'capacity',
    status: small ? 'warn' : 'ok',
    detail: `This host fits ${capacity.summary}.`,
    fix: small ? ['Use a host with at least 2 cores and 3 GB of memory per emulator'] : [],
  });
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
    return {
      check: 'adb-connections',
      status: 'ok',
      detail: `${SEVERAL_CONNECTIONS_NEEDED} No emulator runs now to ask; the server asks each emulator build on its first phone and says in its log when one cannot.`,
      fix: [],
    };
  }
  const refusing: string[] = [];
  for (const port of consolePorts)
    if (!(await acceptsAnotherAdbConnection(port + 1))) refusing.push(`emulator-${port}`);
  return refusing.length > 0
    ? {
        check: 'adb-connections',
        status: 'warn',
        detail: `${refusing.join(', ')} serve${refusing.length === 1 ? 's' : ''} one ADB connection at a time (the adb server's). ${SEVERAL_CONNECTIONS_NEEDED}`,
        fix: [ONE_CONNECTION_FIX],
      }
    : {
        check: 'adb-connections',
        status: 'ok',
        detail: `The running emulators (${consolePorts.map((p) => `emulator-${p}`).join(', ')}) serve several ADB connections at once, as the gateway needs.`,
        fix: [],
      };
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
    return {
      check: 'kvm',
      status: 'fail',
      detail: `emulator -accel-check did not answer: ${String(error).split('\n')[0]}`,
      fix: [`${emulator} -accel-check  # run it yourself to see why`],
      brief: 'emulator -accel-check did not answer',
    };
  }
  const said = check.status.split('\n')[0] ?? '';
  if (check.code === 0) {
    // The emulator opens /dev/kvm and asks its version; a paravirtual KVM (in a VM whose
    // CPU shows no vmx or svm) answers that too, and may still not run the emulator.
    const flags = cpuFlags(cpuinfoPath);
    return flags && !flags.has('vmx') && !flags.has('svm')
      ? {
          check: 'kvm',
          status: 'warn',
          detail: `emulator -accel-check: "${said}", but the CPU shows no vmx or svm flag (a VM without nested virtualisation?): emulators may not boot here.`,
          fix: ['Use a machine (or a CI runner) with hardware virtualisation if emulators do not boot'],
        }
      : { check: 'kvm', status: 'ok', detail: `emulator -accel-check: "${said}"`, fix: [] };
  }
  const fixes: Record<number, string[]> = {
    3: [
      'This CPU (or the VM it runs in) has no hardware virtualisation (vmx/svm): use a machine or CI runner that has it, or virtual phones here',
    ],
    8: [
      'Enable virtualization (VT-x/AMD-V) in the BIOS',
      'sudo modprobe kvm_intel  # or kvm_amd',
      'sudo apt-get install qemu-kvm  # Debian/Ubuntu',
    ],
    11: [
      'sudo usermod -aG kvm $USER  # then log out and in again',
      `echo 'KERNEL=="kvm", GROUP="kvm", MODE="0666", OPTIONS+="static_node=kvm"' | sudo tee /etc/udev/rules.d/99-kvm.rules  # CI runners`,
    ],
  };
  return {
    check: 'kvm',
    status: 'fail',
    detail: `emulator -accel-check says KVM is not usable (code ${check.code}): ${said}`,
    fix: fixes[check.code] ?? [`${emulator} -accel-check  # the emulator's whole answer`],
    brief: `KVM not usable (${said.replace(/\.$/, '')})`,
  };
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
    return {
      check: 'kvm',
      status: 'fail',
      detail: `${kvmPath} is not found: no hardware acceleration, so x86_64 images will not start (and others boot in minutes).`,
      fix: [
        'Enable virtualization (VT-x/AMD-V) in the BIOS',
        'sudo modprobe kvm_intel  # or kvm_amd',
        'sudo apt-get install qemu-kvm  # Debian/Ubuntu',
      ],
      brief: `no KVM (${kvmPath} not found)`,
    };
  }
  try {
    accessSync(kvmPath, constants.R_OK | constants.W_OK);
  } catch {
    return {
      check: 'kvm',
      status: 'fail',
      detail: `This user doesn't have permissions to use KVM (${kvmPath}).`,
      fix: ['sudo usermod -aG kvm $USER  # then log out and in again'],
      brief: `no permission to use KVM (${kvmPath})`,
    };
  }
  return {
    check: 'kvm',
    status: 'ok',
    detail: `${kvmPath} is usable (the emulator's own check, -accel-check, runs once the emulator is installed).`,
    fix: [],
  };
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
