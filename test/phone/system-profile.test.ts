/**
 * Phone lifecycle: abortable boots, temporary phones that keep nothing, profile saves that
 * restore apps, files, settings, persist.* properties and the screen, damaged saves, and
 * many idle phones in one process.
 */
import { createHash, scryptSync } from 'node:crypto';
import {
  cpSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PhoneBootError } from '../../server/devices/types.js';
import type { DevicePhone } from '../../server/devices/types.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import type { VirtualPhone } from '../../server/devices/virtual/phone.js';
import { buildTestApk } from '../support/apk-builder.js';
import { quietLog, startPhoneServer, startVirtualAdb, type VirtualAdb } from '../support/virtual-adb.js';
import { PNG } from 'pngjs';

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'phonelease-profile-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const bootRequest = (restoreFrom: string | null, signal = new AbortController().signal) => ({
  sessionId: 'profile-test',
  restoreFrom,
  signal,
  log: quietLog,
});

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
}

interface EditableState {
  system: { lock?: unknown; wmSize?: unknown; wmDensity?: unknown; appOps?: unknown };
}

/** The lock a save holds (its state.json's system part). */
function savedLock(save: string): unknown {
  return (JSON.parse(readFileSync(join(save, 'state.json'), 'utf8')) as EditableState).system.lock;
}

/** Changes a save's state.json, and its manifest with it, so that the save still checks out. */
function editState(save: string, edit: (state: EditableState) => void): void {
  const state = JSON.parse(readFileSync(join(save, 'state.json'), 'utf8')) as EditableState;
  edit(state);
  const bytes = Buffer.from(JSON.stringify(state));
  writeFileSync(join(save, 'state.json'), bytes);
  const manifest = JSON.parse(readFileSync(join(save, 'manifest.json'), 'utf8')) as {
    files: { name: string; size: number; sha256: string }[];
  };
  const entry = manifest.files.find((f) => f.name === 'state.json')!;
  entry.size = bytes.length;
  entry.sha256 = createHash('sha256').update(bytes).digest('hex');
  writeFileSync(join(save, 'manifest.json'), JSON.stringify(manifest));
}

/** A fresh phone with a PIN lock, saved under `name` in the test's directory. */
async function savedWithPin(name: string, pin: string): Promise<string> {
  const save = join(dir, name);
  const first = await startVirtualAdb({ restoreFrom: null });
  try {
    await first.adbOk(['shell', `locksettings set-pin ${pin}`]);
    await first.phone.saveState(save);
  } finally {
    await first.close();
  }
  return save;
}

describe('booting', () => {
  it('describes itself as the virtual backend', () => {
    const backend = createVirtualBackend({ bootMs: 1234 });
    expect(backend).toMatchObject({ name: 'virtual', startupSource: 'cold', typicalBootMs: 1234 });
  });

  it('aborts a boot promptly with an AbortError', async () => {
    const backend = createVirtualBackend({ bootMs: 60_000 });
    const controller = new AbortController();
    const boot = backend.boot(bootRequest(null, controller.signal));
    setTimeout(() => controller.abort(), 20);
    await expect(boot).rejects.toMatchObject({ name: 'AbortError' });
    await backend.close();
  });

  it('boots a phone with the right label, screen and a listening ADB port, and frees it on shutdown', async () => {
    const backend = createVirtualBackend({ bootMs: 0 });
    const phone = await backend.boot(bootRequest(null));
    expect(phone.label).toBe('Virtual Android phone (Pixel 8, Android 14)');
    expect(phone.screen).toEqual({ w: 720, h: 1280 });
    const adb = await phone.adbEndpoint();
    expect(adb.host).toBe('127.0.0.1');
    expect(await refused(adb.port)).toBe(false);
    const png = await phone.capture();
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    await phone.shutdown({ saveTo: null });
    expect(await refused(adb.port)).toBe(true);
    // A stopped phone opens no port again.
    await expect(phone.adbEndpoint()).rejects.toThrow(/stopped/);
    await backend.close();
  });

  it('closes every phone when the backend closes', async () => {
    const backend = createVirtualBackend({ bootMs: 0 });
    const phones = await Promise.all([backend.boot(bootRequest(null)), backend.boot(bootRequest(null))]);
    const opened = await phones[0]!.adbEndpoint();
    // The second phone's port is still opening when the backend closes: it is closed too.
    const opening = phones[1]!.adbEndpoint();
    await backend.close();
    expect(await refused(opened.port)).toBe(true);
    expect(await refused((await opening).port)).toBe(true);
  });
});

