/**
 * toybox's `netstat` (0.8.9): reads /proc/net/{tcp,tcp6,udp,udp6,raw,raw6,unix} as the
 * caller may read them and prints toybox's columns, its filter (listening sockets with -l,
 * everything with -a, connected ones otherwise) and its names: `localhost` for 127.0.0.1 and
 * `[::]` for the IPv6 wildcard unless -n. `-p` names only the sockets of processes the caller
 * may look into (its own), as toybox finds them through /proc/PID/fd; the phone's processes
 * keep no descriptor table, so it shows `-` for every socket, as toybox does for another
 * user's. The routing table (-r) is not modeled: the phone has no /proc/net/route.
 */
import { FsError } from '../../fs.js';
import { appUserName } from '../../packages.js';
import { fail, getopt } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';

const TCP_STATES = [
  '',
  'ESTABLISHED',
  'SYN_SENT',
  'SYN_RECV',
  'FIN_WAIT1',
  'FIN_WAIT2',
  'TIME_WAIT',
  'CLOSE',
  'CLOSE_WAIT',
  'LAST_ACK',
  'LISTEN',
  'CLOSING',
  'UNKNOWN',
];
const UNIX_TYPES = ['', 'STREAM', 'DGRAM', 'RAW', 'RDM', 'SEQPACKET', 'DCCP', 'PACKET'];
const UNIX_STATES = ['', 'LISTENING', 'CONNECTING', 'CONNECTED', 'DISCONNECTING'];

/** An address of /proc/net as text: each 32-bit word little-endian, as the kernel wrote it. */
function addressText(hex: string): string {
  const bytes = Buffer.alloc(hex.length / 2);
  for (let i = 0; i < hex.length; i += 8) bytes.writeUInt32LE(parseInt(hex.slice(i, i + 8), 16) >>> 0, i / 2);
  if (bytes.length === 4) return [...bytes].join('.');
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(bytes.readUInt16BE(i).toString(16));
  // The IPv4-mapped form inet_ntop prints, then the longest run of zero words as `::`.
  if (words.slice(0, 5).every((w) => w === '0') && words[5] === 'ffff')
    return `::ffff:${[...bytes.subarray(12)].join('.')}`;
  const text = words.join(':');
  const runs = text.match(/(^|:)0(:0)+(:|$)/g);
  if (!runs) return text;
  const longest = runs.reduce((a, b) => (b.length > a.length ? b : a));
  return text.replace(longest, '::');
}

/** toybox's addr2str: the host (a name unless -n, numeric when the port is 0) and :port or :*. */
function endpoint(hex: string, port: number, numeric: boolean, width: number): string {
  const address = addressText(hex);
  let host = address;
  // bionic's getnameinfo finds loopback in /system/etc/hosts; nothing else has a name here.
  if (!numeric && port !== 0 && (address === '127.0.0.1' || address === '::1'))
    host = address === '::1' ? 'ip6-localhost' : 'localhost';
  if (host === '::') host = '[::]';
  const suffix = port ? `:${port}` : ':*';
  // The port always shows, even where it clobbers the end of the host.
  const at = Math.min(host.length, width - suffix.length);
  return host.slice(0, Math.max(0, at)) + suffix;
}

/** A /proc/net file; null (said on stderr) when it cannot be read: toybox's xfopen ends netstat there. */
function readProc(ctx: CommandContext, path: string): string | null {
  try {
    return ctx.fs.readFile(path).toString('utf8');
  } catch (error) {
    ctx.stderr.write(`netstat: ${path}: ${error instanceof FsError ? error.reason : String(error)}\n`);
    return null;
  }
}

interface Shown {
  all: boolean;
  listening: boolean;
  numeric: boolean;
  extended: boolean;
  programs: boolean;
  width: number;
}

