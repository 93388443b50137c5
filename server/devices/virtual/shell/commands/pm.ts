/** `pm` and `cmd package`: listing, paths, installs (files, streams, sessions), grants. */
import {
  RESOLVER_ACTIVITY,
  queryIntent,
  resolveIntent,
  shortComponent,
  type ResolvedActivity,
} from '../../activity.js';
import { FsError } from '../../fs.js';
import { RUNTIME_PERMISSIONS } from '../../packages.js';
import type { ApkPart, InstallOptions, PackageRecord } from '../../packages.js';
import { fail, javaInt, resolvePath, shellException } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';
import { parseIntent, refuseIntent } from './am.js';
import { dumpPackage } from './dumpsys.js';

function parseInstallOptions(args: string[]): {
  options: InstallOptions;
  size: number | null;
  rest: string[];
} {
  const options: InstallOptions = { grantAll: false, allowDowngrade: false };
  let size: number | null = null;
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    switch (a) {
      case '-r': // Android 9+ replaces an installed app whether or not -r is given...
        break;
      case '-R': // ...unless -R says not to
        options.replaceExisting = false;
        break;
      case '-g':
        options.grantAll = true;
        break;
      case '-d':
        options.allowDowngrade = true;
        break;
      case '--bypass-low-target-sdk-block':
        options.bypassLowTargetSdk = true;
        break;
      case '-S':
        size = Number(args[++i]);
        break;
      case '-i':
      case '--installer':
        options.installer = args[++i];
        break;
      case '--user':
      case '-p':
      case '--install-location':
      case '--originating-uri':
      case '--referrer':
      case '--abi':
      case '--pkg':
      case '--apex-timeout':
      case '--staged-ready-timeout':
      case '--force-uuid':
        i++;
        break;
      default:
        if (a.startsWith('-')) break; // -t, -f, --dont-kill, --instant, --full, --force-queryable...
        rest.push(a);
    }
  }
  return { options, size, rest };
}

/** Bytes held by open install sessions (staged under /data/app on a device). */
function stagedBytes(ctx: CommandContext): number {
  let total = 0;
  for (const s of ctx.device.system.installSessions.values())
    for (const part of s.parts.values()) total += part.length;
  return total;
}

const NO_SPACE =
  'Failure [INSTALL_FAILED_INSUFFICIENT_STORAGE: Requested internal only, but not enough space]\n';

/** Whether a streamed APK of `size` bytes fits on the phone (checked before reading any of it). */
function fits(ctx: CommandContext, size: number): boolean {
  return size <= ctx.fs.freeBytes - stagedBytes(ctx);
}

/** Reads exactly size bytes of stdin (streamed installs). */
async function readExactly(ctx: CommandContext, size: number): Promise<Buffer | null> {
  if (!Number.isSafeInteger(size) || size < 0) return null;
  const chunks: Buffer[] = [];
  let got = 0;
  while (got < size) {
    const c = await ctx.stdin.read();
    if (c === null) break;
    chunks.push(c);
    got += c.length;
  }
  if (got < size) return null;
  const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, got);
  return got === size ? all : all.subarray(0, size);
}

function reportInstall(ctx: CommandContext, apks: readonly ApkPart[], options: InstallOptions): number {
  const result = ctx.device.packages.installParts(apks, options);
  if (!result.ok) {
    ctx.stdout.write(`Failure [${result.failure}]\n`);
    ctx.device.logcat.add({
      pid: 860,
      tid: 900,
      priority: 'W',
      tag: 'PackageManager',
      message: `Install failed: ${result.failure}`,
    });
    return 1;
  }
  const r = result.record;
  // A reinstall kills the running app, as on a device.
  ctx.device.activity.forceStop(r.name);
  ctx.device.logcat.add({
    pid: 860,
    tid: 900,
    priority: 'I',
    tag: 'PackageManager',
    message: `Installed ${r.name} versionCode=${r.versionCode} at ${r.codePath}`,
  });
  ctx.stdout.write('Success\n');
  return 0;
}

