/**
 * Android SDK emulators as phones, built on the facts in the project's emulator reference
 * (command line, console, adb discovery, boot detection, snapshots, read-only instances).
 *
 * - Temporary phones start read-only from a golden snapshot of a private copy of the base
 *   AVD (snapshots.ts): `-read-only -no-snapshot-save -snapshot phonelease_golden`, about a
 *   second on a real host instead of a 12-28 s cold boot. When the emulator refuses the
 *   golden, that phone cold-boots (said in the log) and the next boot makes a new golden;
 *   when it refuses one it has just saved, temporary phones cold-boot for the rest of the
 *   run. They are killed after use, never reset and reused.
 * - APKs given as `preinstall` are installed into the golden before it is saved, and recorded
 *   on the phone with their hashes; the golden's key includes the hashes (preinstall.ts).
 * - A cold-booted phone has its lock screen dismissed (`input keyevent 82`, as CI runners
 *   do) before it is handed out or a golden is saved from it (boot.ts).
 * - Profile phones run their own AVD directory, read-write, under one name for all of the
 *   profile's sessions (a snapshot loads only under the name it was saved with), saved with
 *   a console snapshot at the end of each session and loaded at the next start (profiles.ts).
 * - Each emulator gets an explicit console port in 5554-5584, where the adb server finds it
 *   by itself (ports.ts), and is ready when Appium's boot rule holds (boot.ts).
 * - An emulator that dies on its own is reported through onLost.
 * - ADB clients reach a phone through the gateway, which signs in to the emulator's adbd
 *   with this machine's adb keys (adb-keys.ts, server/adb-sign-in.ts); an emulator build
 *   that serves only the adb server's connection is found on the first phone, said in the
 *   log, and its phones refuse gateway clients with that reason (adb-connections.ts).
 *
 * Public startup failures quote the emulator and say what to do (no SDK, no AVD, no KVM,
 * no free port); the server keeps running, and `phonelease doctor` checks the machine.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { PhoneBootError, type BootRequest, type DeviceBackend, type DeviceLogger } from '../types.js';
import { readAvd, removeAvd, removeStaleLocks, type Avd } from './avd.js';
import { dismissKeyguard, waitForBoot } from './boot.js';
import { consoleCommand } from './console.js';
import { emulatorCapacity } from './capacity.js';
import { EmulatorPhone } from './phone.js';
import { PortPool, portsExhausted } from './ports.js';
import { EmulatorProcess, emulatorArgs, type LaunchPlan } from './process.js';
import { prepareProfileAvd } from './profiles.js';
import {
  ONE_CONNECTION_FIX,
  SEVERAL_CONNECTIONS_NEEDED,
  acceptsAnotherAdbConnection,
} from './adb-connections.js';
import { loadAdbKeys } from './adb-keys.js';
import { installApps, preinstallKey, readPreinstall } from './preinstall.js';
import { FleetAvds, GOLDEN_SNAPSHOT, goldenKey, type FleetAvd } from './snapshots.js';
import {
  avdHomeOf,
  emulatorVersion,
  listAvds,
  locateSdk,
  runTool,
  tokenPathOf,
  type Environment,
  type Sdk,
} from './sdk.js';

export interface EmulatorBackendOptions {
  log: DeviceLogger;
  /** Environment for finding the SDK and AVDs and for the tools (default process.env). */
  env?: Environment;
  /** Base AVD; default PHONELEASE_AVD, else the first AVD `emulator -list-avds` prints. */
  avd?: string;
  /**
   * Where the backend keeps its own AVDs (fleet copies with their golden snapshots, profile
   * phones while they run). Default $XDG_CACHE_HOME/phonelease/emulator, so a golden made
   * once is reused by later server runs.
   */
  workDir?: string;
  /** Boot budget before a start counts as failed (default 600 s, as CI runners take minutes). */
  bootTimeoutMs?: number;
  /**
   * APKs installed into the golden snapshot, so every temporary phone and every fresh profile
   * starts with them; a new build makes a new golden (preinstall.ts). Read when the backend
   * is made: a missing file or one that is not an APK throws at once.
   */
  preinstall?: readonly string[];
}

/** How often a failed start is retried on the next port pair after losing a port race. */
const PORT_ATTEMPTS = 4;

interface Setup {
  sdk: Sdk;
  base: Avd;
  target: string;
  fleets: FleetAvds;
  /** `emulator -version`'s build. */
  version: string;
  /**
   * Whether this emulator build serves ADB clients beside the adb server, checked on the
   * first phone (adb-connections.ts); null until then.
   */
  severalAdbConnections: Promise<boolean> | null;
}

