/**
 * The live viewer stream: a WebSocket at /v/{token}/stream that pushes a PNG frame each
 * time the phone's screen changes (coalesced, at most one capture in flight, up to
 * MAX_FPS) and, for owner viewers only, takes input. View-only streams get input refused
 * by the server — hiding the controls in the page is not what protects the phone.
 *
 * Messages, server -> page: text JSON {type: 'hello'|'state'|'error'|'ended', ...};
 * binary = one PNG frame. Page -> server: JSON {type: 'tap', x, y} | {type: 'swipe', x1,
 * y1, x2, y2, durationMs} | {type: 'text', text} | {type: 'key', key: home|back|enter|del},
 * in phone pixels.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Clock } from '../clock.js';
import { seconds } from '../clock.js';
import type { DevicePhone, PhoneInput } from '../devices/types.js';
import type { Logger } from '../log.js';
import type { Grants, ViewerMode } from '../runtime/grants.js';
import type { LiveSession, Runtime } from '../runtime/runtime.js';

const MAX_FPS = 20;
/** Frames are skipped (the newest is sent later) while this much is still queued to the page. */
const MAX_BUFFERED = 4 * 1024 * 1024;
const MAX_MESSAGE = 8 * 1024;
/** The stream of a viewer page; group 1 is the page's token. */
export const STREAM_PATH = /^\/v\/([A-Za-z0-9_-]{16,200})\/stream$/;

/** Answers an upgrade request with a bare HTTP status and closes it; always true ("handled"). */
export function refuseUpgrade(socket: Duplex, status: number, text: string): true {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  return true;
}

/** Takes the viewer streams' WebSocket upgrades of an HTTP server. */
export interface StreamHandler {
  /** Handles an HTTP upgrade if it is a viewer stream; false when it is not one. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  close(): void;
}

/** Who may open a stream: its session, mode and expiry, as its credential says. */
export interface StreamGrant {
  sid: string;
  mode: ViewerMode;
  /** The earlier of the credential's and the session's expiry, in seconds (capped again here). */
  expiresAt: number;
}

/** What an upgrade's credential allows: a stream (its grant), not a stream at all (null), or a refusal. */
export type StreamAuthorization = StreamGrant | null | { refuse: number; text: string };

/**
 * Streams of the phones of this process's runtime: the single server's (the viewer page's
 * token is the credential) and a device host's (an API node's signature is). `authorize`
 * reads the credential of an upgrade: its grant, null when the path is not a stream, or the
 * status to refuse it with.
 */
export class RuntimeStreams implements StreamHandler {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE });
  private readonly open = new Set<WebSocket>();

  constructor(
    private readonly deps: {
      runtime: Runtime;
      clock: Clock;
      log: Logger;
      authorize(req: IncomingMessage, path: string): StreamAuthorization;
    },
  ) {}

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const grant = this.deps.authorize(req, path);
    if (grant === null) return false;
    if ('refuse' in grant) return refuseUpgrade(socket, grant.refuse, grant.text);
    const live = this.deps.runtime.get(grant.sid);
    if (!live) return refuseUpgrade(socket, 410, 'Gone');
    // The phone as it is now: `live.phone` reads null once the session stops being ready.
    const phone = live.phone;
    if (!phone) return refuseUpgrade(socket, 409, 'Conflict');
    const expiresAt = Math.min(grant.expiresAt, live.row.expires_at);
    this.wss.handleUpgrade(req, socket, head, (ws) =>
      this.serve(ws, live, phone, { mode: grant.mode, expiresAt }),
    );
    return true;
  }

  /**
   * Serves one viewer's WebSocket: frames out, owner input in. `live` must be the runtime's own
   * session (its 'closing' event is matched by identity); `expiresAt` is already the earlier of
   * the credential's and the session's expiry.
   */
  private serve(
    ws: WebSocket,
    live: LiveSession,
    phone: DevicePhone,
    { mode, expiresAt }: Omit<StreamGrant, 'sid'>,
  ): void {
    const { runtime, clock, log } = this.deps;
    const sid = live.row.id;
    this.open.add(ws);
    const send = (msg: Record<string, unknown>) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
    };
    send({
      type: 'hello',
      mode,
      session: sid,
      device: live.row.device,
      screen: phone.screen,
      expires_at: expiresAt,
      now: seconds(clock.now()),
    });

    // Frame pump: one capture at a time; a change during a capture schedules one more.
    let dirty = true;
    let capturing = false;
    // When the last capture started: the frame budget counts from there, so a slow render
    // eats into the wait instead of adding to it.
    let lastStart = 0;
    let timer: NodeJS.Timeout | null = null;
    const pump = () => {
      timer = null;
      if (!dirty || capturing || ws.readyState !== ws.OPEN) return;
      const wait = lastStart + 1000 / MAX_FPS - performance.now();
      if (wait > 0 || ws.bufferedAmount > MAX_BUFFERED) {
        timer = setTimeout(pump, Math.max(wait, 20));
        return;
      }
      dirty = false;
      capturing = true;
      lastStart = performance.now();
      phone.capture().then(
        (png) => {
          capturing = false;
          if (ws.readyState === ws.OPEN) ws.send(png, { binary: true });
          if (dirty) pump();
        },
        (err: unknown) => {
          capturing = false;
          log.debug('viewer capture failed', { session: sid, error: String(err) });
        },
      );
    };
    const unsubscribe = phone.onScreenChange(() => {
      dirty = true;
      if (!timer && !capturing) pump();
    });
    pump();

    const end = (reason: 'closed' | 'expired') => {
      send({ type: 'ended', reason });
      ws.close(1000, reason);
    };
    const onClosing = (closing: LiveSession) => {
      if (closing === live) end('closed');
    };
    runtime.on('closing', onClosing);
    const cancelExpiry = clock.setTimeout(() => end('expired'), expiresAt * 1000 - clock.now());

    ws.on('message', (data, isBinary) => {
      if (mode !== 'owner') {
        send({
          type: 'error',
          code: 'read_only',
          message: 'This viewer is view-only; input is not accepted.',
        });
        return;
      }
      const event = isBinary ? null : parseInput(data.toString(), phone.screen);
      if (!event) {
        send({ type: 'error', code: 'invalid_input', message: 'Unrecognised input message.' });
        return;
      }
      // Input is activity (idle_s), as any call of the API.
      runtime.touch(live);
      runtime.input(live, event).catch((err: unknown) => {
        send({
          type: 'error',
          code: 'input_failed',
          message: err instanceof Error ? err.message : 'Input failed.',
        });
      });
    });
    ws.on('close', () => {
      this.open.delete(ws);
      unsubscribe();
      runtime.off('closing', onClosing);
      cancelExpiry();
      if (timer) clearTimeout(timer);
    });
    ws.on('error', () => ws.terminate());
  }

  close(): void {
    for (const ws of this.open) ws.terminate();
    this.wss.close();
  }
}

