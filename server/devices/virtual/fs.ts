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
  | 'ENOSPC';

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

/** Who is asking: the adb shell user (uid 2000) is confined to the user-writable areas. */
export interface Access {
  root?: boolean;
}

/** Paths the shell user may change; everything else is the system's. */
const USER_WRITABLE = ['/storage/emulated/0', '/data/local/tmp'];
const READ_ONLY_ROOTS = ['/system', '/vendor', '/product', '/system_ext', '/apex', '/odm'];

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
  private readonly time: number;

  constructor(time = Date.UTC(2024, 0, 1)) {
    this.time = time;
    this.root = this.dirNode(0o755, ROOT_UID, ROOT_UID);
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

  link(path: string, target: string): this {
    const { dir, name } = this.parentOf(path);
    dir.entries.set(name, { kind: 'link', target, ...this.base(S_IFLNK | 0o777, ROOT_UID, ROOT_UID) });
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

  // ---------- lookups ----------

  /** Resolves a path; with follow=false the last component is not dereferenced. */
  resolve(path: string, follow = true): Resolved {
    return this.walk(normalizePath(path), follow, 0);
  }

  exists(path: string): boolean {
    try {
      this.resolve(path);
      return true;
    } catch {
      return false;
    }
  }

  stat(path: string): Stat {
    return statOf(this.resolve(path, true).node);
  }

  lstat(path: string): Stat {
    return statOf(this.resolve(path, false).node);
  }

  /** Canonical form of a path (all symlinks resolved). */
  realpath(path: string): string {
    return this.resolve(path, true).path;
  }

  readFile(path: string): Buffer {
    const { node, path: real } = this.resolve(path);
    if (node.kind === 'dir') throw new FsError('EISDIR', path);
    if (node.kind === 'chr') return Buffer.alloc(0);
    if (node.kind !== 'file') throw new FsError('EINVAL', real);
    return node.data;
  }

  readlink(path: string): string {
    const { node } = this.resolve(path, false);
    if (node.kind !== 'link') throw new FsError('EINVAL', path);
    return node.target;
  }

  readdir(path: string): { name: string; node: FsNode }[] {
    const { node } = this.resolve(path);
    if (node.kind !== 'dir') throw new FsError('ENOTDIR', path);
    return [...node.entries]
      .map(([name, n]) => ({ name, node: n }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  // ---------- changes ----------

  /**
   * Creates, replaces or (with append) extends a file. A write that does not fit in the
   * storage quota fails with ENOSPC; an append first stores what fits, as write(2) does.
   */
  writeFile(path: string, data: Buffer, options: WriteOptions = {}): void {
    const target = this.targetForCreate(path, options);
    const existing = target.dir.entries.get(target.name);
    if (existing?.kind === 'dir') throw new FsError('EISDIR', path);
    if (existing?.kind === 'chr') return; // /dev/null and friends swallow writes
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
    const uid = options.root ? ROOT_UID : SHELL_UID;
    const gid = options.root ? ROOT_UID : this.defaultGid(target.dirPath);
    // Emulated storage (FUSE) ignores requested modes: files are always rw-rw----.
    const perm = isEmulated(target.dirPath) && !options.root ? 0o660 : (options.mode ?? 0o644) & 0o7777;
    target.dir.entries.set(target.name, {
      kind: 'file',
      data,
      mode: S_IFREG | perm,
      uid: this.defaultUid(target.dirPath, uid),
      gid,
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
    const existing = this.tryResolve(norm);
    if (existing) {
      if (existing.node.kind === 'dir') throw new FsError('EISDIR', path);
      if (existing.node.kind !== 'chr') this.checkWritable(existing.path, options, path);
      return;
    }
    // A new file: its nearest existing ancestor must be a directory (missing ones are
    // created only with parents), inside the areas the user may change.
    const missing = [basename(norm)];
    let dir = dirname(norm);
    for (;;) {
      const found = this.tryResolve(dir);
      if (found) {
        if (found.node.kind !== 'dir') throw new FsError('ENOTDIR', path);
        if (missing.length > 1 && !options.parents) throw new FsError('ENOENT', path);
        this.checkWritable(`${found.path === '/' ? '' : found.path}/${missing.join('/')}`, options, path);
        return;
      }
      missing.unshift(basename(dir));
      dir = dirname(dir);
    }
  }

  /** resolve(), or null when the path does not exist. */
  private tryResolve(path: string): Resolved | null {
    try {
      return this.resolve(path);
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
        let exists: FsNode | null = null;
        try {
          exists = this.resolve(current).node;
        } catch (error) {
          if (!(error instanceof FsError) || error.code !== 'ENOENT') throw error;
        }
        if (exists) {
          if (exists.kind !== 'dir') throw new FsError('ENOTDIR', current);
          continue;
        }
        this.mkdirOne(current, options);
      }
      return;
    }
    this.mkdirOne(norm, options);
  }

  symlink(target: string, path: string, access: Access = {}): void {
    const t = this.targetForCreate(path, access);
    if (t.dir.entries.has(t.name)) throw new FsError('EEXIST', path);
    const now = this.clock.now();
    t.dir.entries.set(t.name, {
      kind: 'link',
      target,
      mode: S_IFLNK | 0o777,
      uid: access.root ? ROOT_UID : SHELL_UID,
      gid: access.root ? ROOT_UID : SHELL_UID,
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
    const parentPath = dirname(norm);
    const name = basename(norm);
    if (norm === '/') throw new FsError('EACCES', path);
    const parentReal = this.resolve(parentPath).path;
    const parent = this.resolve(parentPath).node;
    if (parent.kind !== 'dir') throw new FsError('ENOTDIR', path);
    const node = parent.entries.get(name);
    if (!node) throw new FsError('ENOENT', path);
    this.checkWritable(parentReal + (parentReal === '/' ? '' : '/') + name, options, path);
    if (node.kind === 'dir') {
      if (!options.recursive && node.entries.size > 0)
        throw new FsError(options.dirOnly ? 'ENOTEMPTY' : 'EISDIR', path);
      if (!options.recursive && !options.dirOnly) throw new FsError('EISDIR', path);
    } else if (options.dirOnly) throw new FsError('ENOTDIR', path);
    const dir = this.mutableDir(parentReal);
    dir.entries.delete(name);
    this.release(node);
    dir.mtimeMs = this.clock.now();
  }

  rename(from: string, to: string, access: Access = {}): void {
    const src = normalizePath(from);
    const srcParent = this.resolve(dirname(src)).path;
    const srcName = basename(src);
    const srcDirNode = this.resolve(srcParent).node;
    if (srcDirNode.kind !== 'dir') throw new FsError('ENOTDIR', from);
    const node = srcDirNode.entries.get(srcName);
    if (!node) throw new FsError('ENOENT', from);
    this.checkWritable(`${srcParent}/${srcName}`, access, from);
    let dest = normalizePath(to);
    try {
      const existing = this.resolve(dest);
      if (existing.node.kind === 'dir') dest = `${existing.path}/${srcName}`;
    } catch (error) {
      if (!(error instanceof FsError) || error.code !== 'ENOENT') throw error;
    }
    const target = this.targetForCreate(dest, access);
    const existing = target.dir.entries.get(target.name);
    if (existing?.kind === 'dir' && node.kind !== 'dir') throw new FsError('EISDIR', to);
    this.mutableDir(srcParent).entries.delete(srcName);
    // Re-fetch: the delete above may have copied the destination's ancestors.
    const destDir = this.mutableDir(target.dirPath);
    const replaced = destDir.entries.get(target.name);
    destDir.entries.set(target.name, node);
    if (replaced && replaced !== node) this.release(replaced);
    destDir.mtimeMs = this.clock.now();
  }

  chmod(path: string, perm: number, access: Access = {}): void {
    const { path: real } = this.resolve(path);
    this.checkWritable(real, access, path);
    // chmod succeeds on emulated storage but changes nothing, as with FUSE on a device.
    if (isEmulated(real) && !access.root) return;
    const node = this.mutableNode(real);
    node.mode = (node.mode & S_IFMT) | (perm & 0o7777);
    node.ctimeMs = this.clock.now();
  }

  utimes(path: string, mtimeMs: number, atimeMs: number = mtimeMs, access: Access = {}): void {
    const { path: real } = this.resolve(path);
    this.checkWritable(real, access, path);
    const node = this.mutableNode(real);
    node.mtimeMs = mtimeMs;
    node.atimeMs = atimeMs;
  }

  chown(path: string, uid: number, gid: number): void {
    const { path: real } = this.resolve(path);
    const node = this.mutableNode(real);
    node.uid = uid;
    node.gid = gid;
  }

  /** Whether the shell user may change this path (used by commands to pick error texts). */
  isWritable(path: string): boolean {
    try {
      this.checkWritable(normalizePath(path), {}, path);
      return true;
    } catch {
      return false;
    }
  }

  /** Iterates a subtree depth first (parents before children), not following links. */
  *walkTree(path: string): Generator<{ path: string; node: FsNode }> {
    const { node, path: real } = this.resolve(path);
    yield { path: real, node };
    if (node.kind !== 'dir') return;
    for (const [name, child] of node.entries) {
      const childPath = real === '/' ? `/${name}` : `${real}/${name}`;
      if (child.kind === 'dir') yield* this.walkTree(childPath);
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

  private walk(path: string, follow: boolean, depth: number): Resolved {
    if (depth > 16) throw new FsError('ELOOP', path);
    const parts = path.split('/').filter(Boolean);
    let node: FsNode = this.root;
    let current = '';
    for (let i = 0; i < parts.length; i++) {
      if (node.kind !== 'dir') throw new FsError('ENOTDIR', path);
      const part = parts[i]!;
      const child: FsNode | undefined = node.entries.get(part);
      if (!child) throw new FsError('ENOENT', path);
      const last = i === parts.length - 1;
      if (child.kind === 'link' && (!last || follow)) {
        const target = normalizePath(child.target, current || '/');
        const rest = parts.slice(i + 1).join('/');
        return this.walk(rest ? `${target}/${rest}` : target, follow, depth + 1);
      }
      node = child;
      current += '/' + part;
    }
    return { path: current || '/', node };
  }

  private checkWritable(realPath: string, access: Access, shown: string): void {
    if (access.root) return;
    if (USER_WRITABLE.some((p) => realPath === p || realPath.startsWith(p + '/'))) return;
    if (realPath === '/' || READ_ONLY_ROOTS.some((p) => realPath === p || realPath.startsWith(p + '/'))) {
      throw new FsError('EROFS', shown);
    }
    if (realPath.startsWith('/dev/') || realPath.startsWith('/proc/')) return;
    throw new FsError('EACCES', shown);
  }

  private defaultGid(dirPath: string): number {
    return dirPath.startsWith('/storage/emulated/0') ? MEDIA_RW_GID : SHELL_UID;
  }

  private defaultUid(dirPath: string, uid: number): number {
    return dirPath.startsWith('/storage/emulated/0') && uid !== ROOT_UID ? ROOT_UID : uid;
  }

  /** Where a new entry named by `path` goes: its canonical parent dir (made mutable). */
  private targetForCreate(
    path: string,
    options: Access & { parents?: boolean },
  ): { dir: DirNode; dirPath: string; name: string } {
    const norm = normalizePath(path);
    if (norm === '/') throw new FsError('EISDIR', path);
    const name = basename(norm);
    let parent: Resolved;
    try {
      parent = this.resolve(dirname(norm));
    } catch (error) {
      if (options.parents && error instanceof FsError && error.code === 'ENOENT') {
        this.mkdir(dirname(norm), { ...options, parents: true });
        parent = this.resolve(dirname(norm));
      } else throw error;
    }
    if (parent.node.kind !== 'dir') throw new FsError('ENOTDIR', path);
    const full = parent.path === '/' ? `/${name}` : `${parent.path}/${name}`;
    // Writing through an existing symlink writes its target.
    const existing = parent.node.entries.get(name);
    if (existing?.kind === 'link') {
      const real = normalizePath(existing.target, parent.path);
      return this.targetForCreate(real, options);
    }
    if (!(existing?.kind === 'chr')) this.checkWritable(full, options, path);
    return { dir: this.mutableDir(parent.path), dirPath: parent.path, name };
  }

  private mkdirOne(path: string, options: Access & { mode?: number }): void {
    const t = this.targetForCreate(path, options);
    if (t.dir.entries.has(t.name)) throw new FsError('EEXIST', path);
    const now = this.clock.now();
    t.dir.entries.set(t.name, {
      kind: 'dir',
      entries: new Map(),
      mode: S_IFDIR | (isEmulated(t.dirPath) && !options.root ? 0o770 : (options.mode ?? 0o775) & 0o7777),
      uid: this.defaultUid(t.dirPath, options.root ? ROOT_UID : SHELL_UID),
      gid: options.root ? ROOT_UID : this.defaultGid(t.dirPath),
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
