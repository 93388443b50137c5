/**
 * The fast back end: the UiAutomator2 server (the one Appium uses) on the phone, reached
 * over the lease's own ADB connection. Its APKs come from the npm package
 * `appium-uiautomator2-server`; they are installed once per phone (skipped when the same
 * version is there) and the server runs while its `am instrument -w` stream stays open.
 * Each HTTP request travels as a `tcp:6790` ADB stream — what `adb forward` does, without
 * a local port, the stock adb or an Appium process.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { AdbSocket } from '@yume-chan/adb';
import type { RunningCommand } from '../adb/phone-adb.js';
import { messageOf } from '../util/message.js';
import type { PhoneChannel, UiDriver } from './driver.js';
import { centre, type UiNode } from './tree.js';

export const UIA2_SERVER_PACKAGE = 'io.appium.uiautomator2.server';
export const UIA2_TEST_PACKAGE = 'io.appium.uiautomator2.server.test';
const INSTRUMENTATION = `${UIA2_TEST_PACKAGE}/androidx.test.runner.AndroidJUnitRunner`;
const DEVICE_PORT = 6790;
const ELEMENT_KEY = 'element-6066-11e4-a52e-4f735466cecf';

export interface Uia2Apks {
  version: string;
  serverApk: string;
  testApk: string;
}

/**
 * Finds the APKs of `appium-uiautomator2-server`: as phonelease's own dependency, else the
 * copy that appium-uiautomator2-driver brings. Null when neither is installed.
 */
