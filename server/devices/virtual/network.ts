/**
 * The phone's own network. Apps on the virtual phone run inside the server process (or, for
 * the browser, as a real Chromium on the server machine), so without care `localhost` in
 * the phone would be the server machine's localhost. This object is the phone's network
 * namespace instead: its loopback is a table of ports (what apps on the phone listen on,
 * `adb reverse` listeners among them) and named abstract sockets; everything else goes out
 * to the world like a phone on Wi-Fi.
 *
 * A real process (Chromium) joins the namespace through a SOCKS5 proxy that only this phone
 * uses: every connection it makes arrives here by name, `localhost:R` reaches exactly what
 * listens on the phone's port R, and a port nobody listens on is refused.
 */
import { isIP } from 'node:net';
import { connect as netConnect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { relay } from '../../../src/util/relay.js';
import { socketPair } from './local-socket.js';

/** Handles one connection to a port or abstract socket inside the phone. */
export type PortHandler = (socket: Duplex) => void;

/** Ports the phone hands out for `tcp:0` (Linux's default ephemeral range). */
const EPHEMERAL_FIRST = 32768;
const EPHEMERAL_LAST = 60999;

/** True for names that mean "this phone" (its loopback), whatever the spelling. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h.endsWith('.localhost') || h === '::1' || h === '0.0.0.0') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  return h === '0:0:0:0:0:0:0:1';
}

/** One `adb reverse` listener, as `reverse:list-forward` shows it. */
export interface ReverseEntry {
  /** Where it listens on the phone: `tcp:PORT` or `localabstract:NAME`. */
  local: string;
  /** The host-side spec each connection opens (`tcp:L`, `localabstract:NAME` ...). */
  target: string;
  /** The transport that made it. */
  serial: string;
  /** Stops listening (killforward, or its transport went away). */
  remove(): void;
}

/**
 * Who listens on a port, as the kernel lists the socket (/proc/net/tcp, netstat): adbd's
 * `adb reverse` listeners bind IPv4 loopback (adbd listens on 127.0.0.1 only); Java servers
 * (ServerSocket, Netty: the UiAutomator2 server) and toybox `nc -l` bind the IPv6 wildcard,
 * which takes IPv4 connections too.
 */
export interface PortOwner {
  uid: number;
  bind: 'loopback' | 'any';
}

/** One TCP socket on the phone, as /proc/net/tcp and /proc/net/tcp6 list it. */
export interface TcpSocket {
  /** tcp6 for a socket of the IPv6 family (its IPv4 peers show as ::ffff:a.b.c.d). */
  family: 4 | 6;
  local: string;
  localPort: number;
  remote: string;
  remotePort: number;
  /** The kernel's state number: 0x0A listening, 0x01 established. */
  state: number;
  uid: number;
  inode: number;
}

/** adbd's uid (`shell`): the client end of every `adb forward` connection is adbd's. */
export const ADBD_UID = 2000;
export const TCP_LISTEN = 0x0a;
export const TCP_ESTABLISHED = 0x01;

interface Listener {
  handler: PortHandler;
  owner: PortOwner;
  inode: number;
}

export class PhoneNetwork {
  /** Ports on the phone's loopback that accept connections, and who listens there. */
  private readonly listeners = new Map<number, Listener>();
  /** Connections to those ports that are open: both ends, as the kernel lists them. */
  private readonly connections = new Set<[TcpSocket, TcpSocket]>();
  /** Socket inodes, as the kernel numbers them: one each, never reused while the phone runs. */
  private inodes = 41_250;
  /** The next client port of a loopback connection (the kernel's ephemeral range). */
  private nextClientPort = EPHEMERAL_FIRST + 4_096;
  /** Abstract unix sockets (`localabstract:NAME`), e.g. Chrome's `chrome_devtools_remote`. */
  readonly abstractSockets = new Map<string, PortHandler>();
  /**
   * `adb reverse` listeners by phone port (adbd keeps one table for the device). They
   * listen like any other server on the phone; the adb reverse service owns the entries.
   */
  /** The `adb reverse` listeners, by their phone-side spec (`tcp:PORT`, `localabstract:NAME`). */
  readonly reverses = new Map<string, ReverseEntry>();
  private proxy: { server: Server; port: Promise<number>; sockets: Set<Socket> } | null = null;
  private closed = false;

  /**
   * @param onRefused told of each proxied connection nobody on the phone listens for.
   * @param proxyClientUid the uid of the process whose connections come through the proxy
   *   (Chrome's): the client end of its loopback connections is listed as its.
   */
  constructor(
    private readonly onRefused: (what: string) => void = () => undefined,
    private readonly proxyClientUid = ADBD_UID,
  ) {}

  /** True when something on the phone listens on this port. */
  isListening(port: number): boolean {
    return this.listeners.has(port);
  }

  /**
   * Listens on a port of the phone's loopback (the caller has checked it is free: each
   * server words "Address already in use" its own way). Returns what stops listening; it
   * frees the port only while the port is still this listener's.
   */
  listen(port: number, handler: PortHandler, owner: PortOwner): () => void {
    if (this.listeners.has(port)) throw new Error(`port ${port} is already in use on the phone`);
    const listener: Listener = { handler, owner, inode: this.inodes++ };
    this.listeners.set(port, listener);
    return () => {
      if (this.listeners.get(port) === listener) this.listeners.delete(port);
    };
  }

  /** A free port for `tcp:0`. */
  ephemeralPort(): number {
    for (let p = EPHEMERAL_FIRST; p <= EPHEMERAL_LAST; p++) if (!this.listeners.has(p)) return p;
    throw new Error('no free port on the phone');
  }

  /**
   * Hands a connection to what listens on the port (adbd's `tcp:PORT` stream, a proxied
   * browser request): false when nothing listens there. The connection is listed as the
   * kernel lists a loopback connection (the server's end and the client's) until it closes.
   */
  accept(port: number, socket: Duplex, clientUid: number): boolean {
    const listener = this.listeners.get(port);
    if (!listener) return false;
    const clientPort = this.clientPort();
    const v6 = listener.owner.bind === 'any';
    const server: TcpSocket = {
      family: v6 ? 6 : 4,
      local: v6 ? '::ffff:127.0.0.1' : '127.0.0.1',
      localPort: port,
      remote: v6 ? '::ffff:127.0.0.1' : '127.0.0.1',
      remotePort: clientPort,
      state: TCP_ESTABLISHED,
      uid: listener.owner.uid,
      inode: this.inodes++,
    };
    const client: TcpSocket = {
      family: 4,
      local: '127.0.0.1',
      localPort: clientPort,
      remote: '127.0.0.1',
      remotePort: port,
      state: TCP_ESTABLISHED,
      uid: clientUid,
      inode: this.inodes++,
    };
    const pair: [TcpSocket, TcpSocket] = [server, client];
    this.connections.add(pair);
    socket.once('close', () => this.connections.delete(pair));
    listener.handler(socket);
    return true;
  }

  /** Connects to a port on the phone's loopback; null when nothing listens there. */
  connectPort(port: number, clientUid = ADBD_UID): Duplex | null {
    if (!this.listeners.has(port)) return null;
    const [client, server] = this.socketPair();
    this.accept(port, server, clientUid);
    return client;
  }

  /** Connects to an abstract socket; null when nothing listens on that name. */
  connectAbstract(name: string): Duplex | null {
    const handler = this.abstractSockets.get(name);
    if (!handler) return null;
    const [client, server] = this.socketPair();
    handler(server);
    return client;
  }

  /** The phone's TCP sockets: listeners first (by port), then open connections. */
  tcpSockets(): TcpSocket[] {
    const listening = [...this.listeners.entries()]
      .sort(([a], [b]) => a - b)
      .map(([port, { owner, inode }]): TcpSocket => {
        const v6 = owner.bind === 'any';
        return {
          family: v6 ? 6 : 4,
          local: v6 ? '::' : '127.0.0.1',
          localPort: port,
          remote: v6 ? '::' : '0.0.0.0',
          remotePort: 0,
          state: TCP_LISTEN,
          uid: owner.uid,
          inode,
        };
      });
    return [...listening, ...[...this.connections].flat()];
  }

  private clientPort(): number {
    const port = this.nextClientPort;
    this.nextClientPort = port >= EPHEMERAL_LAST ? EPHEMERAL_FIRST : port + 1;
    return port;
  }

  private socketPair(): [Duplex, Duplex] {
    const [client, server] = socketPair();
    // Both ends are in-memory streams; an unhandled 'error' on either would crash the server.
    client.on('error', () => undefined);
    server.on('error', () => undefined);
    return [client, server];
  }

  /**
   * The port of this phone's SOCKS5 proxy on the server machine's loopback, started on first
   * use. Give it to a real process (Chromium's --proxy-server) so its connections are the phone's.
   */
  proxyPort(): Promise<number> {
    if (this.closed) return Promise.reject(new Error('the phone is shut down'));
    if (!this.proxy) {
      const sockets = new Set<Socket>();
      // No Nagle: the browser's requests and the answers are relayed as they come.
      const server = createServer({ noDelay: true }, (socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
        socket.on('error', () => undefined);
        this.socks(socket);
      });
      const port = new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host: '127.0.0.1', port: 0 }, () => {
          const address = server.address();
          if (address && typeof address === 'object') resolve(address.port);
          else reject(new Error('the phone network proxy has no TCP address'));
        });
      });
      this.proxy = { server, port, sockets };
    }
    return this.proxy.port;
  }

  /** Stops the proxy and forgets every listener: nothing reaches the phone any more. */
  close(): void {
    this.closed = true;
    this.listeners.clear();
    this.connections.clear();
    this.abstractSockets.clear();
    this.reverses.clear();
    const proxy = this.proxy;
    this.proxy = null;
    if (proxy) {
      for (const s of proxy.sockets) s.destroy();
      proxy.server.close();
    }
  }

  /** One SOCKS5 (RFC 1928) client: no authentication, CONNECT only. */
  private socks(socket: Socket): void {
    let buffered = Buffer.alloc(0);
    let stage: 'greeting' | 'request' = 'greeting';
    const fail = (code: number) => {
      // Reply with the failure, then close: the browser reports a failed connection.
      socket.end(Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]));
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (stage === 'greeting') {
        if (buffered.length < 2) return;
        const methods = buffered[1]!;
        if (buffered.length < 2 + methods) return;
        if (buffered[0] !== 5) {
          socket.destroy();
          return;
        }
        buffered = buffered.subarray(2 + methods);
        socket.write(Buffer.from([5, 0]));
        stage = 'request';
      }
      if (buffered.length < 5) return;
      const [version, command, , type] = buffered;
      let host: string;
      let end: number;
      if (type === 1) {
        end = 4 + 4;
        if (buffered.length < end + 2) return;
        host = [...buffered.subarray(4, 8)].join('.');
      } else if (type === 3) {
        end = 5 + buffered[4]!;
        if (buffered.length < end + 2) return;
        host = buffered.subarray(5, end).toString('utf8');
      } else if (type === 4) {
        end = 4 + 16;
        if (buffered.length < end + 2) return;
        const words: string[] = [];
        for (let i = 4; i < 20; i += 2) words.push(buffered.readUInt16BE(i).toString(16));
        host = words.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
      } else {
        fail(8);
        return;
      }
      const port = buffered.readUInt16BE(end);
      const rest = buffered.subarray(end + 2);
      socket.off('data', onData);
      if (version !== 5 || command !== 1) {
        fail(7);
        return;
      }
      this.route(socket, host, port, rest);
    };
    socket.on('data', onData);
  }

  private route(socket: Socket, host: string, port: number, rest: Buffer): void {
    const ok = Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    if (isLoopbackHost(host)) {
      // The port is looked up when the first bytes arrive, not at CONNECT: Chromium opens
      // (preconnects) proxy connections ahead of requests and keeps them, so a connection
      // made before `adb reverse` may carry the first request after it. Browsers speak
      // first (HTTP, TLS, WebSocket), so nothing waits on the phone's side meanwhile.
      socket.write(ok);
      const decide = (first: Buffer) => {
        const inner = this.connectPort(port, this.proxyClientUid);
        if (inner) {
          inner.write(first);
          relay(socket, inner);
          return;
        }
        this.onRefused(`${host}:${port}`);
        answerFailure(socket, first, refusedPage(host, port));
      };
      if (rest.length > 0) decide(rest);
      else socket.once('data', decide);
      return;
    }
    const outer = netConnect({ host, port, noDelay: true });
    outer.once('connect', () => {
      socket.write(ok);
      if (rest.length > 0) outer.write(rest);
      relay(socket, outer);
    });
    outer.once('error', (error: NodeJS.ErrnoException) => {
      if (socket.destroyed) return;
      if (outer.readyState === 'opening' || outer.connecting) {
        // Not a SOCKS failure reply: see answerFailure.
        socket.write(ok);
        const explain = (first: Buffer) =>
          answerFailure(socket, first, failedPage(host, port, error.code ?? error.message));
        if (rest.length > 0) explain(rest);
        else socket.once('data', explain);
      } else socket.destroy();
    });
  }
}

