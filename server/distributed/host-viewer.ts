/**
 * Live viewer streams on a device host. Browsers never connect here: the API node that took
 * the viewer page's WebSocket checked the page's origin and its viewer token, then relays
 * the upgrade to `/internal/sessions/{sid}/stream/{mode}/{expires}` signed (node-auth.ts).
 * The host checks only that signature, so the mode and expiry an API node decided cannot be
 * changed on the way, and serves the stream with the embedded server's code.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { seconds, type Clock } from '../clock.js';
import type { DevicePhone } from '../devices/types.js';
import { ApiError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ViewerMode } from '../runtime/grants.js';
import type { Db } from '../stores/postgres/pool.js';
import { ViewerSockets, refuseUpgrade } from '../viewer/stream.js';
import { NODE_HEADER, type NodeSigner } from './node-auth.js';

const HOST_STREAM_PATH = /^\/internal\/sessions\/([A-Za-z0-9_-]{1,100})\/stream\/(owner|view)\/(\d{1,12})$/;

/** The path an API node relays a viewer stream to (it signs exactly this). */
export function hostStreamPath(sid: string, mode: ViewerMode, expiresAt: number): string {
  return `/internal/sessions/${encodeURIComponent(sid)}/stream/${mode}/${expiresAt}`;
}

/** What the streams need of the device host. */
export interface HostedPhones {
  /** The ready phone of a session; throws (404/409) when it has none. */
  ready(sid: string): { phone: DevicePhone };
  on(event: 'closing', listener: (h: { row: { id: string } }) => void): unknown;
  off(event: 'closing', listener: (h: { row: { id: string } }) => void): unknown;
}

export class HostViewerStreams {
  private readonly sockets: ViewerSockets;

  constructor(
    private readonly deps: { phones: HostedPhones; signer: NodeSigner; db: Db; clock: Clock; log: Logger },
  ) {
    this.sockets = new ViewerSockets(deps);
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const m = HOST_STREAM_PATH.exec(path);
    if (!m) return false;
    const header = req.headers[NODE_HEADER];
    if (!this.deps.signer.verify(typeof header === 'string' ? header : undefined, 'GET', path))
      return refuseUpgrade(socket, 401, 'Unauthorized');
    const sid = m[1]!;
    let phone: DevicePhone;
    try {
      phone = this.deps.phones.ready(sid).phone;
    } catch (err) {
      const status = err instanceof ApiError && err.status === 409 ? 409 : 410;
      return refuseUpgrade(socket, status, status === 409 ? 'Conflict' : 'Gone');
    }
    const { phones, db, clock, log } = this.deps;
    let touchedAt = 0;
    this.sockets.accept(req, socket, head, {
      sid,
      device: phone.label,
      mode: m[2] as ViewerMode,
      expiresAt: Number(m[3]),
      phone,
      input: async (event) => {
        // Input is activity (idle_s), as on the embedded server; recorded at most once a second.
        const now = seconds(clock.now());
        if (now > touchedAt) {
          touchedAt = now;
          db.query('UPDATE sessions SET last = $2 WHERE id = $1 AND last < $2', [sid, now]).catch(
            (err: unknown) =>
              log.debug('could not record viewer activity', { session: sid, error: String(err) }),
          );
        }
        await phone.input(event);
      },
      onClosing: (listener) => {
        const onClosing = (h: { row: { id: string } }) => {
          if (h.row.id === sid) listener();
        };
        phones.on('closing', onClosing);
        return () => phones.off('closing', onClosing);
      },
    });
    return true;
  }

  close(): void {
    this.sockets.close();
  }
}
