/**
 * Puts the app under test on a leased phone before the test gets it: one shell call finds
 * which apps the phone already has in exactly this build (a profile phone, a prepared
 * phone: see app-files.ts), and only the others are pushed and installed, each app's base
 * and splits together, with the package manager's refusals turned into errors that say what
 * to do. Both runners' fixtures and the CLI come here through leasePhone({ apps }).
 */
import type { ShellResult } from '../adb/phone-adb.js';
import {
  appRecordLine,
  appRecordPath,
  APP_RECORD_DIR,
  formatBytes,
  recordMatches,
  type AppBundle,
} from '../apk/app-files.js';
import { AppInstallError } from '../errors.js';
import type { PhoneleaseLogger } from '../util/log.js';
import { formatDuration } from '../util/time.js';

/** What installing needs of a phone (a Lease). */
export interface AppTarget {
  readonly id: string;
  shell(command: string): Promise<ShellResult>;
  push(source: Uint8Array, remote: string, options?: { mode?: number }): Promise<void>;
}

export interface AppInstallOptions {
  /** Grant every runtime permission the apps request (pm install -g). */
  grantPermissions: boolean;
  logger: PhoneleaseLogger;
}

/** What the phone says about itself and each app, from one shell call. */
interface PhoneFacts {
  abis: string[];
  sdk: number | null;
  /** Per package: its record line (or '') and the paths `pm path` printed. */
  apps: Map<string, { record: string; paths: string[] }>;
}

const MARK = '@@phonelease-app ';

/** Installs the apps the phone does not have in this build; returns the packages it installed. */
export async function ensureApps(
  phone: AppTarget,
  bundles: readonly AppBundle[],
  options: AppInstallOptions,
): Promise<string[]> {
  if (bundles.length === 0) return [];
  const facts = await readPhone(phone, bundles);
  const installed: string[] = [];
  for (const bundle of bundles) {
    const state = facts.apps.get(bundle.package);
    if (state && recordMatches(state.record, bundle, state.paths[0] ?? null)) {
      options.logger.info(
        `${bundle.package} is already on phone ${phone.id} in this build: not installed again`,
      );
      continue;
    }
    await install(phone, bundle, facts, options);
    installed.push(bundle.package);
  }
  return installed;
}

/** The phone's ABIs and API level, and each app's record and install path, in one call. */
async function readPhone(phone: AppTarget, bundles: readonly AppBundle[]): Promise<PhoneFacts> {
  const script = [
    'getprop ro.product.cpu.abilist',
    'getprop ro.build.version.sdk',
    ...bundles.flatMap((b) => [
      `echo '${MARK}${b.package}'`,
      `cat ${appRecordPath(b.package)} 2>/dev/null`,
      `pm path ${b.package} 2>/dev/null`,
    ]),
  ].join('; ');
  const out = (await phone.shell(script)).stdout.split('\n');
  const facts: PhoneFacts = {
    abis: (out[0] ?? '').trim().split(',').filter(Boolean),
    sdk: Number(out[1]?.trim()) || null,
    apps: new Map(),
  };
  let current: { record: string; paths: string[] } | null = null;
  for (const raw of out.slice(2)) {
    const line = raw.trim();
    if (line.startsWith(MARK)) {
      current = { record: '', paths: [] };
      facts.apps.set(line.slice(MARK.length), current);
    } else if (current && line.startsWith('package:')) current.paths.push(line.slice('package:'.length));
    else if (current && line && !current.record) current.record = line;
  }
  return facts;
}