async function install(ctx: CommandContext, args: string[]): Promise<number> {
  const { options, size, rest } = parseInstallOptions(args);
  const path = rest[0];
  let apk: Buffer | null;
  if (rest.length > 1) {
    // `pm install base.apk split.apk ...` (Android 10+): one app from several files.
    const parts: ApkPart[] = [];
    for (const file of rest) {
      const data = readApkFile(ctx, file);
      if (typeof data === 'number') return data;
      parts.push({ data });
    }
    return reportInstall(ctx, parts, options);
  }
  if (path === undefined || path === '-') {
    if (size === null) {
      ctx.stderr.write('Error: must either specify a package size or an APK file\n');
      return 1;
    }
    if (!fits(ctx, size)) {
      ctx.stdout.write(NO_SPACE);
      return 1;
    }
    apk = await readExactly(ctx, size);
    if (!apk) {
      ctx.stdout.write(
        'Failure [INSTALL_FAILED_INVALID_APK: Failed to write all bytes of the streamed APK]\n',
      );
      return 1;
    }
  } else {
    const data = readApkFile(ctx, path);
    if (typeof data === 'number') return data;
    apk = data;
  }
  return reportInstall(ctx, [{ data: apk }], options);
}

/** An APK file on the phone, or the exit status after saying why it cannot be read. */
function readApkFile(ctx: CommandContext, path: string): Buffer | number {
  try {
    return ctx.fs.readFile(resolvePath(ctx, path));
  } catch (error) {
    ctx.stderr.write(`Error: Unable to open file: ${path}\nConsider using a file under /data/local/tmp/\n`);
    ctx.stdout.write(
      `Failure [INSTALL_FAILED_INVALID_URI: ${error instanceof FsError ? error.reason : String(error)}]\n`,
    );
    return 1;
  }
}

function listPackages(ctx: CommandContext, args: string[]): number {
  const flags = new Set<string>();
  let filter: string | null = null;
  let uidFilter: number | null = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--user') i++;
    else if (a === '--uid') uidFilter = Number(args[++i]);
    else if (a === '--show-versioncode' || a === '--apex-only' || a === '--factory-only') flags.add(a);
    else if (a.startsWith('-')) for (const f of a.slice(1)) flags.add(f);
    else filter = a;
  }
  let list = ctx.device.packages.all();
  // The phone models no APEX modules; factory packages are the system image's.
  if (flags.has('--apex-only')) list = [];
  if (flags.has('--factory-only')) list = list.filter((p) => p.system);
  if (flags.has('3')) list = list.filter((p) => !p.system);
  if (flags.has('s')) list = list.filter((p) => p.system);
  if (flags.has('d')) list = list.filter((p) => !p.enabled);
  if (flags.has('e')) list = list.filter((p) => p.enabled);
  if (filter) list = list.filter((p) => p.name.includes(filter!));
  if (uidFilter !== null) list = list.filter((p) => p.uid === uidFilter);
  for (const p of list) {
    let line = `package:${flags.has('f') ? `${p.apkPath}=` : ''}${p.name}`;
    if (flags.has('--show-versioncode')) line += ` versionCode:${p.versionCode}`;
    if (flags.has('i')) line += `  installer=${p.installer ?? 'null'}`;
    if (flags.has('U')) line += ` uid:${p.uid}`;
    ctx.stdout.write(`${line}\n`);
  }
  return 0;
}

const ILLEGAL_ARGUMENT = 'java.lang.IllegalArgumentException';
const SECURITY = 'java.lang.SecurityException';

function requirePackage(ctx: CommandContext, verb: string, name: string | undefined): PackageRecord | number {
  const p = name ? ctx.device.packages.get(name) : undefined;
  if (!p) return shellException(ctx, verb, ILLEGAL_ARGUMENT, `Unknown package: ${name ?? ''}`);
  return p;
}

