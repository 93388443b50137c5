/**
 * Where the Android SDK's tools and AVDs are, resolved the way the tools themselves resolve
 * them (reference, "Environment"): SDK root from ANDROID_HOME then ANDROID_SDK_ROOT; AVDs in
 * ANDROID_AVD_HOME, else $ANDROID_SDK_HOME/.android/avd, else $HOME/.android/avd; the console
 * token in $HOME/.emulator_console_auth_token; the adb server on ANDROID_ADB_SERVER_PORT.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { PhoneBootError } from '../types.js';

const execFileAsync = promisify(execFile);

export type Environment = Readonly<Record<string, string | undefined>>;

export function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

export function sdkRootOf(env: Environment): string | null {
  return nonEmpty(env.ANDROID_HOME) ?? nonEmpty(env.ANDROID_SDK_ROOT) ?? null;
}

export function homeOf(env: Environment): string {
  return nonEmpty(env.HOME) ?? homedir();
}

export function avdHomeOf(env: Environment): string {
  const explicit = nonEmpty(env.ANDROID_AVD_HOME);
  if (explicit) return explicit;
  const sdkHome = nonEmpty(env.ANDROID_SDK_HOME);
  if (sdkHome) return join(sdkHome, '.android', 'avd');
  return join(homeOf(env), '.android', 'avd');
}

export function tokenPathOf(env: Environment): string {
  return join(homeOf(env), '.emulator_console_auth_token');
}

/** A program on PATH, or null. */
export function onPath(name: string, env: Environment): string | null {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return null;
}

export interface Sdk {
  root: string;
  emulator: string;
  adb: string;
  env: Environment;
}

const INSTALL_HINT =
  'Install the Android SDK command-line tools, then `sdkmanager "emulator" "platform-tools" "system-images;android-34;google_apis;x86_64"`, set ANDROID_HOME to the SDK, and run `phonelease doctor`; or run the server with --device virtual.';

/** The SDK's emulator and adb, or a public startup failure saying what to install. */
export function locateSdk(env: Environment): Sdk {
  const root = sdkRootOf(env);
  if (!root) {
    throw new PhoneBootError(
      'emulator_unavailable',
      `This server has no Android SDK: ANDROID_HOME (or ANDROID_SDK_ROOT) is not set. ${INSTALL_HINT}`,
    );
  }
  const emulator = join(root, 'emulator', 'emulator');
  if (!existsSync(emulator)) {
    throw new PhoneBootError(
      'emulator_unavailable',
      `The Android SDK at ${root} has no emulator (${emulator} is missing). ${INSTALL_HINT}`,
    );
  }
  const sdkAdb = join(root, 'platform-tools', 'adb');
  const adb = existsSync(sdkAdb) ? sdkAdb : onPath('adb', env);
  if (!adb) {
    throw new PhoneBootError(
      'emulator_unavailable',
      `The Android SDK at ${root} has no adb (${sdkAdb} is missing). Install it with \`sdkmanager "platform-tools"\`.`,
    );
  }
  return { root, emulator, adb, env };
}

export interface ToolOutput {
  stdout: string;
  stderr: string;
}

/** Runs an SDK tool to its end; rejects with its own output on a non-zero exit. */
export async function runTool(
  file: string,
  args: string[],
  env: Environment,
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ToolOutput> {
  const { stdout, stderr } = await execFileAsync(file, args, {
    env: { ...env },
    timeout: options.timeoutMs ?? 30_000,
    maxBuffer: 64 * 1024 * 1024,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { stdout, stderr };
}

/** `emulator -list-avds`: one name a line, after INFO lines that recent builds print first. */
export function parseAvdList(stdout: string): string[] {
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('INFO') && !l.startsWith('WARNING') && !l.includes('|'));
}

export async function listAvds(sdk: Sdk): Promise<string[]> {
  return parseAvdList((await runTool(sdk.emulator, ['-list-avds'], sdk.env)).stdout);
}

/** "35.2.10.0 (build_id 12414864)" from `emulator -version`, or null when it does not say. */
export function parseEmulatorVersion(stdout: string): string | null {
  const m = /Android emulator version (\S+)(?: \(build_id (\w+)\))?/.exec(stdout);
  if (!m) return null;
  return m[2] ? `${m[1]} (build_id ${m[2]})` : m[1]!;
}

export async function emulatorVersion(sdk: Sdk): Promise<string> {
  const out = await runTool(sdk.emulator, ['-version'], sdk.env);
  return parseEmulatorVersion(out.stdout + out.stderr) ?? 'unknown';
}
