/**
 * The viewer pages of an API node: the embedded server's pages (server/viewer/pages.ts) over
 * the shared store, with each live stream relayed to the device host that holds the phone.
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
import type { Grants } from '../runtime/grants.js';
import { notReady } from '../errors.js';
import type { Db } from '../stores/postgres/pool.js';
import type { PagedSession, ViewerSource } from '../viewer/pages.js';
import { STREAM_PATH, refuseUpgrade, sameOrigin } from '../viewer/stream.js';
import { hostStreamPath } from './host-viewer.js';
import { NODE_HEADER, callHost, hostRefusal, type NodeSigner } from './node-auth.js';
import { one } from './shared-sessions.js';

const CONNECT_TIMEOUT_MS = 10_000;
/** What a browser's WebSocket handshake needs to reach the host; nothing else is passed on. */
const HANDSHAKE_HEADERS = ['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-extensions'];

type LiveRow = PagedSession & { host_url: string | null };

export interface DeploymentViewerDeps {
  db: Db;
  grants: Grants;
  signer: NodeSigner;
  log: Logger;
}

export function deploymentViewers(deps: DeploymentViewerDeps): ViewerSource {
  const { db, grants, signer, log } = deps;
  const relayed = new Set<Duplex>();

  const live = (sid: string) =>
    one<LiveRow>(
      db,
      `SELECT s.id, s.device, s.state, s.expires_at, h.url AS host_url
       FROM sessions s LEFT JOIN hosts h ON h.id = s.host_id WHERE s.id = $1 AND s.done = 0`,
      [sid],
    ).then((row) => row ?? null);

  /** Relays an accepted stream to the host: its 101 (or its refusal) back, then bytes both ways. */
  const relay = (req: IncomingMessage, socket: Duplex, head: Buffer, hostUrl: string, path: string) => {
    const headers: Record<string, string> = {
      connection: 'Upgrade',
      upgrade: 'websocket',
      [NODE_HEADER]: signer.sign('GET', path),
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
      relayed.add(socket);
      const done = () => {
        relayed.delete(socket);
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
      log.warn('device host did not take a viewer stream', { error: String(err) });
      refuseUpgrade(socket, 502, 'Bad Gateway');
    });
    upstream.end();
  };

  return {
    isViewGrantFor: (token, sid) => grants.isViewGrantFor(token, sid),
    viewer: (token) => grants.viewer(token),
    live,
    async frame(sid) {
      const row = await live(sid);
      if (!row || row.state !== 'ready' || row.host_url === null)
        throw notReady(row?.state ?? 'closing', sid);
      const answer = await callHost(
        signer,
        log,
        sid,
        row.host_url,
        'GET',
        `/internal/sessions/${encodeURIComponent(sid)}/frame.png`,
      );
      if (answer.status !== 200) throw hostRefusal(answer);
      return answer.payload;
    },
    handleUpgrade(req, socket, head) {
      const path = (req.url ?? '').split('?')[0] ?? '';
      const m = STREAM_PATH.exec(path);
      if (!m) return false;
      // The same checks, in the same order, as the embedded server's streams (stream.ts).
      if (!sameOrigin(req)) return refuseUpgrade(socket, 403, 'Forbidden');
      const grant = grants.viewer(m[1]!);
      if (!grant) return refuseUpgrade(socket, 404, 'Not Found');
      // A browser that gives up while the store answers must not leave an error unhandled.
      socket.on('error', () => socket.destroy());
      live(grant.sid).then(
        (row) => {
          if (!row) return refuseUpgrade(socket, 410, 'Gone');
          if (row.state !== 'ready' || row.host_url === null) return refuseUpgrade(socket, 409, 'Conflict');
          const expiresAt = Math.min(grant.expiresAt, row.expires_at);
          relay(req, socket, head, row.host_url, hostStreamPath(row.id, grant.mode, expiresAt));
          return true;
        },
        (err: unknown) => {
          log.warn('could not look up a viewer stream', { error: String(err) });
          refuseUpgrade(socket, 503, 'Service Unavailable');
        },
      );
      return true;
    },
    close() {
      for (const socket of relayed) socket.destroy();
    },
  };
}
