/**
 * toybox dd (Android 14): if= of= bs= ibs= obs= count= skip= seek= conv= iflag= oflag=
 * status=, with its `N+M records in/out` and transfer summary on stderr, printed however dd
 * ends (a signal included; SIGUSR1 prints it and goes on), as toybox's exit handler does.
 */
import { FsError } from '../../fs.js';
import { resolvePath } from '../command.js';
import type { CommandContext, CommandFn } from '../command.js';
import { openInput } from '../io.js';
import type { Input } from '../io.js';

/** toybox's atolx: a number with an optional c w b k m g t p e suffix (kd md ... decimal). */
export function parseSize(text: string): number | null {
  const m = /^(0x[0-9a-f]+|0[0-7]*|[1-9]\d*)([cwbkmgtpe])?(d)?$/i.exec(text);
  if (!m) return null;
  const digits = m[1]!;
  let value = /^0x/i.test(digits)
    ? parseInt(digits, 16)
    : digits.length > 1 && digits.startsWith('0')
      ? parseInt(digits, 8)
      : Number(digits);
  const suffix = m[2]?.toLowerCase();
  if (m[3] && (!suffix || 'cwb'.includes(suffix))) return null;
  if (suffix === 'w') value *= 2;
  else if (suffix === 'b') value *= 512;
  else if (suffix && suffix !== 'c') {
    const power = 'kmgtpe'.indexOf(suffix) + 1;
    value *= (m[3] ? 1000 : 1024) ** power;
  }
  return value;
}

/** toybox's human_readable with a space and a B: `512 B`, `5.0 M`, `1.2 G`. */
export function humanReadable(n: number): string {
  let num = Math.floor(n);
  let snap = 0;
  let unit = 0;
  while (String(num).length > 3) {
    snap = num;
    num = Math.floor((snap + 512) / 1024);
    unit++;
  }
  let text = String(num);
  if (unit > 0 && text.length === 1) {
    const whole = Math.floor(snap / 1024);
    const tenth = Math.floor(Math.floor(((snap - whole * 1024) * 100 + 50) / 1024) / 10);
    text = `${whole}.${tenth}`;
  }
  return unit > 0 ? `${text} ${' KMGTPEZY'[unit]}` : `${text} B`;
}

interface Options {
  inputName: string | null;
  outputName: string | null;
  ibs: number;
  obs: number;
  /** bs= given: each block read is written as it is. */
  blockMode: boolean;
  count: number;
  skip: number;
  seek: number;
  conv: Set<string>;
  iflag: Set<string>;
  oflag: Set<string>;
  showRecords: boolean;
  showTransfer: boolean;
}

const CONV = ['fsync', 'noerror', 'notrunc', 'sync'];
const IFLAG = ['count_bytes', 'skip_bytes'];
const OFLAG = ['seek_bytes'];

function parseArgs(ctx: CommandContext): Options | string {
  const o: Options = {
    inputName: null,
    outputName: null,
    ibs: 512,
    obs: 512,
    blockMode: false,
    count: Number.MAX_SAFE_INTEGER,
    skip: 0,
    seek: 0,
    conv: new Set(),
    iflag: new Set(),
    oflag: new Set(),
    showRecords: true,
    showTransfer: true,
  };
  let bs = 0;
  const size = (text: string, low: number): number => {
    const n = parseSize(text);
    if (n === null) throw new Error(`not integer: ${text}`);
    if (n < low) throw new Error(`${n} < ${low}`);
    return n;
  };
  const flagsOf = (what: string, value: string, known: string[], into: Set<string>) => {
    for (const f of value.split(',').filter(Boolean)) {
      if (!known.includes(f)) throw new Error(`bad ${what}=${value}`);
      into.add(f);
    }
  };
  try {
    for (const arg of ctx.args) {
      const eq = arg.indexOf('=');
      const key = eq > 0 ? arg.slice(0, eq) : arg;
      const value = eq > 0 ? arg.slice(eq + 1) : '';
      switch (eq > 0 ? key : '') {
        case 'bs':
          bs = size(value, 1);
          break;
        case 'ibs':
          o.ibs = size(value, 1);
          break;
        case 'obs':
          o.obs = size(value, 1);
          break;
        case 'count':
          o.count = size(value, 0);
          break;
        case 'if':
          o.inputName = value;
          break;
        case 'of':
          o.outputName = value;
          break;
        case 'seek':
          o.seek = size(value, 0);
          break;
        case 'skip':
          o.skip = size(value, 0);
          break;
        case 'status':
          if (value === 'noxfer') o.showTransfer = false;
          else if (value === 'none') o.showTransfer = o.showRecords = false;
          else throw new Error(`unknown status '${value}'`);
          break;
        case 'conv':
          flagsOf('conv', value, CONV, o.conv);
          break;
        case 'iflag':
          flagsOf('iflag', value, IFLAG, o.iflag);
          break;
        case 'oflag':
          flagsOf('oflag', value, OFLAG, o.oflag);
          break;
        default:
          throw new Error(`bad arg ${arg}`);
      }
    }
  } catch (error) {
    return (error as Error).message;
  }
  if (bs) {
    o.ibs = o.obs = bs;
    o.blockMode = true;
  }
  return o;
}

