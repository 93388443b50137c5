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
 * keep running until they end; the old directory goes when its last phone does.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { copyAvdDir, parseIni, removeAvd, removeStaleLocks, writeAvdIni, type Avd } from './avd.js';
import type { DeviceLogger } from '../types.js';

export const GOLDEN_SNAPSHOT = 'phonelease_golden';

/** The identity a golden snapshot is valid for. */
export function goldenKey(parts: { sdkRoot: string; base: Avd; emulatorVersion: string }): string {
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
    .digest('hex')
    .slice(0, 12);
}

export interface FleetAvd {
  name: string;
  dir: string;
  generation: number;
  /** Phones running on it. */
  instances: number;
  /** The emulator refused its golden; no new phone starts from it. */
  refused: boolean;
}

export interface GoldenMaker {
  /** Cold-boots `avd` read-write, saves GOLDEN_SNAPSHOT through the console, and stops it. */
  (avd: string, signal: AbortSignal): Promise<void>;
}

export class FleetAvds {
  private current: FleetAvd | null = null;
  private making: Promise<FleetAvd> | null = null;
  private readonly retired = new Set<FleetAvd>();

  constructor(
    private readonly o: {
      avdHome: string;
      base: Avd;
      key: string;
      target: string;
      log: DeviceLogger;
      make: GoldenMaker;
    },
  ) {
    this.current = this.discover();
  }

  private dirOf(name: string): string {
    return join(this.o.avdHome, `${name}.avd`);
  }

  private hasGolden(dir: string): boolean {
    return existsSync(join(dir, 'snapshots', GOLDEN_SNAPSHOT));
  }

  /** A golden made by an earlier server run for the same key is reused. */
  private discover(): FleetAvd | null {
    if (!existsSync(this.o.avdHome)) return null;
    const prefix = `pl_${this.o.key}_`;
    const generations = readdirSync(this.o.avdHome)
      .filter((n) => n.startsWith(prefix) && n.endsWith('.avd'))
      .map((n) => Number(n.slice(prefix.length, -4)))
      .filter((g) => Number.isInteger(g))
      .sort((a, b) => b - a);
    for (const generation of generations) {
      const name = `${prefix}${generation}`;
      if (this.hasGolden(this.dirOf(name)))
        return { name, dir: this.dirOf(name), generation, instances: 0, refused: false };
    }
    return null;
  }

  /** The fleet AVD with a usable golden, made now if there is none (one making at a time). */
  async ensure(signal: AbortSignal): Promise<FleetAvd> {
    if (this.current && !this.current.refused) return this.current;
    this.making ??= this.makeNext().finally(() => (this.making = null));
    // A boot aborted while waiting leaves the making running for the next boot.
    return await new Promise<FleetAvd>((resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      this.making!.then(resolve, reject);
    });
  }

  private async makeNext(): Promise<FleetAvd> {
    const generation = (this.current?.generation ?? 0) + 1;
    const name = `pl_${this.o.key}_${generation}`;
    const dir = this.dirOf(name);
    const started = Date.now();
    this.o.log.info('making the golden snapshot (one cold boot)', { avd: this.o.base.name, fleet_avd: name });
    await removeAvd(this.o.avdHome, name, dir);
    await copyAvdDir(this.o.base.dir, dir, { skip: (n) => n === 'snapshots' || n === 'hardware-qemu.ini' });
    await writeAvdIni(this.o.avdHome, name, dir, this.o.target);
    await removeStaleLocks(dir);
    try {
      await this.o.make(name, new AbortController().signal);
    } catch (error) {
      await removeAvd(this.o.avdHome, name, dir).catch(() => undefined);
      throw error;
    }
    const fleet: FleetAvd = { name, dir, generation, instances: 0, refused: false };
    const previous = this.current;
    this.current = fleet;
    if (previous) this.retire(previous);
    this.o.log.info('golden snapshot made', { fleet_avd: name, took_ms: Date.now() - started });
    return fleet;
  }

  /** The emulator would not load this golden: phones cold-boot until a new one is made. */
  refused(fleet: FleetAvd): void {
    if (fleet.refused) return;
    fleet.refused = true;
    this.o.log.warn('the emulator refused the golden snapshot; the next boot makes a new one', {
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

  private retire(fleet: FleetAvd): void {
    this.retired.add(fleet);
    if (fleet.instances > 0) return;
    this.retired.delete(fleet);
    void removeAvd(this.o.avdHome, fleet.name, fleet.dir).catch((error: unknown) =>
      this.o.log.warn('could not remove an old fleet AVD', { fleet_avd: fleet.name, error: String(error) }),
    );
  }
}
