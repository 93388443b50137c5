/** System properties (`getprop` / `setprop`). */
import { DEVICE } from './identity.js';

const FINGERPRINT = `${DEVICE.brand}/${DEVICE.product}/${DEVICE.device}:${DEVICE.release}/${DEVICE.buildId}/${DEVICE.incremental}:user/release-keys`;

/** Built-in values, shared by every phone (a phone stores only what setprop changed). */
export const DEFAULT_PROPS: ReadonlyMap<string, string> = new Map(
  Object.entries({
    'dalvik.vm.heapsize': '512m',
    'debug.sf.hw': '1',
    'gsm.operator.alpha': 'Android',
    'gsm.sim.state': 'LOADED',
    'init.svc.adbd': 'running',
    'init.svc.bootanim': 'stopped',
    'init.svc.surfaceflinger': 'running',
    'init.svc.zygote': 'running',
    'persist.sys.locale': 'en-US',
    'persist.sys.timezone': 'UTC',
    'persist.sys.usb.config': 'adb',
    'qemu.hw.mainkeys': '0',
    'ro.adb.secure': '0',
    'ro.boot.flash.locked': '1',
    'ro.boot.hardware': 'shiba',
    'ro.boot.qemu': '0',
    'ro.boot.serialno': 'PL0000000001',
    'ro.boot.vbmeta.device_state': 'locked',
    'ro.boot.verifiedbootstate': 'green',
    'ro.bootmode': 'unknown',
    'ro.build.characteristics': 'nosdcard',
    'ro.build.date': 'Mon Jan  1 00:00:00 UTC 2024',
    'ro.build.date.utc': '1704067200',
    'ro.build.description': `${DEVICE.product}-user ${DEVICE.release} ${DEVICE.buildId} ${DEVICE.incremental} release-keys`,
    'ro.build.display.id': DEVICE.buildId,
    'ro.build.fingerprint': FINGERPRINT,
    'ro.build.flavor': `${DEVICE.product}-user`,
    'ro.build.host': 'phonelease',
    'ro.build.id': DEVICE.buildId,
    'ro.build.product': DEVICE.product,
    'ro.build.tags': 'release-keys',
    'ro.build.type': 'user',
    'ro.build.user': 'android-build',
    'ro.build.version.codename': 'REL',
    'ro.build.version.all_codenames': 'REL',
    'ro.build.version.incremental': DEVICE.incremental,
    'ro.build.version.min_supported_target_sdk': '23',
    'ro.build.version.preview_sdk': '0',
    'ro.build.version.release': DEVICE.release,
    'ro.build.version.release_or_codename': DEVICE.release,
    'ro.build.version.sdk': String(DEVICE.sdk),
    'ro.build.version.security_patch': DEVICE.securityPatch,
    'ro.carrier': 'unknown',
    'ro.config.ringtone': 'Your_New_Adventure.ogg',
    'ro.crypto.state': 'encrypted',
    'ro.crypto.type': 'file',
    'ro.debuggable': '0',
    'ro.hardware': 'shiba',
    'ro.kernel.qemu': '0',
    'ro.opengles.version': '196610',
    'ro.product.board': 'shiba',
    'ro.product.brand': DEVICE.brand,
    'ro.product.cpu.abi': 'arm64-v8a',
    'ro.product.cpu.abilist': 'arm64-v8a',
    'ro.product.cpu.abilist32': '',
    'ro.product.cpu.abilist64': 'arm64-v8a',
    'ro.product.device': DEVICE.device,
    'ro.product.first_api_level': String(DEVICE.sdk),
    'ro.product.locale': 'en-US',
    'ro.product.manufacturer': DEVICE.manufacturer,
    'ro.product.model': DEVICE.model,
    'ro.product.name': DEVICE.product,
    'ro.product.vendor.brand': DEVICE.brand,
    'ro.product.vendor.device': DEVICE.device,
    'ro.product.vendor.manufacturer': DEVICE.manufacturer,
    'ro.product.vendor.model': DEVICE.model,
    'ro.product.vendor.name': DEVICE.product,
    'ro.revision': 'MP1.0',
    'ro.secure': '1',
    'ro.serialno': 'PL0000000001',
    'ro.sf.lcd_density': String(DEVICE.density),
    'ro.system.build.date': 'Mon Jan  1 00:00:00 UTC 2024',
    'ro.system.build.date.utc': '1704067200',
    'ro.system.build.fingerprint': FINGERPRINT,
    'ro.system.build.id': DEVICE.buildId,
    'ro.system.build.tags': 'release-keys',
    'ro.system.build.type': 'user',
    'ro.system.build.version.incremental': DEVICE.incremental,
    'ro.system.build.version.release': DEVICE.release,
    'ro.system.build.version.release_or_codename': DEVICE.release,
    'ro.system.build.version.sdk': String(DEVICE.sdk),
    'ro.vendor.build.version.sdk': String(DEVICE.sdk),
    'ro.zygote': 'zygote64',
    'service.adb.root': '0',
    'sys.boot_completed': '1',
    'sys.usb.config': 'adb',
    'sys.usb.state': 'adb',
    'vold.decrypt': 'trigger_restart_framework',
    'dev.bootcomplete': '1',
  }),
);

/**
 * /system/build.prop: the system partition's properties (ro.system.build.*) and the build's
 * (ro.build.*), in the sections Android's build writes them, with the values getprop gives.
 */
export function systemBuildProp(): string {
  const section = (title: string, prefix: string) =>
    `####################################\n# ${title}\n####################################\n` +
    [...DEFAULT_PROPS]
      .filter(([key]) => key.startsWith(prefix))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, value]) => `${key}=${value}\n`)
      .join('');
  return (
    section(
      'from generate-common-build-props\n# These properties identify this partition image.',
      'ro.system.',
    ) + section('from gen_build_prop.sh', 'ro.build.')
  );
}

export class SystemProps {
  /** Only the values changed on this phone. */
  private readonly changed = new Map<string, string>();

  get(key: string): string | null {
    return this.changed.get(key) ?? DEFAULT_PROPS.get(key) ?? null;
  }

  /** Returns an error text (as setprop prints it) or null on success. */
  set(key: string, value: string): string | null {
    if (!/^[A-Za-z0-9_.\-@:]+$/.test(key) || key.length > 256)
      return `Failed to set property '${key}' to '${value}'`;
    if (key.startsWith('ro.') && this.get(key) !== null)
      return `Failed to set property '${key}' to '${value}'.\nSee dmesg for error reason.`;
    this.changed.set(key, value);
    return null;
  }

  entries(): [string, string][] {
    const all = new Map(DEFAULT_PROPS);
    for (const [k, v] of this.changed) all.set(k, v);
    return [...all].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** persist.* values survive a reboot on a real phone; they go into profile saves. */
  persistent(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of this.changed) if (k.startsWith('persist.')) out[k] = v;
    return out;
  }

  restore(values: Record<string, string>): void {
    for (const [k, v] of Object.entries(values)) if (k.startsWith('persist.')) this.changed.set(k, v);
  }
}