export function findUia2Apks(): Uia2Apks | null {
  const require = createRequire(import.meta.url);
  const candidates: Array<() => string> = [
    () => require.resolve('appium-uiautomator2-server/package.json'),
    () =>
      createRequire(require.resolve('appium-uiautomator2-driver/package.json')).resolve(
        'appium-uiautomator2-server/package.json',
      ),
  ];
  for (const candidate of candidates) {
    try {
      const pkgJson = candidate();
      const version = (require(pkgJson) as { version: string }).version;
      const dir = join(dirname(pkgJson), 'apks');
      return {
        version,
        serverApk: join(dir, `appium-uiautomator2-server-v${version}.apk`),
        testApk: join(dir, 'appium-uiautomator2-server-debug-androidTest.apk'),
      };
    } catch {
      // not installed this way; try the next
    }
  }
  return null;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

interface HttpReply {
  status: number;
  body: string;
}

/**
 * A minimal HTTP/1.1 client over one ADB stream at a time, kept alive between requests.
 * Requests are serialised: the server answers in order, and the engine never needs two
 * at once.
 */
class StreamHttp {
  readonly #open: () => Promise<AdbSocket>;
  #socket: AdbSocket | null = null;
  #reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  #buffer: Buffer = Buffer.alloc(0);
  #queue: Promise<unknown> = Promise.resolve();

  constructor(open: () => Promise<AdbSocket>) {
    this.#open = open;
  }

  request(method: string, path: string, body?: unknown): Promise<HttpReply> {
    const run = this.#queue.then(
      () => this.#send(method, path, body, true),
      () => this.#send(method, path, body, true),
    );
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #send(method: string, path: string, body: unknown, retry: boolean): Promise<HttpReply> {
    const fresh = this.#socket === null;
    try {
      if (!this.#socket) {
        this.#socket = await this.#open();
        this.#reader = this.#socket.readable.getReader() as ReadableStreamDefaultReader<Uint8Array>;
        this.#buffer = Buffer.alloc(0);
      }
      const payload = body === undefined ? '' : JSON.stringify(body);
      const head =
        `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1:${DEVICE_PORT}\r\nConnection: keep-alive\r\n` +
        (body === undefined
          ? '\r\n'
          : `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n`);
      const writer = this.#socket.writable.getWriter();
      try {
        await writer.write(Buffer.from(head + payload));
      } finally {
        writer.releaseLock();
      }
      return await this.#readReply();
    } catch (error) {
      await this.reset();
      // A kept-alive stream the server closed while idle fails on first use: retry once on a new one.
      if (retry && !fresh) return this.#send(method, path, body, false);
      throw error;
    }
  }

  async #fill(): Promise<void> {
    const { done, value } = await this.#reader!.read();
    if (done) throw new Error('the UiAutomator2 server closed the connection');
    this.#buffer = Buffer.concat([this.#buffer, value]);
  }

  async #readReply(): Promise<HttpReply> {
    let end: number;
    while ((end = this.#buffer.indexOf('\r\n\r\n')) < 0) await this.#fill();
    const head = this.#buffer.subarray(0, end).toString('latin1');
    this.#buffer = this.#buffer.subarray(end + 4);
    const [statusLine = '', ...lines] = head.split('\r\n');
    const status = Number(/^HTTP\/1\.\d (\d{3})/.exec(statusLine)?.[1] ?? 0);
    const headers = new Map(
      lines.map((l) => {
        const at = l.indexOf(':');
        return [l.slice(0, at).trim().toLowerCase(), l.slice(at + 1).trim()] as const;
      }),
    );
    let body: Buffer;
    const length = headers.get('content-length');
    if (length !== undefined) {
      const n = Number(length);
      while (this.#buffer.length < n) await this.#fill();
      body = this.#buffer.subarray(0, n);
      this.#buffer = this.#buffer.subarray(n);
    } else if (headers.get('transfer-encoding')?.includes('chunked')) {
      const parts: Buffer[] = [];
      for (;;) {
        let eol: number;
        while ((eol = this.#buffer.indexOf('\r\n')) < 0) await this.#fill();
        const size = parseInt(this.#buffer.subarray(0, eol).toString('latin1'), 16);
        while (this.#buffer.length < eol + 2 + size + 2) await this.#fill();
        parts.push(this.#buffer.subarray(eol + 2, eol + 2 + size));
        this.#buffer = this.#buffer.subarray(eol + 2 + size + 2);
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      // No length: the body runs to the end of the stream.
      try {
        for (;;) await this.#fill();
      } catch {
        // closed: the body is complete
      }
      body = this.#buffer;
      this.#buffer = Buffer.alloc(0);
      await this.reset();
    }
    if (headers.get('connection')?.toLowerCase() === 'close') await this.reset();
    return { status, body: body.toString('utf8') };
  }

  async reset(): Promise<void> {
    const socket = this.#socket;
    this.#socket = null;
    this.#reader = null;
    if (socket) await Promise.resolve(socket.close()).catch(() => undefined);
  }
}

export interface Uia2StartResult {
  driver: Uia2Driver;
  /** True when the APKs were installed for this start. */
  installed: boolean;
}

/** Whether the phone has this version of the server and its instrumentation. */
async function hasServer(phone: PhoneChannel, version: string): Promise<boolean> {
  const r = await phone.shell(
    `dumpsys package ${UIA2_SERVER_PACKAGE} | grep -m 1 versionName; pm list instrumentation`,
  );
  const installed = /versionName=(\S+)/.exec(r.stdout)?.[1];
  return installed === version && r.stdout.includes(`instrumentation:${INSTRUMENTATION}`);
}

/**
 * Installs the server if needed, starts its instrumentation, waits until it answers and
 * opens a session. Throws with the reason when any step fails (the caller falls back).
 */
export async function startUia2(
  phone: PhoneChannel,
  apks: Uia2Apks,
  options: { timeoutMs?: number } = {},
): Promise<Uia2StartResult> {
  const adb = await phone.adb();
  let installed = false;
  if (!(await hasServer(phone, apks.version))) {
    const [server, test] = await Promise.all([readFile(apks.serverApk), readFile(apks.testApk)]);
    await adb.install(server);
    await adb.install(test);
    installed = true;
  }
  const http = new StreamHttp(() => adb.openSocket(`tcp:${DEVICE_PORT}`));
  const instrument = await adb.spawn(`am instrument -w -e disableAnalytics true ${INSTRUMENTATION}`);
  let ended: string | null = null;
  void instrument.exited.then(
    (code) => (ended = `the instrumentation ended (exit code ${code})`),
    (error: unknown) => (ended = `the instrumentation failed: ${messageOf(error)}`),
  );
  const output = collect(instrument);
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  try {
    for (;;) {
      if (ended) throw new Error(`${ended}: ${(await output).trim().slice(-400) || 'no output'}`);
      const ready = await http.request('GET', '/status').then(
        (r) => r.status === 200,
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline)
        throw new Error('the UiAutomator2 server did not answer on device port 6790');
      await new Promise((r) => setTimeout(r, 100));
    }
    const driver = new Uia2Driver(http, instrument);
    await driver.openSession();
    return { driver, installed };
  } catch (error) {
    await http.reset();
    await instrument.kill().catch(() => undefined);
    throw error;
  }
}

/** Everything the instrumentation prints, for the error when it ends early. */
async function collect(cmd: RunningCommand): Promise<string> {
  const reader = cmd.output.getReader();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text = (text + Buffer.from(value).toString('utf8')).slice(-4000);
    }
  } catch {
    // the stream was closed by kill()
  }
  return text;
}

export class Uia2Driver implements UiDriver {
  readonly engine = 'uiautomator2' as const;
  readonly settles = false;
  readonly #http: StreamHttp;
  readonly #instrument: RunningCommand;
  #session = '';

  constructor(http: StreamHttp, instrument: RunningCommand) {
    this.#http = http;
    this.#instrument = instrument;
  }

  async openSession(): Promise<void> {
    const value = await this.#call<{ sessionId?: string }>('POST', '/session', {
      capabilities: { firstMatch: [{ platformName: 'Android' }], alwaysMatch: {} },
    });
    const id = value.sessionId ?? this.#lastSessionId;
    if (!id) throw new Error('the UiAutomator2 server did not return a session id');
    this.#session = id;
    // By default the server waits, before each lookup, for the screen to go quiet (up to
    // 10 s). The locators' own "stable" check (the same bounds in two reads) does that job
    // per element, so an animation elsewhere on screen does not hold up every read.
    await this.#on('POST', '/appium/settings', { settings: { waitForIdleTimeout: 0 } });
  }

  #lastSessionId: string | null = null;

  async #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const reply = await this.#http.request(method, path, body);
    let parsed: { sessionId?: string | null; value?: unknown };
    try {
      parsed = JSON.parse(reply.body) as typeof parsed;
    } catch {
      throw new HttpError(reply.status, 'unknown error', `${method} ${path}: HTTP ${reply.status}`);
    }
    if (typeof parsed.sessionId === 'string') this.#lastSessionId = parsed.sessionId;
    if (reply.status >= 400) {
      const v = (parsed.value ?? {}) as { error?: string; message?: string };
      throw new HttpError(
        reply.status,
        v.error ?? 'unknown error',
        `UiAutomator2 ${method} ${path}: ${v.error ?? reply.status}: ${v.message ?? ''}`,
      );
    }
    return parsed.value as T;
  }

  #on<T>(method: string, path: string, body?: unknown): Promise<T> {
    return this.#call<T>(method, `/session/${this.#session}${path}`, body);
  }

  source(): Promise<string> {
    return this.#on<string>('GET', '/source');
  }

  async tap(x: number, y: number): Promise<void> {
    await this.#on('POST', '/appium/gestures/click', { offset: { x, y } });
  }

  async longPress(x: number, y: number, durationMs: number): Promise<void> {
    await this.#on('POST', '/appium/gestures/long_click', { offset: { x, y }, duration: durationMs });
  }

  async swipe(
    from: { x: number; y: number },
    to: { x: number; y: number },
    durationMs: number,
  ): Promise<void> {
    await this.#on('POST', '/actions', {
      actions: [
        {
          type: 'pointer',
          id: 'finger1',
          parameters: { pointerType: 'touch' },
          actions: [
            { type: 'pointerMove', duration: 0, x: from.x, y: from.y, origin: 'viewport' },
            { type: 'pointerDown', button: 0 },
            { type: 'pointerMove', duration: durationMs, x: to.x, y: to.y, origin: 'viewport' },
            { type: 'pointerUp', button: 0 },
          ],
        },
      ],
    });
  }

  async key(keycode: number): Promise<void> {
    await this.#on('POST', '/appium/device/press_keycode', { keycode });
  }

  async replaceText(node: UiNode, text: string): Promise<void> {
    let active: Record<string, string>;
    try {
      active = await this.#on<Record<string, string>>('GET', '/element/active');
    } catch (error) {
      const { x, y } = centre(node.bounds);
      throw new Error(`the view at (${x}, ${y}) did not take focus when tapped: ${messageOf(error)}`);
    }
    const id = active[ELEMENT_KEY] ?? active.ELEMENT;
    if (!id) throw new Error('the UiAutomator2 server returned no focused element');
    await this.#on('POST', `/element/${id}/value`, { text, replace: true });
  }

  async close(): Promise<void> {
    // No DELETE /session: stopping the instrumentation ends the server and its session,
    // and no request is left in flight when the lease's connection closes next.
    await this.#http.reset();
    await this.#instrument.kill().catch(() => undefined);
  }
}
