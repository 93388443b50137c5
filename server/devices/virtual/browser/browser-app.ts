/**
 * Chrome on the virtual phone (`com.android.chrome`): a real headless Chromium, started when
 * the browser is first used and stopped by `am force-stop` or the phone's shutdown.
 *
 * As on a real phone, its DevTools are reachable through the phone's abstract socket
 * `chrome_devtools_remote` (`adb forward tcp:X localabstract:chrome_devtools_remote`, what
 * chrome://inspect and Playwright use), and every connection it makes goes through the
 * phone's own network. The phone keeps its own DevTools connection to watch the front tab:
 * it gives pages the phone's metrics (mobile viewport, touch) and screencasts them, and the
 * UI draws the latest frame below Chrome's toolbar, so frame.png, the viewer and
 * screenshots show the page.
 */
import { connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { PNG } from 'pngjs';
import type { DeviceLogger } from '../../types.js';
import type { PhoneNetwork } from '../network.js';
import {
  DEBUG_COMMAND_LINE,
  chromeSwitches,
  type ChromeSwitches,
  type CommandLineSource,
} from './command-line.js';
import { isWebPage } from './devtools-guard.js';
import { relayDevTools } from './devtools-relay.js';
import { CdpClient } from './cdp.js';
import { ChromiumProcess } from './chromium.js';

export const BROWSER_PACKAGE = 'com.android.chrome';
export const BROWSER_ACTIVITY = 'com.google.android.apps.chrome.Main';
export const DEVTOOLS_SOCKET = 'chrome_devtools_remote';
/** Chrome's toolbar (the address bar) above the page, in dp. */
export const BROWSER_TOOLBAR_DP = 56;
/** Viewers redraw on every change: at most this many screen updates per second from the page. */
const FRAME_NOTIFY_MS = 100;
/**
 * The page is screencast only while someone looks at the phone's screen: a viewer, or a
 * capture (frame.png, screencap) in the last CAST_LINGER_MS. A screencast makes Chromium
 * capture every frame it draws, which slowed every action on the page by a third (goto +
 * click + assert, bench/mobile-web.ts) for frames nobody saw.
 */
const CAST_LINGER_MS = 3_000;
/** How long a capture waits for the page's first frame once the screencast (re)starts. */
const FIRST_FRAME_MS = 1_000;

/** How the backend runs browsers: shared by every phone. */
export interface BrowserConfig {
  executable: string;
  /** Chrome for Android's user agent for this Chromium's version. */
  userAgent(): Promise<string>;
}

/** Where the page is drawn on the phone's screen, in screen pixels. */
export interface BrowserGeometry {
  left: number;
  top: number;
  width: number;
  height: number;
  /** Device pixel ratio. */
  scale: number;
}

/**
 * Where Chrome draws its page on a display whose app window is `content` (pixels) and whose
 * dp is `dp` pixels: the window below the toolbar, at that pixel ratio; at least a pixel each
 * way, however dense the display.
 */
export function pageGeometry(
  content: { left: number; top: number; right: number; bottom: number },
  dp: number,
): BrowserGeometry {
  const top = content.top + Math.round(BROWSER_TOOLBAR_DP * dp);
  return {
    left: content.left,
    top,
    width: Math.max(1, content.right - content.left),
    height: Math.max(1, content.bottom - top),
    scale: dp,
  };
}

/** A decoded screencast frame (RGBA). */
export interface BrowserFrame {
  width: number;
  height: number;
  data: Buffer;
}

/** What the UI shows for the browser. */
export interface BrowserView {
  url: string;
  title: string;
  frame(): BrowserFrame | null;
  /** A finger tap on the page at (x, y) screen pixels from its top-left corner. */
  tap(x: number, y: number): void;
  /** A finger moved on the page from (x1, y1) to (x2, y2) in `durationMs`, as tap() places it. */
  swipe(x1: number, y1: number, x2: number, y2: number, durationMs: number): void;
}

interface PageTarget {
  targetId: string;
  url: string;
  title: string;
  /**
   * The phone's own DevTools session on the tab, attached once with the phone's metrics.
   * Every tab keeps it, not only the one in front: an emulation override lasts only as
   * long as its session, and a tab in the background is still phone-sized on a phone
   * (Playwright screenshots every open tab when a test fails).
   */
  session: Promise<string>;
}

interface Running {
  chromium: ChromiumProcess;
  cdp: CdpClient;
  /** Page targets, most recently opened last: the last one is the tab in front. */
  pages: PageTarget[];
  /**
   * The tab in front (taps and navigations go to it) and whether it is screencast now;
   * `framed` once a frame of the current screencast arrived.
   */
  watched: { targetId: string; sessionId: string; casting: boolean; framed: boolean } | null;
  /** Stops handing finished downloads to the phone. */
  unwatchDownloads: () => void;
}

export interface BrowserAppOptions {
  config: BrowserConfig;
  network: PhoneNetwork;
  /** Where the page is on the screen now (the display may be sized anew: see resize()). */
  geometry(): BrowserGeometry;
  log: DeviceLogger;
  /** Where Chrome reads its command-line file when it starts (see command-line.ts). */
  commandLine: CommandLineSource;
  /** A file on the phone as Chrome's app reads it (a file input's choice), or why it cannot. */
  readPhoneFile(path: string): Buffer | { error: string };
  /** Keeps a finished download on the phone (its Download folder), as Chrome does. */
  saveDownload(name: string, data: Buffer): void;
  /** A logcat line from the browser's process (tag `chromium` unless given). */
  logcat(priority: 'I' | 'W' | 'E', message: string, tag?: string): void;
  /** The picture changed (a new frame, another URL). */
  changed(): void;
}

export class BrowserApp implements BrowserView {
  private running: Promise<Running> | null = null;
  private current: Running | null = null;
  private framePng: { seq: number; png: Buffer } | null = null;
  private decoded: { seq: number; frame: BrowserFrame } | null = null;
  private frameSeq = 0;
  private notifyTimer: NodeJS.Timeout | null = null;
  private stopping: Promise<void> = Promise.resolve();
  /** Viewers watching the phone's screen (they keep the screencast on). */
  private viewers = 0;
  /** Captures keep the screencast on until then (ms since the epoch). */
  private demandUntil = 0;
  private lingerTimer: NodeJS.Timeout | null = null;
  /** Captures waiting for the first frame of a screencast that just started. */
  private frameWaiters: (() => void)[] = [];
  /** The finger's gestures being sent, one after another, and when the last one ends (s). */
  private touching: Promise<void> = Promise.resolve();
  private touchedUntilS = 0;
  /** The DevTools socket's name while the browser runs (a command-line switch may set it). */
  private socketName = DEVTOOLS_SOCKET;

  constructor(private readonly options: BrowserAppOptions) {}

  get isRunning(): boolean {
    return this.running !== null;
  }

  /** The browser process id while it runs (for tests that check nothing is left). */
  get pid(): number | undefined {
    return this.current?.chromium.pid;
  }

  get url(): string {
    const front = this.current?.pages.at(-1);
    return front?.url ?? '';
  }

  get title(): string {
    return this.current?.pages.at(-1)?.title ?? '';
  }

  frame(): BrowserFrame | null {
    const png = this.framePng;
    if (!png) return null;
    // Decoded only when the screen is drawn (frame.png, a viewer): frames nobody looks at cost nothing.
    if (this.decoded?.seq !== png.seq) {
      try {
        const image = PNG.sync.read(png.png);
        this.decoded = {
          seq: png.seq,
          frame: { width: image.width, height: image.height, data: image.data },
        };
      } catch (error) {
        this.options.log.debug('virtual browser: undecodable frame', { error: String(error) });
        return this.decoded?.frame ?? null;
      }
    }
    return this.decoded.frame;
  }

  /** How many viewers watch the screen now; the page is screencast while any does. */
  setViewers(count: number): void {
    this.viewers = count;
    if (this.current) this.updateCast(this.current);
  }

  /**
   * Makes frame() show the page as it is now, for a capture of the screen: starts the
   * screencast if it is off (it stays on for CAST_LINGER_MS) and waits for its first frame.
   */
  async refreshFrame(): Promise<void> {
    const r = this.current;
    if (!r) return;
    this.demandUntil = Date.now() + CAST_LINGER_MS;
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    this.lingerTimer = setTimeout(() => {
      this.lingerTimer = null;
      if (this.current) this.updateCast(this.current);
    }, CAST_LINGER_MS + 10);
    this.lingerTimer.unref();
    this.updateCast(r);
    // No tab attached yet (it starts casting once attached), or a frame is already fresh.
    if (!r.watched?.casting || r.watched.framed) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, FIRST_FRAME_MS);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.frameWaiters.push(done);
    });
  }

  /**
   * A tap on the tab in front, as a finger makes it: a touch at the page's CSS position, which
   * the page sees as touchstart/touchend and then a click (touch is on, as on a phone).
   */
  tap(x: number, y: number): void {
    this.touch([{ x, y }], 0, 'tap');
  }

  /**
   * A swipe on the tab in front: the touch goes down at the first point, moves along the line
   * a frame (16 ms) at a time, and lifts at the end, time-stamped over `durationMs` as a finger
   * makes it (sent at once: the page's scroll and fling follow from the time stamps). The page
   * sees touchstart, touchmove and touchend, and scrolls where no script takes them.
   */
  swipe(x1: number, y1: number, x2: number, y2: number, durationMs: number): void {
    const steps = Math.max(2, Math.min(60, Math.round(durationMs / 16)));
    const path = Array.from({ length: steps + 1 }, (_, i) => ({
      x: x1 + ((x2 - x1) * i) / steps,
      y: y1 + ((y2 - y1) * i) / steps,
    }));
    this.touch(path, durationMs, 'swipe');
  }

  /** One finger down at the path's first point, moved along it over `durationMs`, and up. */
  private touch(path: { x: number; y: number }[], durationMs: number, what: string): void {
    const r = this.current;
    const sessionId = r?.watched?.sessionId;
    if (!r || !sessionId) return;
    const { scale } = this.options.geometry();
    const at = (p: { x: number; y: number }) => ({
      x: p.x / scale,
      y: p.y / scale,
      radiusX: 1,
      radiusY: 1,
      force: 1,
      id: 0,
    });
    // One finger: a gesture follows the last one, in its events and in their time stamps
    // (a swipe's run up to durationMs ahead of the clock).
    const startS = Math.max(Date.now() / 1000, this.touchedUntilS + 0.016);
    this.touchedUntilS = startS + durationMs / 1000;
    const step = path.length > 1 ? durationMs / 1000 / (path.length - 1) : 0;
    const events = [
      ...path.map((p, i) => ({
        type: i === 0 ? 'touchStart' : 'touchMove',
        touchPoints: [at(p)],
        timestamp: startS + i * step,
      })),
      { type: 'touchEnd', touchPoints: [], timestamp: startS + durationMs / 1000 },
    ];
    this.touching = this.touching
      .then(async () => {
        for (const event of events) await r.cdp.send('Input.dispatchTouchEvent', event, sessionId);
      })
      .catch((error: unknown) =>
        this.options.log.debug(`virtual browser: ${what} not delivered`, { error: String(error) }),
      );
  }

  /**
   * What an intent does: starts the browser (with `url` as its first page) or shows `url`
   * in the tab in front. Returns at once; the browser comes up in the background like an
   * Android app, and its DevTools socket accepts connections meanwhile (they wait).
   */
  open(given: string | null): void {
    // Chrome for Android would show a file: or content: URI from the phone's storage; the
    // browser behind it would show the server's. Web pages only.
    const url = given !== null && !isWebPage(given) ? null : given;
    if (given !== null && url === null)
      this.options.logcat(
        'E',
        `cannot open ${given}: only web pages are modeled by the virtual phone's Chrome`,
      );
    if (!this.running) {
      this.start(url ?? 'about:blank');
      return;
    }
    if (url) {
      this.running.then(
        (r) => this.navigate(r, url),
        () => undefined,
      );
    }
  }

  /** Ends the browser process (and its children), its socket and its frames. */
  stop(): Promise<void> {
    const running = this.running;
    this.running = null;
    this.current = null;
    this.framePng = null;
    this.decoded = null;
    if (this.notifyTimer) clearTimeout(this.notifyTimer);
    this.notifyTimer = null;
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    for (const done of this.frameWaiters.splice(0)) done();
    const network = this.options.network;
    if (network.abstractSockets.get(this.socketName) === this.socketHandler)
      network.abstractSockets.delete(this.socketName);
    if (!running) return this.stopping;
    this.stopping = running.then(
      async (r) => {
        r.unwatchDownloads();
        r.cdp.close();
        await r.chromium.stop();
        this.options.logcat('I', 'Chrome stopped');
      },
      () => undefined,
    );
    this.options.changed();
    return this.stopping;
  }

  private readonly socketHandler = (socket: Duplex): void => {
    const running = this.running;
    if (!running) {
      socket.destroy();
      return;
    }
    running.then(
      (r) => {
        // No Nagle: every DevTools command and its answer is a small message that must not
        // wait for the previous one's ACK (what made actions on the phone's page slow).
        const devtools = netConnect({ host: '127.0.0.1', port: r.chromium.debugPort, noDelay: true });
        relayDevTools(socket, devtools, new URL(r.chromium.browserWsUrl).pathname, {
          readPhoneFile: (path) => this.options.readPhoneFile(path),
          stageFile: (name, data) => r.chromium.stageFile(name, data),
          downloadDir: () => r.chromium.downloadDir(),
        });
      },
      () => socket.destroy(),
    );
  };

  /** The switches in Chrome's command-line file, or why Chrome cannot start (a file over its limit). */
  private readSwitches(): ChromeSwitches | { failed: string } {
    try {
      return chromeSwitches(this.options.commandLine, BROWSER_PACKAGE);
    } catch (error) {
      return { failed: `java.lang.RuntimeException: ${(error as Error).message}` };
    }
  }

  /**
   * What Chrome's process logs of its command line once it runs, and what the virtual phone
   * adds: the switches it does not apply, and a debug file Chrome did not read.
   */
  private logSwitches(switches: ChromeSwitches): void {
    // Not Chrome's own line: on a phone, a file Chrome ignores is a silent mystery.
    if (switches.debugFileIgnored)
      this.options.logcat(
        'W',
        `${DEBUG_COMMAND_LINE} not read: Chrome reads it only as the debug app on a user build (adb shell am set-debug-app --persistent ${BROWSER_PACKAGE})`,
      );
    if (switches.words)
      this.options.logcat(
        'I',
        `COMMAND-LINE FLAGS: [${switches.words.join(', ')}] (from ${switches.file})`,
        'cr_CommandLine',
      );
    if (switches.notApplied.length > 0)
      this.options.logcat(
        'W',
        `not applied by the virtual phone's Chrome (its browser runs with the phone's own switches): ${switches.notApplied.join(' ')}`,
      );
  }

  private start(url: string): void {
    const { config, network } = this.options;
    const geometry = this.options.geometry();
    const switches = this.readSwitches();
    this.socketName = ('socketName' in switches && switches.socketName) || DEVTOOLS_SOCKET;
    // A name something else holds (an `adb reverse` listener): Chrome runs without DevTools,
    // as its DevTools server fails to bind.
    const taken = network.abstractSockets.has(this.socketName);
    if (!taken) network.abstractSockets.set(this.socketName, this.socketHandler);
    const starting = (async (): Promise<Running> => {
      if ('failed' in switches) throw new Error(switches.failed);
      const [userAgent, proxyPort] = await Promise.all([
        switches.userAgent ?? config.userAgent(),
        network.proxyPort(),
      ]);
      // Logged from Chrome's process, which the activity manager has started by now.
      this.logSwitches(switches);
      if (taken)
        this.options.logcat(
          'E',
          `Cannot start http server for devtools: @${this.socketName} is in use (Address already in use)`,
        );
      const chromium = await ChromiumProcess.launch({
        executable: config.executable,
        cssWidth: Math.round(geometry.width / geometry.scale),
        cssHeight: Math.round(geometry.height / geometry.scale),
        scale: geometry.scale,
        userAgent,
        proxyPort,
        url,
      });
      let cdp: CdpClient;
      try {
        cdp = await CdpClient.connect(chromium.browserWsUrl);
      } catch (error) {
        await chromium.stop();
        throw error;
      }
      // Downloads go where Chrome for Android puts them, the phone's Download folder, by
      // way of the browser's own profile (never a directory of the server's choosing).
      const unwatchDownloads = chromium.watchDownloads((name, data) => this.options.saveDownload(name, data));
      const r: Running = { chromium, cdp, pages: [], watched: null, unwatchDownloads };
      this.watchTargets(r);
      // Downloads into the browser's own directory, from where they go to the phone (its
      // profile makes that the default too, which a client that leaves gives back).
      await cdp.send('Browser.setDownloadBehavior', {
        behavior: 'allow',
        downloadPath: chromium.downloadDir(),
      });
      await cdp.send('Target.setDiscoverTargets', { discover: true });
      return r;
    })();
    this.running = starting;
    starting.then(
      (r) => {
        if (this.running !== starting) return;
        this.current = r;
        this.options.logcat(
          'I',
          `Chrome started (pid ${r.chromium.pid ?? '?'}), ${taken ? 'without DevTools' : `DevTools on @${this.socketName}`}`,
        );
      },
      (error: unknown) => {
        if (this.running !== starting) return;
        // Like an app that crashes at launch: the socket goes away and the log says why.
        this.options.logcat(
          'E',
          `Chrome failed to start: ${error instanceof Error ? error.message : String(error)}`,
        );
        void this.stop();
      },
    );
  }

  private watchTargets(r: Running): void {
    const { cdp } = r;
    cdp.on('Target.targetCreated', (params) => {
      const info = params.targetInfo as { targetId: string; type: string; url: string; title: string };
      if (info.type !== 'page') return;
      const session = this.attachPage(r, info.targetId);
      // A tab closed before the phone attached: nothing to do, whoever awaits it handles it.
      session.catch(() => undefined);
      r.pages.push({ targetId: info.targetId, url: info.url, title: info.title, session });
      this.watchFront(r);
    });
    cdp.on('Target.targetInfoChanged', (params) => {
      const info = params.targetInfo as { targetId: string; url: string; title: string };
      const page = r.pages.find((p) => p.targetId === info.targetId);
      if (!page) return;
      page.url = info.url;
      page.title = info.title;
      if (page === r.pages.at(-1)) this.scheduleNotify();
    });
    cdp.on('Target.targetDestroyed', (params) => {
      const targetId = params.targetId as string;
      r.pages = r.pages.filter((p) => p.targetId !== targetId);
      if (r.watched?.targetId === targetId) {
        r.watched = null;
        this.framePng = null;
        this.watchFront(r);
      }
    });
    cdp.on('Page.screencastFrame', (params, sessionId) => {
      if (!sessionId) return;
      // Acknowledge every frame, or Chromium stops sending them.
      cdp.send('Page.screencastFrameAck', { sessionId: params.sessionId }, sessionId).catch(() => undefined);
      if (r.watched?.sessionId !== sessionId || this.current !== r) return;
      this.framePng = { seq: ++this.frameSeq, png: Buffer.from(params.data as string, 'base64') };
      r.watched.framed = true;
      for (const done of this.frameWaiters.splice(0)) done();
      this.scheduleNotify();
    });
  }

  /** Attaches the phone to a tab: the phone's metrics (mobile viewport, density) and touch. */
  private async attachPage(r: Running, targetId: string): Promise<string> {
    const { cdp } = r;
    const { sessionId } = (await cdp.send('Target.attachToTarget', { targetId, flatten: true })) as {
      sessionId: string;
    };
    await Promise.all([
      this.emulateDisplay(cdp, sessionId),
      cdp.send('Emulation.setTouchEmulationEnabled', { enabled: true, maxTouchPoints: 5 }, sessionId),
    ]);
    return sessionId;
  }

  /** Gives a tab the phone's metrics as the display is sized now: its CSS viewport and density. */
  private emulateDisplay(cdp: CdpClient, sessionId: string): Promise<unknown> {
    const geometry = this.options.geometry();
    return cdp.send(
      'Emulation.setDeviceMetricsOverride',
      {
        width: Math.round(geometry.width / geometry.scale),
        height: Math.round(geometry.height / geometry.scale),
        deviceScaleFactor: geometry.scale,
        mobile: true,
      },
      sessionId,
    );
  }

  /**
   * The display was sized anew (`wm size`, `wm density`): every tab takes the new metrics,
   * as a page on a phone gets a resize. The frame of the old size goes, and the screencast
   * starts again once the tab in front has its new size.
   */
  resize(): void {
    const r = this.current;
    if (!r) return;
    const resized = r.pages.map((page) =>
      page.session
        .then((sessionId) => this.emulateDisplay(r.cdp, sessionId))
        .catch((error: unknown) =>
          this.options.log.debug('virtual browser: a tab kept its size', { error: String(error) }),
        ),
    );
    this.framePng = null;
    this.decoded = null;
    const watched = r.watched;
    if (!watched?.casting) return;
    watched.casting = false;
    watched.framed = false;
    r.cdp.send('Page.stopScreencast', {}, watched.sessionId).catch(() => undefined);
    void Promise.all(resized).then(() => {
      if (this.current === r && r.watched === watched) this.updateCast(r);
    });
  }

  /** Follows the tab in front (the most recently opened one), as the phone's screen shows it. */
  private watchFront(r: Running): void {
    const front = r.pages.at(-1);
    if (!front || r.watched?.targetId === front.targetId) return;
    const previous = r.watched;
    const { cdp } = r;
    r.watched = { targetId: front.targetId, sessionId: '', casting: false, framed: false };
    const watching = r.watched;
    (async () => {
      if (previous?.casting) {
        previous.casting = false;
        await cdp.send('Page.stopScreencast', {}, previous.sessionId).catch(() => undefined);
      }
      watching.sessionId = await front.session;
      if (r.watched === watching) this.updateCast(r);
    })().catch((error: unknown) => {
      // A tab closed while we attached: the next front tab takes over.
      this.options.log.debug('virtual browser: cannot watch the front tab', { error: String(error) });
    });
  }

  /** Screencasts the tab in front while someone looks at the screen, and only then. */
  private updateCast(r: Running): void {
    const watched = r.watched;
    if (!watched?.sessionId) return;
    const wanted = this.viewers > 0 || Date.now() < this.demandUntil;
    if (wanted === watched.casting) return;
    watched.casting = wanted;
    watched.framed = false;
    const { cdp } = r;
    const geometry = this.options.geometry();
    if (!wanted) {
      // The last frame stays on the screen; the next capture starts the screencast again.
      cdp.send('Page.stopScreencast', {}, watched.sessionId).catch(() => undefined);
      return;
    }
    cdp
      .send(
        'Page.startScreencast',
        { format: 'png', maxWidth: geometry.width, maxHeight: geometry.height, everyNthFrame: 1 },
        watched.sessionId,
      )
      .catch((error: unknown) => {
        this.options.log.debug('virtual browser: cannot screencast the front tab', { error: String(error) });
      });
  }

  /** Tells the screen, at most every FRAME_NOTIFY_MS, that the page changed. */
  private scheduleNotify(): void {
    if (this.notifyTimer) return;
    this.notifyTimer = setTimeout(() => {
      this.notifyTimer = null;
      this.options.changed();
    }, FRAME_NOTIFY_MS);
    this.notifyTimer.unref();
  }

  private navigate(r: Running, url: string): void {
    const front = r.watched?.sessionId ? r.watched : null;
    const go = front
      ? r.cdp.send('Page.navigate', { url }, front.sessionId)
      : r.cdp.send('Target.createTarget', { url });
    go.catch((error: unknown) => this.options.logcat('W', `cannot open ${url}: ${String(error)}`));
  }
}