function grantOrRevoke(ctx: CommandContext, verb: 'grant' | 'revoke', args: string[]): number {
  const operands = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--user');
  const [name, permission] = operands;
  const p = requirePackage(ctx, verb, name);
  if (typeof p === 'number') return p;
  if (!permission) {
    ctx.stderr.write('Error: no permission specified\n');
    return 1;
  }
  if (!p.requestedPermissions.includes(permission))
    return shellException(
      ctx,
      verb,
      SECURITY,
      `Package ${p.name} has not requested permission ${permission}`,
    );
  if (!RUNTIME_PERMISSIONS.has(permission))
    return shellException(
      ctx,
      verb,
      SECURITY,
      `Permission ${permission} requested by ${p.name} is not a changeable permission type`,
    );
  if (verb === 'grant') p.granted.add(permission);
  else p.granted.delete(permission);
  return 0;
}

export const pm: CommandFn = async (ctx) => {
  const sessions = () => ctx.device.system.installSessions;
  const [verb, ...args] = ctx.args;
  const device = ctx.device;
  switch (verb) {
    case 'list': {
      const [what, ...rest] = args;
      if (what === 'packages') return listPackages(ctx, rest);
      if (what === 'instrumentation') {
        const withPath = rest.includes('-f');
        const target = rest.find((a) => !a.startsWith('-'));
        for (const { pkg, info } of device.packages.instrumentations()) {
          if (target && info.targetPackage !== target) continue;
          ctx.stdout.write(
            `instrumentation:${withPath ? `${pkg.apkPath}=` : ''}${pkg.name}/${info.name} (target=${info.targetPackage})\n`,
          );
        }
        return 0;
      }
      if (what === 'users') {
        ctx.stdout.write('Users:\n\tUserInfo{0:Owner:c13} running\n');
        return 0;
      }
      if (what === 'features') {
        ctx.stdout.write(listFeatures(ctx));
        return 0;
      }
      if (what === 'permissions' || what === 'permission-groups' || what === 'libraries') {
        // The platform's permissions, groups and shared libraries are not kept: an empty
        // list would say the phone has none.
        ctx.stderr.write(`pm: list ${what}: not modeled by the virtual phone\n`);
        return 255;
      }
      ctx.stderr.write(`Error: unknown list type '${what ?? ''}'\n`);
      return 1;
    }
    case 'path': {
      const name = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--user')[0];
      const p = name ? device.packages.get(name) : undefined;
      if (!p) return 1;
      for (const path of device.packages.apkPaths(p)) ctx.stdout.write(`package:${path}\n`);
      return 0;
    }
    case 'install':
      return install(ctx, args);
    case 'install-create': {
      const { options } = parseInstallOptions(args);
      const map = sessions();
      const id = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
      map.set(id, { id, options, parts: new Map() });
      ctx.stdout.write(`Success: created install session [${id}]\n`);
      return 0;
    }
    case 'install-write': {
      const { size, rest } = parseInstallOptions(args);
      const [idText, name, path] = rest;
      const session = sessions().get(Number(idText));
      if (!session || !name) {
        ctx.stderr.write(`Error: invalid session ${idText ?? ''}\n`);
        return 1;
      }
      let data: Buffer | null;
      if ((path === undefined || path === '-') && size !== null && !fits(ctx, size)) {
        ctx.stderr.write('Error: failed to write the split: No space left on device\n');
        return 1;
      }
      if (path === undefined || path === '-') data = size === null ? null : await readExactly(ctx, size);
      else {
        try {
          data = ctx.fs.readFile(resolvePath(ctx, path));
        } catch {
          data = null;
        }
      }
      if (!data) {
        ctx.stderr.write('Error: failed to write the split\n');
        return 1;
      }
      session.parts.set(name, data);
      ctx.stdout.write(`Success: streamed ${data.length} bytes\n`);
      return 0;
    }
    case 'install-commit': {
      const map = sessions();
      const session = map.get(Number(args[0]));
      if (!session) {
        ctx.stderr.write(`Error: invalid session ${args[0] ?? ''}\n`);
        return 1;
      }
      map.delete(session.id);
      const parts = [...session.parts.values()];
      if (parts.length === 0) {
        ctx.stdout.write('Failure [INSTALL_FAILED_INVALID_APK: No packages staged]\n');
        return 1;
      }
      return reportInstall(
        ctx,
        parts.map((data) => ({ data })),
        session.options,
      );
    }
    case 'install-abandon':
      sessions().delete(Number(args[0]));
      ctx.stdout.write('Success\n');
      return 0;
    case 'uninstall': {
      const keep = args.includes('-k');
      const name = args.filter(
        (a, i) => !a.startsWith('-') && args[i - 1] !== '--user' && args[i - 1] !== '--versionCode',
      )[0];
      if (!name || !device.packages.get(name) || device.packages.get(name)!.system) {
        ctx.stdout.write('Failure [DELETE_FAILED_INTERNAL_ERROR]\n');
        return 1;
      }
      device.activity.forceStop(name);
      if (device.hasUi) device.ui.clearData(name);
      device.packages.uninstall(name, keep);
      device.logcat.add({
        pid: 860,
        tid: 900,
        priority: 'I',
        tag: 'PackageManager',
        message: `Removed package ${name}`,
      });
      ctx.stdout.write('Success\n');
      return 0;
    }
    case 'clear': {
      const name = args.filter((a, i) => !a.startsWith('-') && args[i - 1] !== '--user')[0];
      const p = name ? device.packages.get(name) : undefined;
      if (!p) {
        ctx.stdout.write('Failed\n');
        return 1;
      }
      if (args.includes('--cache-only')) {
        // Only the app's caches go (deleteApplicationCacheFiles): its data stays, and so does it.
        for (const dir of ['cache', 'code_cache']) {
          const path = `/data/data/${p.name}/${dir}`;
          if (!device.fs.exists(path, { root: true })) continue;
          for (const e of device.fs.readdir(path, { root: true }))
            device.fs.remove(`${path}/${e.name}`, { root: true, recursive: true });
        }
        ctx.stdout.write('Success\n');
        return 0;
      }
      device.activity.forceStop(p.name);
      device.packages.clearData(p.name);
      device.ui.clearData(p.name);
      ctx.stdout.write('Success\n');
      return 0;
    }
    case 'grant':
    case 'revoke':
      return grantOrRevoke(ctx, verb, args);
    case 'enable':
    case 'disable':
    case 'disable-user':
    case 'default-state': {
      const name = args.filter((a, i) => !a.startsWith('-') && args[i - 1] !== '--user')[0];
      const p = requirePackage(ctx, verb, name);
      if (typeof p === 'number') return p;
      const enable = verb === 'enable' || verb === 'default-state';
      device.packages.setEnabled(p.name, enable);
      if (!enable) device.activity.forceStop(p.name);
      ctx.stdout.write(
        `Package ${p.name} new state: ${enable ? 'enabled' : verb === 'disable' ? 'disabled' : 'disabled-user'}\n`,
      );
      return 0;
    }
    case 'dump': {
      const p = args[0] ? device.packages.get(args[0]) : undefined;
      if (!p) {
        ctx.stdout.write('Unable to find package: ' + (args[0] ?? '') + '\n');
        return 0;
      }
      ctx.stdout.write(dumpPackage(ctx, p));
      return 0;
    }
    case 'resolve-activity':
    case 'query-activities':
      return resolveActivities(ctx, verb, args);
    case 'get-install-location':
      ctx.stdout.write('0[auto]\n');
      return 0;
    case 'has-feature': {
      // runHasFeature: hasSystemFeature(name, version), true when the phone's version is at
      // least the one asked (0 when none is).
      if (args[0] === undefined) {
        ctx.stderr.write('Error: expected FEATURE name\n');
        return 1;
      }
      const asked = args[1] === undefined ? 0 : javaInt(args[1]);
      if (asked === null) {
        ctx.stderr.write(`Error: illegal version number ${args[1]}\n`);
        return 1;
      }
      const version = FEATURES.get(args[0]);
      const has = version !== undefined && version >= asked;
      ctx.stdout.write(`${has}\n`);
      return has ? 0 : 1;
    }
    case 'trim-caches': {
      // The phone's storage has far more free than any size asked for, so no cache needs
      // deleting; the size is read as PackageManagerShellCommand reads it.
      const size = args.find((a) => !a.startsWith('-') || /^-\d/.test(a));
      if (size === undefined) {
        ctx.stderr.write('Error: no size specified\n');
        return 1;
      }
      const m = /^(\d+)([KkMmGg]?)$/.exec(size);
      if (!m) {
        ctx.stderr.write(`Error: expected number at: ${size}\n`);
        return 1;
      }
      return 0;
    }
    case 'compile':
    case 'bg-dexopt-job': {
      // ART's compilation has nothing to change in the phone's apps: it succeeds.
      // -m MODE, -r REASON and --split NAME take a value; -a compiles every package.
      const takesValue = new Set(['-m', '-r', '--split']);
      const name =
        verb === 'compile'
          ? args.find((a, i) => !a.startsWith('-') && !takesValue.has(args[i - 1] ?? ''))
          : undefined;
      if (name !== undefined && !device.packages.get(name)) {
        ctx.stderr.write(`Failure: package ${name} could not be compiled\n`);
        return 1;
      }
      ctx.stdout.write('Success\n');
      return 0;
    }
    case 'set-permission-enforced':
      return 0;
    case 'get-max-users':
      ctx.stdout.write('Maximum supported users: 4\n');
      return 0;
    case 'list-users':
      ctx.stdout.write('Users:\n\tUserInfo{0:Owner:c13} running\n');
      return 0;
    default:
      // Android 14's pm has these; the virtual phone says it does not model them.
      if (verb !== undefined && UNMODELED_PM.has(verb))
        return fail(ctx, `${verb}: not modeled by the virtual phone`, 255);
      ctx.stderr.write(verb === undefined ? PM_USAGE : `Unknown command: ${verb}\n`);
      return verb === undefined ? 0 : 255;
  }
};

