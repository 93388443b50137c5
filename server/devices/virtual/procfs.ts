/**
 * `/proc/<pid>/` for every process in the phone's table (`cmdline`, `comm`, `status`,
 * `stat`), `/proc/self` and `/proc/uptime`, built whenever they are looked up, as procfs
 * does. Android mounts /proc with hidepid=2 and the shell is in readproc, so the shell sees
 * every process.
 */
import { S_IFDIR, S_IFLNK, S_IFREG } from './fs.js';
import type { Access, DirNode, DynamicDir, FileNode, FsNode, LinkNode } from './fs.js';
import { CPUS } from './identity.js';
import { commName, uidOfUser } from './processes.js';
import type { ProcessInfo, ProcessTable } from './processes.js';

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
    'Threads:\t1',
    'SigPnd:\t0000000000000000',
    'ShdPnd:\t0000000000000000',
    'SigBlk:\t0000000000000000',
    `SigIgn:\t${mask(signals.ignored)}`,
    `SigCgt:\t${mask(signals.caught)}`,
    '',
  ].join('\n');
}

/** /proc/PID/stat: the 52 fields of fs/proc/array.c, the ones the phone knows filled in. */
function statFile(p: ProcessInfo, bootMs: number): string {
  const ticks = Math.max(0, Math.round((p.startedMs - bootMs) / 10));
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
    const entries = new Map<string, FsNode>([
      [
        'cmdline',
        file(argv.length > 0 ? Buffer.from(`${argv.join('\0')}\0`) : Buffer.alloc(0), uid, ino + 1, time),
      ],
      ['comm', file(`${p.comm ?? commName(p.name)}\n`, uid, ino + 2, time)],
      ['status', file(statusFile(p, signalsOf(p.pid)), uid, ino + 3, time)],
      ['stat', file(statFile(p, bootMs), uid, ino + 4, time)],
    ]);
    return node<DirNode>({ kind: 'dir', entries, mode: S_IFDIR | 0o555, uid, gid: uid, ino }, time);
  };
  return {
    names: () => [...processes.list().map((p) => String(p.pid)), 'self', 'uptime'],
    lookup: (name: string, access: Access) => {
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

/**
 * `/proc/net/unix`: the phone's listening abstract sockets (Chrome's
 * `@chrome_devtools_remote` while it runs), as the kernel lists them to an unprivileged
 * reader (addresses hidden). Appium finds Chrome's and WebViews' DevTools this way.
 */
export function procNetDirectory(abstractSockets: () => Iterable<string>, now: () => number): DynamicDir {
  const header = 'Num       RefCount Protocol Flags    Type St Inode Path\n';
  return {
    names: () => ['unix'],
    lookup: (name: string) => {
      if (name !== 'unix') return undefined;
      let inode = 30_000;
      const lines = [...abstractSockets()].map(
        // Listening (__SO_ACCEPTCON), a stream socket, unconnected.
        (socket) =>
          `0000000000000000: 00000002 00000000 00010000 0001 01 ${String(inode++).padStart(5)} @${socket}\n`,
      );
      return file(header + lines.join(''), 0, 999_997, now());
    },
  };
}
