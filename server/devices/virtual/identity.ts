/** Who the virtual phone says it is: a Pixel 8 on Android 14. */

export const DEVICE = {
  manufacturer: 'Google',
  brand: 'google',
  model: 'Pixel 8',
  /** ro.product.name / ro.product.device (the Pixel 8's codename). */
  product: 'shiba',
  device: 'shiba',
  release: '14',
  sdk: 34,
  buildId: 'UQ1A.240205.004',
  incremental: '11269751',
  securityPatch: '2024-02-05',
  width: 720,
  height: 1280,
  density: 320,
} as const;

/**
 * The Pixel 8's CPUs (Tensor G3), as /proc/cpuinfo numbers them: four Cortex-A510, four
 * Cortex-A715 and one Cortex-X3 (ARM's part numbers).
 */
export const CPUS: readonly { part: number; variant: number }[] = [
  ...Array.from({ length: 4 }, () => ({ part: 0xd46, variant: 0x1 })),
  ...Array.from({ length: 4 }, () => ({ part: 0xd4d, variant: 0x1 })),
  { part: 0xd4e, variant: 0x1 },
];

export const PHONE_LABEL = `Virtual Android phone (${DEVICE.model}, Android ${DEVICE.release})`;

/**
 * Features this adbd offers. Not sendrecv_v2: adb 29 does not know it and the
 * v1 SEND/RECV path is what every client supports.
 */
export const ADB_FEATURES = [
  'shell_v2',
  'cmd',
  'stat_v2',
  'ls_v2',
  'fixed_push_mkdir',
  'apex',
  'abb',
  'abb_exec',
  'fixed_push_symlink_timestamp',
  'remount_shell',
  // Only used with hosts that announce it too (adb 29 does not; @yume-chan/adb does).
  'delayed_ack',
] as const;

export function connectBanner(): string {
  return (
    `device::ro.product.name=${DEVICE.product};ro.product.model=${DEVICE.model};` +
    `ro.product.device=${DEVICE.device};features=${ADB_FEATURES.join(',')}`
  );
}

/** The system's load averages (1, 5 and 15 minutes), as uptime and /proc/loadavg show them. */
export const LOAD_AVERAGES = ['0.42', '0.31', '0.18'] as const;
