/**
 * Prepared phones: the apps given to `--preinstall` go onto every virtual phone as it boots,
 * with the record the lease looks for (src/apk/app-files.ts), so a test whose `apps` are
 * all preinstalled finds them there and installs nothing. The APKs were read and parsed
 * once, when the backend started; each phone only stores references to their bytes.
 */
import {
  APP_RECORD_DIR,
  appRecordLine,
  appRecordPath,
  recordMatches,
  type AppBundle,
} from '../../../src/apk/app-files.js';
import type { Device } from './device.js';

/**
 * Installs the apps a phone does not have in this build (a restored profile phone may),
 * as `pm install -r -d -g` from the shell would. Returns the package manager's failure, or
 * null when every app is there.
 */
export function preinstallApps(device: Device, bundles: readonly AppBundle[]): string | null {
  for (const bundle of bundles) {
    const existing = device.packages.get(bundle.package);
    const base = existing ? (device.packages.apkPaths(existing)[0] ?? null) : null;
    if (existing && recordMatches(readRecord(device, bundle.package), bundle, base)) continue;
    const result = device.packages.installParts(
      bundle.files.map((f) => ({ data: f.data, info: f.info })),
      { grantAll: true, allowDowngrade: true, installer: 'com.android.shell' },
    );
    if (!result.ok) return `${bundle.package}: ${result.failure}`;
    // Owned by the shell, as a record the lease writes through adb would be.
    device.fs.mkdir(APP_RECORD_DIR, { parents: true });
    device.fs.writeFile(
      appRecordPath(bundle.package),
      Buffer.from(`${appRecordLine(bundle.hash, result.record.apkPath)}\n`),
    );
  }
  return null;
}

function readRecord(device: Device, pkg: string): string {
  try {
    return device.fs.readFile(appRecordPath(pkg)).toString('utf8');
  } catch {
    return '';
  }
}