describe('profiles', () => {
  it('keeps nothing on a temporary phone', async () => {
    const first = await startVirtualAdb();
    await first.adbOk(['shell', 'echo temp > /sdcard/temp.txt']);
    await first.close();
    const second = await startVirtualAdb();
    try {
      expect((await second.adb(['shell', 'ls /sdcard/temp.txt'])).code).toBe(1);
    } finally {
      await second.close();
    }
  });

  it('saves apps, files, settings, persist props and the screen, and restores them', async () => {
    // Two sessions of the account's profile phone on one server: ending the first saves it.
    const ps = await startPhoneServer();
    const first = await startVirtualAdb({ on: ps, profile: true });
    const apk = buildTestApk({
      package: 'com.example.kept',
      label: 'Kept',
      versionName: '9.9',
      activities: ['.Main'],
      launcher: true,
    });
    const apkFile = join(dir, 'kept.apk');
    writeFileSync(apkFile, apk);
    await first.adbOk(['install', apkFile]);
    const apkPath = await first.adbOk(['shell', 'pm path com.example.kept']);
    await first.adbOk([
      'shell',
      'mkdir -p /sdcard/Documents/notes && echo remember > /sdcard/Documents/notes/a.txt && echo tmp > /data/local/tmp/t.txt && chmod 700 /data/local/tmp/t.txt',
    ]);
    await first.adbOk([
      'shell',
      'settings put secure phonelease_saved yes; setprop persist.debug.phonelease.kept 1; setprop debug.phonelease.lost 1',
    ]);
    await first.adbOk(['shell', 'am start -n com.phonelease.login/.LoginActivity']);
    const hash = await first.adbOk(['shell', 'md5sum /sdcard/Documents/notes/a.txt']);
    await first.close();
    expect((await ps.api.get('/me')).body.profile).toMatchObject({
      state: 'stored',
      exact: true,
      session: null,
    });

    const second = await startVirtualAdb({ on: ps, profile: true });
    try {
      expect(await second.adbOk(['shell', 'md5sum /sdcard/Documents/notes/a.txt'])).toBe(hash);
      expect(await second.adbOk(['shell', "stat -c '%a %U' /data/local/tmp/t.txt"])).toBe('700 shell\n');
      expect(await second.adbOk(['shell', 'settings get secure phonelease_saved'])).toBe('yes\n');
      expect(await second.adbOk(['shell', 'getprop persist.debug.phonelease.kept'])).toBe('1\n');
      expect(await second.adbOk(['shell', 'getprop debug.phonelease.lost'])).toBe('\n');
      expect(await second.adbOk(['shell', 'pm path com.example.kept'])).toBe(apkPath);
      expect(await second.adbOk(['shell', 'dumpsys package com.example.kept | grep versionName'])).toBe(
        '    versionName=9.9\n',
      );
      expect(await second.phone.apps()).toContainEqual({ package: 'com.example.kept', label: 'Kept' });
      expect(await second.adbOk(['shell', 'dumpsys window | grep mFocusedApp | head -1'])).toContain(
        'com.phonelease.login/.LoginActivity',
      );
    } finally {
      await second.close();
      await ps.close();
    }
  });

  it('keeps the lock, its credential saved as a salted scrypt hash, never as typed', async () => {
    const save = join(dir, 'locked');
    const first = await startVirtualAdb({ restoreFrom: null });
    try {
      await first.adbOk(['shell', 'locksettings set-pin 739146']);
      await first.phone.saveState(save);
    } finally {
      await first.close();
    }
    // Nothing in the save holds the PIN as typed.
    const files = readdirSync(save, { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
    expect(files.length).toBeGreaterThan(0);
    for (const f of files)
      expect(readFileSync(join(f.parentPath, f.name)).includes('739146'), f.name).toBe(false);
    // It holds scrypt's hash of it, with its own salt and the cost it was made with, and
    // (as Android 14 keeps it for auto-confirm) the PIN's length.
    const { credential } = savedLock(save) as { credential: Record<string, string> };
    expect(credential).toMatchObject({
      type: 'pin',
      kdf: { name: 'scrypt', N: 2048, r: 8, p: 2 },
      length: 6,
    });
    expect(credential.salt).toMatch(/^[0-9a-f]{32}$/);
    expect(credential.hash).toBe(
      scryptSync('739146', Buffer.from(credential.salt!, 'hex'), 32, { N: 2048, r: 8, p: 2 }).toString('hex'),
    );
    const restored = await startVirtualAdb({ restoreFrom: save });
    const shell = (command: string) => restored.adbOk(['shell', command]);
    const showing = async () => /mShowingLockscreen=true/.test(await shell('dumpsys window'));
    try {
      expect(await restored.adb(['shell', 'locksettings verify --old 1111'])).toMatchObject({
        code: 255,
        stdout: "Old password '1111' didn't match\n",
      });
      expect(await shell('locksettings verify --old 739146')).toBe('Lock credential verified successfully\n');
      expect(await shell('locksettings get-disabled')).toBe('false\n');
      // Handed out awake and unlocked, as it was saved.
      expect(await showing()).toBe(false);
      // Going to sleep locks it: on waking, a secure keyguard that asks for the PIN.
      await shell('input keyevent 26; input keyevent 26');
      expect(await showing()).toBe(true);
      expect(await shell('dumpsys window')).toMatch(/KeyguardServiceDelegate[\s\S]*?\n\s+secure=true\n/);
      await shell('wm dismiss-keyguard');
      expect(await shell('uiautomator dump /dev/tty')).toContain(
        'text="Enter your PIN" resource-id="com.android.systemui:id/keyguard_message_area"',
      );
      // A wrong PIN is refused, and the phone stays locked.
      await shell('input text 111111; input keyevent ENTER');
      expect(await shell('uiautomator dump /dev/tty')).toContain('text="Wrong PIN"');
      expect(await showing()).toBe(true);
      // The right one unlocks it.
      await shell('input text 739146');
      expect(await showing()).toBe(false);
    } finally {
      await restored.close();
    }
  });

  it('refuses a save whose lock is damaged, rather than hand out the phone with no lock', async () => {
    const save = await savedWithPin('lock-source', '2580');
    const lock = savedLock(save) as { credential: Record<string, unknown>; disabled: boolean };
    const damaged: [string, unknown][] = [
      ['not an object', 'locked'],
      ['null', null],
      ['no disabled', { credential: lock.credential }],
      ['a credential without a hash', { ...lock, credential: { type: 'pin', salt: lock.credential.salt } }],
      ['a credential of no known type', { ...lock, credential: { ...lock.credential, type: 'face' } }],
      ['a short hash', { ...lock, credential: { ...lock.credential, hash: 'abcd' } }],
      ['an unknown kdf', { ...lock, credential: { ...lock.credential, kdf: { name: 'md5' } } }],
      ['a PIN length that counts nothing', { ...lock, credential: { ...lock.credential, length: 0 } }],
      ['a length for a password', { ...lock, credential: { ...lock.credential, type: 'password' } }],
      // A cost too large to run (2^40 rounds) is refused, not run.
      [
        'a huge scrypt cost',
        { ...lock, credential: { ...lock.credential, kdf: { name: 'scrypt', N: 2 ** 40, r: 8, p: 1 } } },
      ],
    ];
    const backend = createVirtualBackend({ bootMs: 0 });
    try {
      for (const [what, value] of damaged) {
        const copy = join(dir, `lock-damaged-${damaged.findIndex(([w]) => w === what)}`);
        cpSync(save, copy, { recursive: true });
        editState(copy, (state) => {
          state.system.lock = value;
        });
        await expect(backend.boot(bootRequest(copy)), what).rejects.toMatchObject({
          code: 'profile_damaged',
          message: 'The saved phone cannot be restored: the saved phone is damaged (its screen lock).',
        });
      }
      // The same save, its lock intact, restores (the copies differ only in the lock).
      const intact = join(dir, 'lock-intact');
      cpSync(save, intact, { recursive: true });
      editState(intact, () => {});
      const phone = (await backend.boot(bootRequest(intact))) as VirtualPhone;
      expect(phone.device.system.lock.credential?.type).toBe('pin');
      await phone.shutdown({ saveTo: null });
      // A save from before phones kept their lock has none: the phone has the usual none.
      const older = join(dir, 'lock-absent');
      cpSync(save, older, { recursive: true });
      editState(older, (state) => {
        delete state.system.lock;
      });
      const old = (await backend.boot(bootRequest(older))) as VirtualPhone;
      expect(old.device.system.lock).toEqual({ credential: null, disabled: true });
      await old.shutdown({ saveTo: null });
    } finally {
      await backend.close();
    }
  });

  it('reads a lock saved with the older SHA-256 hash, and saves it again with scrypt', async () => {
    const save = await savedWithPin('lock-sha256', '2580');
    // The form saves had before scrypt: {type, salt, hash}, the hash one salted SHA-256.
    const salt = '0123456789abcdef0123456789abcdef';
    editState(save, (state) => {
      const hash = createHash('sha256').update(salt).update('\0').update('1357').digest('hex');
      state.system.lock = { credential: { type: 'pin', salt, hash }, disabled: false };
    });
    const restored = await startVirtualAdb({ restoreFrom: save });
    const again = join(dir, 'lock-sha256-again');
    const shell = (command: string) => restored.adbOk(['shell', command]);
    try {
      // Its PIN's length is not known: the bouncer checks after every digit, and unlocks.
      await shell('input keyevent 26; input keyevent 26; wm dismiss-keyguard; input text 135');
      expect(await shell('dumpsys window')).toContain('mShowingLockscreen=true');
      await shell('input text 7');
      expect(await shell('dumpsys window')).toContain('mShowingLockscreen=false');
      expect(await restored.adb(['shell', 'locksettings verify --old 2580'])).toMatchObject({ code: 255 });
      expect(await restored.adbOk(['shell', 'locksettings verify --old 1357'])).toBe(
        'Lock credential verified successfully\n',
      );
      await restored.phone.saveState(again);
    } finally {
      await restored.close();
    }
    expect(savedLock(again)).toMatchObject({
      credential: { type: 'pin', kdf: { name: 'scrypt', N: 2048, r: 8, p: 2 }, length: 4 },
      disabled: false,
    });
  });

  it('keeps the forced display size and density and the app ops, as wm and appops take them', async () => {
    const save = join(dir, 'display');
    const first = await startVirtualAdb({ restoreFrom: null });
    try {
      await first.adbOk([
        'shell',
        'wm size 600x1000; wm density 240; appops set com.android.settings CAMERA deny',
      ]);
      await first.phone.saveState(save);
    } finally {
      await first.close();
    }
    const screen = async (v: VirtualAdb) => {
      const png = PNG.sync.read((await v.adb(['exec-out', 'screencap -p'])).raw);
      return [png.width, png.height];
    };
    const kept = await startVirtualAdb({ restoreFrom: save });
    try {
      expect(await kept.adbOk(['shell', 'wm size; wm density'])).toBe(
        'Physical size: 720x1280\nOverride size: 600x1000\nPhysical density: 320\nOverride density: 240\n',
      );
      expect(await screen(kept)).toEqual([600, 1000]);
      expect(await kept.adbOk(['shell', 'appops get com.android.settings'])).toBe('CAMERA: deny\n');
    } finally {
      await kept.close();
    }
    // What a save from before held: any size and density, ops by any upper-cased name. They
    // come back as wm and appops would have taken them, never as a screen the phone cannot draw.
    editState(save, (state) => {
      state.system.wmSize = { w: 99999, h: 99999 };
      state.system.wmDensity = 1;
      state.system.appOps = [
        [
          'com.android.settings',
          [
            ['MONITOR_LOCATION_HIGH_POWER', 'deny'],
            ['BOGUS', 'allow'],
          ],
        ],
      ];
    });
    const old = await startVirtualAdb({ restoreFrom: save });
    try {
      expect(await old.adbOk(['shell', 'wm size; wm density'])).toBe(
        'Physical size: 720x1280\nOverride size: 3840x3840\nPhysical density: 320\n',
      );
      expect(await screen(old)).toEqual([3840, 3840]);
      expect(await old.adbOk(['shell', 'appops get com.android.settings'])).toBe(
        'MONITOR_HIGH_POWER_LOCATION: deny\n',
      );
    } finally {
      await old.close();
    }
  });

  it('keeps an app installed from split APKs, base and splits, with its signer', async () => {
    const save = join(dir, 'splits');
    const base = join(dir, 'split-base.apk');
    const arm = join(dir, 'split-arm.apk');
    writeFileSync(base, buildTestApk({ package: 'com.example.split', signer: 'dev' }));
    writeFileSync(
      arm,
      buildTestApk({
        package: 'com.example.split',
        split: 'config.arm64_v8a',
        nativeAbis: ['arm64-v8a'],
        signer: 'dev',
      }),
    );
    const first = await startVirtualAdb({ restoreFrom: null });
    let paths: string;
    try {
      await first.adbOk(['install-multiple', base, arm]);
      paths = await first.adbOk(['shell', 'pm path com.example.split']);
      expect(paths.split('\n').filter(Boolean)).toHaveLength(2);
      await first.phone.saveState(save);
    } finally {
      await first.close();
    }
    const restored = await startVirtualAdb({ restoreFrom: save });
    try {
      expect(await restored.adbOk(['shell', 'pm path com.example.split'])).toBe(paths);
      // The split's own bytes, not a copy of the base.
      const split = paths.split('\n')[1]!.slice('package:'.length);
      expect((await restored.adbOk(['shell', `md5sum ${split}`])).split(' ')[0]).toBe(
        createHash('md5').update(readFileSync(arm)).digest('hex'),
      );
      // Its signer came back with it: another key still cannot update it.
      const other = join(dir, 'split-other.apk');
      writeFileSync(other, buildTestApk({ package: 'com.example.split', signer: 'someone else' }));
      const refused = await restored.adb(['install', other]);
      expect(refused.stdout + refused.stderr).toContain('INSTALL_FAILED_UPDATE_INCOMPATIBLE');
    } finally {
      await restored.close();
    }
  });

  it('keeps system apps the user disabled, but not Chrome turned off for a server machine without Chromium', async () => {
    const save = join(dir, 'no-chromium');
    const bare = await startVirtualAdb({ restoreFrom: null, chromium: '/nonexistent/chromium' });
    try {
      expect(await bare.adbOk(['shell', 'pm list packages -e com.android.chrome'])).toBe('');
      await bare.adbOk(['shell', 'pm disable-user com.phonelease.login']);
      await bare.phone.saveState(save);
    } finally {
      await bare.close();
    }
    // On a machine with Chromium the profile has Chrome, and the user's own choice stays.
    const full = await startVirtualAdb({ restoreFrom: save });
    try {
      expect(await full.adbOk(['shell', 'pm list packages -e com.android.chrome'])).toBe(
        'package:com.android.chrome\n',
      );
      expect(await full.adbOk(['shell', 'pm list packages -d'])).toBe('package:com.phonelease.login\n');
    } finally {
      await full.close();
    }
    // Back on a machine without one, Chrome is off again: the machine's, not the profile's.
    const again = await startVirtualAdb({ restoreFrom: save, chromium: '/nonexistent/chromium' });
    try {
      expect(await again.adbOk(['shell', 'pm list packages -e com.android.chrome'])).toBe('');
    } finally {
      await again.close();
    }
  });

  it('refuses a save whose bytes were damaged without changing their size', async () => {
    const backend = createVirtualBackend({ bootMs: 0 });
    try {
      const phone = (await backend.boot(bootRequest(null))) as VirtualPhone;
      phone.device.fs.writeFile('/sdcard/photo.bin', Buffer.alloc(4096, 7));
      const save = join(dir, 'profile-bitrot');
      await phone.shutdown({ saveTo: save });
      const data = readFileSync(join(save, 'data.bin'));
      data[100] = data[100]! ^ 0xff;
      writeFileSync(join(save, 'data.bin'), data);
      await expect(backend.boot(bootRequest(save))).rejects.toMatchObject({ code: 'profile_damaged' });

      const other = (await backend.boot(bootRequest(null))) as VirtualPhone;
      const save2 = join(dir, 'profile-bad-json');
      await other.shutdown({ saveTo: save2 });
      const manifest = readFileSync(join(save2, 'manifest.json'));
      writeFileSync(join(save2, 'manifest.json'), manifest.subarray(0, manifest.length - 2));
      await expect(backend.boot(bootRequest(save2))).rejects.toMatchObject({ code: 'profile_damaged' });
    } finally {
      await backend.close();
    }
  });

  it('saves again after a failed save instead of losing the session', async () => {
    const backend = createVirtualBackend({ bootMs: 0 });
    try {
      const phone = (await backend.boot(bootRequest(null))) as VirtualPhone;
      const adb = await phone.adbEndpoint();
      phone.device.fs.writeFile('/sdcard/kept.txt', Buffer.from('kept'));
      // The first save cannot create its directory (a file is in the way).
      const blocker = join(dir, 'blocker');
      writeFileSync(blocker, 'x');
      await expect(phone.shutdown({ saveTo: join(blocker, 'save') })).rejects.toThrow();
      expect(await refused(adb.port)).toBe(true);
      // The runtime retries with a fresh directory: the phone is still there to be saved.
      const save = join(dir, 'profile-retried');
      await phone.shutdown({ saveTo: save });
      const again = (await backend.boot(bootRequest(save))) as VirtualPhone;
      expect(again.device.fs.readFile('/sdcard/kept.txt').toString()).toBe('kept');
      await again.shutdown({ saveTo: null });
      // Once stopped, further calls do nothing.
      await phone.shutdown({ saveTo: null });
    } finally {
      await backend.close();
    }
  });

  it('detects a save that was cut short', async () => {
    const save = join(dir, 'profile-b');
    const backend = createVirtualBackend({ bootMs: 0 });
    try {
      const phone: DevicePhone = await backend.boot(bootRequest(null));
      await phone.shutdown({ saveTo: save });
      const truncatedCopy = join(dir, 'profile-c');
      const again = await backend.boot(bootRequest(save));
      await again.shutdown({ saveTo: truncatedCopy });
      unlinkSync(join(save, 'manifest.json'));
      await expect(backend.boot(bootRequest(save))).rejects.toBeInstanceOf(PhoneBootError);
      await expect(backend.boot(bootRequest(save))).rejects.toMatchObject({ code: 'profile_damaged' });
      truncateSync(join(truncatedCopy, 'state.json'), 10);
      await expect(backend.boot(bootRequest(truncatedCopy))).rejects.toMatchObject({
        code: 'profile_damaged',
      });
    } finally {
      await backend.close();
    }
  });
});

/**
 * A full garbage collection, so heap figures count what is still referenced: global.gc
 * under --expose-gc, otherwise V8's gc enabled at runtime (the flag then exposes it to new
 * contexts).
 */
function collectGarbage(): void {
  let gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
  gc();
}

describe('many idle phones', () => {
  it('runs 50 idle phones in one process at well under 1 MB each', async () => {
    const backend = createVirtualBackend({ bootMs: 0 });
    // Warm up shared state (system image, command table) before measuring.
    const warm = await backend.boot(bootRequest(null));
    collectGarbage();
    const before = process.memoryUsage();
    const phones: DevicePhone[] = [];
    try {
      for (let i = 0; i < 50; i++) phones.push(await backend.boot(bootRequest(null)));
      collectGarbage();
      const after = process.memoryUsage();
      // Measured after a full GC: about 35 KB per idle phone (copy-on-write filesystem, no
      // screen until first use). The bound leaves a wide margin without hiding a leak.
      const perPhone = (after.heapUsed + after.external - before.heapUsed - before.external) / 50;
      expect(perPhone).toBeLessThan(1024 * 1024);
      const ports = new Set((await Promise.all(phones.map((p) => p.adbEndpoint()))).map((a) => a.port));
      expect(ports.size).toBe(50);
      expect(await refused((await phones[49]!.adbEndpoint()).port)).toBe(false);
    } finally {
      await warm.shutdown({ saveTo: null });
      await backend.close();
    }
  });
});
