/**
 * APKs installed into the golden snapshot (`--preinstall`), so every phone started from it
 * has them and a test whose apps are all preinstalled installs nothing at lease time.
 *
 * - The golden's key includes each app's content hash: a new build makes a new golden once,
 *   the same build reuses the golden made for it (snapshots.ts).
 * - APKs of one package (a base and its splits) install together (`install-multiple`),
 *   with the flags the lease's app install uses: `-r` replaces, `-t` allows test-only
 *   builds, `-d` a lower version code, `-g` grants the runtime permissions the app asks for.
 * - What was installed is recorded on the phone exactly as the lease's app install records
 *   it (src/apk/app-files.ts), so a lease asked for the same build sees it is there and
 *   installs nothing.
 */
import { basename } from 'node:path';
import {
  appRecordLine,
  appRecordPath,
  APP_RECORD_DIR,
  readApps,
  type AppBundle,
} from '../../../src/apk/app-files.js';
import { PhoneBootError } from '../types.js';
import { runTool, type Sdk } from './sdk.js';

function preinstallFailure(message: string): PhoneBootError {
  return new PhoneBootError('emulator_preinstall_failed', message);
}

/**
 * Reads the APKs to preinstall, grouped into apps. Throws a failure that names the file for
 * one that is missing or not an APK: the backend reads them when it is made, so a bad
 * `--preinstall` stops the server at its start, not at its first session. Relative paths
 * are taken from where the server was started.
 */
export function readPreinstall(paths: readonly string[]): AppBundle[] {
  try {
    return readApps(paths);
  } catch (error) {
    throw preinstallFailure(`--preinstall: ${(error as Error).message}`);
  }
}

/** What the golden key takes from the preinstalled apps ('' for none, so older keys stay). */
export function preinstallKey(apps: readonly AppBundle[]): string {
  return apps
    .map((a) => `${a.package}=${a.hash}`)
    .sort()
    .join('\n');
}

/** pm's failure in its own words (`Failure [INSTALL_FAILED_...: ...]`), from adb's output. */
function pmFailure(output: string): string | null {
  return /Failure \[([^\]]+)\]/.exec(output)?.[1] ?? /(INSTALL_[A-Z_]+[^\n]*)/.exec(output)?.[1] ?? null;
}

const HINTS: [RegExp, string][] = [
  [
    /INSTALL_FAILED_OLDER_SDK/,
    "the app's minSdkVersion is above the AVD's Android version: use an AVD with a newer system image",
  ],
  [
    /INSTALL_FAILED_NO_MATCHING_ABIS/,
    "the app has native code for other CPUs than the AVD's: build it for x86_64 or use an AVD of its ABI",
  ],
  [
    /INSTALL_FAILED_UPDATE_INCOMPATIBLE/,
    'another signature of the app is installed on the AVD: uninstall it from the base AVD first',
  ],
  [
    /INSTALL_FAILED_MISSING_SPLIT/,
    'a split APK of the app is missing: pass all of its APKs with --preinstall',
  ],
];

/**
 * Installs the apps on a booted phone and records them under APP_RECORD_DIR. Rejects with
 * a public failure quoting the package manager when an install fails.
 */
export async function installApps(sdk: Sdk, serial: string, apps: readonly AppBundle[]): Promise<void> {
  const adb = (args: string[], timeoutMs?: number) =>
    runTool(sdk.adb, ['-s', serial, ...args], sdk.env, timeoutMs ? { timeoutMs } : {});
  for (const app of apps) {
    const flags = ['-r', '-t', '-d', '-g'];
    const files = app.files.map((f) => f.path);
    const args =
      files.length === 1 ? ['install', ...flags, files[0]!] : ['install-multiple', ...flags, ...files];
    let output: string;
    try {
      const r = await adb(args, 5 * 60_000);
      output = r.stdout + r.stderr;
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string; message?: string };
      output = `${e.stdout ?? ''}${e.stderr ?? ''}${e.message ?? ''}`;
    }
    if (!/^Success/m.test(output)) {
      const said = pmFailure(output) ?? (output.trim().split('\n').pop() || 'no answer');
      const hint = HINTS.find(([re]) => re.test(said))?.[1];
      throw preinstallFailure(
        `Preinstalling ${files.map((f) => basename(f)).join(', ')} (${app.package}) into the golden snapshot failed: ${said}${hint ? ` (${hint})` : ''}.`,
      );
    }
    const base = /^package:(\S+)/m.exec((await adb(['shell', `pm path ${app.package}`])).stdout)?.[1];
    if (!base)
      throw preinstallFailure(`${app.package} installed, but \`pm path ${app.package}\` names no APK.`);
    await adb([
      'shell',
      `mkdir -p ${APP_RECORD_DIR} && echo '${appRecordLine(app.hash, base)}' > ${appRecordPath(app.package)}`,
    ]);
  }
}
