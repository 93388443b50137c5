/**
 * leasePhone() and the Lease: a disposable phone as a resource with a lifetime, modelled on
 * testcontainers. Each state is its own type: LeaseOptions (what to start), Lease (a ready
 * phone: drive it, then end it) and EndedLease (what ending it achieved). end() is
 * idempotent and never throws into teardown; `await using` ends the lease on scope exit.
 *
 *   await using phone = await leasePhone();
 *   const { stdout } = await phone.shell('getprop ro.build.version.release');
 *
 * Crash safety is on by default: the lease is written to the run ledger, ended on SIGINT /
 * SIGTERM, and handed to a reaper process that ends it if this process is killed.
 */
import { readFile } from 'node:fs/promises';
import { inspect } from 'node:util';
import type { AdbAccess, AppEntry, CreateSessionBody, Session, ViewerCapability } from '../api/schemas.js';
import { PhoneSessionClient, type Image, type PhoneSessionClientOptions } from '../client.js';
import { processGuard, type Guarded } from '../crash/guard.js';
import { RunLedger, type LedgerLocation } from '../crash/ledger.js';
import { AdbError, ConfigurationError, LeaseEndedError, withLeaseContext } from '../errors.js';
import { appiumCapabilities, type AppiumCapabilities } from '../adb/appium.js';
import type { AdbEndpoint } from '../adb/gateway.js';
import { PhoneAdb, type ShellResult } from '../adb/phone-adb.js';
import { adbConnect, adbDisconnect, adbServerPort, type StockAdbOptions } from '../adb/stock-adb.js';
import { AdbTunnel } from '../adb/tunnel.js';
import '../util/dispose.js';
import { isValidRequestKey, newIdempotencyKey } from '../util/ids.js';
import { defaultLogger, type PhoneleaseLogger } from '../util/log.js';
import { freePort } from '../util/ports.js';
import { formatDuration, sleep } from '../util/time.js';
import { readApps } from '../apk/app-files.js';
import { ensureApps } from './apps.js';
import { END_RETRY_MS, endAndConfirm, reportEnd, type EndOutcome } from '../end-session.js';
import { startSession, type StartStats } from './start.js';
import { messageOf } from '../util/message.js';
import type { Locator } from '../ui/index.js';
import {
  launchApp,
  pressKey,
  rootLocator,
  UiEngine,
  type KeyName,
  type Selector,
  type TextMatch,
} from '../ui/index.js';
import type { BrowserContext } from '@playwright/test';
import { launchBrowser, type LaunchBrowserOptions, type PhoneBrowser } from '../web/browser.js';
import { LogcatCapture, type LogcatCaptureOptions, type LogcatResult } from '../logcat/capture.js';
import { PhoneRecording, type RecordingOptions, type RecordingResult } from './recording.js';

export interface LeaseOptions extends PhoneSessionClientOptions {
  /** A client to use instead of one built from baseUrl / apiKey / the environment. */
  client?: PhoneSessionClient;
  /** Start the account's own profile phone (its id from GET /me) instead of a temporary one. */
  profileId?: string;
  /** true: look the account's profile id up with GET /me and use it. */
  profile?: boolean;
  /**
   * How long the phone may wait for a free slot and boot, in ms (default 180 000). The
   * lease fails with ReadyTimeoutError (and ends the session) past it.
   */
  startTimeoutMs?: number;
  /** How long you expect to use the phone once ready, in seconds (default 900). */
  useSeconds?: number;
  /**
   * The session's whole lifetime on the server, from admission (timeout_seconds). Default:
   * start budget + useSeconds + 30 s, so the server's deadline always backs up the client:
   * if this process and its reaper both die, the phone still ends on its own.
   */
  timeoutSeconds?: number;
  /** The create's idempotency key (one per logical start; default: a fresh one). */
  idempotencyKey?: string;
  /** Progress and warnings (default: warnings to stderr, progress when DEBUG/PHONELEASE_PROGRESS ask). */
  logger?: PhoneleaseLogger;
  /** Cancels the start (the session, if one was made, is ended). */
  signal?: AbortSignal;
  /** End this lease on SIGINT / SIGTERM before the process exits (default true). */
  handleSignals?: boolean;
  /** Hand the lease to the reaper process, which ends it if this process is killed (default true; PHONELEASE_REAPER=0 turns it off). */
  reaper?: boolean;
  /** Record the lease in the run ledger (default true), optionally at a given location. */
  ledger?: boolean | LedgerLocation;
  /** The stock adb used by adbSerial() and appiumCapabilities(). */
  adb?: StockAdbOptions;
  /**
   * APK files to install before the lease is returned (paths, relative to the working
   * directory). Split APKs of one app are installed together; an app the phone already has
   * in exactly this build (a profile phone, a prepared phone) is not installed again.
   */
  apps?: readonly string[];
  /** Grant the apps' runtime permissions at install, as `adb install -g` (default true). */
  grantPermissions?: boolean;
  /**
   * How long end() keeps sending a DELETE that fails transiently (a rate limit, a proxy's
   * 5xx, a lost answer), Retry-After honoured, in ms (default 60 000). Past it the session
   * goes to the reaper, which keeps trying until it is ended or its deadline passes.
   */
  endRetryMs?: number;
}

