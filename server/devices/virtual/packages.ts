/**
 * The package manager: built-in system packages (shared definitions) plus apps installed
 * from real APK bytes, with what pm, dumpsys package and the launcher need.
 */
import { SETTINGS_ACTIVITIES } from './ui/index.js';
import { createHash, randomBytes } from 'node:crypto';
import { ApkError, readApk } from '../../../src/apk/manifest.js';
import type { ApkInfo, ComponentInfo, InstrumentationInfo } from '../../../src/apk/manifest.js';
import type { VirtualFs } from './fs.js';
import type { LauncherApp } from './ui/types.js';

/**
 * One <intent-filter> of an activity, as IntentFilter keeps it (no MIME types: none of the
 * phone's own apps declares one). `schemes` are the data schemes it names, none for a filter
 * that takes no data; unset for an installed app's filter, whose <data> elements are not read.
 */
export interface IntentFilterRecord {
  actions: readonly string[];
  categories: readonly string[];
  schemes?: readonly string[];
  /** android:priority (0 unless the manifest sets it). */
  priority: number;
}

/**
 * An activity and its intent filters. A built-in activity has its manifest's filters; an
 * installed app's activity has none listed here (the APK reader joins the actions and
 * categories of all its filters): it matches as one filter of those, its data not read.
 */
export interface ActivityRecord extends ComponentInfo {
  filters?: readonly IntentFilterRecord[];
}

export interface PackageRecord {
  name: string;
  versionCode: number;
  versionName: string;
  label: string;
  launcherActivity: string | null;
  activities: ActivityRecord[];
  services: ComponentInfo[];
  instrumentations: InstrumentationInfo[];
  requestedPermissions: string[];
  granted: Set<string>;
  system: boolean;
  /** Directory holding base.apk. */
  codePath: string;
  apkPath: string;
  uid: number;
  firstInstallMs: number;
  lastUpdateMs: number;
  installer: string | null;
  enabled: boolean;
  debuggable: boolean;
  minSdk: number | null;
  targetSdk: number | null;
  /** Set by force-stop until the app runs again. */
  stopped: boolean;
  /** Split APKs installed with the base (`split_<name>.apk` beside base.apk). */
  splits: string[];
  /** Signing certificate digests (empty for system packages and unsigned test APKs). */
  signers: string[];
}

/** Runtime ("dangerous") permissions: granted only with -g, pm grant or the user. */
export const RUNTIME_PERMISSIONS = new Set(
  [
    'ACCESS_FINE_LOCATION',
    'ACCESS_COARSE_LOCATION',
    'ACCESS_BACKGROUND_LOCATION',
    'ACCESS_MEDIA_LOCATION',
    'ACTIVITY_RECOGNITION',
    'ANSWER_PHONE_CALLS',
    'BLUETOOTH_ADVERTISE',
    'BLUETOOTH_CONNECT',
    'BLUETOOTH_SCAN',
    'BODY_SENSORS',
    'CALL_PHONE',
    'CAMERA',
    'GET_ACCOUNTS',
    'NEARBY_WIFI_DEVICES',
    'POST_NOTIFICATIONS',
    'READ_CALENDAR',
    'READ_CALL_LOG',
    'READ_CONTACTS',
    'READ_EXTERNAL_STORAGE',
    'READ_MEDIA_AUDIO',
    'READ_MEDIA_IMAGES',
    'READ_MEDIA_VIDEO',
    'READ_PHONE_NUMBERS',
    'READ_PHONE_STATE',
    'READ_SMS',
    'RECEIVE_MMS',
    'RECEIVE_SMS',
    'RECORD_AUDIO',
    'SEND_SMS',
    'UWB_RANGING',
    'WRITE_CALENDAR',
    'WRITE_CALL_LOG',
    'WRITE_CONTACTS',
    'WRITE_EXTERNAL_STORAGE',
  ].map((p) => `android.permission.${p}`),
);

