/**
 * `/proc/<pid>/` for every process in the phone's table (`cmdline`, `comm`, `status`,
 * `stat`), `/proc/self`, `/proc/uptime` and `/proc/stat`, built whenever they are looked up, as procfs
 * does. Android mounts /proc with hidepid=2 and the shell is in readproc, so the shell sees
 * every process.
 */
import { S_IFDIR, S_IFLNK, S_IFREG } from './fs.js';
import type { Access, DirNode, DynamicDir, FileNode, FsNode, LinkNode } from './fs.js';
import { CPUS } from './identity.js';
import { commName, uidOfUser } from './processes.js';
import type { ProcessInfo, ProcessTable } from './processes.js';
import { TCP_LISTEN } from './network.js';
import type { PhoneNetwork, TcpSocket } from './network.js';

const STATE_NAMES: Record<string, string> = {
  R: 'R (running)',
  S: 'S (sleeping)',
  D: 'D (disk sleep)',
  T: 'T (stopped)',
  Z: 'Z (zombie)',
};

/** A pseudo-terminal's device number as stat's tty_nr encodes it (major 136). */
function ttyNumber(tty: string | null | undefined): number {
  const pts = tty ? /^pts\/(\d+)$/.exec(tty) : null;
  return pts ? (136 << 8) | Number(pts[1]) : 0;
}

function mask(signals: readonly number[]): string {
  let bits = 0n;
  for (const s of signals) bits |= 1n << BigInt(s - 1);
  return bits.toString(16).padStart(16, '0');
}

function statusFile(p: ProcessInfo, signals: { ignored: number[]; caught: number[] }): string {
  const uid = p.uid ?? uidOfUser(p.user);
  const ids = `${uid}\t${uid}\t${uid}\t${uid}`;
  const kb = (n: number) => `${String(n).padStart(8)} kB`;
  return [
    `Name:\t${p.comm ?? commName(p.name)}`,
    'Umask:\t0022',
    `State:\t${STATE_NAMES[p.state ?? 'S'] ?? STATE_NAMES.S}`,
    `Tgid:\t${p.pid}`,
    'Ngid:\t0',
    `Pid:\t${p.pid}`,
    `PPid:\t${p.ppid}`,
    'TracerPid:\t0',
    `Uid:\t${ids}`,
    `Gid:\t${ids}`,
    'FDSize:\t64',
    `VmPeak:\t${kb(p.vsz)}`,
    `VmSize:\t${kb(p.vsz)}`,
    `VmRSS:\t${kb(p.rss)}`,
    `Threads:\t${threadIds(p).length}`,
    'SigPnd:\t0000000000000000',
    'ShdPnd:\t0000000000000000',
    'SigBlk:\t0000000000000000',
    `SigIgn:\t${mask(signals.ignored)}`,
    `SigCgt:\t${mask(signals.caught)}`,
    '',
  ].join('\n');
}

/** When a process started, in clock ticks (1/100 s) after boot: /proc/PID/stat's field 22. */
export function startTicks(p: ProcessInfo, bootMs: number): number {
  return Math.max(0, Math.round((p.startedMs - bootMs) / 10));
}

/**
 * The threads of a process, as /proc/PID/task lists them. The phone runs no code of its
 * processes, so each has its main thread only (TID = PID, `Threads: 1` in its status).
 */
export function threadIds(p: ProcessInfo): number[] {
  return [p.pid];
}

/** /proc/PID/stat: the 52 fields of fs/proc/array.c, the ones the phone knows filled in. */
function statFile(p: ProcessInfo, bootMs: number): string {
  const ticks = startTicks(p, bootMs);
  const fields = [
    String(p.pid),
    `(${p.comm ?? commName(p.name)})`,
    p.state ?? 'S',
    String(p.ppid),
    String(p.pgid ?? p.pid),
    String(p.sid ?? p.pid),
    String(ttyNumber(p.tty)),
    '-1',
    '4194560',
    ...Array<string>(8).fill('0'),
    '20',
    '0',
    '1',
    '0',
    String(ticks),
    String(p.vsz * 1024),
    String(Math.ceil(p.rss / 4)),
    '18446744073709551615',
    ...Array<string>(26).fill('0'),
  ];
  return `${fields.join(' ')}\n`;
}

/**
 * How the CPUs spend their time, in shares of each CPU's: the phone is mostly idle (as
 * /proc/uptime's idle seconds say). user, nice, system, idle, iowait, irq, softirq.
 */
const CPU_SHARES = [0.06, 0, 0.03, 0.9, 0.005, 0.002, 0.003] as const;

