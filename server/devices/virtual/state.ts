/**
 * Profile saves: what a phone keeps between leases of a profile. Layout of a save dir:
 *   data.bin       file and APK bytes, back to back
 *   state.json     settings, persist.* props, UI state, file tree, packages (offsets into data.bin)
 *   manifest.json  written last; names the other files with their sizes and SHA-256, so a
 *                  save that was cut short or damaged later (no manifest, sizes or hashes that
 *                  do not match) is detected on restore.
 * Durability: data.bin and state.json (and the directory) reach the disk before the manifest
 * is written, then the manifest itself is synced; a crash never leaves a manifest naming data
 * that is not there.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { FsNode } from './fs.js';
import type { Device } from './device.js';
import { parseLockSettings } from './lock-settings.js';

export const SAVE_FORMAT = 'phonelease-virtual-phone';
export const SAVE_VERSION = 1;

/** Trees the shell user can write to; the rest of the filesystem is the system's. */
export const SAVED_TREES = ['/storage/emulated/0', '/data/local/tmp'];

interface SavedFile {
  path: string;
  kind: 'file' | 'dir' | 'link';
  mode: number;
  uid: number;
  gid: number;
  mtimeMs: number;
  target?: string;
  offset?: number;
  size?: number;
}

export interface SavedBlob {
  offset: number;
  size: number;
}

export interface SavedState {
  settings: ReturnType<Device['settings']['save']>;
  props: Record<string, string>;
  ui: unknown;
  files: SavedFile[];
  /** Owned by the package manager; opaque here. */
  packages: unknown;
  system: unknown;
}

interface Manifest {
  format: string;
  version: number;
  savedAt: string;
  files: { name: string; size: number; sha256: string }[];
}

/** Collects blobs into one data file without copying them first. */
export class BlobWriter {
  private readonly parts: Buffer[] = [];
  private size = 0;

  add(data: Buffer): SavedBlob {
    const blob = { offset: this.size, size: data.length };
    this.parts.push(data);
    this.size += data.length;
    return blob;
  }

  get buffers(): readonly Buffer[] {
    return this.parts;
  }
}

/** Participants in a save besides the filesystem (packages, system services, UI). */
export interface StateParts {
  savePackages(blobs: BlobWriter): unknown;
  restorePackages(state: unknown, data: Buffer): void;
  saveSystem(): unknown;
  restoreSystem(state: unknown): void;
}

export async function saveDeviceState(device: Device, parts: StateParts, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const blobs = new BlobWriter();
  const files: SavedFile[] = [];
  for (const tree of SAVED_TREES) {
    for (const { path, node } of device.fs.walkTree(tree)) files.push(describe(path, node, blobs));
  }
  const state: SavedState = {
    settings: device.settings.save(),
    props: device.props.persistent(),
    ui: device.hasUi ? device.ui.saveState() : null,
    files,
    packages: parts.savePackages(blobs),
    system: parts.saveSystem(),
  };
  const hash = createHash('sha256');
  for (const b of blobs.buffers) hash.update(b);
  const dataHash = hash.digest('hex');
  let dataSize = 0;
  for (const b of blobs.buffers) dataSize += b.length;
  await writeDurably(join(dir, 'data.bin'), blobs.buffers);
  const stateJson = Buffer.from(JSON.stringify(state));
  await writeDurably(join(dir, 'state.json'), [stateJson]);
  await syncDirectory(dir);
  const manifest: Manifest = {
    format: SAVE_FORMAT,
    version: SAVE_VERSION,
    savedAt: new Date(device.now()).toISOString(),
    files: [
      { name: 'data.bin', size: dataSize, sha256: dataHash },
      {
        name: 'state.json',
        size: stateJson.length,
        sha256: createHash('sha256').update(stateJson).digest('hex'),
      },
    ],
  };
  // Last: its presence marks the save as complete.
  await writeDurably(join(dir, 'manifest.json'), [Buffer.from(JSON.stringify(manifest, null, 2))]);
  await syncDirectory(dir);
}

/** Writes a file and waits until its bytes are on the disk (fsync). */
async function writeDurably(path: string, buffers: readonly Buffer[]): Promise<void> {
  const file = await open(path, 'w');
  try {
    // libuv writes every buffer, looping over partial writes.
    if (buffers.length > 0) await file.writev([...buffers]);
    await file.sync();
  } finally {
    await file.close();
  }
}