interface BuiltIn {
  name: string;
  label: string;
  dir: string;
  apk: string;
  uid: number;
  versionCode: number;
  versionName: string;
  activities?: string[];
  /** Intent actions of activities (beyond MAIN for the launcher activity). */
  actions?: Record<string, readonly string[]>;
  /** The data schemes an activity's intent filter takes, where it takes data. */
  schemes?: Record<string, readonly string[]>;
  launcher?: string;
  /** The categories of the launcher activity's MAIN filter (default: LAUNCHER alone). */
  launcherCategories?: readonly string[];
  /** Categories of an activity's action filter beyond DEFAULT (Chrome's BROWSABLE). */
  actionCategories?: Record<string, readonly string[]>;
  /** Filters given whole (the launcher's home filter). */
  filters?: Record<string, readonly IntentFilterRecord[]>;
  /** Permissions its manifest requests (full names); the runtime ones are not granted. */
  permissions?: readonly string[];
}

const CATEGORY = (name: string) => `android.intent.category.${name}`;

/** The system packages every phone has; Settings and Login are drawn by the UI side. */
const BUILT_INS: readonly BuiltIn[] = [
  {
    name: 'android',
    label: 'Android System',
    dir: '/system/framework',
    apk: 'framework-res.apk',
    uid: 1000,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.settings',
    label: 'Settings',
    dir: '/system_ext/priv-app/Settings',
    apk: 'Settings.apk',
    uid: 1000,
    versionCode: 34,
    versionName: '14',
    // Every page the UI can show, so `am start -n ...$DisplaySettingsActivity` and
    // `am start -a android.settings.DISPLAY_SETTINGS` reach it.
    activities: SETTINGS_ACTIVITIES.map((a) => a.activity),
    actions: Object.fromEntries(SETTINGS_ACTIVITIES.map((a) => [a.activity, a.actions])),
    schemes: Object.fromEntries(
      SETTINGS_ACTIVITIES.flatMap((a) => (a.scheme ? [[a.activity, [a.scheme]]] : [])),
    ),
    launcher: 'com.android.settings.Settings',
    // Settings' launcher alias: MAIN with DEFAULT and LAUNCHER; its action filters add DEFAULT.
    launcherCategories: [CATEGORY('DEFAULT'), CATEGORY('LAUNCHER')],
  },
  {
    name: 'com.phonelease.login',
    label: 'Login',
    dir: '/system/app/Login',
    apk: 'Login.apk',
    uid: 10120,
    versionCode: 1,
    versionName: '1.0',
    activities: ['com.phonelease.login.LoginActivity'],
    launcher: 'com.phonelease.login.LoginActivity',
    // Its launcher filter has DEFAULT, as Settings' has: `am start -a MAIN -c LAUNCHER -p` finds it.
    launcherCategories: [CATEGORY('LAUNCHER'), CATEGORY('DEFAULT')],
  },
  {
    // A real Chromium runs behind it (browser/browser-app.ts) when the phone has one.
    name: 'com.android.chrome',
    label: 'Chrome',
    dir: '/product/app/Chrome',
    apk: 'Chrome.apk',
    uid: 10131,
    versionCode: 612800031,
    versionName: '128.0.6613.127',
    activities: ['com.google.android.apps.chrome.Main'],
    actions: { 'com.google.android.apps.chrome.Main': ['android.intent.action.VIEW'] },
    // Chrome's VIEW filter: web pages and its own scheme (content: and file: need a MIME type).
    schemes: {
      'com.google.android.apps.chrome.Main': ['googlechrome', 'http', 'https', 'about', 'javascript'],
    },
    launcher: 'com.google.android.apps.chrome.Main',
    launcherCategories: [
      CATEGORY('LAUNCHER'),
      CATEGORY('DEFAULT'),
      CATEGORY('BROWSABLE'),
      CATEGORY('APP_BROWSER'),
    ],
    actionCategories: { 'com.google.android.apps.chrome.Main': [CATEGORY('BROWSABLE')] },
    // What web pages ask for (WebRTC, geolocation, notifications): tests grant them to
    // Chrome with pm grant before a page asks.
    permissions: [
      'INTERNET',
      'ACCESS_NETWORK_STATE',
      'ACCESS_WIFI_STATE',
      'MODIFY_AUDIO_SETTINGS',
      'VIBRATE',
      'WAKE_LOCK',
      'CAMERA',
      'RECORD_AUDIO',
      'ACCESS_COARSE_LOCATION',
      'ACCESS_FINE_LOCATION',
      'POST_NOTIFICATIONS',
    ].map((p) => `android.permission.${p}`),
  },
  {
    name: 'com.android.launcher3',
    label: 'Pixel Launcher',
    dir: '/system_ext/priv-app/Launcher3QuickStep',
    apk: 'Launcher3QuickStep.apk',
    uid: 10153,
    versionCode: 34,
    versionName: '14',
    activities: ['com.android.launcher3.Launcher'],
    // Launcher3's home filter (quickstep/AndroidManifest-launcher.xml).
    filters: {
      'com.android.launcher3.Launcher': [
        {
          actions: ['android.intent.action.MAIN'],
          categories: [CATEGORY('HOME'), CATEGORY('DEFAULT'), CATEGORY('MONKEY'), CATEGORY('LAUNCHER_APP')],
          priority: 0,
        },
      ],
    },
  },
  {
    name: 'com.android.systemui',
    label: 'System UI',
    dir: '/system_ext/priv-app/SystemUI',
    apk: 'SystemUI.apk',
    uid: 10201,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.shell',
    label: 'Shell',
    dir: '/system/priv-app/Shell',
    apk: 'Shell.apk',
    uid: 2000,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.phone',
    label: 'Phone Services',
    dir: '/system/priv-app/TeleService',
    apk: 'TeleService.apk',
    uid: 1001,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.providers.settings',
    label: 'Settings Storage',
    dir: '/system/priv-app/SettingsProvider',
    apk: 'SettingsProvider.apk',
    uid: 1000,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.providers.media.module',
    label: 'Media Storage',
    dir: '/apex/com.android.mediaprovider/priv-app/MediaProvider',
    apk: 'MediaProvider.apk',
    uid: 10160,
    versionCode: 340000000,
    versionName: '14',
  },
  {
    name: 'com.android.providers.contacts',
    label: 'Contacts Storage',
    dir: '/system/priv-app/ContactsProvider',
    apk: 'ContactsProvider.apk',
    uid: 10102,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.providers.downloads',
    label: 'Download Manager',
    dir: '/system/priv-app/DownloadProvider',
    apk: 'DownloadProvider.apk',
    uid: 10104,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.packageinstaller',
    label: 'Package installer',
    dir: '/system/priv-app/PackageInstaller',
    apk: 'PackageInstaller.apk',
    uid: 10105,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.permissioncontroller',
    label: 'Permission controller',
    dir: '/apex/com.android.permission/priv-app/PermissionController',
    apk: 'PermissionController.apk',
    uid: 10106,
    versionCode: 340000000,
    versionName: '14',
  },
  {
    name: 'com.android.keychain',
    label: 'Key Chain',
    dir: '/system/app/KeyChain',
    apk: 'KeyChain.apk',
    uid: 1000,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.location.fused',
    label: 'Fused Location',
    dir: '/system/priv-app/FusedLocation',
    apk: 'FusedLocation.apk',
    uid: 1000,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.bluetooth',
    label: 'Bluetooth',
    dir: '/apex/com.android.btservices/app/Bluetooth',
    apk: 'Bluetooth.apk',
    uid: 1002,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.documentsui',
    label: 'Files',
    dir: '/system/priv-app/DocumentsUI',
    apk: 'DocumentsUI.apk',
    uid: 10107,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.webview',
    label: 'Android System WebView',
    dir: '/system/app/webview',
    apk: 'webview.apk',
    uid: 10108,
    versionCode: 609911233,
    versionName: '120.0.6099.112',
  },
  {
    name: 'com.google.android.inputmethod.latin',
    label: 'Gboard',
    dir: '/product/app/LatinIMEGooglePrebuilt',
    apk: 'LatinIMEGooglePrebuilt.apk',
    uid: 10170,
    versionCode: 135001,
    versionName: '13.5',
  },
  {
    name: 'com.android.externalstorage',
    label: 'External Storage',
    dir: '/system/priv-app/ExternalStorageProvider',
    apk: 'ExternalStorageProvider.apk',
    uid: 10109,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.inputdevices',
    label: 'Input Devices',
    dir: '/system/priv-app/InputDevices',
    apk: 'InputDevices.apk',
    uid: 1000,
    versionCode: 34,
    versionName: '14',
  },
  {
    name: 'com.android.server.telecom',
    label: 'Call Management',
    dir: '/system/priv-app/Telecom',
    apk: 'Telecom.apk',
    uid: 1000,
    versionCode: 34,
    versionName: '14',
  },
];

