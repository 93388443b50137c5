/**
 * What the fake emulator checks before it loads a snapshot, after the real one (QEMU
 * `Snapshot.cpp` `checkValid`, `Quickboot.cpp`):
 *
 * - At every start the emulator writes the hardware config it runs with, `hardware-qemu.ini`
 *   in the AVD directory (a read-only instance keeps a temporary one). It holds the AVD's
 *   `hw.*` keys and the instance's identity: `avd.name`, `avd.id`, `android.avd.home`,
 *   `android.sdk.root`, and the image paths (`*.path`, `*.initPath`).
 * - A snapshot keeps a copy of it (`snapshots/<name>/hardware.ini`), and its `snapshot.pb`
 *   records the emulator build, the CPU and RAM it ran with and the system image.
 * - At load every hardware key must match but `*.path`, `*.initPath` and `hw.gpu.mode`
 *   (`areHwConfigsEqual`: the identity keys included, in every version of it we read; the
 *   renderer only in builds made with ALLOW_CHANGE_RENDERER, which the reference takes as
 *   the rule). A mismatch is "Different AVD configuration"; a changed system image "System
 *   image changed"; another emulator build "Incompatible snapshot version". The emulator
 *   then cold-boots and says only `Cold boot: <reason>` (Quickboot's failure report).
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function readIni(path: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^\s*([^#=\s][^=]*?)\s*=\s*(.*?)\s*$/.exec(line);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

export function writeIni(path: string, ini: ReadonlyMap<string, string>): void {
  writeFileSync(path, [...ini].map(([k, v]) => `${k} = ${v}\n`).join(''));
}

export interface Instance {
  avdName: string;
  avdDir: string;
  avdHome: string;
  sdkRoot: string;
  /** config.ini of the AVD. */
  config: ReadonlyMap<string, string>;
  cores: number | null;
  memory: number | null;
  gpu: string;
}

/** The hardware config an instance runs with (what it writes into hardware-qemu.ini). */
export function hardwareConfig(i: Instance): Map<string, string> {
  const sysdir = join(i.sdkRoot, i.config.get('image.sysdir.1') ?? '');
  const hw = new Map<string, string>();
  for (const [k, v] of i.config) if (k.startsWith('hw.')) hw.set(k, v);
  hw.set('hw.cpu.ncore', String(i.cores ?? i.config.get('hw.cpu.ncore') ?? '2'));
  hw.set('hw.ramSize', String(i.memory ?? i.config.get('hw.ramSize') ?? '2048'));
  hw.set('hw.gpu.mode', i.gpu);
  hw.set('avd.name', i.avdName);
  hw.set('avd.id', i.config.get('AvdId') ?? i.avdName);
  hw.set('android.avd.home', i.avdHome);
  hw.set('android.sdk.root', i.sdkRoot);
  hw.set('kernel.path', join(sysdir, 'kernel-ranchu'));
  hw.set('disk.systemPartition.initPath', join(sysdir, 'system.img'));
  hw.set('disk.dataPartition.path', join(i.avdDir, 'userdata-qemu.img'));
  return hw;
}

const SNAPSHOT_INSENSITIVE = (key: string) =>
  key.endsWith('.path') || key.endsWith('.initPath') || key === 'hw.gpu.mode';

/** Hardware keys that differ between a snapshot's config and the current one. */
export function hardwareDifferences(
  saved: ReadonlyMap<string, string>,
  now: ReadonlyMap<string, string>,
): string[] {
  const keys = new Set([...saved.keys(), ...now.keys()]);
  return [...keys].filter((k) => !SNAPSHOT_INSENSITIVE(k) && saved.get(k) !== now.get(k)).sort();
}

/** What `snapshot.pb` records besides the hardware config (JSON in the fake). */
export interface SnapshotRecord {
  emulator: string;
  cores: string;
  ram: string;
  systemImage: { path: string; size: number | null };
  /** The fake guest's lock screen when it was saved (keyguard.ts). */
  keyguard: 'showing' | 'dismissed';
}

export function systemImageOf(hardware: ReadonlyMap<string, string>): SnapshotRecord['systemImage'] {
  const path = hardware.get('disk.systemPartition.initPath') ?? '';
  return { path, size: existsSync(path) ? statSync(path).size : null };
}

/**
 * Why the emulator would not load a snapshot saved as `saved` with `savedHardware`, in
 * Quickboot's words, or null when it loads. Checked in checkValid's order.
 */
export function refusal(
  saved: SnapshotRecord,
  savedHardware: ReadonlyMap<string, string>,
  now: { emulator: string; hardware: ReadonlyMap<string, string> },
): string | null {
  if (saved.emulator !== now.emulator) return 'Incompatible snapshot version';
  if (saved.cores !== now.hardware.get('hw.cpu.ncore') || saved.ram !== now.hardware.get('hw.ramSize'))
    return 'Different AVD configuration';
  const image = systemImageOf(now.hardware);
  if (saved.systemImage.size !== image.size) return 'System image changed';
  if (hardwareDifferences(savedHardware, now.hardware).length > 0) return 'Different AVD configuration';
  return null;
}
