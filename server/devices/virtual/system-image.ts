/**
 * The read-only system content every virtual phone starts from, built once per backend and
 * shared (copy-on-write) by all its phones.
 */
import { MEDIA_RW_GID, ROOT_UID, SHELL_UID, SystemImageBuilder } from './fs.js';
import type { DirNode } from './fs.js';
import { CPUS, LOAD_AVERAGES, PROC_MOUNTS } from './identity.js';
import { builtInApkPaths } from './packages.js';
import { powerSupplies } from './battery.js';
import { systemBuildProp } from './props.js';

/** An empty zip archive: stands in for system APKs nobody reads (they exist for pm path and pull). */
const EMPTY_ZIP = Buffer.from([0x50, 0x4b, 0x05, 0x06, ...new Array<number>(18).fill(0)]);

/** Programs that exist in /system/bin (Android 14's toybox applets and Android's own tools). */
export const SYSTEM_BIN = [
  '[',
  'acpi',
  'am',
  'app_process',
  'appops',
  'appwidget',
  'atrace',
  'awk',
  'base64',
  'basename',
  'blkdiscard',
  'blkid',
  'blockdev',
  'bmgr',
  'bu',
  'bugreport',
  'bugreportz',
  'cal',
  'cat',
  'chattr',
  'chcon',
  'chgrp',
  'chmod',
  'chown',
  'chroot',
  'chrt',
  'cksum',
  'clear',
  'cmd',
  'cmp',
  'comm',
  'content',
  'cp',
  'cpio',
  'cut',
  'date',
  'dd',
  'device_config',
  'devmem',
  'df',
  'diff',
  'dirname',
  'dmesg',
  'dos2unix',
  'dpm',
  'du',
  'dumpstate',
  'dumpsys',
  'echo',
  'egrep',
  'env',
  'expand',
  'expr',
  'fallocate',
  'false',
  'fgrep',
  'file',
  'find',
  'flock',
  'fmt',
  'free',
  'freeramdisk',
  'fsfreeze',
  'fsync',
  'getconf',
  'getenforce',
  'getevent',
  'getfattr',
  'getopt',
  'getprop',
  'grep',
  'groups',
  'gunzip',
  'gzip',
  'head',
  'help',
  'hostname',
  'hwclock',
  'i2cdetect',
  'i2cdump',
  'i2cget',
  'i2cset',
  'iconv',
  'id',
  'ifconfig',
  'ime',
  'incident',
  'inotifyd',
  'input',
  'insmod',
  'install',
  'ionice',
  'iorenice',
  'iotop',
  'ip',
  'ip6tables',
  'iptables',
  'kill',
  'killall',
  'linker64',
  'ln',
  'load_policy',
  'locksettings',
  'log',
  'logcat',
  'logname',
  'logwrapper',
  'losetup',
  'ls',
  'lsattr',
  'lshal',
  'lsmod',
  'lsof',
  'lspci',
  'lsusb',
  'makedevs',
  'md5sum',
  'media',
  'microcom',
  'mkdir',
  'mkfifo',
  'mknod',
  'mkswap',
  'mktemp',
  'modinfo',
  'modprobe',
  'monkey',
  'more',
  'mount',
  'mountpoint',
  'mv',
  'nbd-client',
  'nc',
  'ndc',
  'netcat',
  'netstat',
  'nice',
  'nl',
  'nohup',
  'nproc',
  'nsenter',
  'od',
  'partprobe',
  'paste',
  'patch',
  'perfetto',
  'pgrep',
  'pidof',
  'ping',
  'ping6',
  'pivot_root',
  'pkill',
  'pm',
  'pmap',
  'printenv',
  'printf',
  'prlimit',
  'ps',
  'pwd',
  'pwdx',
  'readelf',
  'readlink',
  'realpath',
  'reboot',
  'renice',
  'requestsync',
  'restorecon',
  'rev',
  'rfkill',
  'rm',
  'rmdir',
  'rmmod',
  'rtcwake',
  'run-as',
  'runcon',
  'screencap',
  'screenrecord',
  'sed',
  'sendevent',
  'seq',
  'service',
  'setenforce',
  'setfattr',
  'setprop',
  'setsid',
  'settings',
  'sh',
  'sha1sum',
  'sha224sum',
  'sha256sum',
  'sha384sum',
  'sha512sum',
  'simpleperf',
  'sleep',
  'sm',
  'sort',
  'split',
  'start',
  'stat',
  'stop',
  'strings',
  'stty',
  'svc',
  'swapoff',
  'swapon',
  'sync',
  'sysctl',
  'tac',
  'tail',
  'tar',
  'taskset',
  'tc',
  'tee',
  'telecom',
  'test',
  'time',
  'timeout',
  'toolbox',
  'top',
  'touch',
  'toybox',
  'tr',
  'traceroute',
  'traceroute6',
  'true',
  'truncate',
  'tty',
  'tunctl',
  'uclampset',
  'uiautomator',
  'ulimit',
  'umount',
  'uname',
  'uniq',
  'unix2dos',
  'unlink',
  'unshare',
  'uptime',
  'usleep',
  'uudecode',
  'uuencode',
  'uuidgen',
  'vconfig',
  'vdc',
  'vi',
  'vmstat',
  'watch',
  'wc',
  'which',
  'whoami',
  'wm',
  'xargs',
  'xxd',
  'yes',
  'zcat',
];

