/**
 * The app under test as files: APK paths read, checked and grouped into apps (a base APK
 * and its splits), each with a content hash. The lease installs these (`apps`, `--app`),
 * and the server's device backends put them on every phone before it is handed out
 * (`--preinstall`); both write the same record on the phone, so a phone that already has
 * the exact build is never given it again.
 *
 * Why a content hash recorded on the phone, not the app's version: a debug build's
 * versionCode stays the same from one build to the next, so only the bytes tell two builds
 * apart; and the record names the install it was made for (the path `pm path` prints, new
 * for every install), so an app replaced or removed since is installed again.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { AppFileError } from '../errors.js';
import { readApk, type ApkInfo } from './manifest.js';

export interface ApkFile {
  /** The path as it was given (for messages). */
  given: string;
  /** The absolute path. */
  path: string;
  data: Buffer;
  /** Hex SHA-256 of the file. */
  sha256: string;
  info: ApkInfo;
}

/** One app: its base APK first, then its splits, installed together. */
export interface AppBundle {
  package: string;
  label: string;
  files: ApkFile[];
  /** Hex SHA-256 over the files' SHA-256s: the build, whatever its version says. */
  hash: string;
}

/** Where a phone keeps the record of each app installed this way (writable by the shell). */
export const APP_RECORD_DIR = '/data/local/tmp/.phonelease/apps';

/** The record file of one app. */
export function appRecordPath(pkg: string): string {
  return `${APP_RECORD_DIR}/${pkg}`;
}

/** The record's one line: the build's hash, then the base APK's path from `pm path`. */
export function appRecordLine(hash: string, basePath: string): string {
  return `${hash} ${basePath}`;
}

/**
 * Whether a phone has exactly this build: its record names this hash, and the install it
 * was written for (`basePath`, what `pm path` prints first now) is still the one there.
 */
export function recordMatches(record: string, bundle: AppBundle, basePath: string | null): boolean {
  const [hash, path] = record.trim().split(' ');
  return basePath !== null && hash === bundle.hash && path === basePath;
}

/** Human size, for progress lines. */
export function formatBytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : `${Math.ceil(bytes / 1024)} KB`;
}

/**
 * Reads APK files and groups them into apps by package. Everything that makes an install
 * impossible is found here, before any phone is started: a path that does not exist, a file
 * that is not an APK (or an .aab bundle), splits without their base, two different base
 * APKs of one app. The same file given twice counts once.
 */
export function readApps(paths: readonly string[], cwd: string = process.cwd()): AppBundle[] {
  const files: ApkFile[] = [];
  const seen = new Set<string>();
  for (const given of paths) {
    const path = resolve(cwd, given);
    const data = readApkBytes(given, path);
    const digest = sha256(data);
    if (seen.has(digest)) continue;
    seen.add(digest);
    files.push({ given, path, data, sha256: digest, info: parse(given, data) });
  }
  const byPackage = new Map<string, ApkFile[]>();
  for (const file of files) {
    const group = byPackage.get(file.info.package) ?? [];
    group.push(file);
    byPackage.set(file.info.package, group);
  }
  return [...byPackage].map(([pkg, group]) => {
    const bases = group.filter((f) => f.info.split === null);
    if (bases.length > 1) {
      throw new AppFileError(
        bases[1]!.given,
        `${bases[0]!.given} and ${bases[1]!.given} are both the base APK of ${pkg}: give one build of each app.`,
      );
    }
    const base = bases[0];
    if (!base) {
      const split = group[0]!;
      throw new AppFileError(
        split.given,
        `${split.given} is a split APK of ${pkg} (${split.info.split}) and its base APK is missing: give the base APK too (splits of one app are installed together).`,
      );
    }
    const ordered = [base, ...group.filter((f) => f !== base)];
    const hash = sha256(
      Buffer.from(
        ordered
          .map((f) => f.sha256)
          .sort()
          .join('\n'),
      ),
    );
    return { package: pkg, label: base.info.label, files: ordered, hash };
  });
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function readApkBytes(given: string, path: string): Buffer {
  try {
    if (statSync(path).isDirectory()) {
      throw new AppFileError(
        given,
        `${given} is a directory, not an APK: give the .apk file your build made.`,
      );
    }
    return readFileSync(path);
  } catch (error) {
    if (error instanceof AppFileError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new AppFileError(
      given,
      code === 'ENOENT'
        ? `App file ${given} not found (looked at ${path}): build the app first, or fix the path.`
        : `App file ${given} cannot be read (${code ?? String(error)}): check its permissions.`,
      { cause: error },
    );
  }
}

function parse(given: string, data: Buffer): ApkInfo {
  try {
    return readApk(data);
  } catch (error) {
    // An Android App Bundle is a zip too, with its manifest under base/manifest/.
    const bundle = data.includes('base/manifest/AndroidManifest.xml');
    throw new AppFileError(
      given,
      bundle
        ? `${given} is an Android App Bundle (.aab), which phones cannot install: build an APK (./gradlew assembleDebug), or make APKs from the bundle with bundletool build-apks --mode=universal.`
        : `${given} is not an APK (${(error as Error).message}): give the .apk file your build made, e.g. app/build/outputs/apk/debug/app-debug.apk.`,
      { cause: error },
    );
  }
}
