/**
 * The phone's in-memory filesystem. Built-in system content lives in a SystemImage shared
 * by every phone of a backend; each phone's VirtualFs starts as a view of it and copies a
 * node (and its ancestors) only when it changes, so an idle phone costs almost nothing.
 */

export const S_IFMT = 0o170000;
export const S_IFDIR = 0o040000;
export const S_IFREG = 0o100000;
export const S_IFLNK = 0o120000;
export const S_IFCHR = 0o020000;

export type NodeKind = 'file' | 'dir' | 'link' | 'chr';

interface NodeBase {
  /** Full st_mode: type bits and permission bits. */
  mode: number;
  uid: number;
  gid: number;
  /** Milliseconds since the epoch. */
  mtimeMs: number;
  atimeMs: number;
  ctimeMs: number;
  ino: number;
  /** The VirtualFs that may mutate this node in place; null for shared system nodes. */
  owner: object | null;
}
export interface FileNode extends NodeBase {
  kind: 'file';
  data: Buffer;
}
export interface DirNode extends NodeBase {
  kind: 'dir';
  entries: Map<string, FsNode>;
}
export interface LinkNode extends NodeBase {
  kind: 'link';
  target: string;
}
export interface CharNode extends NodeBase {
  kind: 'chr';
  device: 'null' | 'zero' | 'tty' | 'random';
}
export type FsNode = FileNode | DirNode | LinkNode | CharNode;

export type FsErrorCode =
  | 'ENOENT'
  | 'ENOTDIR'
  | 'EISDIR'
  | 'EEXIST'
  | 'ENOTEMPTY'
  | 'EACCES'
  | 'EROFS'
  | 'ELOOP'
  | 'EINVAL'
  | 'ENOSPC'
  | 'EPERM'
  | 'ENXIO';

const MESSAGES: Record<FsErrorCode, string> = {
  ENOENT: 'No such file or directory',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  EEXIST: 'File exists',
  ENOTEMPTY: 'Directory not empty',
  EACCES: 'Permission denied',
  EROFS: 'Read-only file system',
  ELOOP: 'Too many symbolic links encountered',
  EINVAL: 'Invalid argument',
  ENOSPC: 'No space left on device',
  EPERM: 'Operation not permitted',
  ENXIO: 'No such device or address',
};

const ERRNO: Record<FsErrorCode, number> = {
  ENOENT: 2,
  ENOTDIR: 20,
  EISDIR: 21,
  EEXIST: 17,
  ENOTEMPTY: 39,
  EACCES: 13,
  EROFS: 30,
  ELOOP: 40,
  EINVAL: 22,
  ENOSPC: 28,
  EPERM: 1,
  ENXIO: 6,
};

export class FsError extends Error {
  constructor(
    readonly code: FsErrorCode,
    readonly path: string,
  ) {
    super(`${path}: ${MESSAGES[code]}`);
    this.name = 'FsError';
  }
  /** The strerror text, e.g. "No such file or directory". */
  get reason(): string {
    return MESSAGES[this.code];
  }
  get errno(): number {
    return ERRNO[this.code];
  }
}

export interface Stat {
  kind: NodeKind;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  nlink: number;
  ino: number;
  mtimeMs: number;
  atimeMs: number;
  ctimeMs: number;
}

export function statOf(node: FsNode): Stat {
  return {
    kind: node.kind,
    mode: node.mode,
    uid: node.uid,
    gid: node.gid,
    size:
      node.kind === 'file'
        ? node.data.length
        : node.kind === 'dir'
          ? 4096
          : node.kind === 'link'
            ? node.target.length
            : 0,
    nlink: node.kind === 'dir' ? 2 + [...node.entries.values()].filter((n) => n.kind === 'dir').length : 1,
    ino: node.ino,
    mtimeMs: node.mtimeMs,
    atimeMs: node.atimeMs,
    ctimeMs: node.ctimeMs,
  };
}