export interface InstallOptions {
  /** -g: grant every runtime permission the app requests. */
  grantAll: boolean;
  /** -d: allow a lower versionCode. */
  allowDowngrade: boolean;
  /**
   * Replace an installed app (default true: Android 9+ replaces whether or not -r is given;
   * `pm install -R` turns it off).
   */
  replaceExisting?: boolean;
  /** -i: the installer package recorded for the app (default com.android.shell). */
  installer?: string;
  /** --bypass-low-target-sdk-block: install an app that targets an SDK below 23 all the same. */
  bypassLowTargetSdk?: boolean;
}

/** Android 14's lowest target SDK an app may be installed with (ro.build.version.min_supported_target_sdk). */
const MIN_INSTALLABLE_TARGET_SDK = 23;

/** One APK of an install: its bytes, and its manifest when the caller parsed it already. */
export interface ApkPart {
  data: Buffer;
  info?: ApkInfo;
}

/**
 * One session of `pm install-create` / `install-write` / `install-commit`. The device holds
 * these between shell commands, so the type lives with the package model, not in a command.
 */
export interface InstallSession {
  id: number;
  options: InstallOptions;
  parts: Map<string, Buffer>;
}

export type InstallResult = { ok: true; record: PackageRecord } | { ok: false; failure: string };

