/**
 * The phone's DevTools socket (`chrome_devtools_remote`) relayed to Chromium's DevTools port:
 * the HTTP requests as Chrome for Android answers them, and every DevTools command through
 * the guard (devtools-guard.ts), which keeps the server's own files out of reach.
 *
 * Compression is declined on the way. Playwright's connectOverCDP offers permessage-deflate
 * and Chromium accepts it, so every message was deflated by the phone's Chromium and
 * inflated by the test's process: on a machine where the test, the server and Chromium share
 * the CPU, zlib was the largest single cost of each action on the phone's page
 * (bench/mobile-web.ts, profiled), for bytes that cross loopback and an ADB stream. The relay
 * drops `Sec-WebSocket-Extensions` from the upgrade, so Chromium answers without an
 * extension and both sides send plain frames, as the WebSocket protocol lets any server do;
 * plain frames are also what lets the guard read each command.
 *
 * Chrome for Android's browser target is `/devtools/browser` (its browser target is
 * discoverable, so the path carries no id), where the desktop Chromium behind the phone
 * serves `/devtools/browser/<id>`: the relay points the first at the second. Playwright's
 * Android support connects there.
 */
import type { Duplex } from 'node:stream';
import { Transform, type TransformCallback } from 'node:stream';
import {
  NOT_MODELED_FILE_URL,
  errorAnswer,
  guardCommand,
  isWebPage,
  type GuardHost,
} from './devtools-guard.js';
import {
  FrameBoundaries,
  MessageReader,
  OPCODE_BINARY,
  OPCODE_TEXT,
  encodeFrame,
} from './websocket-frames.js';

/** A request head larger than this ends the connection (no DevTools request comes close). */
const MAX_HEAD = 16 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');

/** The browser target's path on Chrome for Android. */
const ANDROID_BROWSER_PATH = '/devtools/browser';

/** `browserPath`: the browser target's path on the Chromium behind the phone. */
export function relayDevTools(client: Duplex, devtools: Duplex, browserPath: string, guard: GuardHost): void {
  const toClient = new BrowserToClient();
  const toBrowser = new ClientToBrowser(browserPath, guard, toClient);
  const destroyAll = () => {
    for (const stream of [client, devtools, toBrowser, toClient]) stream.destroy();
  };
  for (const stream of [client, devtools, toBrowser, toClient]) stream.on('error', destroyAll);
  // Either side gone: the other goes too, once what was queued for it is written.
  client.once('close', () => devtools.destroy());
  devtools.once('close', () => {
    if (!toClient.writableEnded) toClient.end();
  });
  client.pipe(toBrowser).pipe(devtools);
  devtools.pipe(toClient).pipe(client);
}

/**
 * The client's bytes: HTTP requests, each read strictly and sent on rebuilt (a head that
 * Chromium could read as something else is refused), until one upgrades; then, once Chromium
 * has answered it with 101, WebSocket messages, each through the guard.
 */
class ClientToBrowser extends Transform {
  private head: Buffer = Buffer.alloc(0);
  private state: 'request' | 'upgrading' | 'messages' | 'done' = 'request';
  /** What came after the upgrade's head before Chromium said 101. */
  private early: Buffer[] = [];
  private readonly reader = new MessageReader();
  /** Requests sent on to the browser on this connection. */
  private forwarded = 0;

