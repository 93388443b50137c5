/**
 * Golden snapshots (reference, "How fleets get to a phone in about a second"): one per
 * (system image, emulator build, AVD config), made once by cold-booting a private copy of
 * the base AVD and saving a snapshot through the console; temporary phones then start
 * `-read-only -no-snapshot-save -snapshot <golden>` from that copy.
 *
 * Each golden lives in its own AVD directory ("fleet AVD", `pl_<key>_<generation>`): a
 * snapshot belongs to its whole AVD directory, and it must be made by a read-write instance,
 * which cannot run beside the read-only phones of the same AVD. So when the emulator refuses
 * to load a golden, the next boot makes a new generation beside the old one, whose phones
 * keep running until they end; the old directory goes when its last phone does. A golden
 * refused at its first load (one made moments ago) would be refused again: then temporary
 * phones cold-boot for the rest of the run instead of paying two cold boots each.
 *
 * A golden counts only once its marker is written, last; a later server run reuses the
 * newest complete one, clears lock files its dead emulators left, and removes the `pl_*`
 * AVDs nothing runs any more (owners.ts tells what runs).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { copyAvdDir, parseIni, removeAvd, removeStaleLocks, writeAvdIni, type Avd } from './avd.js';
import { avdsInUse, processAlive } from './owners.js';
import type { DeviceLogger } from '../types.js';

export const GOLDEN_SNAPSHOT = 'phonelease_golden';
/**
 * Written into a fleet AVD last, once its golden is saved and its emulator has stopped: a
 * directory without it (a host killed mid-save) holds no golden to trust.
 */
export const GOLDEN_MARKER = 'phonelease-golden.json';
/** Written into a fleet or profile AVD first: the id of the server process making or running it. */
export const OWNER_FILE = 'phonelease-owner';
/** The backend's own files in a fleet AVD, which copies of it leave behind. */
export const BOOKKEEPING_FILES: ReadonlySet<string> = new Set([GOLDEN_MARKER, OWNER_FILE]);

/** Profile AVDs of earlier versions, named after their server's pid (now OWNER_FILE says). */
const LEGACY_PROFILE_AVD = /^pl_profile_(\d+)_\d+$/;

/**
 * The identity a golden snapshot is valid for: the system image, the emulator build, the AVD
 * config and the apps preinstalled into it (preinstall.ts's preinstallKey, '' for none).
 */
export function goldenKey(parts: {
  sdkRoot: string;
  base: Avd;
  emulatorVersion: string;
  preinstalled?: string;
}): string {
  const sysdir = parts.base.config.get('image.sysdir.1') ?? '';
  const props = join(parts.sdkRoot, sysdir, 'source.properties');
  const revision = existsSync(props) ? (parseIni(readFileSync(props, 'utf8')).get('Pkg.Revision') ?? '') : '';
  // Names and display strings do not change what boots; everything else in config.ini does.
  const config = [...parts.base.config]
    .filter(([k]) => !['AvdId', 'avd.ini.displayname', 'avd.id', 'avd.name'].includes(k))
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join('\n');
  return createHash('sha256')
    .update(`${sysdir}@${revision}\n${parts.emulatorVersion}\n${config}`)
    .update(parts.preinstalled ? `\npreinstalled:\n${parts.preinstalled}` : '')
    .digest('hex')
    .slice(0, 12);
}

export interface FleetAvd {
  name: string;
  dir: string;
  generation: number;
  /** Phones running on it. */
  instances: number;
  /**
   * Why no new phone starts from it: the emulator refused its golden, or an instance that
   * is not one of ours holds its directory (a stale lock). Null while it serves.
   */
  unusable: 'refused' | 'busy' | null;
  /** Made by this server run (not found from an earlier one). */
  madeHere: boolean;
  /** A phone has loaded its golden. */
  loaded: boolean;
}

export interface GoldenMaker {
  /**
   * Cold-boots `avd` read-write, saves GOLDEN_SNAPSHOT through the console, and stops it;
   * rejects, with the emulator stopped, when `signal` aborts (the backend closes).
   */
  (avd: string, signal: AbortSignal): Promise<void>;
}

