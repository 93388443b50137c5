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
 *   it, so a lease asked for the same build sees it is there and installs nothing (a debug
 *   build's version code cannot tell two builds apart): one file per package under
 *   INSTALL_RECORD_DIR, one line `<app hash> <base APK path>`. The app hash is the SHA-256
 *   of its APKs' SHA-256s (hex, sorted, one a line); the path is what `pm path` prints
 *   first, which names this install, so an app replaced since does not pass for this build.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { readApk } from '../virtual/apk/manifest.js';
import { PhoneBootError } from '../types.js';
import { runTool, type Sdk } from './sdk.js';

/** Where a phone records the apps installed on it and their hashes (/data/local/tmp survives). */
export const INSTALL_RECORD_DIR = '/data/local/tmp/.phonelease/apps';

export interface PreinstallApp {
  package: string;
  /** Its APK files, in the order given. */
  files: string[];
  /** The app's content hash as recorded on the phone. */
  sha256: string;
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** An app's hash from its APKs' hashes (one APK or several, the same rule). */
function appHash(fileHashes: readonly string[]): string {
  return sha256([...fileHashes].sort().join('\n'));
}

/** The record of one app on the phone. */
export function installRecordPath(pkg: string): string {
  return `${INSTALL_RECORD_DIR}/${pkg}`;
}

function preinstallFailure(message: string): PhoneBootError {
  return new PhoneBootError('emulator_preinstall_failed', message);
}

/**
 * Reads the APKs to preinstall, grouped by package. Throws a failure that names the file for
 * one that is missing or not an APK: the backend reads them when it is made, so a bad
 * `--preinstall` stops the server at its start, not at its first session.
 */
export function readPreinstall(paths: readonly string[]): PreinstallApp[] {
  const byPackage = new Map<string, { files: string[]; hashes: string[] }>();
  for (const given of paths) {
    // `--preinstall app.apk` names a file where the server was started.
    const path = resolve(given);
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch (error) {
      throw preinstallFailure(
        `The APK to preinstall cannot be read: ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)}). Check the --preinstall path.`,
      );
    }
    let pkg: string;
    try {
      pkg = readApk(bytes).package;
    } catch (error) {
      throw preinstallFailure(
        `${path} is not an APK (${(error as Error).message}). --preinstall takes the .apk files your build writes (an .aab must be turned into APKs first, e.g. with bundletool).`,
      );
    }
    const entry = byPackage.get(pkg) ?? { files: [], hashes: [] };
    entry.files.push(path);
    entry.hashes.push(sha256(bytes));
    byPackage.set(pkg, entry);
  }
  return [...byPackage].map(([pkg, { files, hashes }]) => ({ package: pkg, files, sha256: appHash(hashes) }));
}

/** What the golden key takes from the preinstalled apps ('' for none, so older keys stay). */
export function preinstallKey(apps: readonly PreinstallApp[]): string {
  return apps
    .map((a) => `${a.package}=${a.sha256}`)
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
 * Installs the apps on a booted phone and records them under INSTALL_RECORD_DIR. Rejects with
 * a public failure quoting the package manager when an install fails.
 */
export async function installApps(sdk: Sdk, serial: string, apps: readonly PreinstallApp[]): Promise<void> {
  const adb = (args: string[], timeoutMs?: number) =>
    runTool(sdk.adb, ['-s', serial, ...args], sdk.env, timeoutMs ? { timeoutMs } : {});
  for (const app of apps) {
    const flags = ['-r', '-t', '-d', '-g'];
    const args =
      app.files.length === 1
        ? ['install', ...flags, app.files[0]!]
        : ['install-multiple', ...flags, ...app.files];
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
        `Preinstalling ${app.files.map((f) => basename(f)).join(', ')} (${app.package}) into the golden snapshot failed: ${said}${hint ? ` (${hint})` : ''}.`,
      );
    }
    const base = /^package:(\S+)/m.exec((await adb(['shell', `pm path ${app.package}`])).stdout)?.[1];
    if (!base)
      throw preinstallFailure(`${app.package} installed, but \`pm path ${app.package}\` names no APK.`);
    await adb([
      'shell',
      `mkdir -p ${INSTALL_RECORD_DIR} && echo '${app.sha256} ${base}' > ${installRecordPath(app.package)}`,
    ]);
  }
}