/**
 * /proc/stat (fs/proc/stat.c) `upMs` after boot: the time of all CPUs and of each, in
 * USER_HZ (100 a second), as CPU_SHARES divides it, so that a tool's two readings give the
 * usage the phone has (about 10%); then the counters since boot.
 */
function systemStat(upMs: number, bootMs: number, lastPid: number): string {
  const ticks = Math.floor(upMs / 10);
  const times = CPU_SHARES.map((share) => Math.floor(ticks * share));
  const line = (name: string, n: number) => `${name} ${times.map((t) => t * n).join(' ')} 0 0 0\n`;
  const interrupts = ticks * CPUS.length * 3;
  return [
    line('cpu ', CPUS.length),
    ...CPUS.map((_, i) => line(`cpu${i}`, 1)),
    `intr ${interrupts}\n`,
    `ctxt ${interrupts * 2}\n`,
    `btime ${Math.floor(bootMs / 1000)}\n`,
    `processes ${lastPid}\n`,
    'procs_running 1\n',
    'procs_blocked 0\n',
    `softirq ${times[6]! * CPUS.length} 0 0 0 0 0 0 0 0 0 0\n`,
  ].join('');
}

/** A node of procfs, made when looked up (its times are then). */
function node<T extends FsNode>(
  fields: Omit<T, 'mtimeMs' | 'atimeMs' | 'ctimeMs' | 'owner'>,
  time: number,
): T {
  return { ...fields, mtimeMs: time, atimeMs: time, ctimeMs: time, owner: null } as unknown as T;
}

/** A read-only procfs file of `uid`'s. */
function file(data: string | Buffer, uid: number, ino: number, time: number): FileNode {
  return node<FileNode>(
    {
      kind: 'file',
      data: typeof data === 'string' ? Buffer.from(data) : data,
      mode: S_IFREG | 0o444,
      uid,
      gid: uid,
      ino,
    },
    time,
  );
}

export interface ProcSignals {
  /** Signals a process of the table ignores and catches (for SigIgn/SigCgt). */
  (pid: number): { ignored: number[]; caught: number[] };
}

/** The dynamic part of /proc: one directory per process, and `self`. */
export function procDirectory(
  processes: ProcessTable,
  now: () => number,
  signalsOf: ProcSignals,
  bootMs: number,
): DynamicDir {
  const directory = (p: ProcessInfo): DirNode => {
    const uid = p.uid ?? uidOfUser(p.user);
    const time = p.startedMs;
    const ino = 1_000_000 + p.pid * 16;
    const argv = p.argv ?? (p.args ? p.args.split(' ') : []);
    // What a process and each of its threads (task/TID) show alike.
    const files = (base: number) =>
      new Map<string, FsNode>([
        [
          'cmdline',
          file(argv.length > 0 ? Buffer.from(`${argv.join('\0')}\0`) : Buffer.alloc(0), uid, base + 1, time),
        ],
        ['comm', file(`${p.comm ?? commName(p.name)}\n`, uid, base + 2, time)],
        ['status', file(statusFile(p, signalsOf(p.pid)), uid, base + 3, time)],
        ['stat', file(statFile(p, bootMs), uid, base + 4, time)],
      ]);
    const dir = (entries: Map<string, FsNode>, dirIno: number) =>
      node<DirNode>({ kind: 'dir', entries, mode: S_IFDIR | 0o555, uid, gid: uid, ino: dirIno }, time);
    const tasks = new Map<string, FsNode>(
      threadIds(p).map((tid, i) => [String(tid), dir(files(ino + 8 + i * 8), ino + 7 + i * 8)]),
    );
    const entries = files(ino);
    entries.set('task', dir(tasks, ino + 5));
    return dir(entries, ino);
  };
  return {
    names: () => [...processes.list().map((p) => String(p.pid)), 'self', 'stat', 'uptime'],
    lookup: (name: string, access: Access) => {
      if (name === 'stat') {
        const pids = processes.list().map((p) => p.pid);
        return file(systemStat(Math.max(0, now() - bootMs), bootMs, Math.max(...pids)), 0, 999_997, now());
      }
      if (name === 'uptime') {
        // Seconds since boot, and the CPUs' idle seconds (summed; the phone is mostly idle).
        const up = Math.max(0, now() - bootMs) / 1000;
        return file(`${up.toFixed(2)} ${(up * CPUS.length * 0.9).toFixed(2)}\n`, 0, 999_998, now());
      }
      if (name === 'self') {
        if (access.pid === undefined) return undefined;
        return node<LinkNode>(
          { kind: 'link', target: String(access.pid), mode: S_IFLNK | 0o777, uid: 0, gid: 0, ino: 999_999 },
          now(),
        );
      }
      if (!/^\d+$/.test(name)) return undefined;
      const p = processes.byPid(Number(name));
      return p ? directory(p) : undefined;
    },
  };
}