const PM_USAGE = `Package manager (package) commands:
  help
    Print this help text.
  path [--user USER_ID] PACKAGE
  list packages [-f] [-d] [-e] [-s] [-3] [-i] [-l] [-u] [-U] [--show-versioncode] [--uid UID] [--user USER_ID] [FILTER]
  list instrumentation [-f] [TARGET-PACKAGE]
  install [-rtfdgR] [-i PACKAGE] [--user USER_ID] [-S BYTES] [PATH [SPLIT...]|-]
  install-create, install-write, install-commit, install-abandon
  uninstall [-k] [--user USER_ID] PACKAGE
  clear [--user USER_ID] PACKAGE
  enable|disable|disable-user [--user USER_ID] PACKAGE
  grant|revoke [--user USER_ID] PACKAGE PERMISSION
  resolve-activity [--brief] PACKAGE
`;

/** The features the phone declares (`pm list features`, `pm has-feature`). */
/**
 * The phone's system features (getSystemAvailableFeatures), the ones the virtual phone
 * models (its screen and touch, which turns; Wi-Fi, Bluetooth, location, the lock screen,
 * input methods, the launcher, Chrome), with the version of those that have one.
 */
const FEATURES: ReadonlyMap<string, number> = new Map([
  ['android.hardware.bluetooth', 0],
  ['android.hardware.bluetooth_le', 0],
  ['android.hardware.camera', 0],
  ['android.hardware.camera.any', 0],
  ['android.hardware.faketouch', 0],
  ['android.hardware.location', 0],
  ['android.hardware.location.gps', 0],
  ['android.hardware.location.network', 0],
  ['android.hardware.ram.normal', 0],
  ['android.hardware.screen.landscape', 0],
  ['android.hardware.screen.portrait', 0],
  ['android.hardware.touchscreen', 0],
  ['android.hardware.touchscreen.multitouch', 0],
  ['android.hardware.touchscreen.multitouch.distinct', 0],
  ['android.hardware.wifi', 0],
  ['android.software.app_enumeration', 0],
  ['android.software.file_based_encryption', 0],
  ['android.software.home_screen', 0],
  ['android.software.input_methods', 0],
  ['android.software.secure_lock_screen', 0],
  ['android.software.webview', 0],
]);