const BASE_TIME = Date.UTC(2024, 0, 1);

/** Where the built-in packages' APKs live, for the system image (`pm path` names them). */
export function builtInApkPaths(): string[] {
  return BUILT_INS.map((b) => `${b.dir}/${b.apk}`);
}

/** The manifest filters of a built-in activity: its launcher filter, then its actions' filter. */
function builtInFilters(b: BuiltIn, name: string): IntentFilterRecord[] {
  const given = b.filters?.[name];
  if (given) return [...given];
  const filters: IntentFilterRecord[] = [];
  if (name === b.launcher)
    filters.push({
      actions: ['android.intent.action.MAIN'],
      categories: b.launcherCategories ?? [CATEGORY('LAUNCHER')],
      schemes: [],
      priority: 0,
    });
  const actions = b.actions?.[name] ?? [];
  if (actions.length > 0)
    filters.push({
      actions,
      categories: [CATEGORY('DEFAULT'), ...(b.actionCategories?.[name] ?? [])],
      schemes: b.schemes?.[name] ?? [],
      priority: 0,
    });
  return filters;
}

function builtInRecord(b: BuiltIn): PackageRecord {
  const activities: ActivityRecord[] = (b.activities ?? []).map((name) => {
    const filters = builtInFilters(b, name);
    return {
      name,
      exported: true,
      actions: [...new Set(filters.flatMap((f) => f.actions))],
      categories: [...new Set(filters.flatMap((f) => f.categories))],
      filters,
    };
  });
  return {
    name: b.name,
    versionCode: b.versionCode,
    versionName: b.versionName,
    label: b.label,
    launcherActivity: b.launcher ?? null,
    activities,
    services: [],
    instrumentations: [],
    requestedPermissions: [...(b.permissions ?? [])],
    // Normal permissions are granted at install, runtime ones when the user or pm grants them.
    granted: new Set((b.permissions ?? []).filter((p) => !RUNTIME_PERMISSIONS.has(p))),
    system: true,
    codePath: b.dir,
    apkPath: `${b.dir}/${b.apk}`,
    uid: b.uid,
    firstInstallMs: BASE_TIME,
    lastUpdateMs: BASE_TIME,
    installer: null,
    enabled: true,
    debuggable: false,
    minSdk: 34,
    targetSdk: 34,
    stopped: false,
    splits: [],
    signers: [],
  };
}