/** What ending a lease achieved. end() returns it instead of throwing. */
export interface EndedLease {
  readonly sessionId: string;
  readonly outcome: EndOutcome;
  /** True once the service confirmed cleanup (through the create receipt). */
  readonly cleanupConfirmed: boolean;
  /** Why ending failed, when outcome is 'failed'. */
  readonly error?: unknown;
  /** True when ending failed within endRetryMs and the reaper took over (it keeps trying). */
  readonly handedToReaper: boolean;
}

export interface AppiumOptions {
  /** Seconds Appium waits for the next command (default 120). */
  newCommandTimeout?: number;
  /**
   * Skip installing the UiAutomator2 server and the settings app. Default: skip exactly when
   * the phone already has both (a profile phone that ran Appium before, a prepared image);
   * a fresh phone needs them installed.
   */
  skipInstallation?: boolean;
  extra?: Record<string, unknown>;
}

const MARGIN_S = 30;
/** How long end() waits for local ADB connections to close after the session ended. */
const LOCAL_CLOSE_MS = 3000;

/** Starts a phone and resolves when it is ready. See LeaseOptions for every knob. */
export async function leasePhone(options: LeaseOptions = {}): Promise<Lease> {
  const env = options.env ?? process.env;
  const client = options.client ?? new PhoneSessionClient(options);
  const logger = options.logger ?? defaultLogger(env);
  const requestKey = options.idempotencyKey ?? newIdempotencyKey();
  if (!isValidRequestKey(requestKey)) {
    throw new ConfigurationError(
      `idempotencyKey must match ^[A-Za-z0-9_-]{16,128}$ (got ${requestKey.length} characters); derive it from a stable test id.`,
    );
  }
  // A missing or broken app file is found before any phone is started for it.
  const apps = options.apps && options.apps.length > 0 ? readApps(options.apps) : [];
  const startTimeoutMs = options.startTimeoutMs ?? 180_000;
  const timeoutSeconds =
    options.timeoutSeconds ?? Math.ceil(startTimeoutMs / 1000) + (options.useSeconds ?? 900) + MARGIN_S;
  let profileId = options.profileId;
  if (!profileId && options.profile) {
    try {
      profileId = (await client.me({ signal: options.signal })).profile.id;
    } catch (error) {
      // Part of this start: its error carries the key like every other error of a start.
      throw withLeaseContext(error, { requestKey });
    }
  }
  const body: CreateSessionBody = {
    timeout_seconds: timeoutSeconds,
    ...(profileId ? { profile_id: profileId } : {}),
  };

  // Crash safety is armed before the create leaves: a process killed mid-create still
  // leaves its key, and the key finds the session.
  const ledger =
    options.ledger === false
      ? null
      : RunLedger.open(typeof options.ledger === 'object' ? options.ledger : { env });
  const useReaper = (options.reaper ?? true) && env.PHONELEASE_REAPER !== '0';
  const guard = processGuard();
  const abort = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, abort.signal]) : abort.signal;
  let lease: Lease | null = null;
  let unresolved = false;
  let starting: Promise<unknown> = Promise.resolve();
  const guarded: Guarded = {
    requestKey,
    // A signal during the start cancels it and waits while the start ends what it made;
    // after the start, it ends the lease.
    end: async () => {
      if (!lease) {
        abort.abort(new Error('The process is exiting.'));
        await starting.catch(() => undefined);
      }
      return lease?.end();
    },
  };
  ledger?.append({
    event: 'start',
    request_key: requestKey,
    base_url: client.baseUrl,
    pid: process.pid,
    at: new Date().toISOString(),
  });
  guard.track(guarded, {
    signals: options.handleSignals ?? true,
    // The session is admitted a little after this; its deadline is no earlier than this one.
    reaper: useReaper
      ? { baseUrl: client.baseUrl, apiKey: client.apiKey, deadline: Date.now() + timeoutSeconds * 1000 }
      : null,
  });

  try {
    const started = startSession({
      client,
      body,
      requestKey,
      budgetMs: Math.min(startTimeoutMs, timeoutSeconds * 1000),
      logger,
      signal,
      onSession: (sid) => {
        ledger?.append({
          event: 'session',
          request_key: requestKey,
          session_id: sid,
          at: new Date().toISOString(),
        });
        guard.session(guarded, sid, Date.now() + timeoutSeconds * 1000);
      },
      onUnresolved: () => {
        unresolved = true;
      },
    });
    starting = started;
    const { session, stats } = await started;
    lease = new Lease(
      {
        client,
        session,
        requestKey,
        stats,
        logger,
        adb: options.adb ?? {},
        env,
        endRetryMs: options.endRetryMs ?? END_RETRY_MS,
      },
      (ended) => {
        ledger?.append({
          event: 'end',
          request_key: requestKey,
          session_id: ended.sessionId,
          outcome: ended.outcome,
          at: new Date().toISOString(),
        });
        // An end that failed within its budget, or whose cleanup was not confirmed (202
        // cleanup_pending, still pending after the wait), goes to the reaper, which keeps
        // trying until the cleanup is confirmed or the session's deadline passes.
        return guard.untrack(guarded, { handOver: ended.outcome === 'failed' || !ended.cleanupConfirmed });
      },
    );
  } catch (error) {
    // startSession ended whatever it made — unless it could not be sure, in which case the
    // ledger keeps the lease open (endLeftovers() retries) and the reaper keeps its key.
    ledger?.append({
      event: 'end',
      request_key: requestKey,
      session_id: null,
      outcome: unresolved ? 'start_unresolved' : 'start_failed',
      at: new Date().toISOString(),
    });
    guard.untrack(guarded, { handOver: unresolved });
    throw error;
  }
  const ready = lease;
  try {
    await ensureApps(ready, apps, { grantPermissions: options.grantPermissions ?? true, logger });
  } catch (error) {
    // A phone without the app under test is of no use to the caller: it is handed back.
    await ready.end();
    throw withLeaseContext(error, { sessionId: ready.id, requestKey });
  }
  return ready;
}

