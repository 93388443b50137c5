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
  isFileUrl,
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
 * The client's bytes: HTTP request heads (each checked and adjusted) until one upgrades to a
 * WebSocket, then WebSocket messages, each through the guard.
 */
class ClientToBrowser extends Transform {
  private head: Buffer = Buffer.alloc(0);
  private reader: MessageReader | null = null;
  /** A request was refused: the connection ends, and nothing more goes to the browser. */
  private refused = false;

  constructor(
    private readonly browserPath: string,
    private readonly guard: GuardHost,
    private readonly toClient: BrowserToClient,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      if (this.refused) return done();
      if (this.reader) this.messages(chunk);
      else this.requests(chunk);
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  private requests(chunk: Buffer): void {
    this.head = this.head.length === 0 ? chunk : Buffer.concat([this.head, chunk]);
    for (;;) {
      const end = this.head.indexOf(HEAD_END);
      if (end < 0) {
        if (this.head.length > MAX_HEAD) throw new Error('DevTools request head too large');
        return;
      }
      const lines = this.head.subarray(0, end).toString('latin1').split('\r\n');
      this.head = this.head.subarray(end + HEAD_END.length);
      const [method, target = '', version] = lines[0]!.split(' ');
      if (isFileNewTarget(target)) {
        this.toClient.refuseRequest(NOT_MODELED_FILE_URL);
        this.refused = true;
        this.push(null);
        return;
      }
      const upgrade = lines.some((line) => /^upgrade\s*:\s*websocket\s*$/i.test(line));
      const kept = lines.slice(1).filter((line) => !/^sec-websocket-extensions\s*:/i.test(line));
      const path = target === ANDROID_BROWSER_PATH ? this.browserPath : target;
      this.push(Buffer.from([`${method} ${path} ${version}`, ...kept].join('\r\n') + '\r\n\r\n', 'latin1'));
      if (upgrade) {
        this.toClient.expectUpgrade();
        this.reader = new MessageReader();
        const rest = this.head;
        this.head = Buffer.alloc(0);
        if (rest.length > 0) this.messages(rest);
        return;
      }
    }
  }

  private messages(chunk: Buffer): void {
    for (const message of this.reader!.push(chunk)) {
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

/** `/json/new?URL` (PUT or GET) for a `file:` URL, escaped or not. */
function isFileNewTarget(target: string): boolean {
  const match = /^\/json\/new\?(.*)$/s.exec(target);
  if (!match) return false;
  let decoded = match[1]!;
  try {
    decoded = decodeURIComponent(decoded);
  } catch {
    // Not escaped as a URI component: read it as it is.
  }
  return isFileUrl(match[1]) || isFileUrl(decoded);
}

/**
 * The browser's bytes, passed on as they come; after the upgrade, its frames are followed so
 * that the relay's own answers (a refused command) go in between two messages.
 */
class BrowserToClient extends Transform {
  /** The upgrade's answer head, until it has passed (null: not upgrading, or passed). */
  private upgradeHead: Buffer | null = null;
  private frames: FrameBoundaries | null = null;
  private readonly pending: Buffer[] = [];
  /** The relay answered a request itself and ended the connection: the browser's bytes are dropped. */
  private ended = false;

  expectUpgrade(): void {
    this.upgradeHead = Buffer.alloc(0);
  }

  /** An answer of the relay's own: written between two of the browser's messages. */
  answer(frame: Buffer): void {
    this.pending.push(frame);
    this.flush();
  }

  /** Answers a refused HTTP request and ends the connection. */
  refuseRequest(reason: string): void {
    const body = `${reason}\n`;
    this.push(
      `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
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
      if (end < 0) {
        // No answer head: pass it on, and never put anything of the relay's into it.
        this.push(all);
        done();
        return;
      }
      this.push(all.subarray(0, end + HEAD_END.length));
      this.frames = new FrameBoundaries();
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