/**
 * The programs of /system/bin that are binaries of their own; every other one is a link to
 * toolbox (TOOLBOX) or toybox, as `ls -l /system/bin` shows on a phone (`ls -> toybox`).
 * app_process is a link to app_process64, the binary.
 */
const OWN_BINARIES = new Set([
  'am',
  'appops',
  'appwidget',
  'atrace',
  'awk',
  'bmgr',
  'bu',
  'bugreport',
  'bugreportz',
  'cmd',
  'content',
  'device_config',
  'dpm',
  'dumpstate',
  'dumpsys',
  'ime',
  'incident',
  'input',
  'ip',
  'ip6tables',
  'iptables',
  'linker64',
  'locksettings',
  'logcat',
  'logwrapper',
  'lshal',
  'media',
  'monkey',
  'ndc',
  'perfetto',
  'ping',
  'ping6',
  'pm',
  'reboot',
  'requestsync',
  'run-as',
  'screencap',
  'screenrecord',
  'service',
  'settings',
  'sh',
  'simpleperf',
  'sm',
  'svc',
  'tc',
  'telecom',
  'toolbox',
  'toybox',
  'uiautomator',
  'vdc',
  'wm',
]);

/** The commands Android's toolbox provides (the rest of the small ones are toybox's). */
const TOOLBOX = new Set(['getevent', 'getprop', 'modprobe', 'setprop', 'start', 'stop']);

function linkTarget(name: string): string {
  if (name === 'app_process') return 'app_process64';
  return TOOLBOX.has(name) ? 'toolbox' : 'toybox';
}

/** The time an AOSP build gives every file of its system image: 2009-01-01 00:00:00 UTC. */
const BUILD_FILE_TIME = 1_230_768_000_000;
/** The time of everything else the image holds (directories made at boot, /proc, /dev). */
const BOOT_IMAGE_TIME = Date.UTC(2024, 0, 1);

/** /proc/cpuinfo as an arm64 kernel writes it: a block per CPU, no Hardware line. */
const CPUINFO = CPUS.map(
  (cpu, i) => `processor\t: ${i}
BogoMIPS\t: 49.15
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x${cpu.variant.toString(16)}
CPU part\t: 0x${cpu.part.toString(16)}
CPU revision\t: 1

`,
).join('');

const MEMINFO = `MemTotal:        7767864 kB
MemFree:          412140 kB
MemAvailable:    3604288 kB
Buffers:            5848 kB
Cached:          3131344 kB
SwapCached:        34148 kB
Active:          2316412 kB
Inactive:        2631812 kB
SwapTotal:       4194300 kB
SwapFree:        3123456 kB
`;