/**
 * The UI engine behind a lease's locators, for the fixtures (they set its step runner and
 * timeouts, read the tree for failure reports and stop it before the end). It is no part of
 * the Lease's type: tests drive the UI through locators, and the package does not export it.
 */
export function uiEngineOf(lease: Lease): UiEngine {
  return engineOf(lease);
}

// Set once, by the Lease class's static block: the one way in to a lease's private engine.
let engineOf: (lease: Lease) => UiEngine;

/** Records a lease's end; returns true when the reaper took over a failed end. */
type OnEnded = (ended: Omit<EndedLease, 'handedToReaper'>) => boolean;

interface LeaseInit {
  client: PhoneSessionClient;
  session: Session;
  requestKey: string;
  stats: StartStats;
  logger: PhoneleaseLogger;
  adb: StockAdbOptions;
  env: NodeJS.ProcessEnv;
  endRetryMs: number;
}

/** A ready phone. Get one from leasePhone(); end it with end() or `await using`. */
export class Lease implements AsyncDisposable {
  /** The create's idempotency key: its receipt (GET /sessions/requests/{key}) confirms cleanup. */
  readonly requestKey: string;
  /** How the start went (attempts, busy waits, polls, timings). */
  readonly startStats: StartStats;
  readonly #client: PhoneSessionClient;
  readonly #logger: PhoneleaseLogger;
  readonly #adbOptions: StockAdbOptions;
  readonly #onEnded: OnEnded;
  readonly #endRetryMs: number;
  #session: Session;
  #adb: Promise<PhoneAdb> | null = null;
  #tunnel: Promise<AdbTunnel> | null = null;
  #adbConnected: Promise<void> | null = null;
  #ending: Promise<EndedLease> | null = null;
  #ui: UiEngine | null = null;
  /** Browsers connected by launchBrowser(), disconnected when the lease ends. */
  readonly #browsers = new Set<PhoneBrowser>();
  /** The screen recording startRecording() started, until stopRecording(). */
  #recording: Promise<PhoneRecording> | null = null;
  /** The log startLogcat() follows, until stopLogcat(). */
  #logcat: Promise<LogcatCapture> | null = null;