  constructor(
    private readonly browserPath: string,
    private readonly guard: GuardHost,
    private readonly toClient: BrowserToClient,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      if (this.state === 'messages') this.messages(chunk);
      else if (this.state === 'upgrading') this.early.push(chunk);
      else if (this.state === 'request') this.request(chunk);
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  private request(chunk: Buffer): void {
    this.head = this.head.length === 0 ? chunk : Buffer.concat([this.head, chunk]);
    // Each request on the connection is read on its own, in order (clients keep connections
    // alive); one that upgrades ends them.
    while (this.state === 'request') {
      const end = this.head.indexOf(HEAD_END);
      if (end < 0) {
        if (this.head.length > MAX_HEAD) this.refuse(400, 'request head too large');
        return;
      }
      const text = this.head.subarray(0, end).toString('latin1');
      this.head = this.head.subarray(end + HEAD_END.length);
      this.oneRequest(text);
    }
    if (this.state === 'upgrading' && this.head.length > 0) this.early.push(this.head);
    this.head = Buffer.alloc(0);
  }

  /** One request head: refused, or sent on rebuilt (and, for an upgrade, the frames held). */
  private oneRequest(text: string): void {
    // Only CRLF ends a line, and no line continues the one before: where a parser could read
    // other lines (or another request) than this one, the request is refused.
    if (/\r(?!\n)|(?<!\r)\n|\r\n[ \t]/.test(text)) return this.refuse(400, 'malformed request head');
    const lines = text.split('\r\n');
    const [method, target, version, ...extra] = lines[0]!.split(' ');
    if (!method || !target || !version || extra.length > 0) return this.refuse(400, 'malformed request line');
    const values = (name: string) =>
      lines
        .slice(1)
        .filter((line) => line.toLowerCase().startsWith(`${name}:`))
        .map((line) => line.slice(name.length + 1).trim());
    const tokens = (name: string) =>
      values(name).flatMap((v) => v.split(',').map((t) => t.trim().toLowerCase()));
    // DevTools requests have no body; one would be bytes no rule here reads.
    if (values('content-length').some((v) => v !== '0') || values('transfer-encoding').length > 0)
      return this.refuse(400, 'a DevTools request has no body');
    if (!isWebPageTarget(target)) return this.refuse(403, NOT_MODELED_FILE_URL);
    // An upgrade as Chromium reads one: both headers, as token lists.
    const upgrade = tokens('upgrade').includes('websocket') && tokens('connection').includes('upgrade');
    const kept = lines.slice(1).filter((line) => !/^sec-websocket-extensions\s*:/i.test(line));
    const path = target === ANDROID_BROWSER_PATH ? this.browserPath : target;
    this.push(Buffer.from([`${method} ${path} ${version}`, ...kept].join('\r\n') + '\r\n\r\n', 'latin1'));
    this.forwarded++;
    if (!upgrade) return;
    this.state = 'upgrading';
    this.toClient.expectUpgrade((upgraded) => {
      if (!upgraded) {
        this.state = 'done';
        return;
      }
      this.state = 'messages';
      try {
        for (const chunk of this.early.splice(0)) this.messages(chunk);
      } catch (error) {
        this.destroy(error as Error);
      }
    });
  }

  /**
   * Answers the request itself (the browser never sees it) and ends the connection; after
   * requests the browser is still answering, the connection just ends (an answer of the
   * relay's now would come before theirs).
   */
  private refuse(status: 400 | 403, reason: string): void {
    this.state = 'done';
    if (this.forwarded > 0) {
      this.destroy(new Error(`DevTools request refused after others: ${reason}`));
      return;
    }
    this.toClient.refuseRequest(status, reason);
    this.push(null);
  }

  private messages(chunk: Buffer): void {
    for (const message of this.reader.push(chunk)) {
      // Control frames pass; a binary message is read as a command too, in case the
      // browser takes one as it takes text.
      if (message.opcode !== OPCODE_TEXT && message.opcode !== OPCODE_BINARY) {
        this.push(message.raw);
        continue;
      }
      const text = message.payload.toString('utf8');
      const verdict = guardCommand(text, this.guard);
      if (verdict.kind === 'pass') this.push(message.raw);
      else if (verdict.kind === 'rewrite')
        this.push(encodeFrame(message.opcode, Buffer.from(verdict.message), true));
      else
        this.toClient.answer(encodeFrame(OPCODE_TEXT, Buffer.from(errorAnswer(text, verdict.error)), false));
    }
  }
}

/**
 * Whether an HTTP request may go to the browser: anything but a new tab (`/json/new`, however
 * Chromium finds the command in the path) for a URL that is no web page. Its URL is read as
 * it is and unescaped the lenient way (a `%` that starts no escape stays).
 */
function isWebPageTarget(target: string): boolean {
  const query = target.indexOf('?');
  const path = (query < 0 ? target : target.slice(0, query)).split('#')[0]!;
  if (!/^\/json\/new(\/|$)/.test(path)) return true;
  const url = query < 0 ? '' : target.slice(query + 1);
  const unescaped = url.replace(/%([0-9a-f]{2})/gi, (_, hex: string) =>
    String.fromCharCode(parseInt(hex, 16)),
  );
  return [url, unescaped].every((u) => u === '' || isWebPage(u));
}

/**
 * The browser's bytes, passed on as they come; after the upgrade, its frames are followed so
 * that the relay's own answers (a refused command) go in between two messages.
 */
class BrowserToClient extends Transform {
  /** The upgrade's answer head, until it has passed (null: not upgrading, or passed). */
  private upgradeHead: Buffer | null = null;
  /** Told whether Chromium answered the upgrade with 101. */
  private onUpgrade: ((upgraded: boolean) => void) | null = null;
  private frames: FrameBoundaries | null = null;
  private readonly pending: Buffer[] = [];
  /** The relay answered a request itself and ended the connection: the browser's bytes are dropped. */
  private ended = false;

  expectUpgrade(answered: (upgraded: boolean) => void): void {
    this.upgradeHead = Buffer.alloc(0);
    this.onUpgrade = answered;
  }

  /** An answer of the relay's own: written between two of the browser's messages. */
  answer(frame: Buffer): void {
    this.pending.push(frame);
    this.flush();
  }

  /** Answers a refused HTTP request and ends the connection. */
  refuseRequest(status: 400 | 403, reason: string): void {
    const body = `${reason}\n`;
    this.push(
      `HTTP/1.1 ${status} ${status === 400 ? 'Bad Request' : 'Forbidden'}\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    this.push(null);
    this.ended = true;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.ended) return done();
    if (this.upgradeHead !== null) {
      const all = this.upgradeHead.length === 0 ? chunk : Buffer.concat([this.upgradeHead, chunk]);
      const end = all.indexOf(HEAD_END);
      if (end < 0 && all.length <= MAX_HEAD) {
        this.upgradeHead = all;
        done();
        return;
      }
      this.upgradeHead = null;
      // Frames go to the browser only once it has switched protocols; any other answer ends
      // what the client may send.
      const upgraded = end >= 0 && /^HTTP\/1\.1 101 /.test(all.subarray(0, end).toString('latin1'));
      const answered = this.onUpgrade;
      this.onUpgrade = null;
      if (!upgraded) {
        answered?.(false);
        this.push(all);
        done();
        return;
      }
      this.push(all.subarray(0, end + HEAD_END.length));
      this.frames = new FrameBoundaries();
      // The client's first messages go on once its answer has.
      answered?.(true);
      chunk = all.subarray(end + HEAD_END.length);
    }
    if (chunk.length > 0) {
      this.frames?.push(chunk);
      this.push(chunk);
    }
    this.flush();
    done();
  }

  private flush(): void {
    if (!this.frames?.atMessageBoundary || this.upgradeHead !== null) return;
    for (const frame of this.pending.splice(0)) this.push(frame);
  }
}