/**
 * `pm list features` as runListFeatures prints them: sorted by name, the OpenGL ES version
 * (the feature without a name, from ro.opengles.version) first, and `=version` where a
 * feature has one.
 */
function listFeatures(ctx: CommandContext): string {
  const gles = Number(ctx.device.props.get('ro.opengles.version') ?? 0);
  const named = [...FEATURES]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, version]) => `feature:${name}${version > 0 ? `=${version}` : ''}\n`);
  return `feature:reqGlEsVersion=0x${gles.toString(16)}\n${named.join('')}`;
}

/** Android 14's other pm commands (users, app links, suspending, profiles, permissions' flags). */
const UNMODELED_PM = new Set([
  'archive',
  'clear-permission-flags',
  'create-user',
  'dump-profiles',
  'get-app-links',
  'get-harmful-app-warning',
  'get-moduleinfo',
  'get-oem-permissions',
  'get-privapp-deny-permissions',
  'get-privapp-permissions',
  'hide',
  'install-existing',
  'move-package',
  'move-primary-storage',
  'remove-user',
  'reset-app-links',
  'reset-permissions',
  'rollback-app',
  'set-app-links',
  'set-app-links-allowed',
  'set-app-links-user-selection',
  'set-harmful-app-warning',
  'set-home-activity',
  'set-install-location',
  'set-installer',
  'set-permission-flags',
  'set-user-restriction',
  'snapshot-profile',
  'suspend',
  'unhide',
  'uninstall-system-updates',
  'unsuspend',
  'verify-app-links',
]);

