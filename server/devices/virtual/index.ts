/**
 * The built-in virtual phone backend: simulated Android phones inside the server process,
 * driven by the stock adb client and Appium over the real ADB protocol.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { readApps, type AppBundle } from '../../../src/apk/app-files.js';
import type { BootRequest, DeviceBackend, DevicePhone } from '../types.js';
import { Device } from './device.js';
import type { DirNode } from './fs.js';
import { DEFAULT_CHROMIUM, browserConfig } from './browser/config.js';
import { VirtualPhone } from './phone.js';
import { preinstallApps } from './preinstall.js';
import { buildSystemImage } from './system-image.js';
import type { CommandTable } from './shell/command.js';
import { createCommandTable } from './shell/commands/index.js';
import { abortableSleep } from './timers.js';
import { EncoderThreads } from './video/frame-encoder.js';

/**
 * Idle encoder threads a server keeps for its phones' next recordings: as many as phones
 * that can encode at once on this machine (up to 8; each idle one holds some memory).
 */
const ENCODER_THREADS_KEPT = Math.min(8, availableParallelism());

export interface VirtualBackendOptions {
  /** Simulated boot time in ms (0 in benchmarks). */
  bootMs: number;
  /** Interface the phones' ADB ports listen on; default 127.0.0.1. */
  host?: string;
  /** Storage quota of each phone's own files in bytes (default 2 GiB); writes beyond fail with ENOSPC. */
  storageBytes?: number;
  /**
   * The Chromium behind each phone's Chrome (default PHONELEASE_CHROMIUM or /usr/bin/chromium);
   * null: phones have no browser engine (Chrome is listed but cannot start).
   */
  chromium?: string | null;
  /**
   * APK files every phone has installed before it is handed out (absolute paths, or
   * relative to the working directory). Read, parsed and tried once, here: a bad file or
   * an app the phone's package manager refuses stops the backend from starting.
   */
  preinstall?: readonly string[];
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const error = new Error('virtual phone boot aborted');
  error.name = 'AbortError';
  return error;
}

/** Resolves after ms, or rejects with an AbortError as soon as the signal aborts. */
async function delay(ms: number, signal: AbortSignal): Promise<void> {
  // --boot-ms 0 (benchmarks) arms no timer and no abort listener, one per create.
  if (ms > 0) await abortableSleep(ms, signal);
  if (signal.aborted) throw abortError(signal);
}

export function createVirtualBackend(options: VirtualBackendOptions): DeviceBackend {
  const host = options.host ?? '127.0.0.1';
  const chromium =
    options.chromium === undefined ? (process.env.PHONELEASE_CHROMIUM ?? DEFAULT_CHROMIUM) : options.chromium;
  // One configuration for every phone: the Chromium version is asked once.
  // Without a Chromium on this machine the phones have no browser: Chrome is disabled on
  // them, as on a phone without it, so launchBrowser() says so at once instead of waiting.
  const browser = chromium && existsSync(chromium) ? browserConfig(chromium) : null;
  const phones = new Set<VirtualPhone>();
  // Built on first boot and shared by every phone of this backend (copy-on-write).
  let systemRoot: DirNode | null = null;
  const preinstall = options.preinstall?.length ? readApps(options.preinstall) : [];
  if (preinstall.length > 0) {
    systemRoot = buildSystemImage();
    tryPreinstall(systemRoot, preinstall);
  }
  let commands: CommandTable | null = null;
  // Every phone of this server records with the same threads: a phone leased for one test
  // would otherwise start its own (a third of a second, and slow first frames while its
  // code compiles) for every test that records.
  const encoderThreads = new EncoderThreads({ keep: ENCODER_THREADS_KEPT });
  let closed = false;

  return {
    name: 'virtual',
    typicalBootMs: options.bootMs,
    startupSource: 'cold',
    async boot(request: BootRequest): Promise<DevicePhone> {
      if (closed) throw new Error('virtual backend is closed');
      await delay(options.bootMs, request.signal);
      systemRoot ??= buildSystemImage();
      commands ??= createCommandTable();
      const phone = new VirtualPhone({
        systemRoot,
        commands,
        log: request.log,
        host,
        restoreFrom: request.restoreFrom,
        storageBytes: options.storageBytes,
        browser,
        preinstall,
        encoderThreads,
      });
      phones.add(phone);
      try {
        await phone.start();
        if (request.signal.aborted) throw abortError(request.signal);
      } catch (error) {
        phones.delete(phone);
        await phone.shutdown({ saveTo: null });
        throw error;
      }
      phone.onStopped(() => phones.delete(phone));
      request.log.debug('virtual phone booted', { sessionId: request.sessionId });
      return phone;
    },
    async close(): Promise<void> {
      closed = true;
      await Promise.all([...phones].map((p) => p.shutdown({ saveTo: null })));
      phones.clear();
      encoderThreads.close();
    },
  };
}

/**
 * Installs the apps on a phone that is thrown away, so that an app the package manager
 * refuses (native code for another ABI, a newer minSdkVersion) stops the server at its
 * start, in the package manager's words, rather than failing every boot.
 */
function tryPreinstall(systemRoot: DirNode, apps: readonly AppBundle[]): void {
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const device = new Device({ systemRoot, log: quiet, browser: null });
  try {
    const failure = preinstallApps(device, apps);
    if (failure) {
      throw new Error(
        `--preinstall: the virtual phone's package manager refuses ${failure}. Give an APK it can install, or leave that one out.`,
      );
    }
  } finally {
    device.close();
  }
}