/** How the single server's viewer pages open their streams: the page's token at /v/{token}/stream. */
export function viewerTokenStreams(
  grants: Pick<Grants, 'viewer'>,
): (req: IncomingMessage, path: string) => StreamAuthorization {
  return (req, path) => {
    const m = STREAM_PATH.exec(path);
    if (!m) return null;
    // Only the viewer page itself (same origin) may open the stream: a page on another site
    // must not drive the phone with a token it obtained somehow (cross-site WebSocket hijacking).
    if (!sameOrigin(req)) return { refuse: 403, text: 'Forbidden' };
    return grants.viewer(m[1]!) ?? { refuse: 404, text: 'Not Found' };
  };
}

/** True unless a browser on another origin opened it (a non-browser sends no Origin). */
export function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (!origin) return true; // not a browser: the token alone is the credential
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

const KEYS = new Set(['home', 'back', 'enter', 'del']);
const inScreen = (x: unknown, y: unknown, s: { w: number; h: number }) =>
  Number.isInteger(x) &&
  Number.isInteger(y) &&
  (x as number) >= 0 &&
  (y as number) >= 0 &&
  (x as number) < s.w &&
  (y as number) < s.h;

/** Validates one input message; anything unexpected is refused rather than guessed at. */
export function parseInput(text: string, screen: { w: number; h: number }): PhoneInput | null {
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (!m || typeof m !== 'object') return null;
  switch (m.type) {
    case 'tap':
      return inScreen(m.x, m.y, screen) ? { type: 'tap', x: m.x as number, y: m.y as number } : null;
    case 'swipe': {
      if (!inScreen(m.x1, m.y1, screen) || !inScreen(m.x2, m.y2, screen)) return null;
      const d = Number.isInteger(m.durationMs) ? Math.min(Math.max(m.durationMs as number, 10), 5000) : 300;
      return {
        type: 'swipe',
        x1: m.x1 as number,
        y1: m.y1 as number,
        x2: m.x2 as number,
        y2: m.y2 as number,
        durationMs: d,
      };
    }
    case 'text':
      return typeof m.text === 'string' && m.text.length > 0 && m.text.length <= 500
        ? { type: 'text', text: m.text }
        : null;
    case 'key':
      return typeof m.key === 'string' && KEYS.has(m.key) ? { type: 'key', key: m.key as 'home' } : null;
    default:
      return null;
  }
}