export function buildSystemImage(): DirNode {
  const b = new SystemImageBuilder();
  for (const dir of [
    '/acct',
    '/apex',
    '/config',
    '/debug_ramdisk',
    '/mnt',
    '/odm',
    '/oem',
    '/product',
    '/system_ext',
    '/vendor',
  ]) {
    b.dir(dir);
  }
  b.dir('/system/bin')
    .dir('/system/app')
    .dir('/system/priv-app')
    .dir('/system/framework')
    .dir('/system/lib64')
    .dir('/system/etc');
  // A build dates every file of its image the same (AOSP's fixed build timestamp), and
  // installs toybox's and toolbox's commands as links to their one binary.
  b.at(BUILD_FILE_TIME);
  for (const name of SYSTEM_BIN) {
    const path = `/system/bin/${name}`;
    if (OWN_BINARIES.has(name)) b.file(path, '\x7fELF', 0o755, ROOT_UID, SHELL_UID);
    else b.link(path, linkTarget(name), 0o755, ROOT_UID, SHELL_UID);
  }
  b.file('/system/bin/app_process64', '\x7fELF', 0o755, ROOT_UID, SHELL_UID);
  b.file('/system/build.prop', systemBuildProp());
  b.file('/system/framework/framework.jar', 'PK');
  for (const apk of builtInApkPaths()) b.file(apk, EMPTY_ZIP);
  b.at(BOOT_IMAGE_TIME);
  b.link('/bin', '/system/bin');
  b.link('/etc', '/system/etc');
  b.link('/sdcard', '/storage/self/primary');
  b.link('/d', '/sys/kernel/debug');
  b.dir('/sys/kernel/debug', 0o755);
  // The battery and chargers as their drivers publish them (battery tools read capacity).
  for (const [supply, files] of Object.entries(powerSupplies())) {
    const dir = `/sys/class/power_supply/${supply}`;
    b.dir(dir, 0o755);
    for (const [name, value] of Object.entries(files)) b.file(`${dir}/${name}`, `${value}\n`, 0o444);
    const uevent = Object.entries(files).map(([k, v]) => `POWER_SUPPLY_${k.toUpperCase()}=${v}\n`);
    b.file(`${dir}/uevent`, `POWER_SUPPLY_NAME=${supply}\n${uevent.join('')}`, 0o644);
  }
  // The CPUs as sysfs lists them (tools count cpuN or read online).
  const cpuRange = `0-${CPUS.length - 1}\n`;
  b.dir('/sys/devices/system/cpu', 0o755);
  for (const name of ['possible', 'present', 'online'])
    b.file(`/sys/devices/system/cpu/${name}`, cpuRange, 0o444);
  CPUS.forEach((_, i) => {
    b.dir(`/sys/devices/system/cpu/cpu${i}`, 0o755);
    b.file(`/sys/devices/system/cpu/cpu${i}/online`, '1\n', 0o644);
  });
  b.dir('/dev', 0o755)
    .chr('/dev/null', 'null')
    .chr('/dev/zero', 'zero')
    .chr('/dev/tty', 'tty')
    .chr('/dev/random', 'random')
    .chr('/dev/urandom', 'random');
  b.dir('/proc', 0o555);
  b.file('/proc/cpuinfo', CPUINFO, 0o444);
  b.file('/proc/meminfo', MEMINFO, 0o444);
  b.file('/proc/mounts', PROC_MOUNTS, 0o444);
  // The load averages uptime shows, one running of the threads, and the last pid given.
  b.file('/proc/loadavg', `${LOAD_AVERAGES.join(' ')} 1/1094 4861\n`, 0o444);
  b.file(
    '/proc/version',
    'Linux version 5.15.110-android14-11 (build-user@build-host) (Android clang version 17.0.2) #1 SMP PREEMPT\n',
    0o444,
  );
  b.dir('/proc/net', 0o555);
  b.dir('/storage', 0o755);
  b.link('/storage/self/primary', '/storage/emulated/0');
  b.dir('/storage/emulated', 0o711, ROOT_UID, 1028);
  b.dir('/storage/emulated/0', 0o770, ROOT_UID, MEDIA_RW_GID);
  for (const d of [
    'Alarms',
    'Android',
    'Audiobooks',
    'DCIM',
    'Documents',
    'Download',
    'Movies',
    'Music',
    'Notifications',
    'Pictures',
    'Podcasts',
    'Recordings',
    'Ringtones',
  ]) {
    b.dir(`/storage/emulated/0/${d}`, 0o770, ROOT_UID, MEDIA_RW_GID);
  }
  b.dir('/data', 0o771, 1000, 1000);
  b.dir('/data/local', 0o751, ROOT_UID, ROOT_UID);
  b.dir('/data/local/tmp', 0o771, SHELL_UID, SHELL_UID);
  b.dir('/data/app', 0o771, 1000, 1000);
  b.dir('/data/data', 0o771, 1000, 1000);
  b.dir('/data/system', 0o775, 1000, 1000);
  // Where bugreportz leaves zipped bug reports; /bugreports points there, as on a phone.
  b.dir('/data/user_de', 0o711, 1000, 1000);
  b.dir('/data/user_de/0', 0o771, 1000, 1000);
  b.dir('/data/user_de/0/com.android.shell', 0o700, SHELL_UID, SHELL_UID);
  b.dir('/data/user_de/0/com.android.shell/files', 0o771, SHELL_UID, SHELL_UID);
  b.dir('/data/user_de/0/com.android.shell/files/bugreports', 0o770, SHELL_UID, SHELL_UID);
  b.link('/bugreports', '/data/user_de/0/com.android.shell/files/bugreports');
  return b.root;
}
