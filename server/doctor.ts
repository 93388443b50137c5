/**
 * `phonelease doctor`: checks a machine for running the server over Android SDK emulators
 * (SDK root, emulator and adb, a system image, AVDs, KVM, the console token, free ports,
 * memory) and says what to install or fix, with the exact sdkmanager/avdmanager commands.
 */
import { constants, accessSync, existsSync, readdirSync, statSync } from 'node:fs';
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
}

export interface DoctorOptions {
  env?: Environment;
  /** The KVM device (tests point it elsewhere). */
  kvmPath?: string;
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
      });
    }
  } else {
    findings.push({
      check: 'emulator',
      status: 'fail',
      detail: root ? `No emulator in the SDK (${emulator} is missing).` : 'No emulator (no SDK).',
      fix: [`${sm} --install "emulator"`],
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
      });
    }
  } else {
    findings.push({
      check: 'adb',
      status: 'fail',
      detail: 'No adb.',
      fix: [`${sm} --install "platform-tools"`],
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
    });
  } else if (avds.length === 0) {
    findings.push({ check: 'avd', status: 'fail', detail: `No AVD in ${avdHome}.`, fix: [create] });
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
    });
  }

  if (!existsSync(kvmPath)) {
    findings.push({
      check: 'kvm',
      status: 'fail',
      detail: `${kvmPath} is not found: no hardware acceleration, so x86_64 images will not start (and others boot in minutes).`,
      fix: [
        'Enable virtualization (VT-x/AMD-V) in the BIOS',
        'sudo modprobe kvm_intel  # or kvm_amd',
        'sudo apt-get install qemu-kvm  # Debian/Ubuntu',
      ],
    });
  } else {
    let usable = true;
    try {
      accessSync(kvmPath, constants.R_OK | constants.W_OK);
    } catch {
      usable = false;
    }
    findings.push(
      usable
        ? { check: 'kvm', status: 'ok', detail: `${kvmPath} is usable.`, fix: [] }
        : {
            check: 'kvm',
            status: 'fail',
            detail: `This user doesn't have permissions to use KVM (${kvmPath}).`,
            fix: ['sudo usermod -aG kvm $USER  # then log out and in again'],
          },
    );
  }

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