interface Launched {
  proc: EmulatorProcess;
  consolePort: number;
  /** The emulator cold-booted instead of loading the snapshot it was given. */
  refused: boolean;
  /** It cold-booted: it was given no snapshot, or refused the one it was given. */
  cold: boolean;
  /** It cold-booted and its lock screen could not be dismissed. */
  locked: boolean;
}

export function createEmulatorBackend(options: EmulatorBackendOptions): DeviceBackend {
  const log = options.log;
  const env = options.env ?? process.env;
  const workDir =
    options.workDir ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'phonelease', 'emulator');
  const avdHome = join(workDir, 'avd');
  const bootTimeoutMs = options.bootTimeoutMs ?? 600_000;
  const tokenPath = tokenPathOf(env);
  const apps = readPreinstall(options.preinstall ?? []);
  // The keys stock adb on this machine signs in with: the emulator's adbd trusts those.
  const adbKeys = () => loadAdbKeys(env);
  const ports = new PortPool();
  const phones = new Set<EmulatorPhone>();
  let setup: Promise<Setup> | null = null;
  let closed = false;

  const capacity = emulatorCapacity();
  log.info('emulator host capacity', { summary: capacity.summary });

  const prepare = async (): Promise<Setup> => {
    const sdk = locateSdk(env);
    // The emulator registers with the adb server once, at its start: the server must be up.
    await runTool(sdk.adb, ['start-server'], env).catch((error: unknown) => {
      throw new PhoneBootError(
        'emulator_unavailable',
        `adb could not start its server (${String(error).split('\n')[0]}). Check that ${sdk.adb} runs and that port ${env.ANDROID_ADB_SERVER_PORT ?? 5037} is free.`,
      );
    });
    const name = options.avd ?? env.PHONELEASE_AVD ?? (await listAvds(sdk))[0];
    const userAvdHome = avdHomeOf(env);
    const base = name ? readAvd(userAvdHome, name) : null;
    if (!name || !base) {
      throw new PhoneBootError(
        'emulator_no_avd',
        name
          ? `The AVD "${name}" is not in ${userAvdHome}. \`emulator -list-avds\` lists the AVDs; set PHONELEASE_AVD to one of them.`
          : `The emulator has no AVD to run (none in ${userAvdHome}). Create one: \`avdmanager create avd -n phonelease -k "system-images;android-34;google_apis;x86_64" -d pixel_6\` (run \`phonelease doctor\` for the whole list).`,
      );
    }
    const version = await emulatorVersion(sdk);
    const key = goldenKey({
      sdkRoot: sdk.root,
      base,
      emulatorVersion: version,
      preinstalled: preinstallKey(apps),
    });
    mkdirSync(avdHome, { recursive: true });
    // The tools see the environment as it is when they start (a test may flip an emulator
    // switch between boots), with the backend's own AVD home.
    const childSdk: Sdk = {
      ...sdk,
      get env() {
        return { ...env, ANDROID_AVD_HOME: avdHome };
      },
    };
    const target = `android-${/android-(\d+)/.exec(base.config.get('image.sysdir.1') ?? '')?.[1] ?? '34'}`;
    log.info('emulator backend ready', {
      avd: name,
      emulator: version,
      golden_key: key,
      work_dir: workDir,
      preinstall: apps.map((a) => a.package),
    });
    const fleets = new FleetAvds({
      avdHome,
      base,
      key,
      target,
      log,
      make: async (avd, signal) => {
        const launched = await launch(childSdk, { avd, readOnly: false, snapshot: null }, signal);
        try {
          if (launched.locked) throw new Error('the golden phone could not be unlocked; nothing was saved');
          await installApps(childSdk, `emulator-${launched.consolePort}`, apps);
          await consoleCommand(launched.consolePort, tokenPath, `avd snapshot save ${GOLDEN_SNAPSHOT}`, {
            signal,
          });
        } finally {
          await stop(launched);
        }
      },
    });
    await fleets.open();
    return { sdk: childSdk, base, target, fleets, version, severalAdbConnections: null };
  };

  /** Stops an emulator this backend started and frees its port. */
  const stop = async (launched: Launched): Promise<void> => {
    if (!launched.proc.hasExited) {
      await consoleCommand(launched.consolePort, tokenPath, 'kill').catch(() =>
        launched.proc.kill('SIGTERM'),
      );
      const timer = setTimeout(() => launched.proc.kill('SIGKILL'), 15_000);
      await launched.proc.exited;
      clearTimeout(timer);
    }
    ports.release(launched.consolePort);
  };

  /**
   * Starts an emulator on a free port pair and waits until it has booted. A lost port race
   * moves to the next pair; any other early exit is a public failure in the emulator's words.
   */
  const launch = async (
    sdk: Sdk,
    plan: Omit<LaunchPlan, 'consolePort'>,
    signal: AbortSignal,
  ): Promise<Launched> => {
    const tried = new Set<number>();
    for (let attempt = 1; ; attempt++) {
      const consolePort = await ports.acquire(tried);
      const proc = EmulatorProcess.spawn(sdk.emulator, emulatorArgs({ ...plan, consolePort }), sdk.env);
      log.debug('emulator started', {
        avd: plan.avd,
        port: consolePort,
        pid: proc.pid,
        snapshot: plan.snapshot,
      });
      const waiting = new AbortController();
      const deadline = setTimeout(() => waiting.abort(new Error('deadline')), bootTimeoutMs);
      const onAbort = () => waiting.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      void proc.exited.then(() => waiting.abort(new Error('exited')));
      try {
        await waitForBoot(sdk, `emulator-${consolePort}`, waiting.signal);
        // An emulator that lost its port pair to another one exits, but the serial it would
        // have had answers: the other emulator (which the adb server found on its own). Only
        // our emulator's console names our AVD.
        if (!(await runsAvd(consolePort, plan.avd))) {
          proc.kill('SIGKILL');
          await proc.exited;
          ports.release(consolePort);
          if (attempt >= PORT_ATTEMPTS) throw portsExhausted();
          tried.add(consolePort);
          continue;
        }
        const refused = plan.snapshot !== null && proc.snapshotRefusal !== null;
        const cold = plan.snapshot === null || refused;
        // Before the golden is saved from it or anyone sees it: nobody is there to unlock it.
        // A phone that stays locked still works (its user can swipe it open); a golden does not.
        const locked =
          cold &&
          (await dismissKeyguard(sdk, `emulator-${consolePort}`).then(
            () => false,
            (error: unknown) => {
              log.warn('could not dismiss the lock screen after a cold boot', {
                serial: `emulator-${consolePort}`,
                error: String(error).split('\n')[0],
              });
              return true;
            },
          ));
        return { proc, consolePort, refused, cold, locked };
      } catch (error) {
        if (proc.hasExited) {
          ports.release(consolePort);
          const exit = await proc.exited;
          if (proc.lostPortRace()) {
            // Other programs keep taking the pairs we find free: as good as none free.
            if (attempt >= PORT_ATTEMPTS) throw portsExhausted();
            tried.add(consolePort);
            continue;
          }
          throw proc.startupFailure(exit);
        }
        proc.kill('SIGKILL');
        await proc.exited;
        ports.release(consolePort);
        if (signal.aborted) throw error;
        throw new PhoneBootError(
          'boot_timeout',
          `The emulator did not finish booting within ${Math.round(bootTimeoutMs / 1000)} s (last words: "${proc.tail(2).replace(/\s*\n\s*/g, ' ')}"). Without KVM boots take minutes; run \`phonelease doctor\`.`,
        );
      } finally {
        clearTimeout(deadline);
        signal.removeEventListener('abort', onAbort);
      }
    }
  };

  /** Whether the emulator whose console is on `consolePort` runs `avd`. */
  const runsAvd = async (consolePort: number, avd: string): Promise<boolean> => {
    const said = await consoleCommand(consolePort, tokenPath, 'avd name').catch(() => null);
    return said?.[0]?.trim() === avd;
  };

  /** Label and screen of a booted phone, from the phone itself. */
  const describe = async (sdk: Sdk, consolePort: number) => {
    const { stdout } = await runTool(
      sdk.adb,
      [
        '-s',
        `emulator-${consolePort}`,
        'shell',
        'getprop ro.product.model; getprop ro.build.version.release; wm size',
      ],
      sdk.env,
    );
    const [model = 'emulator', release = '?', size = ''] = stdout.split('\n').map((s) => s.trim());
    const m = /(\d+)x(\d+)/.exec(size);
    return {
      label: `Android emulator (${model}, Android ${release})`,
      screen: { w: Number(m?.[1] ?? 1080), h: Number(m?.[2] ?? 2400) },
    };
  };

  const bootTemporary = async (s: Setup, request: BootRequest): Promise<EmulatorPhone> => {
    for (let attempt = 1; ; attempt++) {
      const fleet: FleetAvd = await s.fleets.ensure(request.signal);
      const snapshot = s.fleets.coldBootsOnly ? null : GOLDEN_SNAPSHOT;
      s.fleets.started(fleet);
      let launched: Launched;
      try {
        launched = await launch(s.sdk, { avd: fleet.name, readOnly: true, snapshot }, request.signal);
      } catch (error) {
        s.fleets.ended(fleet);
        // Only our read-only phones run on a fleet AVD, and they do not block each other: a
        // writer's lock there is stale (a host killed mid-save) or not ours. A new fleet AVD
        // gets this phone and the next ones going instead of failing every boot.
        if (error instanceof PhoneBootError && error.code === 'emulator_avd_busy' && attempt === 1) {
          s.fleets.busy(fleet);
          continue;
        }
        throw error;
      }
      if (launched.refused) {
        request.log.warn('the emulator refused the golden snapshot; this phone cold-booted', {
          session: request.sessionId,
          emulator_said: launched.proc.snapshotRefusal,
        });
        s.fleets.refused(fleet);
      } else if (snapshot) s.fleets.loaded(fleet);
      return phoneFor(s, launched, null, async () => {
        ports.release(launched.consolePort);
        s.fleets.ended(fleet);
      });
    }
  };

  const bootProfile = async (s: Setup, request: BootRequest, restoreFrom: string): Promise<EmulatorPhone> => {
    const avd = await prepareProfileAvd({
      restoreFrom,
      avdHome,
      newName: `pl_profile_${randomBytes(6).toString('hex')}`,
      target: s.target,
      fresh: () => s.fleets.ensure(request.signal),
    });
    const cleanup = () => removeAvd(avdHome, avd.name, avd.dir);
    let launched: Launched;
    try {
      await removeStaleLocks(avd.dir);
      launched = await launch(
        s.sdk,
        { avd: avd.name, readOnly: false, snapshot: avd.snapshot },
        request.signal,
      );
    } catch (error) {
      await cleanup();
      throw error;
    }
    if (launched.refused) {
      request.log.warn(
        'the emulator refused the profile snapshot; this phone cold-booted (its apps and files are kept, its screen and app state in memory are not)',
        { session: request.sessionId, emulator_said: launched.proc.snapshotRefusal },
      );
    }
    return phoneFor(s, launched, avd, async () => {
      ports.release(launched.consolePort);
      await cleanup();
    });
  };

  const phoneFor = async (
    s: Setup,
    launched: Launched,
    profileAvd: { name: string; dir: string } | null,
    release: () => Promise<void>,
  ): Promise<EmulatorPhone> => {
    try {
      const { label, screen } = await describe(s.sdk, launched.consolePort);
      s.severalAdbConnections ??= acceptsAnotherAdbConnection(launched.consolePort + 1).then((several) => {
        if (several)
          log.debug('the emulator serves several ADB connections at once', { emulator: s.version });
        else
          log.warn(
            `emulator ${s.version} serves one ADB connection at a time, which the adb server holds: ADB clients through the gateway cannot reach its phones`,
            { needs: SEVERAL_CONNECTIONS_NEEDED, fix: ONE_CONNECTION_FIX },
          );
        return several;
      });
      const adbRefusal = (await s.severalAdbConnections)
        ? null
        : `emulator ${s.version} serves one ADB connection at a time, and the server's adb holds it. ${SEVERAL_CONNECTIONS_NEEDED} Fix: ${ONE_CONNECTION_FIX}`;
      const phone = new EmulatorPhone({
        sdk: s.sdk,
        proc: launched.proc,
        consolePort: launched.consolePort,
        tokenPath,
        label,
        screen,
        startupSource: launched.cold ? 'cold' : 'snapshot',
        adbKeys,
        adbRefusal,
        profileAvd,
        release: async () => {
          phones.delete(phone);
          await release();
        },
      });
      phones.add(phone);
      return phone;
    } catch (error) {
      launched.proc.kill('SIGKILL');
      await launched.proc.exited;
      await release();
      throw error;
    }
  };

  return {
    name: 'emulator',
    typicalBootMs: 3_000,
    startupSource: 'snapshot',
    async boot(request: BootRequest) {
      if (closed) throw new Error('emulator backend is closed');
      setup ??= prepare();
      let s: Setup;
      try {
        s = await setup;
      } catch (error) {
        setup = null; // the SDK or the AVD may be installed later: look again next time
        throw error;
      }
      const phone =
        request.restoreFrom === null
          ? await bootTemporary(s, request)
          : await bootProfile(s, request, request.restoreFrom);
      request.log.info('emulator phone booted', {
        session: request.sessionId,
        serial: phone.serial,
        source: phone.startupSource,
      });
      return phone;
    },
    async close() {
      closed = true;
      // A golden being made runs an emulator no phone owns: stop it and wait for it to end.
      const s = await setup?.catch(() => null);
      await s?.fleets.close();
      await Promise.all([...phones].map((p) => p.shutdown({ saveTo: null }).catch(() => undefined)));
    },
  };
}
