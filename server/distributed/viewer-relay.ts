/**
 * The viewer streams of an API node: each live stream relayed to the device host that holds
 * the phone (the pages themselves are the API's, server/api/viewer-pages.ts, over the shared
 * directory).
 *
 * Why API nodes relay rather than sending browsers to the host: the viewer URL, its page and
 * its WebSocket then stay on the one origin clients already reach (the load balancer in front
 * of the API nodes, which passes WebSocket upgrades like any other request, and where TLS and
 * the dashboard's frame-ancestors apply), and device hosts need no public HTTP endpoint of
 * their own. The node checks the page's origin and its viewer token, then relays the upgrade
 * byte for byte (the WebSocket handshake and frames are the host's), signed with the
 * deployment's node key; nothing secret travels to the host.
 */
import http, { type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../log.js';
import type { Grants, ViewerMode } from '../runtime/grants.js';
import type { SharedDirectory } from '../runtime/shared-directory.js';
import { STREAM_PATH, refuseUpgrade, sameOrigin, type StreamHandler } from '../viewer/stream.js';
import { NODE_HEADER, hostPath, type NodeSigner } from './node-auth.js';

const CONNECT_TIMEOUT_MS = 10_000;
/** What a browser's WebSocket handshake needs to reach the host; nothing else is passed on. */
const HANDSHAKE_HEADERS = ['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-extensions'];
/** The stream of a host's phone: `stream/{mode}/{expires}` (hostStreamPath), signed by the API node. */
export const HOST_STREAM_PATH =
  /^\/internal\/sessions\/([A-Za-z0-9_-]{1,100})\/stream\/(owner|view)\/(\d{1,12})$/;

/** The path an API node relays a viewer stream to (it signs exactly this). */
export const hostStreamPath = (sid: string, mode: ViewerMode, expiresAt: number): string =>
  hostPath(sid, `stream/${mode}/${expiresAt}`);

export class ViewerRelay implements StreamHandler {
  private readonly relayed = new Set<Duplex>();

  constructor(
    private readonly deps: { directory: SharedDirectory; grants: Grants; signer: NodeSigner; log: Logger },
  ) {}

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const m = STREAM_PATH.exec(path);
    if (!m) return false;
    // The same checks, in the same order, as the single server's streams (stream.ts).
    if (!sameOrigin(req)) return refuseUpgrade(socket, 403, 'Forbidden');
    const grant = this.deps.grants.viewer(m[1]!);
    if (!grant) return refuseUpgrade(socket, 404, 'Not Found');
    // A browser that gives up while the store answers must not leave an error unhandled.
    socket.on('error', () => socket.destroy());
    this.deps.directory.find(grant.sid).then(
      (session) => {
        if (!session) return refuseUpgrade(socket, 410, 'Gone');
        if (session.row.state !== 'ready' || session.row.host_url === null)
          return refuseUpgrade(socket, 409, 'Conflict');
        const expiresAt = Math.min(grant.expiresAt, session.row.expires_at);
        this.relay(
          req,
          socket,
          head,
          session.row.host_url,
          hostStreamPath(session.row.id, grant.mode, expiresAt),
        );
        return true;
      },
      (err: unknown) => {
        this.deps.log.warn('could not look up a viewer stream', { error: String(err) });
        refuseUpgrade(socket, 503, 'Service Unavailable');
      },
    );
    return true;
  }

  /** Relays an accepted stream to the host: its 101 (or its refusal) back, then bytes both ways. */
  private relay(req: IncomingMessage, socket: Duplex, head: Buffer, hostUrl: string, path: string): void {
    const headers: Record<string, string> = {
      connection: 'Upgrade',
      upgrade: 'websocket',
      [NODE_HEADER]: this.deps.signer.sign('GET', path),
    };
    for (const name of HANDSHAKE_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const upstream = http.request(new URL(path, hostUrl), { method: 'GET', headers });
    upstream.setTimeout(CONNECT_TIMEOUT_MS, () => upstream.destroy(new Error('device host timed out')));
    upstream.on('upgrade', (res, hostSocket: Socket, hostHead: Buffer) => {
      hostSocket.setTimeout(0);
      const lines = [`HTTP/1.1 101 ${res.statusMessage ?? 'Switching Protocols'}`];
      for (let i = 0; i < res.rawHeaders.length; i += 2)
        lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
      socket.write(lines.join('\r\n') + '\r\n\r\n');
      if (hostHead.length > 0) socket.write(hostHead);
      if (head.length > 0) hostSocket.write(head);
      this.relayed.add(socket);
      const done = () => {
        this.relayed.delete(socket);
        socket.destroy();
        hostSocket.destroy();
      };
      hostSocket.on('close', done).on('error', done);
      socket.on('close', done).on('error', done);
      hostSocket.pipe(socket);
      socket.pipe(hostSocket);
    });
    upstream.on('response', (res) => {
      // The host refused (the phone stopped in between): the browser gets the same status.
      res.resume();
      refuseUpgrade(socket, res.statusCode ?? 502, res.statusMessage ?? 'Bad Gateway');
    });
    upstream.on('error', (err) => {
      this.deps.log.warn('device host did not take a viewer stream', { error: String(err) });
      refuseUpgrade(socket, 502, 'Bad Gateway');
    });
    upstream.end();
  }

  close(): void {
    for (const socket of this.relayed) socket.destroy();
  }
}
