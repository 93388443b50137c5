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
  /** Vsyncs a second: the display's one mode (dumpsys display), what screenrecord says and times frames by. */
  refreshRate: 60,
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

/**
 * The phone's mounts, as /proc/mounts lists them (source, mount point, type, options) with
 * the 1K blocks of the ones df shows and the blocks they use; `usedKb: null` for the shared
 * storage and /data, which hold the files written there.
 */
export const MOUNTS: readonly {
  source: string;
  target: string;
  type: string;
  options: string;
  sizeKb?: number;
  usedKb?: number | null;
}[] = [
  {
    source: '/dev/block/dm-0',
    target: '/',
    type: 'ext4',
    options: 'ro,seclabel,relatime',
    sizeKb: 5_799_428,
    usedKb: 5_781_948,
  },
  {
    source: 'tmpfs',
    target: '/dev',
    type: 'tmpfs',
    options: 'rw,seclabel,nosuid,relatime,size=3883932k,nr_inodes=970983,mode=755',
    sizeKb: 3_883_932,
    usedKb: 1_508,
  },
  {
    source: 'devpts',
    target: '/dev/pts',
    type: 'devpts',
    options: 'rw,seclabel,relatime,mode=600,ptmxmode=000',
  },
  { source: 'proc', target: '/proc', type: 'proc', options: 'rw,relatime,gid=3009,hidepid=invisible' },
  { source: 'sysfs', target: '/sys', type: 'sysfs', options: 'rw,seclabel,relatime' },
  {
    source: 'tmpfs',
    target: '/mnt',
    type: 'tmpfs',
    options: 'rw,seclabel,nosuid,nodev,noexec,relatime,size=3883932k,nr_inodes=970983,mode=755,gid=1000',
    sizeKb: 3_883_932,
    usedKb: 0,
  },
  {
    source: '/dev/block/dm-5',
    target: '/data',
    type: 'f2fs',
    options:
      'rw,lazytime,seclabel,nosuid,nodev,noatime,background_gc=on,discard,reserve_root=32768,resuid=0,resgid=1065,inline_xattr,inline_data,active_logs=6,alloc_mode=default,checkpoint_merge,fsync_mode=nobarrier',
    sizeKb: 116_892_784,
    usedKb: null,
  },
  {
    source: '/dev/fuse',
    target: '/storage/emulated',
    type: 'fuse',
    options: 'rw,lazytime,nosuid,nodev,noexec,noatime,user_id=0,group_id=0,allow_other',
    sizeKb: 116_892_784,
    usedKb: null,
  },
];

/** /proc/mounts: a line per mount, as the kernel writes it. */
export const PROC_MOUNTS = MOUNTS.map((m) => `${m.source} ${m.target} ${m.type} ${m.options} 0 0\n`).join('');