  static {
    engineOf = (lease) => lease.#engine();
  }

  /** @internal Use leasePhone(). */
  constructor(init: LeaseInit, onEnded: OnEnded) {
    this.#client = init.client;
    this.#session = init.session;
    this.requestKey = init.requestKey;
    this.startStats = init.stats;
    this.#logger = init.logger;
    this.#adbOptions = { env: init.env, ...init.adb };
    this.#onEnded = onEnded;
    this.#endRetryMs = init.endRetryMs;
  }

  get id(): string {
    return this.#session.id;
  }

  /** The session as last read (secret fields included: watch_url, adb.code; do not log it). */
  get session(): Session {
    return this.#session;
  }

  get ended(): boolean {
    return this.#ending !== null;
  }

  /** Reads the session again (GET /sessions/{sid}). */
  refresh(): Promise<Session> {
    return this.#named(async () => {
      this.#assertLive();
      this.#session = await this.#client.getSession(this.id);
      return this.#session;
    });
  }

  // -------------------------------------------------------------------------------------
  // In-process ADB

  /** Runs a shell command on the phone (shell protocol v2: separate stdout, stderr and the exit code). */
  shell(command: string): Promise<ShellResult> {
    // A command may change the screen (am start, input ...): locators must not take a
    // read of the tree from before it as a recent one.
    this.#ui?.noteInput();
    return this.#shell(command);
  }

  /** shell() for the UI engine, which notes its own input (its dumps are reads). */
  #shell(command: string): Promise<ShellResult> {
    return this.#named(async () => (await this.#phoneAdb()).shell(command));
  }

  /** Copies a local file (path) or bytes to `remote` on the phone. */
  push(source: string | Uint8Array, remote: string, options: { mode?: number } = {}): Promise<void> {
    return this.#named(async () => {
      const data = typeof source === 'string' ? await readFile(source) : source;
      await (await this.#phoneAdb()).push(data, remote, options);
    });
  }

  /** Reads a file from the phone. */
  pull(remote: string): Promise<Buffer> {
    return this.#named(async () => (await this.#phoneAdb()).pull(remote));
  }

  /** Installs an APK (a local path or its bytes). */
  install(apk: string | Uint8Array): Promise<void> {
    return this.#named(async () => {
      const data = typeof apk === 'string' ? await readFile(apk) : apk;
      await (await this.#phoneAdb()).install(data);
    });
  }

  /**
   * The screen as it is now, as PNG: captured on the phone (`screencap -p`) over the lease's
   * ADB connection. For the image the service keeps (no ADB needed, up to 2 s old), see
   * serviceScreenshot().
   */
  screenshot(): Promise<Buffer> {
    return this.#named(async () => (await this.#phoneAdb()).screencap());
  }

  // -------------------------------------------------------------------------------------
  // Stock tools: adb and Appium through a local tunnel

  /**
   * Connects the stock adb to this phone through a local tunnel and returns its serial
   * (`127.0.0.1:PORT`), for `adb -s SERIAL ...` or any tool that uses the adb server.
   * With `connect: false` only the tunnel is opened (connect it yourself: `adb connect SERIAL`).
   * The tunnel stays open until the lease ends.
   */
  adbSerial(options: { connect?: boolean } = {}): Promise<string> {
    return this.#named(async () => {
      this.#assertLive();
      if (!this.#tunnel) {
        const opening = this.#endpoint().then((endpoint) =>
          AdbTunnel.open(endpoint, { onError: (e) => this.#logger.debug?.(`adb tunnel: ${e.message}`) }),
        );
        this.#tunnel = opening;
        // A failed attempt is not cached: the next call tries again.
        opening.catch(() => {
          if (this.#tunnel === opening) this.#tunnel = null;
        });
      }
      const tunnel = await this.#tunnel;
      if (options.connect !== false) {
        if (!this.#adbConnected) {
          const connecting = adbConnect(tunnel.serial, this.#adbOptions);
          this.#adbConnected = connecting;
          connecting.catch(() => {
            if (this.#adbConnected === connecting) this.#adbConnected = null;
          });
        }
        await this.#adbConnected;
      }
      return tunnel.serial;
    });
  }

  /** Capabilities for Appium's UiAutomator2 driver on this phone (connects the stock adb first). */
  appiumCapabilities(options: AppiumOptions = {}): Promise<AppiumCapabilities> {
    return this.#named(async () => {
      const udid = await this.adbSerial();
      return appiumCapabilities({
        udid,
        systemPort: await freePort(),
        adbPort: adbServerPort(this.#adbOptions),
        skipInstallation: options.skipInstallation ?? (await this.#hasUiAutomator2()),
        ...(options.newCommandTimeout !== undefined ? { newCommandTimeout: options.newCommandTimeout } : {}),
        ...(options.extra ? { extra: options.extra } : {}),
      });
    });
  }

  /** Whether the UiAutomator2 server (its instrumentation) and the Appium settings app are installed. */
  async #hasUiAutomator2(): Promise<boolean> {
    const instrumentation = await this.shell('pm list instrumentation');
    if (!instrumentation.stdout.includes('io.appium.uiautomator2.server.test/')) return false;
    return (await this.shell('pm path io.appium.settings')).exitCode === 0;
  }

  // -------------------------------------------------------------------------------------
  // UI automation (src/ui): locators that wait, over the UiAutomator2 server or uiautomator dump

  /** The UI engine behind the locators, started on first use (see uiEngineOf()). */
  #engine(): UiEngine {
    this.#assertLive();
    this.#ui ??= new UiEngine({
      id: this.id,
      shell: (command) => this.#shell(command),
      adb: () => this.#phoneAdb(),
      logger: this.#logger,
    });
    return this.#ui;
  }

  /** Views matching an AndroidSelector (`{ text, res, desc, clazz, ... }`) or `xpath=...`. */
  locator(selector: Selector): Locator {
    return rootLocator(this.#engine()).locator(selector);
  }

  /** Views whose text contains `text` (case-insensitive), equals it with `{ exact: true }`, or matches a RegExp. */
  getByText(text: TextMatch, options: { exact?: boolean } = {}): Locator {
    return rootLocator(this.#engine()).getByText(text, options);
  }

  /** Views with this resource id: `username` (resolved in the app in front) or `com.app:id/username`. */
  getById(id: string | RegExp): Locator {
    return rootLocator(this.#engine()).getById(id);
  }

  /** Views with this content description (accessibility id). */
  getByDesc(desc: TextMatch): Locator {
    return rootLocator(this.#engine()).getByDesc(desc);
  }

  /** Views of this class, e.g. `android.widget.Button`. */
  getByClass(className: TextMatch): Locator {
    return rootLocator(this.#engine()).getByClass(className);
  }

  /** Starts an app's launcher activity and waits until it is in front. */
  launch(packageName: string, options: { timeout?: number } = {}): Promise<void> {
    return launchApp(this.#engine(), packageName, options);
  }

  /** Presses a key: 'Back', 'Home', 'Enter', 'Tab', ..., a KEYCODE_ name or a key code. */
  press(key: KeyName): Promise<void> {
    return pressKey(this.#engine(), key);
  }

  // -------------------------------------------------------------------------------------
  // Mobile web: ports and the phone's browser (all undone when the lease ends)

  /**
   * `adb forward`: listens on 127.0.0.1:localPort (0 picks a free port) and connects each
   * connection to `remote` on the phone (a port, or a spec like `localabstract:NAME`).
   * Resolves with the local port.
   */
  async forward(localPort: number, remote: number | string): Promise<number> {
    return (await this.#phoneAdb()).ports.forward(localPort, remote);
  }

  /**
   * `adb reverse`: the phone's `localhost:remotePort` reaches this machine's
   * 127.0.0.1:localPort (default the same port). Resolves with the phone's port (the one it
   * picked, for 0). A port already reversed throws PortAlreadyReversedError.
   */
  async reverse(remotePort: number, localPort: number = remotePort): Promise<number> {
    return (await this.#phoneAdb()).ports.reverse(remotePort, localPort);
  }

  /**
   * Playwright in the phone's Chrome: starts the browser if needed and resolves with its
   * BrowserContext (pages in it run on the phone). Needs @playwright/test.
   */
  async launchBrowser(options: LaunchBrowserOptions = {}): Promise<BrowserContext> {
    const adb = await this.#phoneAdb();
    const browser = await launchBrowser(
      {
        shell: (command) => adb.shell(command),
        forward: (local, remote) => adb.ports.forward(local, remote),
        removeForward: (local) => adb.ports.removeForward(local),
      },
      options,
    );
    this.#browsers.add(browser);
    browser.browser.on('disconnected', () => this.#browsers.delete(browser));
    return browser.context;
  }

  // -------------------------------------------------------------------------------------
  // Evidence: the screen's video and the whole log, over the lease's ADB connection

  /**
   * Starts recording the screen with the phone's own `screenrecord`. Past screenrecord's
   * time limit (3 minutes) the next piece starts by itself; stopRecording() joins them.
   */
  startRecording(options: RecordingOptions = {}): Promise<void> {
    return this.#named(async () => {
      this.#assertLive();
      if (this.#recording) {
        throw new ConfigurationError(
          `session ${this.id} is already recording its screen; call stopRecording(path) before starting again.`,
        );
      }
      const starting = this.#phoneAdb().then((adb) => PhoneRecording.start(adb, options, this.#logger));
      this.#recording = starting;
      starting.catch(() => {
        if (this.#recording === starting) this.#recording = null;
      });
      await starting;
    });
  }

  /**
   * Stops the recording, writes it to `path` as one MP4 (H.264) and deletes it on the phone.
   * screenrecord gets SIGINT and this waits until it has finished its file.
   */
  stopRecording(path: string): Promise<RecordingResult> {
    return this.#named(async () => (await this.#takeRecording()).stop(path));
  }

  /**
   * Stops the recording and deletes it on the phone, keeping nothing: for a recording that
   * turned out not to be needed (a test that passed). screenrecord is killed rather than
   * asked to finish its file, so this does not wait for the frames it has yet to encode.
   */
  discardRecording(): Promise<void> {
    return this.#named(async () => (await this.#takeRecording()).discard());
  }

  /** The running recording, now the caller's to stop; throws when there is none. */
  #takeRecording(): Promise<PhoneRecording> {
    this.#assertLive();
    const recording = this.#recording;
    if (!recording) {
      throw new ConfigurationError(
        `session ${this.id} is not recording its screen; call startRecording() first.`,
      );
    }
    this.#recording = null;
    return recording;
  }

  /**
   * Starts following the phone's whole log (`logcat -b all -v threadtime`, from now on)
   * into the file `path`, capped at `maxBytes` (8 MiB by default; the middle of a longer
   * log is cut, and the file says so). App crashes in it are reported by stopLogcat().
   */
  startLogcat(path: string, options: Omit<LogcatCaptureOptions, 'path'> = {}): Promise<void> {
    return this.#named(async () => {
      this.#assertLive();
      if (this.#logcat) {
        throw new ConfigurationError(`session ${this.id} already follows its log; call stopLogcat() first.`);
      }
      const starting = this.#phoneAdb().then((adb) => LogcatCapture.start(adb, { ...options, path }));
      this.#logcat = starting;
      starting.catch(() => {
        if (this.#logcat === starting) this.#logcat = null;
      });
      await starting;
    });
  }

  /** Stops following the log and finishes its file: what it holds, and the crashes it showed. */
  stopLogcat(): Promise<LogcatResult> {
    return this.#named(async () => {
      const capture = this.#logcat;
      if (!capture)
        throw new ConfigurationError(
          `session ${this.id} does not follow its log; call startLogcat(path) first.`,
        );
      this.#logcat = null;
      return (await capture).stop();
    });
  }

  // -------------------------------------------------------------------------------------
  // Service operations: through the phone-session API, no ADB connection needed

  /**
   * The screen as the service captured it (GET frame.png): it needs no ADB connection, so it
   * still answers when the phone's ADB link is stalled — the fixtures attach it when a test
   * fails — but the service captures at most once every two seconds, so the image may be
   * up to 2 s old. For the screen as it is now, use screenshot().
   */
  serviceScreenshot(): Promise<Image> {
    return this.#named(async () => {
      this.#assertLive();
      return this.#client.frame(this.id);
    });
  }

  /** @deprecated Renamed serviceScreenshot(), to tell it from screenshot() (the screen now, over ADB). */
  snapshot(): Promise<Image> {
    return this.serviceScreenshot();
  }

  /** Taps at (x, y) in screen pixels (the service's input.tap). To tap a view, use a locator's click(). */
  tap(x: number, y: number): Promise<void> {
    return this.#named(async () => {
      this.#assertLive();
      this.#ui?.noteInput();
      await this.#client.tap(this.id, x, y);
    });
  }

  /**
   * @deprecated Use phone.press('Home'), the one way to press a key (a step in the report,
   * like every other key). home() still sends the service's nav.home.
   */
  home(): Promise<void> {
    return this.#named(async () => {
      this.#assertLive();
      this.#ui?.noteInput();
      await this.#client.home(this.id);
    });
  }

  /** Launcher apps (apps.list). */
  apps(): Promise<AppEntry[]> {
    return this.#named(async () => {
      this.#assertLive();
      return this.#client.apps(this.id);
    });
  }

  /** An interactive viewer URL for a person (secret: show it to the user, never log it). */
  ownerViewer(): Promise<ViewerCapability> {
    return this.#named(async () => {
      this.#assertLive();
      return this.#client.ownerViewer(this.id);
    });
  }

  // -------------------------------------------------------------------------------------
  // The end

  /**
   * Ends the session and confirms cleanup. Idempotent (every call returns the same
   * outcome) and never throws: problems are reported through the logger and the outcome.
   */
  end(): Promise<EndedLease> {
    this.#ending ??= this.#end();
    return this.#ending;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.end();
  }

  async #end(): Promise<EndedLease> {
    const started = Date.now();
    // The DELETE goes out at once: local connections die with the session anyway, and a
    // stalled one must never stand between the process and ending the phone. They are
    // closed alongside, for at most LOCAL_CLOSE_MS.
    const local = this.#closeAdb();
    const result = await endAndConfirm(
      this.#client,
      { sessionId: this.id, requestKey: this.requestKey },
      { retryMs: this.#endRetryMs },
    );
    const bound = new AbortController();
    await Promise.race([local, sleep(LOCAL_CLOSE_MS, bound.signal).catch(() => undefined)]);
    bound.abort(); // the bound's timer must not keep the process alive
    let handedToReaper = false;
    const outcome = {
      sessionId: this.id,
      outcome: result.outcome,
      cleanupConfirmed: result.cleanupConfirmed,
      ...(result.error !== undefined ? { error: result.error } : {}),
    };
    try {
      handedToReaper = this.#onEnded(outcome);
    } catch (error) {
      this.#logger.warn(`recording the end of ${this.id} failed: ${messageOf(error)}`);
    }
    const ended: EndedLease = { ...outcome, handedToReaper };
    if (result.outcome === 'failed') {
      // The cause's own message may end in a period; the sentence after it must not add a second.
      const why = messageOf(result.error).replace(/[\s.]+$/, '');
      const next = handedToReaper
        ? 'the reaper keeps trying until it has ended or its deadline passes'
        : 'it ends at its deadline at the latest, and endLeftovers() will try again';
      this.#logger.warn(
        `could not end session ${this.id} within ${formatDuration(this.#endRetryMs)}: ${why}; ${next}.`,
      );
    } else {
      reportEnd(this.#logger, this.id, result, Date.now() - started);
    }
    return ended;
  }

  async #closeAdb(): Promise<void> {
    const adb = this.#adb;
    const tunnel = this.#tunnel;
    const connected = this.#adbConnected;
    const browsers = [...this.#browsers];
    this.#browsers.clear();
    this.#tunnel = null;
    this.#adbConnected = null;
    // The stock tools' tunnel goes at once, beside the DELETE, never behind the log or the
    // UI server below: once the session ends, the adb server reconnects to a connected
    // serial several times a second, and every attempt through a tunnel still open would
    // carry the dead code to the gateway. The adb server is told first, so it stops trying.
    const stockTools = tunnel?.then(async (t) => {
      if (connected)
        await connected.then(
          () => adbDisconnect(t.serial, this.#adbOptions),
          () => undefined,
        );
      await t.close();
    });
    // Closing is best effort: a tunnel that never opened has nothing to close.
    stockTools?.catch(() => undefined);
    // A log still followed keeps what it read; a recording still running is dropped with
    // the phone (its screenrecord is hung up when the connection closes).
    const logcat = this.#logcat;
    this.#logcat = null;
    this.#recording = null;
    await logcat?.then((c) => c.stop()).catch(() => undefined);
    // Playwright is told first, so its pages fail with "closed" rather than a broken pipe.
    await Promise.allSettled(browsers.map((b) => b.close()));
    this.#adb = null;
    // The UI server's streams ride on the ADB connection: stop them first.
    await this.#ui?.close().catch(() => undefined);
    await Promise.allSettled([adb?.then((a) => a.close()), stockTools]);
  }

  /**
   * Runs an operation on this lease; what it throws names this session (sessionId, and in
   * the message) and carries the start's request key, so a run with many phones can tell
   * which one failed.
   */
  async #named<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw withLeaseContext(error, { sessionId: this.id, requestKey: this.requestKey });
    }
  }

  #assertLive(): void {
    if (this.#ending) throw new LeaseEndedError(this.id);
  }

  #phoneAdb(): Promise<PhoneAdb> {
    this.#assertLive();
    if (!this.#adb) {
      const connecting = this.#endpoint().then((endpoint) => PhoneAdb.connect(endpoint, { serial: this.id }));
      this.#adb = connecting;
      // A failed connection is not cached: the next call tries again.
      connecting.catch(() => {
        if (this.#adb === connecting) this.#adb = null;
      });
    }
    return this.#adb;
  }

  async #endpoint(): Promise<AdbEndpoint> {
    let access: AdbAccess | Session['adb'] = this.#session.adb;
    if (!access) access = await this.#client.adb(this.id);
    if (!access || ('enabled' in access && !access.enabled) || !access.host || !access.port || !access.code) {
      throw new AdbError(
        'adb_unavailable',
        `ADB access to session ${this.id} is not enabled (it may have been revoked).`,
      );
    }
    return { host: access.host, port: access.port, code: access.code };
  }

  /** Logs and inspection show the id and state, never the secrets the session carries. */
  [inspect.custom](): string {
    return `Lease { id: '${this.id}', state: '${this.#session.state}', device: ${JSON.stringify(this.#session.device)}${this.ended ? ', ended' : ''} }`;
  }

  toJSON(): { id: string; state: string; device: string | null; requestKey: string } {
    return {
      id: this.id,
      state: this.#session.state,
      device: this.#session.device,
      requestKey: this.requestKey,
    };
  }
}