/** Makes a directory's entries (files just created in it) durable. */
async function syncDirectory(path: string): Promise<void> {
  // Windows cannot open a directory for fsync; NTFS journals its metadata.
  if (process.platform === 'win32') return;
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function describe(path: string, node: FsNode, blobs: BlobWriter): SavedFile {
  const base = { path, mode: node.mode, uid: node.uid, gid: node.gid, mtimeMs: node.mtimeMs };
  if (node.kind === 'dir') return { ...base, kind: 'dir' };
  if (node.kind === 'link') return { ...base, kind: 'link', target: node.target };
  if (node.kind === 'file') {
    const blob = blobs.add(node.data);
    return { ...base, kind: 'file', offset: blob.offset, size: blob.size };
  }
  return { ...base, kind: 'file', offset: 0, size: 0 };
}

export class DamagedSaveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DamagedSaveError';
  }
}

/** Restores a save; returns false for an absent or empty directory (a fresh profile). */
export async function restoreDeviceState(device: Device, parts: StateParts, dir: string): Promise<boolean> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  if (names.length === 0) return false;
  if (!names.includes('manifest.json'))
    throw new DamagedSaveError('the saved phone is incomplete (its save was interrupted)');
  const manifest = parseJson(await readFile(join(dir, 'manifest.json')), 'manifest.json');
  if (!isManifest(manifest)) throw new DamagedSaveError('the saved phone is damaged (manifest.json)');
  if (manifest.format !== SAVE_FORMAT || manifest.version !== SAVE_VERSION) {
    throw new DamagedSaveError(`unsupported saved phone format ${manifest.format} v${manifest.version}`);
  }
  const contents = new Map<string, Buffer>();
  for (const f of manifest.files) {
    const s = await stat(join(dir, f.name)).catch(() => null);
    if (!s || s.size !== f.size) throw new DamagedSaveError(`the saved phone is incomplete (${f.name})`);
    const bytes = await readFile(join(dir, f.name));
    if (createHash('sha256').update(bytes).digest('hex') !== f.sha256)
      throw new DamagedSaveError(`the saved phone is damaged (${f.name})`);
    contents.set(f.name, bytes);
  }
  const data = contents.get('data.bin');
  const stateBytes = contents.get('state.json');
  if (!data || !stateBytes)
    throw new DamagedSaveError('the saved phone is incomplete (its manifest names no data)');
  const state = parseJson(stateBytes, 'state.json') as SavedState;
  checkSavedLock(state.system);
  device.settings.restore(state.settings);
  device.props.restore(state.props);
  for (const tree of SAVED_TREES) device.fs.resetDir(tree);
  for (const f of state.files) {
    if (SAVED_TREES.includes(f.path)) {
      device.fs.chmod(f.path, f.mode & 0o7777, { root: true });
      continue;
    }
    if (f.kind === 'dir') device.fs.mkdir(f.path, { root: true, parents: true, mode: f.mode & 0o7777 });
    else if (f.kind === 'link') device.fs.symlink(f.target ?? '', f.path, { root: true });
    else {
      const bytes = data.subarray(f.offset ?? 0, (f.offset ?? 0) + (f.size ?? 0));
      device.fs.writeFile(f.path, bytes, {
        root: true,
        mode: f.mode & 0o7777,
        mtimeMs: f.mtimeMs,
        parents: true,
      });
    }
    if (f.kind !== 'link') {
      device.fs.chown(f.path, f.uid, f.gid);
      device.fs.utimes(f.path, f.mtimeMs, f.mtimeMs, { root: true });
    }
  }
  parts.restorePackages(state.packages, data);
  parts.restoreSystem(state.system);
  if (state.ui !== null && state.ui !== undefined) device.ui.restoreState(state.ui);
  return true;
}

/**
 * The save's screen lock, checked before anything is restored. A lock that is there but
 * cannot be read makes the save damaged, as a damaged file does: restoring the rest would
 * hand out the profile's phone with no lock at all. A save from before phones kept their
 * lock has none, and the phone starts with the usual none.
 */
function checkSavedLock(system: unknown): void {
  if (typeof system !== 'object' || system === null || !('lock' in system)) return;
  if (parseLockSettings(system.lock) === null)
    throw new DamagedSaveError('the saved phone is damaged (its screen lock)');
}

function parseJson(bytes: Buffer, name: string): unknown {
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    throw new DamagedSaveError(`the saved phone is damaged (${name} is not valid JSON)`);
  }
}

function isManifest(value: unknown): value is Manifest {
  if (typeof value !== 'object' || value === null) return false;
  const m = value as Partial<Manifest>;
  return (
    Array.isArray(m.files) &&
    m.files.every(
      (f: unknown) =>
        typeof f === 'object' &&
        f !== null &&
        typeof (f as Manifest['files'][number]).name === 'string' &&
        /^[a-z.]+$/.test((f as Manifest['files'][number]).name) &&
        typeof (f as Manifest['files'][number]).size === 'number' &&
        typeof (f as Manifest['files'][number]).sha256 === 'string',
    )
  );
}
