/**
 * The `sync:` service: STAT/STA2/LST2, LIST/LIS2, SEND, RECV, QUIT against the phone's
 * filesystem (STAT is v1's lstat; there is no LSTA). Pushed data is kept as views of the
 * received messages and joined once at DONE, so a push costs one copy. A push that cannot
 * succeed (an unwritable target, no space left) fails at once, its data is read and
 * dropped until DONE, and the service ends, as adbd's does.
 */
import { FsError, S_IFLNK, S_IFMT, normalizePath } from '../fs.js';
import type { FsNode, FsView, Stat } from '../fs.js';
import type { DeviceLogger } from '../../types.js';
import type { AdbStream } from './stream.js';

const MAX_DATA = 64 * 1024;
const MAX_PATH = 1024;

function id(name: string): number {
  return Buffer.from(name, 'latin1').readUInt32LE(0);
}

const ID_STAT = id('STAT');
const ID_STA2 = id('STA2');
const ID_LST2 = id('LST2');
const ID_LIST = id('LIST');
const ID_LIS2 = id('LIS2');
const ID_SEND = id('SEND');
const ID_RECV = id('RECV');
const ID_QUIT = id('QUIT');
const ID_DATA = id('DATA');
const ID_DONE = id('DONE');

/** A queue of received bytes that hands out views where it can. */
class ByteQueue {
  private chunks: Buffer[] = [];
  length = 0;

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  /** n bytes as views into the received chunks (no copying). */
  takeViews(n: number): Buffer[] {
    const out: Buffer[] = [];
    let need = n;
    while (need > 0) {
      const c = this.chunks[0]!;
      if (c.length <= need) {
        out.push(c);
        this.chunks.shift();
        need -= c.length;
      } else {
        out.push(c.subarray(0, need));
        this.chunks[0] = c.subarray(need);
        need = 0;
      }
    }
    this.length -= n;
    return out;
  }

  /** Reads a u32 at offset without consuming it (offset + 4 <= length). */
  peekUInt32(offset: number): number {
    const b = Buffer.allocUnsafe(4);
    let filled = 0;
    let skip = offset;
    for (const c of this.chunks) {
      if (skip >= c.length) {
        skip -= c.length;
        continue;
      }
      if (filled === 0 && skip + 4 <= c.length) return c.readUInt32LE(skip);
      for (let j = skip; j < c.length && filled < 4; j++) b[filled++] = c[j]!;
      skip = 0;
      if (filled === 4) return b.readUInt32LE(0);
    }
    throw new Error('peek beyond queued bytes');
  }

  take(n: number): Buffer {
    const views = this.takeViews(n);
    return views.length === 1 ? views[0]! : Buffer.concat(views, n);
  }
}

/** The stat fields shared by STA2 replies and DNT2 entries (bytes 8..72). */
function writeStatFields(b: Buffer, st: Stat): void {
  b.writeBigUInt64LE(0xfd00n, 8);
  b.writeBigUInt64LE(BigInt(st.ino), 16);
  b.writeUInt32LE(st.mode, 24);
  b.writeUInt32LE(st.nlink, 28);
  b.writeUInt32LE(st.uid, 32);
  b.writeUInt32LE(st.gid, 36);
  b.writeBigUInt64LE(BigInt(st.size), 40);
  b.writeBigInt64LE(BigInt(Math.floor(st.atimeMs / 1000)), 48);
  b.writeBigInt64LE(BigInt(Math.floor(st.mtimeMs / 1000)), 56);
  b.writeBigInt64LE(BigInt(Math.floor(st.ctimeMs / 1000)), 64);
}

function statBuffer(code: number, st: Stat | null, errno: number): Buffer {
  const b = Buffer.alloc(72);
  b.writeUInt32LE(code, 0);
  if (!st) {
    b.writeUInt32LE(errno, 4);
    return b;
  }
  writeStatFields(b, st);
  return b;
}

function dent2(st: Stat, name: string): Buffer[] {
  const nameBuf = Buffer.from(name);
  const b = Buffer.alloc(76);
  b.writeUInt32LE(id('DNT2'), 0);
  writeStatFields(b, st);
  b.writeUInt32LE(nameBuf.length, 72);
  return [b, nameBuf];
}

