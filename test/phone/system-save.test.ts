/**
 * Profile saves reach the disk in an order that survives a crash: data.bin and state.json
 * (and the directory entries) are synced before manifest.json is written, and the manifest
 * is synced too. The filesystem calls are recorded through a wrapper around node:fs/promises.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type * as FsPromises from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { Device } from '../../server/devices/virtual/device.js';
import { restoreDeviceState, saveDeviceState } from '../../server/devices/virtual/state.js';
import type { StateParts } from '../../server/devices/virtual/state.js';
import { buildSystemImage } from '../../server/devices/virtual/system-image.js';
import { quietLog } from '../support/virtual-adb.js';

const calls = vi.hoisted(() => [] as string[]);

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof FsPromises>();
  const open = async (...args: Parameters<typeof real.open>): Promise<FileHandle> => {
    const name = basename(String(args[0]));
    calls.push(`open ${name}`);
    const handle = await real.open(...args);
    const sync = handle.sync.bind(handle);
    handle.sync = async () => {
      await sync();
      calls.push(`sync ${name}`);
    };
    return handle;
  };
  const writeFile = async (...args: Parameters<typeof real.writeFile>): Promise<void> => {
    calls.push(`writeFile ${basename(String(args[0]))}`);
    await real.writeFile(...args);
  };
  return { ...real, default: { ...real, open, writeFile }, open, writeFile };
});

const dir = mkdtempSync(join(tmpdir(), 'phonelease-save-'));

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const parts: StateParts = {
  savePackages: () => [],
  restorePackages: () => undefined,
  saveSystem: () => null,
  restoreSystem: () => undefined,
};

describe('profile saves', () => {
  it('syncs data.bin, state.json and the directory before writing the manifest, then syncs the manifest', async () => {
    const systemRoot = buildSystemImage();
    const device = new Device({ systemRoot, log: quietLog });
    device.fs.writeFile('/sdcard/kept.txt', Buffer.from('kept'));
    const save = join(dir, 'durable');
    calls.length = 0;
    await saveDeviceState(device, parts, save);
    const at = (call: string) => {
      const i = calls.indexOf(call);
      if (i < 0) throw new Error(`${call} never happened: ${calls.join(', ')}`);
      return i;
    };
    const manifest = at('open manifest.json');
    expect(at('sync data.bin')).toBeLessThan(manifest);
    expect(at('sync state.json')).toBeLessThan(manifest);
    expect(at(`sync ${basename(save)}`)).toBeLessThan(manifest);
    expect(at('sync manifest.json')).toBeGreaterThan(manifest);
    expect(calls.lastIndexOf(`sync ${basename(save)}`)).toBeGreaterThan(at('sync manifest.json'));
    // And what was written restores.
    const restored = new Device({ systemRoot, log: quietLog });
    expect(await restoreDeviceState(restored, parts, save)).toBe(true);
    expect(restored.fs.readFile('/sdcard/kept.txt').toString()).toBe('kept');
  });
});