/** The kernel's hex of an address in /proc/net: each 32-bit word of it as the CPU (little-endian) reads it. */
function kernelHex(address: string, family: 4 | 6): string {
  const bytes = Buffer.alloc(family === 4 ? 4 : 16);
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  if (v4) bytes.set(v4.slice(1).map(Number), bytes.length - 4);
  if (family === 6 && address.startsWith('::ffff:')) bytes.writeUInt16BE(0xffff, 10);
  let hex = '';
  for (let i = 0; i < bytes.length; i += 4)
    hex += bytes.readUInt32LE(i).toString(16).toUpperCase().padStart(8, '0');
  return hex;
}

/** One socket's line of /proc/net/tcp or tcp6, in the kernel's columns (net/ipv4/tcp_ipv4.c, net/ipv6/tcp_ipv6.c). */
function tcpLine(slot: number, t: TcpSocket): string {
  const end = (address: string, port: number) =>
    `${kernelHex(address, t.family)}:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const listening = t.state === TCP_LISTEN;
  // refcount, the (hidden) kernel pointer, rto and ato in clock ticks, quick-ack/ping-pong,
  // the congestion window, and the fast-open queue (listening) or ssthresh (-1: slow start).
  const tail = listening ? '1 0000000000000000 100 0 0 10 0' : '1 0000000000000000 20 4 30 10 -1';
  return (
    `${String(slot).padStart(4)}: ${end(t.local, t.localPort)} ${end(t.remote, t.remotePort)} ` +
    `${t.state.toString(16).toUpperCase().padStart(2, '0')} 00000000:00000000 00:00000000 00000000 ` +
    `${String(t.uid).padStart(5)} ${'0'.padStart(8)} ${t.inode} ${tail}`
  );
}

const TCP_HEADER =
  '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';
const TCP6_HEADER =
  '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';
const UDP_HEADER =
  '   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops';
const RAW_HEADER =
  '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops';
/** udp6 and raw6 (the kernel's IPV6_SEQ_DGRAM_HEADER). */
const UDP6_HEADER =
  '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops';

/**
 * `/proc/net`: `tcp` and `tcp6` (what listens on the phone's ports and the connections to
 * them, as the kernel lists them: IPv4 lines padded to 149 columns, IPv6 not), `udp` and
 * `udp`, `udp6`, `raw` and `raw6` (the phone has no such sockets of its own: headers only), and `unix`: the listening
 * abstract sockets (Chrome's `@chrome_devtools_remote` while it runs), as the kernel lists
 * them to an unprivileged reader (addresses hidden). appium-adb's listPorts() and netstat read
 * these; Appium finds Chrome's and WebViews' DevTools in `unix`.
 */
export function procNetDirectory(network: PhoneNetwork, now: () => number): DynamicDir {
  const files: Record<string, () => string> = {
    tcp: () => {
      const lines = [
        TCP_HEADER,
        ...network
          .tcpSockets()
          .filter((t) => t.family === 4)
          .map((t, i) => tcpLine(i, t)),
      ];
      return lines.map((l) => `${l.padEnd(149)}\n`).join('');
    },
    tcp6: () =>
      [
        TCP6_HEADER,
        ...network
          .tcpSockets()
          .filter((t) => t.family === 6)
          .map((t, i) => tcpLine(i, t)),
      ]
        .map((l) => `${l}\n`)
        .join(''),
    udp: () => `${UDP_HEADER.padEnd(127)}\n`,
    udp6: () => `${UDP6_HEADER}\n`,
    raw: () => `${RAW_HEADER}\n`,
    raw6: () => `${UDP6_HEADER}\n`,
    unix: () => {
      let inode = 30_000;
      const lines = [...network.abstractSockets.keys()].map(
        // Listening (__SO_ACCEPTCON), a stream socket, unconnected.
        (socket) =>
          `0000000000000000: 00000002 00000000 00010000 0001 01 ${String(inode++).padStart(5)} @${socket}\n`,
      );
      return 'Num       RefCount Protocol Flags    Type St Inode Path\n' + lines.join('');
    },
  };
  const inodes: Record<string, number> = {
    tcp: 999_991,
    tcp6: 999_992,
    udp: 999_993,
    udp6: 999_994,
    raw: 999_995,
    raw6: 999_996,
    unix: 999_997,
  };
  return {
    names: () => Object.keys(files),
    lookup: (name: string) => {
      const build = Object.hasOwn(files, name) ? files[name] : undefined;
      return build ? file(build(), 0, inodes[name]!, now()) : undefined;
    },
  };
}
