/**
 * The real browser behind the virtual phone's Chrome: a headless Chromium process sized and
 * dressed like the phone (CSS viewport, device pixel ratio, a mobile user agent, touch), with
 * every connection it makes going through the phone's network (its SOCKS5 proxy, loopback
 * included), and a fresh profile that is deleted with the process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, watch, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The browser's download directory, inside its profile. */
const DOWNLOAD_DIR = 'Download';

export interface ChromiumOptions {
  executable: string;
  /** The page's CSS viewport (screen pixels / scale, without the system bars). */
  cssWidth: number;
  cssHeight: number;
  /** Device pixel ratio (density / 160). */
  scale: number;
  userAgent: string;
  /** The phone network's SOCKS5 proxy on 127.0.0.1. */
  proxyPort: number;
  /** The first page (an intent's URL, or about:blank). */
  url: string;
  /** How long to wait for DevTools to listen (default 20 s). */
  startTimeoutMs?: number;
}

/** Chromium's switches for a quiet, reproducible, phone-shaped headless browser. */
export function chromiumArgs(options: ChromiumOptions, userDataDir: string): string[] {
  return [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--no-default-browser-check',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-dev-shm-usage',
    '--mute-audio',
    '--hide-scrollbars',
    `--user-data-dir=${userDataDir}`,
    '--remote-debugging-address=127.0.0.1',
    '--remote-debugging-port=0',
    `--window-size=${options.cssWidth},${options.cssHeight}`,
    `--force-device-scale-factor=${options.scale}`,
    `--user-agent=${options.userAgent}`,
    '--touch-events=enabled',
    // Memory (each phone runs its own Chromium): no spare renderer kept warm for the next
    // site, no preloaded browser-UI pages (the omnibox popup's WebUI renderer), and the
    // network service in the browser process as Chrome on low-memory Android runs it. Each
    // saves a process; together ~40 MiB of the group's PSS (bench/mobile-web.ts).
    '--disable-features=SpareRendererForSitePerProcess,PreloadTopChromeWebUI,WebUIOmniboxPopup',
    '--enable-features=NetworkServiceInProcess2',
    // Every connection, localhost included (Chromium bypasses proxies for loopback unless
    // told not to), goes through the phone's network.
    `--proxy-server=socks5://127.0.0.1:${options.proxyPort}`,
    '--proxy-bypass-list=<-loopback>',
    // WebRTC's UDP would go round the proxy, straight out of the server: only what the proxy
    // carries leaves the phone.
    '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
    // The first page comes from an intent's data: after `--`, Chromium reads it as a URL
    // whatever it looks like, never as a switch (`--renderer-cmd-prefix=...` would run a
    // command on the server).
    '--',
    options.url,
  ];
}

export class ChromiumProcess {
  private exited: Promise<void>;
  private stopped = false;
  private staged = 0;