export class FleetAvds {
  private current: FleetAvd | null = null;
  private making: Promise<FleetAvd> | null = null;
  private readonly closing = new AbortController();
  private readonly retired = new Set<FleetAvd>();
  private goldensOff = false;

  constructor(
    private readonly o: {
      avdHome: string;
      base: Avd;
      key: string;
      target: string;
      log: DeviceLogger;
      make: GoldenMaker;
    },
  ) {}

  private dirOf(name: string): string {
    return join(this.o.avdHome, `${name}.avd`);
  }

  private get prefix(): string {
    return `pl_${this.o.key}_`;
  }

  /** Generations of this key's fleet AVDs on disk, newest first. */
  private generations(): number[] {
    if (!existsSync(this.o.avdHome)) return [];
    return readdirSync(this.o.avdHome)
      .filter((n) => n.startsWith(this.prefix) && n.endsWith('.avd'))
      .map((n) => Number(n.slice(this.prefix.length, -4)))
      .filter((g) => Number.isInteger(g) && g > 0)
      .sort((a, b) => b - a);
  }

  private complete(dir: string): boolean {
    return existsSync(join(dir, GOLDEN_MARKER)) && existsSync(join(dir, 'snapshots', GOLDEN_SNAPSHOT));
  }

  /** True after a golden made here was refused at once: temporary phones cold-boot instead. */
  get coldBootsOnly(): boolean {
    return this.goldensOff;
  }

  /**
   * Reuses the newest complete golden an earlier server run made for the same key, clears
   * the lock files an emulator killed with its host left in it, and removes the backend's
   * leftover AVDs (goldens cut short, older generations, profile copies of dead servers)
   * that nothing runs. Call once, before the first ensure().
   */
  async open(): Promise<void> {
    await mkdir(this.o.avdHome, { recursive: true });
    const inUse = avdsInUse(this.o.avdHome);
    const newest = this.generations().find((g) => this.complete(this.dirOf(`${this.prefix}${g}`)));
    if (newest !== undefined) {
      const name = `${this.prefix}${newest}`;
      const dir = this.dirOf(name);
      this.current = {
        name,
        dir,
        generation: newest,
        instances: 0,
        unusable: null,
        madeHere: false,
        loaded: false,
      };
      await writeAvdIni(this.o.avdHome, name, dir, this.o.target);
      if (inUse !== null && !inUse.has(name)) {
        const stale = await removeStaleLocks(dir);
        if (stale.length > 0)
          this.o.log.info('removed lock files an emulator that is gone left in the golden AVD', {
            fleet_avd: name,
            locks: stale,
          });
      }
    }
    if (inUse === null) {
      this.o.log.info('cannot tell which emulators run here (no /proc); leftover AVDs are kept', {
        avd_home: this.o.avdHome,
      });
      return;
    }
    await this.sweep(inUse);
  }

  /** Removes `pl_*` AVDs no process runs and no live server is making. */
  private async sweep(inUse: ReadonlySet<string>): Promise<void> {
    const names = new Set(
      readdirSync(this.o.avdHome)
        .filter((n) => n.startsWith('pl_') && (n.endsWith('.avd') || n.endsWith('.ini')))
        .map((n) => n.slice(0, -4)),
    );
    for (const name of names) {
      if (name === this.current?.name || inUse.has(name)) continue;
      const dir = this.dirOf(name);
      const owner =
        LEGACY_PROFILE_AVD.exec(name)?.[1] ?? (await readFile(join(dir, OWNER_FILE), 'utf8').catch(() => ''));
      // A live owner may be copying it right now (its emulator not started yet).
      if (processAlive(Number(owner.trim()))) continue;
      await removeAvd(this.o.avdHome, name, dir).catch((error: unknown) =>
        this.o.log.warn('could not remove a leftover AVD', { avd: name, error: String(error) }),
      );
      this.o.log.info('removed a leftover AVD of an earlier server run', { avd: name });
    }
  }

  /** The fleet AVD to start a temporary phone from, made now if there is none (one making at a time). */
  async ensure(signal: AbortSignal): Promise<FleetAvd> {
    if (this.current && this.current.unusable === null) return this.current;
    this.making ??= this.makeNext().finally(() => (this.making = null));
    // A boot aborted while waiting leaves the making running for the next boot.
    return await new Promise<FleetAvd>((resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      this.making!.then(resolve, reject);
    });
  }