/** Normalises an absolute path: collapses `//`, `.`, `..`; no trailing slash except for `/`. */
export function normalizePath(path: string, cwd = '/'): string {
  const full = path.startsWith('/') ? path : `${cwd}/${path}`;
  const parts: string[] = [];
  for (const part of full.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return '/' + parts.join('/');
}

export function dirname(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}

export function basename(path: string): string {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}

/** A process's identity for permission checks: its uid, primary gid and supplementary groups. */
export interface Credentials {
  readonly uid: number;
  readonly gid: number;
  readonly groups: readonly number[];
}

/**
 * The adb shell user: uid 2000 and the groups `id` shows on Android 14 (sdcard_rw and
 * sdcard_r for shared storage, readproc to see every process, log, inet, ...).
 */
export const SHELL_CREDENTIALS: Credentials = {
  uid: 2000,
  gid: 2000,
  groups: [2000, 1004, 1007, 1011, 1015, 1028, 1078, 1079, 3001, 3002, 3003, 3006, 3009, 3011, 3012],
};

export const ROOT_CREDENTIALS: Credentials = { uid: 0, gid: 0, groups: [0] };

/** An app's process (what run-as runs as): its uid, and the groups apps get. */
export function appCredentials(uid: number): Credentials {
  return { uid, gid: uid, groups: [uid, 3003, 9997, 20000 + (uid % 100000)] };
}

/**
 * Who is asking. Without credentials (or with root) it is the system itself: no permission
 * checks, but read-only mounts stay read-only. The shell and its commands pass theirs, and
 * every check follows the owner, group and mode bits as the kernel does.
 */
export interface Access {
  cred?: Credentials;
  /** The same as cred: ROOT_CREDENTIALS. */
  root?: boolean;
  /** The caller's pid, which `/proc/self` names. */
  pid?: number;
  /**
   * The caller's file creation mask (a shell's `umask`), read when a file or directory is
   * made: it takes its bits from the mode asked for, which is 0666 for a file and 0777 for a
   * directory when none is. Callers without one make files 0644 and directories 0775.
   */
  umask?: () => number;
}

/** The permission bits of a new file or directory: `mode`, or the default, less the umask. */
function creationMode(access: Access & { mode?: number }, kind: 'file' | 'dir'): number {
  if (!access.umask) return (access.mode ?? (kind === 'file' ? 0o644 : 0o775)) & 0o7777;
  return (access.mode ?? (kind === 'file' ? 0o666 : 0o777)) & ~access.umask() & 0o7777;
}

/** Mounted read-only on a phone (writes fail with EROFS whoever asks). */
const READ_ONLY_ROOTS = ['/system', '/vendor', '/product', '/system_ext', '/apex', '/odm'];

const MAY_READ = 4;
const MAY_WRITE = 2;
const MAY_EXEC = 1;

export const SHELL_UID = 2000;
export const ROOT_UID = 0;
export const MEDIA_RW_GID = 1023;

function isEmulated(path: string): boolean {
  return path === '/storage/emulated/0' || path.startsWith('/storage/emulated/0/');
}

interface Clock {
  now(): number;
}

/** User data a phone may store by default (files, installed apps): a full disk past this. */
export const DEFAULT_STORAGE_BYTES = 2 * 1024 * 1024 * 1024;

/** The smallest store an appended file gets (a few log lines' worth). */
const MIN_STORE = 4096;

export interface VirtualFsOptions {
  /** Bytes of file data this phone may add on top of the shared system image. */
  storageBytes?: number;
}

/** Builds the immutable system tree that every phone of a backend shares. */
export class SystemImageBuilder {
  private ino = 100;
  readonly root: DirNode;
  private time: number;

  constructor(time = Date.UTC(2024, 0, 1)) {
    this.time = time;
    this.root = this.dirNode(0o755, ROOT_UID, ROOT_UID);
  }

  /** Dates what is added from now on `time` (a build's files all carry one time). */
  at(time: number): this {
    this.time = time;
    return this;
  }

  private base(mode: number, uid: number, gid: number) {
    return {
      mode,
      uid,
      gid,
      mtimeMs: this.time,
      atimeMs: this.time,
      ctimeMs: this.time,
      ino: this.ino++,
      owner: null,
    };
  }

  private dirNode(perm: number, uid: number, gid: number): DirNode {
    return { kind: 'dir', entries: new Map(), ...this.base(S_IFDIR | perm, uid, gid) };
  }

  private parentOf(path: string): { dir: DirNode; name: string } {
    const parts = normalizePath(path).split('/').filter(Boolean);
    const name = parts.pop();
    if (!name) throw new Error(`bad system path ${path}`);
    let dir = this.root;
    for (const part of parts) {
      let next = dir.entries.get(part);
      if (!next) {
        next = this.dirNode(0o755, ROOT_UID, ROOT_UID);
        dir.entries.set(part, next);
      }
      if (next.kind !== 'dir') throw new Error(`not a dir in system image: ${path}`);
      dir = next;
    }
    return { dir, name };
  }

  dir(path: string, perm = 0o755, uid = ROOT_UID, gid = ROOT_UID): this {
    const { dir, name } = this.parentOf(path);
    const existing = dir.entries.get(name);
    if (existing && existing.kind === 'dir') {
      existing.mode = S_IFDIR | perm;
      existing.uid = uid;
      existing.gid = gid;
    } else dir.entries.set(name, this.dirNode(perm, uid, gid));
    return this;
  }

  file(path: string, data: Buffer | string, perm = 0o644, uid = ROOT_UID, gid = ROOT_UID): this {
    const { dir, name } = this.parentOf(path);
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    dir.entries.set(name, { kind: 'file', data: buf, ...this.base(S_IFREG | perm, uid, gid) });
    return this;
  }

  link(path: string, target: string, perm = 0o777, uid = ROOT_UID, gid = ROOT_UID): this {
    const { dir, name } = this.parentOf(path);
    dir.entries.set(name, { kind: 'link', target, ...this.base(S_IFLNK | perm, uid, gid) });
    return this;
  }

  chr(path: string, device: CharNode['device'], perm = 0o666): this {
    const { dir, name } = this.parentOf(path);
    dir.entries.set(name, { kind: 'chr', device, ...this.base(S_IFCHR | perm, ROOT_UID, ROOT_UID) });
    return this;
  }
}

interface Resolved {
  /** Canonical path (symlinks resolved). */
  path: string;
  node: FsNode;
}

export interface WriteOptions extends Access {
  mode?: number;
  mtimeMs?: number;
  append?: boolean;
  /** Create missing parent directories (adb's fixed_push_mkdir). */
  parents?: boolean;
}

/**
 * A directory whose entries are made up when they are looked up (`/proc`: one directory per
 * process, built from the process table each time).
 */
export interface DynamicDir {
  /** Names to list besides the directory's stored entries. */
  names(access: Access): string[];
  /** The node for a name, or undefined when there is none. */
  lookup(name: string, access: Access): FsNode | undefined;
}

/** The credentials to check, or null for the system itself (no checks). */
function credOf(access: Access): Credentials | null {
  if (access.root) return null;
  const cred = access.cred;
  return cred && cred.uid !== 0 ? cred : null;
}

/** Whether `cred` may read (4), write (2) and/or search/execute (1) `node`. */
function permits(node: FsNode, cred: Credentials | null, want: number): boolean {
  if (cred === null) return !(want & MAY_EXEC) || node.kind === 'dir' || (node.mode & 0o111) !== 0;
  let bits: number;
  if (node.uid === cred.uid) bits = (node.mode >> 6) & 7;
  else if (node.gid === cred.gid || cred.groups.includes(node.gid)) bits = (node.mode >> 3) & 7;
  else bits = node.mode & 7;
  return (bits & want) === want;
}

/** Writes to an existing entry, or new entries directly under `/`, hit a read-only mount. */
function onReadOnlyMount(realPath: string, isNew: boolean): boolean {
  if (realPath === '/' || (isNew && dirname(realPath) === '/')) return true;
  return READ_ONLY_ROOTS.some((p) => realPath === p || realPath.startsWith(p + '/'));
}

function join(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

export class VirtualFs {
  private root: DirNode;
  private nextIno = 100_000;
  /** Identity token: nodes whose owner is this token may be mutated in place. */
  private readonly token = {};
  /** The storage quota: what this phone's own files may hold in all. */
  readonly capacity: number;
  /** Bytes held by files this phone owns (created, written or copied from the system image). */
  private used = 0;
  /** Growable stores of files that were appended to (see appendTo). */
  private readonly stores = new WeakMap<FileNode, { buffer: Buffer; filled: number }>();
  /** Directories with made-up entries, by canonical path. */
  private readonly dynamic = new Map<string, DynamicDir>();

  constructor(
    systemRoot: DirNode,
    private readonly clock: Clock = { now: () => Date.now() },
    options: VirtualFsOptions = {},
  ) {
    this.root = { ...systemRoot, entries: new Map(systemRoot.entries), owner: this.token };
    this.capacity = options.storageBytes ?? DEFAULT_STORAGE_BYTES;
  }

  /** Bytes of user data stored (what counts against the quota). */
  get usedBytes(): number {
    return this.used;
  }

  /** Bytes that can still be written before writes fail with ENOSPC. */
  get freeBytes(): number {
    return Math.max(0, this.capacity - this.used);
  }

  /** Makes up the entries of a directory on lookup (`/proc`). */
  mount(path: string, dir: DynamicDir): void {
    this.dynamic.set(normalizePath(path), dir);
  }

  /**
   * This filesystem as seen by `cred` (a shell, run-as, adb sync): every access checked, as
   * process `pid` (for /proc/self), making files with its file creation mask.
   */
  as(cred: Credentials, pid?: number, umask?: () => number): FsView {
    return new FsView(this, { cred, pid, ...(umask ? { umask } : {}) });
  }

  // ---------- lookups ----------

  /** Resolves a path; with follow=false the last component is not dereferenced. */
  resolve(path: string, follow = true, access: Access = {}): Resolved {
    return this.walk(normalizePath(path), follow, 0, access);
  }

  exists(path: string, access: Access = {}): boolean {
    try {
      this.resolve(path, true, access);
      return true;
    } catch {
      return false;
    }
  }

  stat(path: string, access: Access = {}): Stat {
    return statOf(this.resolve(path, true, access).node);
  }

  lstat(path: string, access: Access = {}): Stat {
    return statOf(this.resolve(path, false, access).node);
  }

  /** Canonical form of a path (all symlinks resolved). */
  realpath(path: string, access: Access = {}): string {
    return this.resolve(path, true, access).path;
  }

  /**
   * The bytes of a file. A character device has no bytes to return: read it with openRead
   * (/dev/zero never ends); here /dev/null reads as empty and the others fail.
   */
  readFile(path: string, access: Access = {}): Buffer {
    const opened = this.openRead(path, access);
    if (opened.kind === 'file') return opened.data;
    if (opened.device === 'null') return Buffer.alloc(0);
    throw new FsError('EINVAL', path);
  }

  /** Opens a file or character device for reading (read permission checked). */
  openRead(
    path: string,
    access: Access = {},
  ): { kind: 'file'; data: Buffer } | { kind: 'device'; device: CharNode['device'] } {
    const { node, path: real } = this.resolve(path, true, access);
    if (node.kind === 'dir') throw new FsError('EISDIR', path);
    if (!this.may(node, real, access, MAY_READ)) throw new FsError('EACCES', path);
    if (node.kind === 'chr') return { kind: 'device', device: node.device };
    if (node.kind !== 'file') throw new FsError('EINVAL', real);
    return { kind: 'file', data: node.data };
  }

  readlink(path: string, access: Access = {}): string {
    const { node } = this.resolve(path, false, access);
    if (node.kind !== 'link') throw new FsError('EINVAL', path);
    return node.target;
  }

  readdir(path: string, access: Access = {}): { name: string; node: FsNode }[] {
    const { node, path: real } = this.resolve(path, true, access);
    if (node.kind !== 'dir') throw new FsError('ENOTDIR', path);
    if (!this.may(node, real, access, MAY_READ)) throw new FsError('EACCES', path);
    const entries = [...node.entries].map(([name, n]) => ({ name, node: n }));
    const dynamic = this.dynamic.get(real);
    if (dynamic) {
      for (const name of dynamic.names(access)) {
        const n = dynamic.lookup(name, access);
        if (n && !node.entries.has(name)) entries.push({ name, node: n });
      }
    }
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** access(2): whether the caller may read, write and/or execute a path (test -r -w -x). */
  canAccess(
    path: string,
    want: { read?: boolean; write?: boolean; exec?: boolean },
    access: Access = {},
  ): boolean {
    try {
      const { node, path: real } = this.resolve(path, true, access);
      if (want.write && node.kind !== 'chr' && onReadOnlyMount(real, false)) return false;
      const bits = (want.read ? MAY_READ : 0) | (want.write ? MAY_WRITE : 0) | (want.exec ? MAY_EXEC : 0);
      return this.may(node, real, access, bits);
    } catch {
      return false;
    }
  }

  // ---------- changes ----------

  /**
   * Creates, replaces or (with append) extends a file. A write that does not fit in the
   * storage quota fails with ENOSPC; an append first stores what fits, as write(2) does.
   */
  writeFile(path: string, data: Buffer, options: WriteOptions = {}): void {
    const target = this.targetForCreate(path, options);
    const existing = target.dir.entries.get(target.name);
    const full = join(target.dirPath, target.name);
    if (existing?.kind === 'dir') throw new FsError('EISDIR', path);
    if (existing?.kind === 'chr') {
      // /dev/null and friends swallow writes.
      if (!this.may(existing, full, options, MAY_WRITE)) throw new FsError('EACCES', path);
      return;
    }
    if (existing) this.checkWrite(existing, full, options, path);
    else this.checkCreate(target.dir, target.dirPath, full, options, path);
    const now = this.clock.now();
    if (existing?.kind === 'file') {
      const node = this.own(target.dir, target.name, existing) as FileNode;
      if (options.append) {
        const room = this.freeBytes;
        const fits = data.length <= room ? data : data.subarray(0, room);
        if (fits.length > 0) {
          node.data = this.appendTo(node, fits);
          this.used += fits.length;
        }
        node.mtimeMs = options.mtimeMs ?? now;
        node.ctimeMs = now;
        if (fits.length < data.length) throw new FsError('ENOSPC', path);
      } else {
        this.reserve(data.length - node.data.length, path);
        node.data = data;
        node.mtimeMs = options.mtimeMs ?? now;
        node.ctimeMs = now;
      }
      if (options.mode !== undefined && !isEmulated(target.dirPath))
        node.mode = S_IFREG | (options.mode & 0o7777);
      return;
    }
    this.reserve(data.length, path);
    const cred = credOf(options);
    // Emulated storage (FUSE) ignores requested modes: files are always rw-rw----.
    const perm = isEmulated(target.dirPath) && cred ? 0o660 : creationMode(options, 'file');
    target.dir.entries.set(target.name, {
      kind: 'file',
      data,
      mode: S_IFREG | perm,
      uid: this.defaultUid(target.dirPath, cred?.uid ?? ROOT_UID),
      gid: cred ? this.defaultGid(target.dirPath, cred.gid) : ROOT_UID,
      mtimeMs: options.mtimeMs ?? now,
      atimeMs: now,
      ctimeMs: now,
      ino: this.nextIno++,
      owner: this.token,
    });
    target.dir.mtimeMs = now;
  }

  /**
   * Throws the FsError that writing a file at `path` would raise, changing nothing (a sync
   * push checks its target before taking any data).
   */
  checkWritableFile(path: string, options: Access & { parents?: boolean } = {}): void {
    const norm = normalizePath(path);
    if (norm === '/') throw new FsError('EISDIR', path);
    const existing = this.tryResolve(norm, options);
    if (existing) {
      if (existing.node.kind === 'dir') throw new FsError('EISDIR', path);
      if (existing.node.kind === 'chr') {
        if (!this.may(existing.node, existing.path, options, MAY_WRITE)) throw new FsError('EACCES', path);
      } else this.checkWrite(existing.node, existing.path, options, path);
      return;
    }
    // A new file: its nearest existing ancestor must be a directory (missing ones are
    // created only with parents) the caller may add entries to.
    const missing = [basename(norm)];
    let dir = dirname(norm);
    for (;;) {
      const found = this.tryResolve(dir, options);
      if (found) {
        if (found.node.kind !== 'dir') throw new FsError('ENOTDIR', path);
        if (missing.length > 1 && !options.parents) throw new FsError('ENOENT', path);
        this.checkCreate(found.node, found.path, join(found.path, missing[0]!), options, path);
        return;
      }
      missing.unshift(basename(dir));
      dir = dirname(dir);
    }
  }

  /** resolve(), or null when the path does not exist. */
  private tryResolve(path: string, access: Access): Resolved | null {
    try {
      return this.resolve(path, true, access);
    } catch (error) {
      if (error instanceof FsError && error.code === 'ENOENT') return null;
      throw error;
    }
  }

  mkdir(path: string, options: Access & { parents?: boolean; mode?: number } = {}): void {
    const norm = normalizePath(path);
    if (options.parents) {
      let current = '';
      for (const part of norm.split('/').filter(Boolean)) {
        current += '/' + part;
        const exists = this.tryResolve(current, options);
        if (exists) {
          if (exists.node.kind !== 'dir') throw new FsError('ENOTDIR', current);
          continue;
        }
        this.mkdirOne(current, options);
      }
      return;
    }
    this.mkdirOne(norm, options);
  }

  symlink(target: string, path: string, access: Access = {}): void {
    const t = this.targetForCreate(path, access, false);
    if (t.dir.entries.has(t.name)) throw new FsError('EEXIST', path);
    const full = join(t.dirPath, t.name);
    this.checkCreate(t.dir, t.dirPath, full, access, path);
    const cred = credOf(access);
    const now = this.clock.now();
    t.dir.entries.set(t.name, {
      kind: 'link',
      target,
      mode: S_IFLNK | 0o777,
      uid: cred?.uid ?? ROOT_UID,
      gid: cred?.gid ?? ROOT_UID,
      mtimeMs: now,
      atimeMs: now,
      ctimeMs: now,
      ino: this.nextIno++,
      owner: this.token,
    });
  }

  /** Removes a file, link or (with recursive) a directory tree. */
  remove(path: string, options: Access & { recursive?: boolean; dirOnly?: boolean } = {}): void {
    const norm = normalizePath(path);
    const name = basename(norm);
    if (norm === '/') throw new FsError('EACCES', path);
    const parent = this.resolve(dirname(norm), true, options);
    if (parent.node.kind !== 'dir') throw new FsError('ENOTDIR', path);
    const node = parent.node.entries.get(name);
    if (!node) {
      if (this.dynamic.get(parent.path)?.lookup(name, options)) throw new FsError('EACCES', path);
      throw new FsError('ENOENT', path);
    }
    const full = join(parent.path, name);
    this.checkUnlink(parent.node, node, full, options, path);
    if (node.kind === 'dir') {
      if (!options.recursive && node.entries.size > 0)
        throw new FsError(options.dirOnly ? 'ENOTEMPTY' : 'EISDIR', path);
      if (!options.recursive && !options.dirOnly) throw new FsError('EISDIR', path);
      if (options.recursive) this.checkTreeRemovable(node, full, options);
    } else if (options.dirOnly) throw new FsError('ENOTDIR', path);
    const dir = this.mutableDir(parent.path);
    dir.entries.delete(name);
    this.release(node);
    dir.mtimeMs = this.clock.now();
  }

  rename(from: string, to: string, access: Access = {}): void {
    const src = normalizePath(from);
    const srcName = basename(src);
    const srcParent = this.resolve(dirname(src), true, access);
    if (srcParent.node.kind !== 'dir') throw new FsError('ENOTDIR', from);
    const node = srcParent.node.entries.get(srcName);
    if (!node) throw new FsError('ENOENT', from);
    this.checkUnlink(srcParent.node, node, join(srcParent.path, srcName), access, from);
    let dest = normalizePath(to);
    const existingDest = this.tryResolve(dest, access);
    if (existingDest?.node.kind === 'dir') dest = join(existingDest.path, srcName);
    const target = this.targetForCreate(dest, access);
    const existing = target.dir.entries.get(target.name);
    if (existing?.kind === 'dir' && node.kind !== 'dir') throw new FsError('EISDIR', to);
    this.checkCreate(target.dir, target.dirPath, join(target.dirPath, target.name), access, to);
    this.mutableDir(srcParent.path).entries.delete(srcName);
    // Re-fetch: the delete above may have copied the destination's ancestors.
    const destDir = this.mutableDir(target.dirPath);
    const replaced = destDir.entries.get(target.name);
    destDir.entries.set(target.name, node);
    if (replaced && replaced !== node) this.release(replaced);
    destDir.mtimeMs = this.clock.now();
  }

  chmod(path: string, perm: number, access: Access = {}): void {
    const { path: real, node } = this.resolve(path, true, access);
    if (onReadOnlyMount(real, false)) throw new FsError('EROFS', path);
    // chmod succeeds on emulated storage but changes nothing, as with FUSE on a device.
    const cred = credOf(access);
    if (isEmulated(real) && cred) return;
    if (cred && node.uid !== cred.uid) throw new FsError('EPERM', path);
    const mutable = this.mutableNode(real);
    mutable.mode = (mutable.mode & S_IFMT) | (perm & 0o7777);
    mutable.ctimeMs = this.clock.now();
  }

  /** Sets times: an explicit time needs the owner; `now` also whoever may write the file. */
  utimes(
    path: string,
    mtimeMs: number,
    atimeMs: number = mtimeMs,
    access: Access & { now?: boolean } = {},
  ): void {
    const { path: real, node } = this.resolve(path, true, access);
    if (onReadOnlyMount(real, false)) throw new FsError('EROFS', path);
    const cred = credOf(access);
    if (cred && !isEmulated(real) && node.uid !== cred.uid) {
      if (!access.now) throw new FsError('EPERM', path);
      if (!permits(node, cred, MAY_WRITE)) throw new FsError('EACCES', path);
    }
    const mutable = this.mutableNode(real);
    mutable.mtimeMs = mtimeMs;
    mutable.atimeMs = atimeMs;
  }

  chown(path: string, uid: number, gid: number, access: Access = {}): void {
    const { path: real } = this.resolve(path, true, access);
    if (onReadOnlyMount(real, false)) throw new FsError('EROFS', path);
    if (credOf(access)) throw new FsError('EPERM', path);
    const node = this.mutableNode(real);
    node.uid = uid;
    node.gid = gid;
  }

  /** Whether the caller may write this path (test -w, and commands picking error texts). */
  isWritable(path: string, access: Access = {}): boolean {
    return this.canAccess(path, { write: true }, access);
  }

  /**
   * Iterates a subtree depth first (parents before children), not following links. A
   * directory the caller may not read is reported to onError and skipped.
   */
  *walkTree(
    path: string,
    access: Access = {},
    onError?: (path: string, error: FsError) => void,
  ): Generator<{ path: string; node: FsNode }> {
    const { node, path: real } = this.resolve(path, true, access);
    yield { path: real, node };
    if (node.kind !== 'dir') return;
    let entries: { name: string; node: FsNode }[];
    try {
      entries = this.readdir(real, access);
    } catch (error) {
      if (!(error instanceof FsError) || !onError) throw error;
      onError(real, error);
      return;
    }
    for (const { name, node: child } of entries) {
      const childPath = join(real, name);
      if (child.kind === 'dir') yield* this.walkTree(childPath, access, onError);
      else yield { path: childPath, node: child };
    }
  }

  /** Replaces a subtree with an empty directory (profile restore, pm clear). */
  resetDir(path: string, perm = 0o771, uid = SHELL_UID, gid = SHELL_UID): void {
    const norm = normalizePath(path);
    const parent = this.mutableDir(this.resolve(dirname(norm)).path);
    const now = this.clock.now();
    const replaced = parent.entries.get(basename(norm));
    if (replaced) this.release(replaced);
    parent.entries.set(basename(norm), {
      kind: 'dir',
      entries: new Map(),
      mode: S_IFDIR | perm,
      uid,
      gid,
      mtimeMs: now,
      atimeMs: now,
      ctimeMs: now,
      ino: this.nextIno++,
      owner: this.token,
    });
  }

  // ---------- internals ----------

  /** Whether the caller may access a node (emulated storage: FUSE lets every app user in). */
  private may(node: FsNode, realPath: string, access: Access, want: number): boolean {
    const cred = credOf(access);
    if (cred && isEmulated(realPath))
      return !(want & MAY_EXEC) || node.kind === 'dir' || (node.mode & 0o111) !== 0;
    return permits(node, cred, want);
  }

  private walk(path: string, follow: boolean, depth: number, access: Access): Resolved {
    if (depth > 16) throw new FsError('ELOOP', path);
    const parts = path.split('/').filter(Boolean);
    let node: FsNode = this.root;
    let current = '';
    for (let i = 0; i < parts.length; i++) {
      if (node.kind !== 'dir') throw new FsError('ENOTDIR', path);
      // Looking up a name needs search (x) permission on the directory.
      if (!this.may(node, current || '/', access, MAY_EXEC)) throw new FsError('EACCES', path);
      const part = parts[i]!;
      const child: FsNode | undefined =
        node.entries.get(part) ?? this.dynamic.get(current || '/')?.lookup(part, access);
      if (!child) throw new FsError('ENOENT', path);
      const last = i === parts.length - 1;
      if (child.kind === 'link' && (!last || follow)) {
        const target = normalizePath(child.target, current || '/');
        const rest = parts.slice(i + 1).join('/');
        return this.walk(rest ? `${target}/${rest}` : target, follow, depth + 1, access);
      }
      node = child;
      current += '/' + part;
    }
    return { path: current || '/', node };
  }

  /** Writing an existing file: not on a read-only mount, and with write permission. */
  private checkWrite(node: FsNode, realPath: string, access: Access, shown: string): void {
    if (onReadOnlyMount(realPath, false)) throw new FsError('EROFS', shown);
    if (!this.may(node, realPath, access, MAY_WRITE)) throw new FsError('EACCES', shown);
  }

  /** Adding an entry to a directory: not on a read-only mount, and write+search on it. */
  private checkCreate(dir: DirNode, dirPath: string, realPath: string, access: Access, shown: string): void {
    if (onReadOnlyMount(realPath, true)) throw new FsError('EROFS', shown);
    if (this.dynamic.has(dirPath)) throw new FsError('EACCES', shown);
    if (!this.may(dir, dirPath, access, MAY_WRITE | MAY_EXEC)) throw new FsError('EACCES', shown);
  }

  /** Removing an entry: write+search on its directory, and the sticky bit's owner rule. */
  private checkUnlink(dir: DirNode, node: FsNode, realPath: string, access: Access, shown: string): void {
    const dirPath = dirname(realPath);
    if (onReadOnlyMount(realPath, false)) throw new FsError('EROFS', shown);
    if (!this.may(dir, dirPath, access, MAY_WRITE | MAY_EXEC)) throw new FsError('EACCES', shown);
    const cred = credOf(access);
    if (cred && dir.mode & 0o1000 && node.uid !== cred.uid && dir.uid !== cred.uid)
      throw new FsError('EPERM', shown);
  }

  /** rm -r empties each directory before removing it: each needs read, write and search. */
  private checkTreeRemovable(dir: DirNode, realPath: string, access: Access): void {
    if (dir.entries.size === 0) return;
    if (!this.may(dir, realPath, access, MAY_READ | MAY_WRITE | MAY_EXEC))
      throw new FsError('EACCES', realPath);
    for (const [name, child] of dir.entries)
      if (child.kind === 'dir') this.checkTreeRemovable(child, join(realPath, name), access);
  }

  private defaultGid(dirPath: string, gid: number): number {
    return isEmulated(dirPath) ? MEDIA_RW_GID : gid;
  }

  private defaultUid(dirPath: string, uid: number): number {
    return isEmulated(dirPath) && uid !== ROOT_UID ? ROOT_UID : uid;
  }

  /** Where a new entry named by `path` goes: its canonical parent dir (made mutable). */
  private targetForCreate(
    path: string,
    options: Access & { parents?: boolean },
    followLink = true,
  ): { dir: DirNode; dirPath: string; name: string } {
    const norm = normalizePath(path);
    if (norm === '/') throw new FsError('EISDIR', path);
    const name = basename(norm);
    let parent: Resolved;
    try {
      parent = this.resolve(dirname(norm), true, options);
    } catch (error) {
      if (options.parents && error instanceof FsError && error.code === 'ENOENT') {
        // Missing parents get a directory's mode (0775, as adbd's secure_mkdirs makes them),
        // not the mode of the file being written.
        const { mode: _fileMode, ...access } = options as WriteOptions;
        this.mkdir(dirname(norm), { ...access, parents: true });
        parent = this.resolve(dirname(norm), true, options);
      } else throw error;
    }
    if (parent.node.kind !== 'dir') throw new FsError('ENOTDIR', path);
    // Writing through an existing symlink writes its target.
    const existing = parent.node.entries.get(name);
    if (followLink && existing?.kind === 'link') {
      const real = normalizePath(existing.target, parent.path);
      return this.targetForCreate(real, options);
    }
    if (this.dynamic.has(parent.path)) throw new FsError('EACCES', path);
    return { dir: this.mutableDir(parent.path), dirPath: parent.path, name };
  }

  private mkdirOne(path: string, options: Access & { mode?: number }): void {
    const t = this.targetForCreate(path, options, false);
    if (t.dir.entries.has(t.name)) throw new FsError('EEXIST', path);
    this.checkCreate(t.dir, t.dirPath, join(t.dirPath, t.name), options, path);
    const cred = credOf(options);
    const now = this.clock.now();
    t.dir.entries.set(t.name, {
      kind: 'dir',
      entries: new Map(),
      mode: S_IFDIR | (isEmulated(t.dirPath) && cred ? 0o770 : creationMode(options, 'dir')),
      uid: this.defaultUid(t.dirPath, cred?.uid ?? ROOT_UID),
      gid: cred ? this.defaultGid(t.dirPath, cred.gid) : ROOT_UID,
      mtimeMs: now,
      atimeMs: now,
      ctimeMs: now,
      ino: this.nextIno++,
      owner: this.token,
    });
    t.dir.mtimeMs = now;
  }

  /** The directory at a canonical path, copying shared ancestors so it may be changed. */
  private mutableDir(realPath: string): DirNode {
    const node = this.mutableNode(realPath);
    if (node.kind !== 'dir') throw new FsError('ENOTDIR', realPath);
    return node;
  }

  private mutableNode(realPath: string): FsNode {
    let node: FsNode = this.root;
    for (const part of realPath.split('/').filter(Boolean)) {
      if (node.kind !== 'dir') throw new FsError('ENOTDIR', realPath);
      const child: FsNode | undefined = node.entries.get(part);
      if (!child) throw new FsError('ENOENT', realPath);
      node = this.own(node, part, child);
    }
    return node;
  }

  /** Makes `child` (entry `name` of mutable `dir`) owned by this fs, copying it if shared. */
  private own(dir: DirNode, name: string, child: FsNode): FsNode {
    if (child.owner === this.token) return child;
    const copy: FsNode =
      child.kind === 'dir'
        ? { ...child, entries: new Map(child.entries), owner: this.token }
        : { ...child, owner: this.token };
    // A file copied from the system image is this phone's data from now on.
    if (copy.kind === 'file') this.used += copy.data.length;
    dir.entries.set(name, copy);
    return copy;
  }

  /**
   * The file's bytes followed by `data`. Appends fill spare room at the end of the file's
   * store, which grows geometrically, so `>>` in a loop or a growing log costs amortised
   * O(appended bytes) instead of a copy of the whole file each time. Bytes already handed
   * out (readFile views) are never changed: only room past the file's end is written.
   */
  private appendTo(node: FileNode, data: Buffer): Buffer {
    const length = node.data.length;
    const needed = length + data.length;
    let store = this.stores.get(node);
    // Reuse the store only while the file is exactly its filled prefix (a replace, a copy
    // or a shorter file means someone may still see bytes past the end).
    if (
      store === undefined ||
      store.filled !== length ||
      store.buffer.length < needed ||
      node.data.buffer !== store.buffer.buffer ||
      node.data.byteOffset !== store.buffer.byteOffset
    ) {
      // Grow by half again, but never reserve more than the quota could still fill.
      const capacity = Math.max(
        needed,
        Math.min(Math.max(MIN_STORE, Math.ceil(needed * 1.5)), needed + this.freeBytes),
      );
      store = { buffer: Buffer.alloc(capacity), filled: length };
      node.data.copy(store.buffer, 0);
      this.stores.set(node, store);
    }
    data.copy(store.buffer, length);
    store.filled = needed;
    return store.buffer.subarray(0, needed);
  }

  /** Claims `bytes` more of the quota (a negative delta frees), or fails with ENOSPC. */
  private reserve(bytes: number, path: string): void {
    if (bytes > 0 && this.used + bytes > this.capacity) throw new FsError('ENOSPC', path);
    this.used += bytes;
  }

  /** A node left the tree: the files of its subtree that this phone owns free their space. */
  private release(node: FsNode): void {
    if (node.owner !== this.token) return; // shared system content holds no quota
    if (node.kind === 'file') this.used -= node.data.length;
    else if (node.kind === 'dir') for (const child of node.entries.values()) this.release(child);
  }
}

/** The filesystem as one caller sees it: every call checked against its credentials. */
export class FsView {
  constructor(
    readonly fs: VirtualFs,
    readonly access: Access,
  ) {}

  get freeBytes(): number {
    return this.fs.freeBytes;
  }
  get usedBytes(): number {
    return this.fs.usedBytes;
  }
  resolve(path: string, follow = true): Resolved {
    return this.fs.resolve(path, follow, this.access);
  }
  exists(path: string): boolean {
    return this.fs.exists(path, this.access);
  }
  stat(path: string): Stat {
    return this.fs.stat(path, this.access);
  }
  lstat(path: string): Stat {
    return this.fs.lstat(path, this.access);
  }
  realpath(path: string): string {
    return this.fs.realpath(path, this.access);
  }
  readFile(path: string): Buffer {
    return this.fs.readFile(path, this.access);
  }
  openRead(path: string): ReturnType<VirtualFs['openRead']> {
    return this.fs.openRead(path, this.access);
  }
  readlink(path: string): string {
    return this.fs.readlink(path, this.access);
  }
  readdir(path: string): { name: string; node: FsNode }[] {
    return this.fs.readdir(path, this.access);
  }
  canAccess(path: string, want: { read?: boolean; write?: boolean; exec?: boolean }): boolean {
    return this.fs.canAccess(path, want, this.access);
  }
  isWritable(path: string): boolean {
    return this.fs.isWritable(path, this.access);
  }
  writeFile(path: string, data: Buffer, options: Omit<WriteOptions, keyof Access> = {}): void {
    this.fs.writeFile(path, data, { ...options, ...this.access });
  }
  checkWritableFile(path: string, options: { parents?: boolean } = {}): void {
    this.fs.checkWritableFile(path, { ...options, ...this.access });
  }
  mkdir(path: string, options: { parents?: boolean; mode?: number } = {}): void {
    this.fs.mkdir(path, { ...options, ...this.access });
  }
  symlink(target: string, path: string): void {
    this.fs.symlink(target, path, this.access);
  }
  remove(path: string, options: { recursive?: boolean; dirOnly?: boolean } = {}): void {
    this.fs.remove(path, { ...options, ...this.access });
  }
  rename(from: string, to: string): void {
    this.fs.rename(from, to, this.access);
  }
  chmod(path: string, perm: number): void {
    this.fs.chmod(path, perm, this.access);
  }
  utimes(path: string, mtimeMs: number, atimeMs = mtimeMs, options: { now?: boolean } = {}): void {
    this.fs.utimes(path, mtimeMs, atimeMs, { ...options, ...this.access });
  }
  chown(path: string, uid: number, gid: number): void {
    this.fs.chown(path, uid, gid, this.access);
  }
  walkTree(
    path: string,
    onError?: (path: string, error: FsError) => void,
  ): Generator<{ path: string; node: FsNode }> {
    return this.fs.walkTree(path, this.access, onError);
  }
}