function dent1(st: Stat, name: string): Buffer[] {
  const nameBuf = Buffer.from(name);
  const b = Buffer.alloc(20);
  b.writeUInt32LE(id('DENT'), 0);
  b.writeUInt32LE(st.mode, 4);
  b.writeUInt32LE(Math.min(st.size, 0xffffffff), 8);
  b.writeUInt32LE(Math.floor(st.mtimeMs / 1000), 12);
  b.writeUInt32LE(nameBuf.length, 16);
  return [b, nameBuf];
}

function statOrError(fs: FsView, path: string, follow: boolean): { st: Stat | null; errno: number } {
  try {
    return { st: follow ? fs.stat(path) : fs.lstat(path), errno: 0 };
  } catch (error) {
    return { st: null, errno: error instanceof FsError ? error.errno : 2 };
  }
}

export interface SyncOptions {
  /** The filesystem as adbd's user (shell) sees it: pulls and pushes are permission-checked. */
  fs: FsView;
  log: DeviceLogger;
}

interface PendingSend {
  path: string;
  mode: number;
  views: Buffer[];
  size: number;
  /** Bytes the file may take: the free space plus what it replaces. */
  room: number;
  /** The push already failed (FAIL sent): its data is dropped until DONE. */
  failed: boolean;
}

export function runSyncService(stream: AdbStream, options: SyncOptions): void {
  const fs = options.fs;
  const queue = new ByteQueue();
  let send: PendingSend | null = null;
  let quit = false;

  const fail = (message: string) => {
    const msg = Buffer.from(message);
    const header = Buffer.alloc(8);
    header.writeUInt32LE(id('FAIL'), 0);
    header.writeUInt32LE(msg.length, 4);
    stream.write(header);
    stream.write(msg);
  };
  const okay = () => {
    const b = Buffer.alloc(8);
    b.writeUInt32LE(id('OKAY'), 0);
    stream.write(b);
  };

  /** Writes a completed push; false when it failed (FAIL sent). */
  const finishSend = (s: PendingSend, mtime: number): boolean => {
    const data = s.views.length === 1 ? s.views[0]! : Buffer.concat(s.views, s.size);
    try {
      if ((s.mode & S_IFMT) === S_IFLNK) {
        if (fs.exists(s.path)) fs.remove(s.path);
        fs.symlink(data.toString('utf8'), s.path);
      } else {
        const real = normalizePath(s.path);
        // Emulated storage ignores the pushed mode, as the FUSE layer on a device does.
        const perm =
          real.startsWith('/storage/emulated/') || real.startsWith('/sdcard/') ? 0o660 : s.mode & 0o777;
        fs.writeFile(s.path, data, {
          mode: perm || 0o644,
          mtimeMs: mtime > 0 ? mtime * 1000 : undefined,
          parents: true,
        });
      }
      okay();
      return true;
    } catch (error) {
      fail(`couldn't create file: ${error instanceof FsError ? error.reason : String(error)}`);
      return false;
    }
  };

  /** Starts a push: a target that cannot be written fails now, before any data is kept. */
  const startSend = (path: string, mode: number): PendingSend => {
    const s: PendingSend = { path, mode, views: [], size: 0, room: Infinity, failed: false };
    if ((mode & S_IFMT) === S_IFLNK) return s;
    try {
      fs.checkWritableFile(path, { parents: true });
      const replaced = fs.exists(path) ? fs.stat(path).size : 0;
      s.room = fs.freeBytes + replaced;
    } catch (error) {
      fail(`couldn't create file: ${error instanceof FsError ? error.reason : String(error)}`);
      s.failed = true;
    }
    return s;
  };

  const recv = (path: string) => {
    let data: Buffer;
    try {
      const { node } = fs.resolve(path);
      if (node.kind === 'dir') throw new FsError('EISDIR', path);
      data = fs.readFile(path);
    } catch (error) {
      fail(`open failed: ${error instanceof FsError ? error.reason : String(error)}`);
      return;
    }
    for (let i = 0; i < data.length; i += MAX_DATA) {
      const slice = data.subarray(i, i + MAX_DATA);
      const h = Buffer.allocUnsafe(8);
      h.writeUInt32LE(ID_DATA, 0);
      h.writeUInt32LE(slice.length, 4);
      stream.write(h);
      stream.write(slice);
    }
    const done = Buffer.alloc(8);
    done.writeUInt32LE(ID_DONE, 0);
    stream.write(done);
  };

  const list = (path: string, v2: boolean) => {
    let entries: { name: string; node: FsNode }[] | null = null;
    let real = path;
    try {
      real = fs.realpath(path);
      entries = fs.readdir(real);
    } catch {
      // adbd lists nothing (only DONE) for what opendir refuses: missing, unreadable, not a directory
    }
    const out: Buffer[] = [];
    if (entries) {
      const self = statOrError(fs, real, true).st;
      const parent = statOrError(fs, normalizePath(`${real}/..`), true).st;
      if (self) out.push(...(v2 ? dent2(self, '.') : dent1(self, '.')));
      if (parent) out.push(...(v2 ? dent2(parent, '..') : dent1(parent, '..')));
    }
    for (const e of entries ?? []) {
      const st = statOrError(fs, `${real === '/' ? '' : real}/${e.name}`, false).st;
      if (st) out.push(...(v2 ? dent2(st, e.name) : dent1(st, e.name)));
    }
    const done = Buffer.alloc(v2 ? 76 : 20);
    done.writeUInt32LE(ID_DONE, 0);
    out.push(done);
    for (const b of out) stream.write(b);
  };

  const process = () => {
    for (;;) {
      if (quit) return;
      if (queue.length < 8) return;
      const code = queue.peekUInt32(0);
      const len = queue.peekUInt32(4);
      if (send) {
        if (code === ID_DATA) {
          if (len > MAX_DATA) {
            fail('sync data too large');
            quit = true;
            stream.end();
            return;
          }
          // Wait for the whole message before consuming it.
          if (queue.length < 8 + len) return;
          queue.takeViews(8);
          const views = queue.takeViews(len);
          if (send.failed) continue;
          if (send.size + len > send.room) {
            fail(`write failed: ${new FsError('ENOSPC', send.path).reason}`);
            send.failed = true;
            send.views = [];
            continue;
          }
          send.views.push(...views);
          send.size += len;
          continue;
        }
        queue.takeViews(8);
        if (code === ID_DONE) {
          const s = send;
          send = null;
          if (!s.failed && finishSend(s, len)) continue;
          // A failed push ends the service, as in adbd.
          quit = true;
          stream.end();
          return;
        }
        fail('invalid data message');
        quit = true;
        stream.end();
        return;
      }
      if (code === ID_QUIT) {
        quit = true;
        stream.end();
        return;
      }
      if (len > MAX_PATH) {
        fail('path too long');
        quit = true;
        stream.end();
        return;
      }
      if (queue.length < 8 + len) return;
      const header = queue.take(8);
      const arg = queue.take(len).toString('utf8');
      if (code === ID_STAT) {
        const { st } = statOrError(fs, arg, false);
        const b = Buffer.alloc(16);
        b.writeUInt32LE(ID_STAT, 0);
        if (st) {
          b.writeUInt32LE(st.mode, 4);
          b.writeUInt32LE(Math.min(st.size, 0xffffffff), 8);
          b.writeUInt32LE(Math.floor(st.mtimeMs / 1000), 12);
        }
        stream.write(b);
      } else if (code === ID_STA2 || code === ID_LST2) {
        const { st, errno } = statOrError(fs, arg, code === ID_STA2);
        stream.write(statBuffer(code, st, errno));
      } else if (code === ID_LIST || code === ID_LIS2) {
        list(arg, code === ID_LIS2);
      } else if (code === ID_RECV) {
        recv(arg);
      } else if (code === ID_SEND) {
        const comma = arg.lastIndexOf(',');
        const path = comma >= 0 ? arg.slice(0, comma) : arg;
        const mode = comma >= 0 ? Number(arg.slice(comma + 1)) || 0o100644 : 0o100644;
        send = startSend(path, mode);
      } else {
        fail(`unknown sync request ${header.toString('latin1', 0, 4)}`);
        quit = true;
        stream.end();
        return;
      }
    }
  };

  stream.on('data', (chunk: Buffer) => {
    queue.push(chunk);
    try {
      process();
    } catch (error) {
      options.log.debug('virtual adb: sync failed', { error: String(error) });
      fail(String(error));
      quit = true;
      stream.end();
    }
  });
  stream.on('end', () => {
    if (!stream.writableEnded) stream.end();
  });
}
