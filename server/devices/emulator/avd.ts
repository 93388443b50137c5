/**
 * AVDs on disk: `NAME.ini` (which names the directory) plus `NAME.avd/` (config.ini, disk
 * images, snapshots/). The backend runs only AVDs it owns, in its own AVD home: copies of the
 * user's base AVD, so nothing it does (golden snapshots, profile saves, stale locks it
 * removes) touches the user's own.
 */
import { constants, existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, readdir, rm, stat, symlink, readlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export function parseIni(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\s*([^#=\s][^=]*?)\s*=\s*(.*?)\s*$/.exec(line);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

export interface Avd {
  name: string;
  dir: string;
  config: Map<string, string>;
}

/** Reads an AVD from an AVD home, or null when `NAME.ini` or its config.ini is missing. */
export function readAvd(avdHome: string, name: string): Avd | null {
  const ini = join(avdHome, `${name}.ini`);
  if (!existsSync(ini)) return null;
  const entries = parseIni(readFileSync(ini, 'utf8'));
  const dir = entries.get('path') ?? join(avdHome, `${name}.avd`);
  const configPath = join(dir, 'config.ini');
  if (!existsSync(configPath)) return null;
  return { name, dir, config: parseIni(readFileSync(configPath, 'utf8')) };
}

/** Writes `NAME.ini` pointing at `dir`, the way avdmanager does. */
export async function writeAvdIni(avdHome: string, name: string, dir: string, target: string): Promise<void> {
  await mkdir(avdHome, { recursive: true });
  await writeFile(
    join(avdHome, `${name}.ini`),
    `avd.ini.encoding=UTF-8\npath=${dir}\npath.rel=avd/${name}.avd\ntarget=${target}\n`,
  );
}

export async function removeAvd(avdHome: string, name: string, dir: string): Promise<void> {
  await rm(join(avdHome, `${name}.ini`), { force: true });
  await rm(dir, { recursive: true, force: true });
}

/** Lock files a running emulator keeps in its AVD directory (left behind by a SIGKILL). */
export async function lockFiles(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((n) => n.endsWith('.lock'));
  } catch {
    return [];
  }
}

/**
 * Removes lock files left by an emulator that is gone. Only for AVDs this backend owns and
 * runs nothing on: the emulator refuses to start while they exist ("Running multiple
 * emulators with the same AVD ...").
 */
export async function removeStaleLocks(dir: string): Promise<string[]> {
  const stale = await lockFiles(dir);
  for (const name of stale) await rm(join(dir, name), { recursive: true, force: true });
  return stale;
}

export interface CopyOptions {
  /** Names (at the top of the AVD directory) not to copy. */
  skip?: (name: string) => boolean;
}

/**
 * Copies an AVD directory. Disk images are cloned where the filesystem can (reflinks on
 * btrfs and XFS), else copied; lock files never travel with a copy.
 */
export async function copyAvdDir(from: string, to: string, options: CopyOptions = {}): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const name of await readdir(from)) {
    if (name.endsWith('.lock') || options.skip?.(name)) continue;
    await copyEntry(join(from, name), join(to, name));
  }
}

async function copyEntry(from: string, to: string): Promise<void> {
  const s = await stat(from).catch(() => null);
  if (!s) {
    // A dangling symlink: keep it as a link.
    await unlink(to).catch(() => undefined);
    await symlink(await readlink(from), to);
    return;
  }
  if (s.isDirectory()) {
    await mkdir(to, { recursive: true });
    for (const name of await readdir(from)) await copyEntry(join(from, name), join(to, name));
    return;
  }
  await copyFile(from, to, constants.COPYFILE_FICLONE);
}