async function install(
  phone: AppTarget,
  bundle: AppBundle,
  facts: PhoneFacts,
  options: AppInstallOptions,
): Promise<void> {
  const started = Date.now();
  const remote = bundle.files.map(
    (_, i) => `/data/local/tmp/phonelease-${bundle.hash.slice(0, 12)}-${i}.apk`,
  );
  try {
    for (const [i, file] of bundle.files.entries()) await phone.push(file.data, remote[i]!);
    // -r replace an older build, -t allow test-only builds (what Android Studio's Run
    // makes), -d allow a lower versionCode, -g grant runtime permissions; one command for
    // the base and its splits (Android 10+), as adb install-multiple does.
    const flags = `-r -t -d${options.grantPermissions ? ' -g' : ''}`;
    const result = await phone.shell(`pm install ${flags} ${remote.join(' ')}`);
    const output = `${result.stdout}${result.stderr}`;
    if (result.exitCode !== 0 || !/^Success/m.test(output)) throw installError(bundle, output, facts);
  } finally {
    await phone.shell(`rm -f ${remote.join(' ')}`).catch(() => undefined);
  }
  const base = (await phone.shell(`pm path ${bundle.package}`)).stdout
    .split('\n')
    .find((l) => l.startsWith('package:'))
    ?.slice('package:'.length)
    .trim();
  if (base) {
    await phone.shell(
      `mkdir -p ${APP_RECORD_DIR} && echo '${appRecordLine(bundle.hash, base)}' > ${appRecordPath(bundle.package)}`,
    );
  }
  const size = bundle.files.reduce((n, f) => n + f.data.length, 0);
  const files = bundle.files.map((f) => f.given).join(', ');
  options.logger.info(
    `installed ${bundle.package} (${files}, ${formatBytes(size)}) on phone ${phone.id} in ${formatDuration(Date.now() - started)}`,
  );
}

/** The package manager's refusal, in its words, with what it means for this app and what to do. */
function installError(bundle: AppBundle, output: string, facts: PhoneFacts): AppInstallError {
  const quoted = /Failure \[([^\]]*)\]/.exec(output)?.[1] ?? output.trim().split('\n').pop() ?? 'no output';
  const failure = /^([A-Z_]+)/.exec(quoted)?.[1] ?? 'INSTALL_FAILED_UNKNOWN';
  const pkg = bundle.package;
  const files = bundle.files.map((f) => f.given).join(', ');
  const native = [...new Set(bundle.files.flatMap((f) => f.info.nativeAbis))];
  const minSdk = bundle.files[0]!.info.minSdk;
  const advice: Record<string, string> = {
    INSTALL_FAILED_UPDATE_INCOMPATIBLE: `The phone already has ${pkg} signed with a different key (a build from another machine, or a release build). Uninstall it first (phone.shell('pm uninstall ${pkg}'), or adb uninstall ${pkg}), or use a fresh phone rather than the profile phone.`,
    INSTALL_FAILED_NO_MATCHING_ABIS: `${files} has native code for ${native.join(', ') || 'other ABIs'} only, and this phone runs ${facts.abis.join(', ') || 'other ABIs'}. Build the app for ${facts.abis[0] ?? "the phone's ABI"} too (a universal APK, or abiFilters), or use a phone that runs ${native[0] ?? 'its ABI'} (for x86_64 code, an x86_64 emulator image).`,
    INSTALL_FAILED_OLDER_SDK: `${pkg} needs Android API ${minSdk ?? '(its minSdkVersion)'} or newer and this phone runs API ${facts.sdk ?? 'older'}. Lower minSdkVersion, or use a phone with a newer system image (an emulator AVD of system-images;android-${minSdk ?? 'N'};...).`,
    INSTALL_FAILED_VERSION_DOWNGRADE: `The phone has a newer build of ${pkg} and refuses to downgrade a release build. Uninstall it first, or use a fresh phone.`,
    INSTALL_FAILED_INSUFFICIENT_STORAGE: `The phone's storage is full. Uninstall apps or remove files you pushed, or use a fresh phone.`,
    INSTALL_PARSE_FAILED_NO_CERTIFICATES: `${files} is not signed. Sign it (Gradle signs debug builds; apksigner sign for others).`,
    INSTALL_FAILED_INVALID_APK: `Check that ${files} are the base and splits of one build of ${pkg}.`,
  };
  return new AppInstallError(
    `Installing ${pkg} (${files}) failed: the package manager says "${quoted}". ${advice[failure] ?? 'See its message for the cause.'}`,
    { packageName: pkg, failure },
  );
}
