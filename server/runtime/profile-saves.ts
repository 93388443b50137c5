/**
 * On-disk saves of profile phones. Each save is a directory under
 * <data>/profiles/<profile_id>/saves/; a small pointer file names the current one and is
 * replaced atomically (write, fsync, rename), so a crash in the middle of a save leaves
 * the previous save in place instead of a half-written one.
 */
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';

export class ProfileSaves {
  constructor(private readonly root: string) {}

  private dir(profileId: string): string {
    return join(this.root, profileId);
  }

  /** The directory of the current save, or null when nothing was saved (or after a reset). */
  current(profileId: string): string | null {
    try {
      const name = readFileSync(join(this.dir(profileId), 'current'), 'utf8').trim();
      return name ? join(this.dir(profileId), 'saves', name) : null;
    } catch {
      return null;
    }
  }

  /** A fresh, empty directory to save into. */
  stage(profileId: string, sessionId: string): string {
    const path = join(this.dir(profileId), 'saves', `${sessionId}-${Date.now().toString(36)}`);
    mkdirSync(path, { recursive: true });
    return path;
  }

  /** Makes a staged save current and removes every other save. */
  commit(profileId: string, staged: string): void {
    const name = staged.slice(join(this.dir(profileId), 'saves').length + 1);
    this.writePointer(profileId, name);
    this.prune(profileId, name);
  }

  /** Drops a staged save that did not complete. */
  discard(staged: string): void {
    rmSync(staged, { recursive: true, force: true });
  }

  /** Forgets the saved phone; the next profile session starts fresh. */
  reset(profileId: string): void {
    this.writePointer(profileId, '');
    this.prune(profileId, null);
  }

  private writePointer(profileId: string, name: string): void {
    const dir = this.dir(profileId);
    mkdirSync(dir, { recursive: true });
    const tmp = join(dir, 'current.tmp');
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, name);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(dir, 'current'));
  }

  private prune(profileId: string, keep: string | null): void {
    const saves = join(this.dir(profileId), 'saves');
    let names: string[] = [];
    try {
      names = readdirSync(saves);
    } catch {
      return;
    }
    for (const name of names) if (name !== keep) rmSync(join(saves, name), { recursive: true, force: true });
  }
}