/**
 * `pm resolve-activity` and `pm query-activities` [--brief] [--components] [--user U]
 * INTENT: the activity an intent starts, or every one it matches, printed as
 * PackageManagerShellCommand prints a ResolveInfo (a bare package or component argument is
 * its launcher intent, as Intent.parseCommandArgs makes it).
 */
function resolveActivities(ctx: CommandContext, verb: string, rawArgs: string[]): number {
  const brief = rawArgs.includes('--brief');
  const componentsOnly = rawArgs.includes('--components');
  const args = rawArgs.filter(
    (a, i) =>
      !['--brief', '--components', '--user', '--query-flags'].includes(a) &&
      !['--user', '--query-flags'].includes(rawArgs[i - 1] ?? ''),
  );
  const intent = parseIntent(args);
  if ('message' in intent) return refuseIntent(ctx, verb, intent);
  const packages = ctx.device.packages;
  // PackageManagerShellCommand queries with its --query-flags (0 by default: no
  // MATCH_DEFAULT_ONLY, so filters without CATEGORY_DEFAULT count too).
  let found: ResolvedActivity[];
  if (verb === 'query-activities') found = queryIntent(packages, intent, false);
  else {
    const resolved = resolveIntent(packages, intent, false);
    found =
      resolved.kind === 'none'
        ? []
        : resolved.kind === 'one'
          ? [resolved.info]
          : // The chooser: PackageManagerService's mResolveInfo.
            [{ component: RESOLVER_ACTIVITY, priority: 0, match: 0, isDefault: false, system: true }];
  }
  if (found.length === 0) {
    ctx.stdout.write(verb === 'query-activities' ? 'No activities found\n' : 'No activity found\n');
    return 0;
  }
  const info = (r: ResolvedActivity, prefix: string): string => {
    const c = r.component;
    const head = `${prefix}priority=${r.priority} preferredOrder=0 match=0x${r.match.toString(16)} specificIndex=-1 isDefault=${r.isDefault}\n`;
    if (componentsOnly) return `${prefix}${shortComponent(c)}\n`;
    if (brief) return `${head}${prefix}${shortComponent(c)}\n`;
    return `${head}${prefix}ActivityInfo:\n${prefix}  name=${c.cls}\n${prefix}  packageName=${c.pkg}\n`;
  };
  if (verb === 'resolve-activity') {
    ctx.stdout.write(
      brief || componentsOnly ? info(found[0]!, '') : `Activity #0:\n${info(found[0]!, '  ')}`,
    );
    return 0;
  }
  if (componentsOnly) {
    for (const c of found) ctx.stdout.write(info(c, ''));
    return 0;
  }
  ctx.stdout.write(`${found.length} activities found:\n`);
  found.forEach((c, i) => ctx.stdout.write(`  Activity #${i}:\n${info(c, '    ')}`));
  return 0;
}
