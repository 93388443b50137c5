/**
 * Profile phones' storage. A profile phone runs its own AVD directory (a copy of the fleet
 * AVD for a fresh profile, with its golden snapshot; else a copy of its last save), read-write
 * so that the console can save a snapshot of the whole device (apps, logins, settings, the
 * current screen) when its session ends. The save directory the runtime hands out holds:
 *   avd/           the AVD directory, snapshot included (no lock files)
 *   profile.json   written last; a save without it was cut short and is not loaded
 * A save that fails leaves the runtime's previous save untouched (it only commits a complete
 * one), so the profile keeps what it had.
 */
import { existsSync } from 'node:fs';
import { readFile, readdir, writeFile, open } from 'node:fs/promises';
import { join } from 'node:path';
import { copyAvdDir, removeAvd, writeAvdIni } from './avd.js';
import { BOOKKEEPING_FILES, GOLDEN_SNAPSHOT } from './snapshots.js';
import { PhoneBootError } from '../types.js';

export const PROFILE_SNAPSHOT = 'phonelease_profile';
const FORMAT = 'phonelease-emulator-profile';

interface ProfileManifest {
  format: string;
  version: number;
  snapshot: string;
  savedAt: string;
}

export interface ProfileAvd {
  name: string;
  dir: string;
  /** Snapshot to load at boot. */
  snapshot: string;
  fresh: boolean;
}

/** Why a save directory cannot be loaded, or null when it is a fresh profile or a good save. */
async function readSave(dir: string): Promise<ProfileManifest | null> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return null;
  }
  if (names.length === 0) return null;
  if (!names.includes('profile.json')) {
    throw new PhoneBootError(
      'profile_damaged',
      names.includes('manifest.json')
        ? 'The saved phone was made by the virtual phone backend and cannot run on an emulator. Reset the profile (POST /me/profile/reset) or serve it with --device virtual.'
        : 'The saved phone is incomplete (its save was interrupted). Reset the profile to start it fresh.',
    );
  }
  const manifest = JSON.parse(await readFile(join(dir, 'profile.json'), 'utf8')) as Partial<ProfileManifest>;
  if (manifest.format !== FORMAT || !existsSync(join(dir, 'avd', 'config.ini'))) {
    throw new PhoneBootError(
      'profile_damaged',
      'The saved phone is damaged. Reset the profile to start it fresh.',
    );
  }
  return manifest as ProfileManifest;
}

/**
 * Lays out the AVD a profile session runs: from `restoreFrom` when it holds a save, else
 * from the fleet AVD (`fresh()` makes sure it exists). The backend only reads restoreFrom.
 */
export async function prepareProfileAvd(options: {
  restoreFrom: string;
  avdHome: string;
  name: string;
  target: string;
  fresh: () => Promise<{ dir: string }>;
}): Promise<ProfileAvd> {
  const dir = join(options.avdHome, `${options.name}.avd`);
  await removeAvd(options.avdHome, options.name, dir);
  const saved = options.restoreFrom ? await readSave(options.restoreFrom) : null;
  if (saved) await copyAvdDir(join(options.restoreFrom, 'avd'), dir);
  else
    await copyAvdDir((await options.fresh()).dir, dir, {
      skip: (n) => n === 'hardware-qemu.ini' || BOOKKEEPING_FILES.has(n),
    });
  await writeAvdIni(options.avdHome, options.name, dir, options.target);
  return { name: options.name, dir, snapshot: saved ? saved.snapshot : GOLDEN_SNAPSHOT, fresh: !saved };
}

/** Copies a stopped profile AVD into the runtime's empty save directory; the manifest goes last. */
export async function storeProfileAvd(avdDir: string, saveTo: string): Promise<void> {
  await copyAvdDir(avdDir, join(saveTo, 'avd'));
  const manifest: ProfileManifest = {
    format: FORMAT,
    version: 1,
    snapshot: PROFILE_SNAPSHOT,
    savedAt: new Date().toISOString(),
  };
  await writeFile(join(saveTo, 'profile.json'), JSON.stringify(manifest, null, 2));
  const handle = await open(join(saveTo, 'profile.json'), 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
