/** What the phone needs to know about an APK, read from the APK itself. */
import { ResourceTable } from './arsc.js';
import { attr, parseAxml, valueText } from './axml.js';
import type { AxmlElement } from './axml.js';
import { signerDigests } from './signing.js';
import { ZipReader } from './zip.js';

export interface InstrumentationInfo {
  /** Fully qualified runner class. */
  name: string;
  targetPackage: string;
  label: string | null;
}

export interface ComponentInfo {
  /** Fully qualified class. */
  name: string;
  exported: boolean;
  actions: string[];
  categories: string[];
}

export interface ApkInfo {
  package: string;
  /** The split's name (`split="config.arm64_v8a"`), or null for an app's base APK. */
  split: string | null;
  versionCode: number;
  versionName: string;
  label: string;
  minSdk: number | null;
  targetSdk: number | null;
  debuggable: boolean;
  /** Fully qualified launcher activity (MAIN + LAUNCHER), if any. */
  launcherActivity: string | null;
  activities: ComponentInfo[];
  services: ComponentInfo[];
  receivers: ComponentInfo[];
  instrumentations: InstrumentationInfo[];
  permissions: string[];
  /** ABIs the APK has native libraries for (`lib/<abi>/*.so`); empty when it has none. */
  nativeAbis: string[];
  /** SHA-256 digests of the signing certificates, sorted; empty when unsigned (signing.ts). */
  signers: string[];
}

export class ApkError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ApkError';
  }
}

/** Fully qualifies a component class name relative to the package. */
export function qualify(pkg: string, name: string): string {
  if (name.startsWith('.')) return pkg + name;
  if (!name.includes('.')) return `${pkg}.${name}`;
  return name;
}

export function readApk(apk: Buffer): ApkInfo {
  let zip: ZipReader;
  try {
    zip = new ZipReader(apk);
  } catch (error) {
    throw new ApkError(`not an APK: ${(error as Error).message}`);
  }
  const manifestBytes = zip.read('AndroidManifest.xml');
  if (!manifestBytes) throw new ApkError('not an APK: no AndroidManifest.xml');
  const manifest = parseAxml(manifestBytes);
  if (manifest.name !== 'manifest') throw new ApkError('AndroidManifest.xml has no <manifest> root');
  let table: ResourceTable | null | undefined;
  const resources = (): ResourceTable | null => {
    if (table === undefined) {
      const arsc = zip.read('resources.arsc');
      try {
        table = arsc ? new ResourceTable(arsc) : null;
      } catch {
        table = null;
      }
    }
    return table;
  };
  const text = (el: AxmlElement, name: string): string | null => {
    const v = attr(el, name);
    if (!v) return null;
    if (v.type === 'reference') return resources()?.resolveString(v.id) ?? null;
    return valueText(v) ?? null;
  };
  const pkg = text(manifest, 'package');
  if (!pkg) throw new ApkError('AndroidManifest.xml has no package name');
  const versionCodeValue = attr(manifest, 'versionCode');
  const versionCode =
    versionCodeValue?.type === 'int'
      ? versionCodeValue.value
      : Number(text(manifest, 'versionCode') ?? '0') || 0;
  const versionName = text(manifest, 'versionName') ?? '';
  const usesSdk = manifest.children.find((c) => c.name === 'uses-sdk');
  const sdk = (name: string) => {
    const v = usesSdk ? attr(usesSdk, name) : undefined;
    return v?.type === 'int' ? v.value : v?.type === 'string' ? Number(v.value) || null : null;
  };
  const application = manifest.children.find((c) => c.name === 'application');
  const debuggableValue = application ? attr(application, 'debuggable') : undefined;
  const component = (el: AxmlElement): ComponentInfo => {
    const filters = el.children.filter((c) => c.name === 'intent-filter');
    const names = (tag: string) =>
      filters.flatMap((f) => f.children.filter((c) => c.name === tag).map((c) => text(c, 'name') ?? ''));
    const exportedValue = attr(el, 'exported');
    return {
      name: qualify(pkg, text(el, 'name') ?? ''),
      exported: exportedValue?.type === 'bool' ? exportedValue.value : filters.length > 0,
      actions: names('action'),
      categories: names('category'),
    };
  };
  const appChildren = application?.children ?? [];
  const activities = appChildren
    .filter((c) => c.name === 'activity' || c.name === 'activity-alias')
    .map(component);
  const launcher = activities.find(
    (a) =>
      a.actions.includes('android.intent.action.MAIN') &&
      a.categories.includes('android.intent.category.LAUNCHER'),
  );
  const appLabel = application ? text(application, 'label') : null;
  const nativeAbis = new Set<string>();
  for (const name of zip.entries.keys()) {
    const m = /^lib\/([^/]+)\/[^/]+\.so$/.exec(name);
    if (m) nativeAbis.add(m[1]!);
  }
  return {
    package: pkg,
    split: text(manifest, 'split') || null,
    versionCode,
    versionName,
    label: appLabel && appLabel.length > 0 ? appLabel : (pkg.split('.').pop() ?? pkg),
    minSdk: sdk('minSdkVersion'),
    targetSdk: sdk('targetSdkVersion'),
    debuggable: debuggableValue?.type === 'bool' ? debuggableValue.value : false,
    launcherActivity: launcher?.name ?? null,
    activities,
    services: appChildren.filter((c) => c.name === 'service').map(component),
    receivers: appChildren.filter((c) => c.name === 'receiver').map(component),
    instrumentations: manifest.children
      .filter((c) => c.name === 'instrumentation')
      .map((c) => ({
        name: qualify(pkg, text(c, 'name') ?? ''),
        targetPackage: text(c, 'targetPackage') ?? pkg,
        label: text(c, 'label'),
      })),
    permissions: manifest.children
      .filter((c) => c.name === 'uses-permission')
      .map((c) => text(c, 'name') ?? '')
      .filter(Boolean),
    nativeAbis: [...nativeAbis].sort(),
    signers: signerDigests(apk, zip),
  };
}