/** One /proc/net file of internet sockets (toybox's show_ip). */
function showIp(ctx: CommandContext, path: string, o: Shown): boolean {
  const text = readProc(ctx, path);
  if (text === null) return false;
  const label = path.slice(path.lastIndexOf('/') + 1);
  for (const line of text.split('\n').slice(1)) {
    const m =
      /^\s*\d+: ([0-9A-F]{8}|[0-9A-F]{32}):([0-9A-F]+) ([0-9A-F]{8}|[0-9A-F]{32}):([0-9A-F]+) ([0-9A-F]+) ([0-9A-F]+):([0-9A-F]+) \S+ \S+\s+(\d+)\s+\S+ (\d+)/i.exec(
        line,
      );
    if (!m) continue;
    const [, local, lportHex, remote, rportHex, stateHex, txHex, rxHex, uid, inode] = m;
    const lport = parseInt(lportHex!, 16);
    const rport = parseInt(rportHex!, 16);
    let state = parseInt(stateHex!, 16);
    // toybox's own test, as written: listening (-l), everything (-a), or a remote port
    // with any of the bits 0x70 set.
    if (!(o.listening && rport === 0 && state & 0xa) && !o.all && !(rport & 0x70)) continue;
    let stateText = 'UNKNOWN';
    if (label.startsWith('tcp')) {
      if (!state || state >= TCP_STATES.length) state = TCP_STATES.length - 1;
      stateText = TCP_STATES[state]!;
    } else if (label.startsWith('udp')) {
      if (state === 1) stateText = TCP_STATES[1]!;
      else if (state === 7) stateText = '';
    } else stateText = String(state);
    const column = (s: string) => s.slice(0, o.width).padEnd(o.width);
    let out =
      label.padEnd(6) +
      String(parseInt(rxHex!, 16)).padStart(6) +
      String(parseInt(txHex!, 16)).padStart(7) +
      ` ${column(endpoint(local!, lport, o.numeric, o.width))} ${column(endpoint(remote!, rport, o.numeric, o.width))} ` +
      stateText.padEnd(11);
    if (o.extended)
      out += ` ${(o.numeric ? uid! : appUserName(Number(uid))).padEnd(10)} ${inode!.padEnd(11)}`;
    if (o.programs) out += ' -';
    ctx.stdout.write(`${out}\n`);
  }
  return true;
}

/** /proc/net/unix (toybox's show_unix_sockets). */
function showUnix(ctx: CommandContext, o: Shown): boolean {
  const text = readProc(ctx, '/proc/net/unix');
  if (text === null) return false;
  for (const line of text.split('\n').slice(1)) {
    const m = /^[0-9a-fA-F]+: ([0-9A-F]+) [0-9A-F]+ ([0-9A-F]+) ([0-9A-F]+) ([0-9A-F]+) +(\d+)(.*)$/i.exec(
      line,
    );
    if (!m) continue;
    const refcount = parseInt(m[1]!, 16);
    const accepting = (parseInt(m[2]!, 16) & (1 << 16)) !== 0;
    let type = parseInt(m[3]!, 16);
    let state = parseInt(m[4]!, 16);
    if (state === 1 && accepting && !(o.all || o.listening)) continue;
    if (type === 10) type = 7;
    if (type >= UNIX_TYPES.length) type = 0;
    if (state >= UNIX_STATES.length || (state === 1 && !accepting)) state = 0;
    if (state !== 1 && o.listening) continue;
    const flags = `[ ${accepting ? 'ACC ' : ''}]`;
    let out = `unix  ${String(refcount).padEnd(6)} ${flags.padEnd(11)} ${UNIX_TYPES[type]!.padEnd(10)} ${UNIX_STATES[state]!.padEnd(13)} ${m[5]!.padEnd(8)} `;
    if (o.programs) out += `${'-'.padEnd(19)} `;
    // The path follows one separating space (which -p's column already printed).
    const path = m[6]!;
    ctx.stdout.write(`${out}${o.programs ? path : path.slice(1)}\n`);
  }
  return true;
}

export const netstat: CommandFn = (ctx) => {
  const { flags } = getopt(ctx.args);
  if (flags.has('r')) return fail(ctx, '-r: not modeled by the virtual phone (it has no /proc/net/route)');
  const chosen = ['t', 'u', 'w', 'x'].filter((f) => flags.has(f));
  const kinds = new Set(chosen.length > 0 ? chosen : ['t', 'u', 'w', 'x']);
  const o: Shown = {
    all: flags.has('a'),
    listening: flags.has('l'),
    numeric: flags.has('n'),
    extended: flags.has('e'),
    programs: flags.has('p'),
    width: flags.has('W') ? 51 : 23,
  };
  const type = o.all ? 'servers and established' : o.listening ? 'only servers' : 'w/o servers';
  if (kinds.has('t') || kinds.has('u') || kinds.has('w')) {
    let header = `Active Internet connections (${type})\nProto Recv-Q Send-Q ${'Local Address'.padEnd(o.width)} ${'Foreign Address'.padEnd(o.width)} State      `;
    if (o.extended) header += ' User       Inode      ';
    if (o.programs) header += ' PID/Program Name';
    ctx.stdout.write(`${header}\n`);
    const files = [
      ...(kinds.has('t') ? ['tcp', 'tcp6'] : []),
      ...(kinds.has('u') ? ['udp', 'udp6'] : []),
      ...(kinds.has('w') ? ['raw', 'raw6'] : []),
    ];
    for (const f of files) if (!showIp(ctx, `/proc/net/${f}`, o)) return 1;
  }
  if (kinds.has('x')) {
    ctx.stdout.write(
      `Active UNIX domain sockets (${type})\nProto RefCnt Flags       Type       State         I-Node${o.programs ? '   PID/Program Name     ' : '   '}Path\n`,
    );
    if (!showUnix(ctx, o)) return 1;
  }
  return 0;
};