  private constructor(
    private readonly child: ChildProcess,
    /** Ends the browser's process group should this process end without stopping it. */
    private readonly watchdog: ChildProcess | null,
    private readonly userDataDir: string,
    /** ws://127.0.0.1:PORT/devtools/browser/ID */
    readonly browserWsUrl: string,
    /** The DevTools HTTP/WebSocket port on 127.0.0.1. */
    readonly debugPort: number,
    exited: Promise<void>,
  ) {
    this.exited = exited;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Starts Chromium and resolves once its DevTools endpoint listens. */
  static async launch(options: ChromiumOptions): Promise<ChromiumProcess> {
    const userDataDir = await mkdtemp(join(tmpdir(), 'phonelease-chrome-'));
    // The profile's own download directory is the browser's default, so a download goes
    // there whatever a DevTools client set and took back when it left (never the server's
    // ~/Downloads).
    mkdirSync(join(userDataDir, 'Default'), { recursive: true });
    writeFileSync(
      join(userDataDir, 'Default', 'Preferences'),
      JSON.stringify({
        download: { default_directory: join(userDataDir, DOWNLOAD_DIR), prompt_for_download: false },
      }),
    );
    // Its own process group, so stop() ends the renderer, GPU and zygote children too.
    const child = spawn(options.executable, chromiumArgs(options, userDataDir), {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    const watchdog = child.pid === undefined ? null : startWatchdog(child.pid);
    const exited = new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.once('error', () => resolve());
    });
    let stderr = '';
    try {
      const wsUrl = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(new Error(`Chromium did not open DevTools within ${options.startTimeoutMs ?? 20_000} ms`)),
          options.startTimeoutMs ?? 20_000,
        );
        child.once('error', (error) => {
          clearTimeout(timer);
          reject(new Error(`cannot start ${options.executable}: ${error.message}`));
        });
        child.once('exit', (code, signal) => {
          clearTimeout(timer);
          reject(
            new Error(
              `Chromium exited (${signal ?? `code ${code}`}) before DevTools listened: ${stderr.slice(-500)}`,
            ),
          );
        });
        child.stderr?.on('data', (chunk: Buffer) => {
          // Keep only the tail: Chromium can be chatty, and only the last lines explain a failure.
          stderr = (stderr + chunk.toString('utf8')).slice(-4000);
          const match = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
      });
      // Drain stderr from now on so a full pipe never stalls the browser.
      child.stderr?.resume();
      const port = Number(new URL(wsUrl).port);
      return new ChromiumProcess(child, watchdog, userDataDir, wsUrl, port, exited);
    } catch (error) {
      watchdog?.kill('SIGKILL');
      killGroup(child);
      await exited;
      await rm(userDataDir, { recursive: true, force: true }).catch(() => undefined);
      throw error;
    }
  }

  /**
   * A copy of a phone's file for the browser to read (a file input's choice), inside its
   * profile, which is deleted with it. Each copy gets its own directory, so the name stays.
   */
  stageFile(name: string, data: Buffer): string {
    const dir = join(this.userDataDir, 'phone-files', String(++this.staged));
    mkdirSync(dir, { recursive: true });
    const path = join(dir, name);
    writeFileSync(path, data);
    return path;
  }

  /** Where the browser's downloads go: inside its profile, deleted with it. */
  downloadDir(): string {
    const dir = join(this.userDataDir, DOWNLOAD_DIR);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /**
   * Calls `done` with each download once it is complete: Chromium writes a download as
   * `NAME.crdownload` and renames it when the last byte is in. Returns the unwatch.
   */
  watchDownloads(done: (name: string, data: Buffer) => void): () => void {
    const dir = this.downloadDir();
    const seen = new Map<string, number>();
    const watcher = watch(dir, (_event, name) => {
      if (!name || name.endsWith('.crdownload')) return;
      try {
        const stat = statSync(join(dir, name));
        // A small download may be created empty and written in place within the same
        // millisecond: it is read once it has its bytes.
        if (!stat.isFile() || stat.size === 0 || seen.get(name) === stat.mtimeMs) return;
        seen.set(name, stat.mtimeMs);
        done(name, readFileSync(join(dir, name)));
      } catch {
        // Gone again (a cancelled download), or not there yet.
      }
    });
    watcher.on('error', () => watcher.close());
    return () => watcher.close();
  }

  /** Ends the browser and all its processes, then deletes its profile. */
  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      // The watchdog first: it must not outlive the group and later signal a reused id.
      this.watchdog?.kill('SIGKILL');
      killGroup(this.child);
    }
    await this.exited;
    await rm(this.userDataDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * A shell that ends Chromium's process group when this process ends, however it ends (a
 * crash, an unhandled SIGTERM, kill -9), so no browser outlives the server that started
 * it: the shell waits on a pipe only this process holds open, which the kernel closes when
 * this process is gone. Not on Windows, which has no process groups to signal.
 */
function startWatchdog(pgid: number): ChildProcess | null {
  if (process.platform === 'win32') return null;
  const dog = spawn('/bin/sh', ['-c', `read _; kill -9 -${pgid} 2>/dev/null`], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  dog.on('error', () => undefined);
  // Neither the shell nor its pipe keeps this process alive.
  dog.unref();
  (dog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return dog;
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // The group is already gone (or never formed): kill the browser itself.
    child.kill('SIGKILL');
  }
}