/** Saved form of an installed package (the APK itself goes into the save's data file). */
export interface SavedPackage {
  name: string;
  codePath: string;
  uid: number;
  firstInstallMs: number;
  lastUpdateMs: number;
  installer: string | null;
  granted: string[];
  enabled: boolean;
  apk: { offset: number; size: number };
  /** Split APKs (absent in saves made before splits were kept). */
  splits?: { name: string; offset: number; size: number }[];
}

export class PackageManager {
  /** Built on first use: see `packages`. */
  private records: Map<string, PackageRecord> | null = null;
  /** Install order of non-system packages (the launcher lists them in this order). */
  private installed: string[] = [];
  private nextUid = 10190;
  /** Packages turned off because the server machine cannot run them (see setUnavailable). */
  private readonly unavailable = new Set<string>();
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly fs: VirtualFs,
    private readonly now: () => number,
    /** ABIs the phone runs (ro.product.cpu.abilist), for apps with native libraries. */
    private readonly abis: () => readonly string[] = () => [],
  ) {}

  /**
   * Every package by name. The built-in records (about 20 KB and 90 µs per phone) are made
   * on first use: a phone that is created and ended without a package query never pays for
   * them, and phones are created at the API's create rate.
   */
  private get packages(): Map<string, PackageRecord> {
    if (!this.records) {
      this.records = new Map();
      for (const b of BUILT_INS) this.records.set(b.name, builtInRecord(b));
    }
    return this.records;
  }

  get(name: string): PackageRecord | undefined {
    return this.packages.get(name);
  }

  all(): PackageRecord[] {
    return [...this.packages.values()];
  }

  thirdParty(): PackageRecord[] {
    return this.installed.map((n) => this.packages.get(n)).filter((p): p is PackageRecord => p !== undefined);
  }

  /** Launcher apps for the home screen: the UI's built-in apps, then installs in order. */
  launcherApps(): LauncherApp[] {
    const out: LauncherApp[] = [];
    for (const name of [
      'com.android.settings',
      'com.android.chrome',
      'com.phonelease.login',
      ...this.installed,
    ]) {
      const p = this.packages.get(name);
      if (p?.launcherActivity && p.enabled)
        out.push({ package: p.name, label: p.label, activity: p.launcherActivity });
    }
    return out;
  }

  /** Called after installs and uninstalls (the UI redraws the home screen). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  instrumentations(): { pkg: PackageRecord; info: InstrumentationInfo }[] {
    return this.all().flatMap((pkg) => pkg.instrumentations.map((info) => ({ pkg, info })));
  }

  /** Installs one APK (`pm install PATH`). */
  install(apk: Buffer, options: InstallOptions): InstallResult {
    return this.installParts([{ data: apk }], options);
  }

  /**
   * Installs an app from its base APK and any splits, together or not at all, with the
   * package manager's failures in its own words. Parts with a parsed manifest are not
   * parsed again (prepared phones install the same APKs into every phone).
   */
  installParts(parts: readonly ApkPart[], options: InstallOptions): InstallResult {
    const parsed: { data: Buffer; info: ApkInfo }[] = [];
    for (const part of parts) {
      try {
        parsed.push({ data: part.data, info: part.info ?? readApk(part.data) });
      } catch (error) {
        const reason =
          error instanceof ApkError ? error.message : `failed to parse: ${(error as Error).message}`;
        return {
          ok: false,
          failure: `INSTALL_PARSE_FAILED_NOT_APK: Failed parse during installPackageLI: ${reason}`,
        };
      }
    }
    const bases = parsed.filter((p) => p.info.split === null);
    const base = bases[0];
    if (!base || bases.length > 1) {
      return {
        ok: false,
        failure: base
          ? 'INSTALL_FAILED_INVALID_APK: Split null was defined multiple times'
          : 'INSTALL_FAILED_INVALID_APK: Full install must include a base package',
      };
    }
    const info = base.info;
    const splits = parsed.filter((p) => p !== base);
    const names = new Set<string>();
    for (const split of splits) {
      if (split.info.package !== info.package) {
        return {
          ok: false,
          failure: `INSTALL_FAILED_INVALID_APK: Inconsistent package ${split.info.package} in split ${split.info.split}; expected ${info.package}`,
        };
      }
      if (names.has(split.info.split!)) {
        return {
          ok: false,
          failure: `INSTALL_FAILED_INVALID_APK: Split ${split.info.split} was defined multiple times`,
        };
      }
      names.add(split.info.split!);
    }
    if (info.minSdk !== null && info.minSdk > 34) {
      return {
        ok: false,
        failure: `INSTALL_FAILED_OLDER_SDK: Failed parse during installPackageLI: /data/app/vmdl.tmp/base.apk (at Binary XML file line #7): Requires newer sdk version #${info.minSdk} (current version is #34)`,
      };
    }
    // InstallPackageHelper.preparePackageLI blocks apps that target a deprecated SDK.
    if (
      info.targetSdk !== null &&
      info.targetSdk < MIN_INSTALLABLE_TARGET_SDK &&
      !options.bypassLowTargetSdk
    ) {
      return {
        ok: false,
        failure: `INSTALL_FAILED_DEPRECATED_SDK_VERSION: App package must target at least SDK version ${MIN_INSTALLABLE_TARGET_SDK}, but found ${info.targetSdk}`,
      };
    }
    const existing = this.packages.get(info.package);
    if (existing) {
      if (options.replaceExisting === false) {
        return {
          ok: false,
          failure: `INSTALL_FAILED_ALREADY_EXISTS: Attempt to re-install ${info.package} without first uninstalling.`,
        };
      }
      // A system package is signed with the platform key, which no app has.
      if (existing.system || existing.signers.join() !== info.signers.join()) {
        return {
          ok: false,
          failure: `INSTALL_FAILED_UPDATE_INCOMPATIBLE: Existing package ${info.package} signatures do not match newer version; ignoring!`,
        };
      }
      if (info.versionCode < existing.versionCode && !options.allowDowngrade) {
        return {
          ok: false,
          failure: `INSTALL_FAILED_VERSION_DOWNGRADE: Downgrade detected: Update version code ${info.versionCode} is older than current ${existing.versionCode}`,
        };
      }
    }
    // Native code must be built for an ABI the phone runs (a split may carry it).
    const native = new Set(parsed.flatMap((p) => p.info.nativeAbis));
    const abis = this.abis();
    if (native.size > 0 && !abis.some((abi) => native.has(abi))) {
      return {
        ok: false,
        failure: 'INSTALL_FAILED_NO_MATCHING_ABIS: Failed to extract native libraries, res=-113',
      };
    }
    // The APKs are stored under /data/app: they must fit in what the phone has left.
    const size = parsed.reduce((n, p) => n + p.data.length, 0);
    const freed = existing ? this.codeSize(existing) : 0;
    if (size > this.fs.freeBytes + freed) {
      return {
        ok: false,
        failure: 'INSTALL_FAILED_INSUFFICIENT_STORAGE: Requested internal only, but not enough space',
      };
    }
    const now = this.now();
    if (existing) this.removeCode(existing);
    const codePath = `/data/app/~~${token()}==/${info.package}-${token()}==`;
    const record: PackageRecord = {
      name: info.package,
      versionCode: info.versionCode,
      versionName: info.versionName,
      label: info.label,
      launcherActivity: info.launcherActivity,
      activities: info.activities,
      services: info.services,
      instrumentations: info.instrumentations,
      requestedPermissions: info.permissions,
      granted: new Set(existing?.granted ?? []),
      system: false,
      codePath,
      apkPath: `${codePath}/base.apk`,
      uid: existing?.uid ?? this.nextUid++,
      firstInstallMs: existing?.firstInstallMs ?? now,
      lastUpdateMs: now,
      installer: options.installer ?? 'com.android.shell',
      enabled: true,
      debuggable: info.debuggable,
      minSdk: info.minSdk,
      targetSdk: info.targetSdk,
      stopped: true,
      splits: splits.map((p) => p.info.split!),
      signers: info.signers,
    };
    for (const p of record.requestedPermissions) {
      if (!RUNTIME_PERMISSIONS.has(p) || options.grantAll) record.granted.add(p);
    }
    this.fs.mkdir(codePath, { root: true, parents: true, mode: 0o775 });
    this.fs.writeFile(record.apkPath, base.data, { root: true, mode: 0o644 });
    for (const split of splits)
      this.fs.writeFile(`${codePath}/split_${split.info.split}.apk`, split.data, { root: true, mode: 0o644 });
    if (!existing) {
      // The app's private directory belongs to the app's uid (what run-as enters).
      this.fs.mkdir(`/data/data/${record.name}`, { root: true, parents: true, mode: 0o700 });
      this.fs.chown(`/data/data/${record.name}`, record.uid, record.uid);
      this.installed.push(record.name);
    }
    this.packages.set(record.name, record);
    this.changed();
    return { ok: true, record };
  }

  /** Where an app's APKs are: base.apk first, then its splits (what `pm path` prints). */
  apkPaths(p: PackageRecord): string[] {
    return [p.apkPath, ...p.splits.map((name) => `${p.codePath}/split_${name}.apk`)];
  }

  private codeSize(p: PackageRecord): number {
    return this.apkPaths(p).reduce((n, path) => n + this.fileSize(path), 0);
  }

  private fileSize(path: string): number {
    try {
      return this.fs.stat(path).size;
    } catch {
      return 0;
    }
  }

  /** Removes an installed app; system packages cannot be removed. */
  uninstall(name: string, keepData = false): boolean {
    const p = this.packages.get(name);
    if (!p || p.system) return false;
    this.removeCode(p);
    if (!keepData) {
      try {
        this.fs.remove(`/data/data/${name}`, { root: true, recursive: true });
      } catch {
        // already gone
      }
    }
    this.packages.delete(name);
    this.installed = this.installed.filter((n) => n !== name);
    this.changed();
    return true;
  }

  /** `pm clear`: forgets the app's data directory. */
  clearData(name: string): boolean {
    const p = this.packages.get(name);
    if (!p) return false;
    if (!p.system) this.fs.resetDir(`/data/data/${name}`, 0o700, p.uid, p.uid);
    return true;
  }

  /** The user's choice (`pm enable`, `pm disable-user`): a profile save keeps it. */
  setEnabled(name: string, enabled: boolean): boolean {
    const p = this.packages.get(name);
    if (!p) return false;
    p.enabled = enabled;
    this.unavailable.delete(name);
    this.changed();
    return true;
  }

  /**
   * Turns off a package this server machine cannot run (Chrome without a Chromium). Unlike
   * the user's disable, a profile save does not keep it: the profile may boot next on a
   * machine that can.
   */
  setUnavailable(name: string): boolean {
    if (!this.setEnabled(name, false)) return false;
    this.unavailable.add(name);
    return true;
  }

  /** System packages the user disabled: what a profile keeps of the built-in apps' states. */
  userDisabledSystem(): string[] {
    return this.all()
      .filter((p) => p.system && !p.enabled && !this.unavailable.has(p.name))
      .map((p) => p.name);
  }

  /** Stable hex id for `Package [x] (hash):` lines. */
  static hashOf(name: string): string {
    return createHash('sha1').update(name).digest('hex').slice(0, 7);
  }

  save(blobs: { add(data: Buffer): { offset: number; size: number } }): SavedPackage[] {
    return this.thirdParty().map((p) => ({
      name: p.name,
      codePath: p.codePath,
      uid: p.uid,
      firstInstallMs: p.firstInstallMs,
      lastUpdateMs: p.lastUpdateMs,
      installer: p.installer,
      granted: [...p.granted],
      enabled: p.enabled,
      apk: blobs.add(this.fs.readFile(p.apkPath)),
      splits: p.splits.map((name) => ({
        name,
        ...blobs.add(this.fs.readFile(`${p.codePath}/split_${name}.apk`)),
      })),
    }));
  }

  restore(saved: SavedPackage[], data: Buffer): void {
    for (const s of saved) {
      const blob = (at: { offset: number; size: number }) => data.subarray(at.offset, at.offset + at.size);
      const apk = blob(s.apk);
      const splits = (s.splits ?? []).map((split) => ({ name: split.name, data: blob(split) }));
      const result = this.installParts([{ data: apk }, ...splits], {
        grantAll: false,
        allowDowngrade: true,
        installer: s.installer ?? undefined,
      });
      if (!result.ok) continue;
      const r = result.record;
      // Keep the identity the app had (paths, uid, times, grants) as a rebooted phone would.
      this.removeCode(r);
      r.codePath = s.codePath;
      r.apkPath = `${s.codePath}/base.apk`;
      this.fs.mkdir(r.codePath, { root: true, parents: true, mode: 0o775 });
      this.fs.writeFile(r.apkPath, apk, { root: true, mode: 0o644 });
      for (const split of splits)
        this.fs.writeFile(`${r.codePath}/split_${split.name}.apk`, split.data, { root: true, mode: 0o644 });
      r.uid = s.uid;
      r.firstInstallMs = s.firstInstallMs;
      r.lastUpdateMs = s.lastUpdateMs;
      r.granted = new Set(s.granted);
      r.enabled = s.enabled;
      this.nextUid = Math.max(this.nextUid, s.uid + 1);
    }
    this.changed();
  }

  private removeCode(p: PackageRecord): void {
    try {
      this.fs.remove(p.codePath, { root: true, recursive: true });
      const parent = p.codePath.slice(0, p.codePath.lastIndexOf('/'));
      if (parent !== '/data/app' && this.fs.readdir(parent).length === 0)
        this.fs.remove(parent, { root: true, recursive: true });
    } catch {
      // nothing to remove
    }
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}

function token(): string {
  return randomBytes(16).toString('base64url').slice(0, 22);
}

/**
 * A uid as ActivityManager prints it after a process name (UserHandle.formatUid): a system
 * uid as its number (`1000`), an app's as `u0a120`.
 */
export function formatUid(uid: number): string {
  return uid < 10_000 ? String(uid) : `u0a${uid - 10_000}`;
}

export function appUserName(uid: number): string {
  if (uid === 0) return 'root';
  if (uid === 1000) return 'system';
  if (uid === 2000) return 'shell';
  if (uid === 1001) return 'radio';
  if (uid === 1002) return 'bluetooth';
  if (uid >= 10000) return `u0_a${uid - 10000}`;
  return String(uid);
}
