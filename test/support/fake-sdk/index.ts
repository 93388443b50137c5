/**
 * Builds a fake Android SDK on disk for tests, laid out like the real one: emulator/emulator
 * (the fake emulator, a virtual phone as its guest), platform-tools/adb (the stock adb),
 * a system image, and AVDs in $HOME/.android/avd. Each part can be left out, so the doctor
 * and the backend can be tried on a machine without it.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { quietPort } from '../ports.js';
import { processesMentioning } from '../processes.js';

const run = promisify(execFile);
export const FAKE_EMULATOR = fileURLToPath(new URL('./emulator.mjs', import.meta.url));
export const STOCK_ADB = process.env.PHONELEASE_ADB ?? '/usr/bin/adb';

export interface FakeSdkOptions {
  /** AVDs to create (default one, `test_phone`). */
  avds?: string[];
  /** Leave out emulator/emulator. */
  noEmulator?: boolean;
  /** Leave out platform-tools/adb. */
  noPlatformTools?: boolean;
  /** Leave out the system image the AVDs name. */
  noSystemImage?: boolean;
  /** Console token file: absent (the emulator creates one), empty, or a fixed token. */
  token?: 'absent' | 'empty' | string;
  /** More environment for the emulator (FAKE_EMULATOR_* switches). */
  env?: Record<string, string>;
}

export interface FakeSdk {
  root: string;
  sdk: string;
  home: string;
  avdHome: string;
  /** ANDROID_HOME, HOME and a private ANDROID_ADB_SERVER_PORT, plus the options' env. */
  env: Record<string, string>;
  avdDir(name: string): string;
  /** Starts the private adb server (emulators register with it at their start). */
  startAdbServer(): Promise<void>;
  /** Runs stock adb against the private adb server. */
  adb(...args: string[]): Promise<string>;
  /** Stops the private adb server and removes the SDK. */
  close(): Promise<void>;
}

export async function makeFakeSdk(options: FakeSdkOptions = {}): Promise<FakeSdk> {
  const root = mkdtempSync(join(tmpdir(), 'phonelease-fake-sdk-'));
  const sdk = join(root, 'sdk');
  const home = join(root, 'home');
  const avdHome = join(home, '.android', 'avd');
  mkdirSync(avdHome, { recursive: true });
  if (!options.noEmulator) {
    mkdirSync(join(sdk, 'emulator'), { recursive: true });
    symlinkSync(FAKE_EMULATOR, join(sdk, 'emulator', 'emulator'));
    writeFileSync(
      join(sdk, 'emulator', 'source.properties'),
      'Pkg.Desc=Android Emulator\nPkg.Revision=35.2.10\n',
    );
  }
  if (!options.noPlatformTools) {
    mkdirSync(join(sdk, 'platform-tools'), { recursive: true });
    symlinkSync(STOCK_ADB, join(sdk, 'platform-tools', 'adb'));
  }
  const sysdir = 'system-images/android-34/google_apis/x86_64/';
  if (!options.noSystemImage) {
    mkdirSync(join(sdk, sysdir), { recursive: true });
    writeFileSync(join(sdk, sysdir, 'source.properties'), 'Pkg.Revision=12\nAndroidVersion.ApiLevel=34\n');
    writeFileSync(join(sdk, sysdir, 'system.img'), '');
  }
  for (const name of options.avds ?? ['test_phone']) {
    const dir = join(avdHome, `${name}.avd`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(avdHome, `${name}.ini`),
      `avd.ini.encoding=UTF-8\npath=${dir}\npath.rel=avd/${name}.avd\ntarget=android-34\n`,
    );
    writeFileSync(
      join(dir, 'config.ini'),
      [
        'AvdId=' + name,
        'abi.type=x86_64',
        'hw.cpu.arch=x86_64',
        'hw.cpu.ncore=2',
        'hw.ramSize=2048',
        'hw.lcd.width=720',
        'hw.lcd.height=1280',
        `image.sysdir.1=${sysdir}`,
        'tag.id=google_apis',
        '',
      ].join('\n'),
    );
  }
  if (options.token !== undefined && options.token !== 'absent') {
    writeFileSync(
      join(home, '.emulator_console_auth_token'),
      options.token === 'empty' ? '' : options.token,
      {
        mode: 0o600,
      },
    );
  }
  const adbPort = await quietPort();
  const env: Record<string, string> = {
    ANDROID_HOME: sdk,
    HOME: home,
    ANDROID_ADB_SERVER_PORT: String(adbPort),
    ...options.env,
  };
  const adb = async (...args: string[]) =>
    (await run(STOCK_ADB, args, { env: { ...process.env, ...env }, timeout: 30_000 })).stdout;
  return {
    root,
    sdk,
    home,
    avdHome,
    env,
    avdDir: (name) => join(avdHome, `${name}.avd`),
    startAdbServer: async () => {
      await adb('start-server');
    },
    adb,
    close: async () => {
      await adb('kill-server').catch(() => undefined);
      // An emulator still shutting down writes into the SDK's home while it goes: removing
      // the folder under it fails with ENOTEMPTY. Wait for them (their command lines name it).
      const until = Date.now() + 15_000;
      while (processesMentioning(root).length > 0 && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}