/**
 * Ends a proxied connection that cannot reach its target. Chromium marks a SOCKS proxy bad
 * when it refuses or drops connections and then fails every request for minutes (reversed
 * ports included), so the connection is accepted: a plain HTTP request gets a 502 page that
 * says what happened; anything else (TLS) is closed.
 */
function answerFailure(socket: Socket, first: Buffer, page: string): void {
  const line = first.toString('latin1', 0, Math.min(first.length, 512)).split('\n')[0] ?? '';
  if (!/^[A-Z]+ \S+ HTTP\/1\.[01]\r?$/.test(line)) {
    socket.end();
    return;
  }
  socket.end(
    `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(page)}\r\nConnection: close\r\n\r\n${page}`,
  );
}

function failedPage(host: string, port: number, why: string): string {
  return `<!doctype html><meta name="viewport" content="width=device-width"><title>Cannot reach ${host}</title>
<h1>The phone cannot reach ${host}:${port}</h1><p>${why.replace(/[<>&]/g, '')}</p>`;
}

/** What the phone's browser shows for a loopback port nothing listens on. */
function refusedPage(host: string, port: number): string {
  return `<!doctype html><meta name="viewport" content="width=device-width"><title>Nothing on ${port}</title>
<h1>Nothing listens on ${host}:${port} on the phone</h1>
<p>The phone's localhost is the phone's own. To reach a server on your machine, reverse the port first:
<code>phone.reverse(${port})</code> or <code>adb reverse tcp:${port} tcp:${port}</code>.</p>`;
}