  private async makeNext(): Promise<FleetAvd> {
    this.closing.signal.throwIfAborted();
    // Past every generation on disk, so a directory another server is making is never reused.
    const generation = Math.max(this.current?.generation ?? 0, ...this.generations(), 0) + 1;
    const name = `${this.prefix}${generation}`;
    const dir = this.dirOf(name);
    const started = Date.now();
    this.o.log.info('making the golden snapshot (one cold boot)', { avd: this.o.base.name, fleet_avd: name });
    try {
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, OWNER_FILE), String(process.pid));
      await copyAvdDir(this.o.base.dir, dir, { skip: (n) => n === 'snapshots' || n === 'hardware-qemu.ini' });
      await writeAvdIni(this.o.avdHome, name, dir, this.o.target);
      await removeStaleLocks(dir);
      await this.o.make(name, this.closing.signal);
      await writeDurably(
        join(dir, GOLDEN_MARKER),
        JSON.stringify({ key: this.o.key, snapshot: GOLDEN_SNAPSHOT }),
      );
    } catch (error) {
      await removeAvd(this.o.avdHome, name, dir).catch(() => undefined);
      throw error;
    }
    const fleet: FleetAvd = {
      name,
      dir,
      generation,
      instances: 0,
      unusable: null,
      madeHere: true,
      loaded: false,
    };
    const previous = this.current;
    this.current = fleet;
    if (previous) this.retire(previous);
    this.o.log.info('golden snapshot made', { fleet_avd: name, took_ms: Date.now() - started });
    return fleet;
  }

  /** A phone started from this fleet's golden. */
  loaded(fleet: FleetAvd): void {
    fleet.loaded = true;
  }

  /**
   * The emulator would not load this golden. One that loaded before (or came from an earlier
   * run) is replaced by the next boot. One made here and refused at its first load would be
   * refused again: making more would cost two cold boots a phone, every phone, so temporary
   * phones cold-boot from now on (said once).
   */
  refused(fleet: FleetAvd): void {
    if (fleet.unusable !== null || this.goldensOff) return;
    if (fleet.madeHere && !fleet.loaded) {
      this.goldensOff = true;
      this.o.log.warn(
        'the emulator refused a golden snapshot it saved moments ago; temporary phones cold-boot from now on (restart the server to try again)',
        { fleet_avd: fleet.name },
      );
      return;
    }
    fleet.unusable = 'refused';
    this.o.log.warn('the emulator refused the golden snapshot; the next boot makes a new one', {
      fleet_avd: fleet.name,
    });
  }

  /**
   * The emulator would not start on this fleet AVD because another instance holds it: a
   * lock left by a host killed mid-save, or someone else's emulator. The next boot makes a
   * new one rather than failing every boot.
   */
  busy(fleet: FleetAvd): void {
    if (fleet.unusable !== null) return;
    fleet.unusable = 'busy';
    this.o.log.warn('another emulator instance holds the golden AVD; the next boot makes a new one', {
      fleet_avd: fleet.name,
    });
  }

  started(fleet: FleetAvd): void {
    fleet.instances++;
  }

  ended(fleet: FleetAvd): void {
    fleet.instances--;
    if (this.retired.has(fleet)) this.retire(fleet);
  }

  /** Stops a golden being made (its emulator too) and waits until it has. */
  async close(): Promise<void> {
    this.closing.abort(new Error('the emulator backend is closing'));
    await this.making?.catch(() => undefined);
  }

  private retire(fleet: FleetAvd): void {
    this.retired.add(fleet);
    if (fleet.instances > 0) return;
    this.retired.delete(fleet);
    void removeAvd(this.o.avdHome, fleet.name, fleet.dir).catch((error: unknown) =>
      this.o.log.warn('could not remove an old fleet AVD', { fleet_avd: fleet.name, error: String(error) }),
    );
  }
}

/** Writes a file and flushes it to disk (a marker must not be there before what it marks). */
async function writeDurably(path: string, text: string): Promise<void> {
  await writeFile(path, text);
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
