/**
 * Profile phones' storage. A profile phone runs its own AVD directory (a copy of the fleet
 * AVD for a fresh profile; else a copy of its last save), read-write so that the console can
 * save a snapshot of the whole device (apps, logins, settings, the current screen) when its
 * session ends. The save directory the runtime hands out holds:
 *   avd/           the AVD directory, snapshot included (no lock files)
 *   profile.json   written last; a save without it was cut short and is not loaded
 *
 * A snapshot loads only on an instance whose hardware config matches the one it was saved
 * with, and the emulator writes the AVD's name (and id and home) into that config at every
 * start (reference, "Times and sizes"): so a profile's AVD keeps one name from session to
 * session, chosen when the profile is first used and kept in profile.json. A fresh profile
 * cannot use the golden snapshot (saved under the fleet AVD's name): it cold-boots from the
 * fleet AVD's disks, which hold what the golden holds on disk (preinstalled apps included).
 * A save that fails leaves the runtime's previous save untouched (it only commits a complete
 * one), so the profile keeps what it had.
 */
import { existsSync } from 'node:fs';
import { mkdir, open, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { copyAvdDir, removeAvd, writeAvdIni } from './avd.js';
import { BOOKKEEPING_FILES, OWNER_FILE } from './snapshots.js';
import { PhoneBootError } from '../types.js';

export const PROFILE_SNAPSHOT = 'phonelease_profile';
const FORMAT = 'phonelease-emulator-profile';

interface ProfileManifest {
  format: string;
  version: number;
  snapshot: string;
  /** The AVD name the snapshot was saved under (absent in saves made before it was kept). */
  avdName?: string;
  savedAt: string;
}

/** Profile AVDs: `pl_profile_<12 hex>`, one name per profile for all its sessions. */
const PROFILE_AVD_NAME = /^pl_profile_[0-9a-f]{12}$/;

export interface ProfileAvd {
  name: string;
  dir: string;
  /** Snapshot to load at boot, or null for a cold boot (a fresh profile). */
  snapshot: string | null;
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
 * Lays out the AVD a profile session runs, under the name its save was made with (`newName`
 * for a fresh profile or a save that does not say): from `restoreFrom` when it holds a
 * save, else from the fleet AVD (`fresh()` makes sure it exists). The backend only reads
 * restoreFrom. The AVD's directory says which server process runs it (OWNER_FILE), so a
 * later server run can tell a leftover from an AVD in use.
 */
export async function prepareProfileAvd(options: {
  restoreFrom: string;
  avdHome: string;
  newName: string;
  target: string;
  fresh: () => Promise<{ dir: string }>;
}): Promise<ProfileAvd> {
  const saved = options.restoreFrom ? await readSave(options.restoreFrom) : null;
  const name = saved?.avdName && PROFILE_AVD_NAME.test(saved.avdName) ? saved.avdName : options.newName;
  const dir = join(options.avdHome, `${name}.avd`);
  await removeAvd(options.avdHome, name, dir);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, OWNER_FILE), String(process.pid));
  const skip = (n: string) => n === 'hardware-qemu.ini' || BOOKKEEPING_FILES.has(n);
  if (saved) await copyAvdDir(join(options.restoreFrom, 'avd'), dir, { skip });
  // The golden's snapshot is not copied: saved under the fleet AVD's name, it would be refused.
  else await copyAvdDir((await options.fresh()).dir, dir, { skip: (n) => skip(n) || n === 'snapshots' });
  await writeAvdIni(options.avdHome, name, dir, options.target);
  return { name, dir, snapshot: saved ? saved.snapshot : null, fresh: !saved };
}

/** Copies a stopped profile AVD into the runtime's empty save directory; the manifest goes last. */
export async function storeProfileAvd(avdName: string, avdDir: string, saveTo: string): Promise<void> {
  await copyAvdDir(avdDir, join(saveTo, 'avd'), { skip: (n) => BOOKKEEPING_FILES.has(n) });
  const manifest: ProfileManifest = {
    format: FORMAT,
    version: 1,
    snapshot: PROFILE_SNAPSHOT,
    avdName,
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