/** Where dd writes: stdout, a file it appends to, or a file written at an offset. */
interface Sink {
  write(data: Buffer): Promise<void>;
  close(): void;
}

/**
 * Reads up to `n` bytes as one read(2) would: a file or device fills the request, a pipe or
 * a stream gives what has arrived (one chunk at most).
 */
class Reader {
  private carry: Buffer | null = null;
  constructor(
    private readonly input: Input,
    private readonly fills: boolean,
  ) {}

  async read(n: number): Promise<Buffer | null> {
    const parts: Buffer[] = [];
    let have = 0;
    while (have < n) {
      const chunk = this.carry ?? (await this.input.read());
      this.carry = null;
      if (chunk === null) break;
      const take = chunk.subarray(0, n - have);
      if (take.length < chunk.length) this.carry = chunk.subarray(take.length);
      parts.push(take);
      have += take.length;
      if (!this.fills) break;
    }
    if (have === 0) return null;
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, have);
  }
}

export const dd: CommandFn = async (ctx) => {
  const options = parseArgs(ctx);
  if (typeof options === 'string') {
    ctx.stderr.write(`dd: ${options}\n`);
    return 1;
  }
  const o = options;
  const stats = { inFull: 0, inPart: 0, outFull: 0, outPart: 0, bytes: 0 };
  const started = ctx.device.now();
  const summary = () => {
    if (o.showRecords)
      ctx.stderr.write(
        `${stats.inFull}+${stats.inPart} records in\n${stats.outFull}+${stats.outPart} records out\n`,
      );
    if (!o.showTransfer) return;
    const ms = ctx.device.now() - started || 1;
    const rate = stats.bytes * 1000 > stats.bytes ? Math.floor((stats.bytes * 1000) / ms) : stats.bytes;
    ctx.stderr.write(
      `${stats.bytes} bytes (${humanReadable(stats.bytes)}) copied, ${Math.floor(ms / 1000)}.${String(ms % 1000).padStart(3, '0')} s, ${humanReadable(rate)}/s\n`,
    );
  };
  // SIGUSR1 prints the summary so far; dd goes on.
  const unhandle = ctx.process.handle(10, summary);
  try {
    return await copy(ctx, o, stats);
  } finally {
    unhandle();
    summary();
  }
};

async function copy(
  ctx: CommandContext,
  o: Options,
  stats: { inFull: number; inPart: number; outFull: number; outPart: number; bytes: number },
): Promise<number> {
  let input: Input;
  let fills = true;
  if (o.inputName === null) {
    input = ctx.stdin;
    fills = false;
  } else {
    try {
      input = openInput(ctx.fs, resolvePath(ctx, o.inputName), ctx.stdin);
    } catch (error) {
      ctx.stderr.write(`dd: ${o.inputName}: ${error instanceof FsError ? error.reason : String(error)}\n`);
      return 1;
    }
  }
  const outName = o.outputName ?? 'stdout';
  const seekBytes = o.oflag.has('seek_bytes') ? o.seek : o.seek * o.obs;
  let sink: Sink;
  try {
    sink = openSink(ctx, o, seekBytes);
  } catch (error) {
    ctx.stderr.write(`dd: ${o.outputName}: ${error instanceof FsError ? error.reason : String(error)}\n`);
    return 1;
  }
  const reader = new Reader(input, fills);
  // skip=: read and drop whole input blocks (or bytes).
  let toSkip = o.iflag.has('skip_bytes') ? o.skip : o.skip * o.ibs;
  while (toSkip > 0) {
    const chunk = await reader.read(Math.min(toSkip, o.ibs));
    if (chunk === null) {
      ctx.stdout.write(`${o.inputName ?? 'stdin'}: Can't skip\n`);
      sink.close();
      return 0;
    }
    toSkip -= chunk.length;
  }
  let count = o.iflag.has('count_bytes') ? o.count : o.count * o.ibs;
  const pending: Buffer[] = [];
  let pendingBytes = 0;
  const writeOut = async (data: Buffer, all: boolean) => {
    // A write is one output record: whole when it is obs bytes.
    for (let offset = 0; offset < data.length;) {
      const piece = data.subarray(offset, offset + (all ? data.length : o.obs));
      await sink.write(piece);
      if (piece.length === o.obs) stats.outFull++;
      else stats.outPart++;
      stats.bytes += piece.length;
      offset += piece.length;
    }
  };
  try {
    while (count > 0 && !ctx.signal.aborted) {
      let chunk = await reader.read(Math.min(count, o.ibs));
      if (chunk === null || ctx.signal.aborted) break;
      count -= chunk.length;
      if (chunk.length === o.ibs) stats.inFull++;
      else {
        stats.inPart++;
        if (o.conv.has('sync')) chunk = Buffer.concat([chunk, Buffer.alloc(o.ibs - chunk.length)]);
      }
      if (o.blockMode) {
        await writeOut(chunk, true);
        continue;
      }
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (pendingBytes >= o.obs) {
        const all = Buffer.concat(pending, pendingBytes);
        const whole = all.length - (all.length % o.obs);
        await writeOut(all.subarray(0, whole), false);
        pending.length = 0;
        pendingBytes = all.length - whole;
        if (pendingBytes > 0) pending.push(all.subarray(whole));
      }
    }
    if (pendingBytes > 0) await writeOut(Buffer.concat(pending, pendingBytes), true);
  } catch (error) {
    ctx.stderr.write(
      `dd: ${outName}: write error: ${error instanceof FsError ? error.reason : String(error)}\n`,
    );
    return 1;
  } finally {
    sink.close();
  }
  return 0;
}

function openSink(ctx: CommandContext, o: Options, seekBytes: number): Sink {
  if (o.outputName === null) {
    return {
      write: async (data) => {
        if (ctx.stdout.closed) throw new FsError('EINVAL', 'stdout');
        ctx.stdout.write(data);
        await ctx.stdout.drain();
      },
      close: () => undefined,
    };
  }
  const path = resolvePath(ctx, o.outputName);
  const fs = ctx.fs;
  const exists = fs.exists(path);
  if (exists && fs.stat(path).kind === 'chr') {
    fs.writeFile(path, Buffer.alloc(0));
    return { write: () => Promise.resolve(), close: () => undefined };
  }
  const truncate = !o.conv.has('notrunc');
  if (seekBytes === 0 && truncate) {
    // The usual case: a new file, written as it grows (no copy of what is already there).
    fs.writeFile(path, Buffer.alloc(0), { mode: 0o666 });
    return {
      write: (data) => {
        fs.writeFile(path, data, { append: true });
        return Promise.resolve();
      },
      close: () => undefined,
    };
  }
  // seek= or conv=notrunc: writes land at an offset of what the file holds, in a private
  // copy that grows geometrically and is written back every megabyte and at the end.
  const existing = exists ? fs.readFile(path) : Buffer.alloc(0);
  let length = truncate ? Math.min(existing.length, seekBytes) : existing.length;
  let buffer = Buffer.alloc(Math.max(length, seekBytes, 64 * 1024));
  existing.copy(buffer, 0, 0, length);
  fs.writeFile(path, buffer.subarray(0, length));
  let offset = seekBytes;
  let written = 0;
  const flush = () => fs.writeFile(path, Buffer.from(buffer.subarray(0, length)));
  return {
    write: (data) => {
      const end = offset + data.length;
      if (end - length > fs.freeBytes) throw new FsError('ENOSPC', path);
      if (end > buffer.length) {
        const grown = Buffer.alloc(Math.max(end, buffer.length * 2));
        buffer.copy(grown, 0, 0, length);
        buffer = grown;
      }
      data.copy(buffer, offset);
      offset = end;
      length = Math.max(length, end);
      written += data.length;
      if (written >= 1024 * 1024) {
        written = 0;
        flush();
      }
      return Promise.resolve();
    },
    close: flush,
  };
}
