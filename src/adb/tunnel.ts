/**
 * A local ADB tunnel, so that stock tools (adb, Appium) reach the phone as
 * `127.0.0.1:<port>`: for each connection to the local port, open the gateway, send the
 * unlock line, and relay bytes both ways. The unlock code never leaves this process.
 */
import net from 'node:net';
import { relay } from '../util/relay.js';
import { openGateway, type AdbEndpoint } from './gateway.js';

export interface TunnelOptions {
  /** Local interface (default 127.0.0.1: the tunnel is for this machine only). */
  host?: string;
  /** Local port (default 0: a free one). */
  port?: number;
  /** Told about relays that could not be opened (debug output). */
  onError?(error: Error): void;
}

export class AdbTunnel {
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  readonly #endpoint: AdbEndpoint;
  readonly #onError: ((error: Error) => void) | undefined;
  #port = 0;
  #closed: Promise<void> | null = null;

  private constructor(
    endpoint: AdbEndpoint,
    readonly host: string,
    onError?: (error: Error) => void,
  ) {
    this.#endpoint = endpoint;
    this.#onError = onError;
    this.#server = net.createServer({ pauseOnConnect: true, noDelay: true }, (local) => this.#relay(local));
  }

  static async open(endpoint: AdbEndpoint, options: TunnelOptions = {}): Promise<AdbTunnel> {
    const tunnel = new AdbTunnel(endpoint, options.host ?? '127.0.0.1', options.onError);
    await tunnel.#listen(options.port ?? 0);
    return tunnel;
  }

  get port(): number {
    return this.#port;
  }

  /** What stock adb calls this phone once connected: `127.0.0.1:<port>`. */
  get serial(): string {
    return `${this.host}:${this.#port}`;
  }

  /** Open relays (tests, diagnostics). */
  get relays(): number {
    return Math.floor(this.#sockets.size / 2);
  }

  /** Stops listening and cuts every relay. Idempotent. */
  close(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      for (const s of this.#sockets) s.destroy();
      this.#server.close(() => resolve());
    });
    return this.#closed;
  }

  async #listen(port: number): Promise<void> {
    const server = this.#server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // The tunnel must not keep a process alive on its own; its lease owns its lifetime.
    server.unref();
    this.#port = (server.address() as net.AddressInfo).port;
  }

  #track(socket: net.Socket): void {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
  }

  #relay(local: net.Socket): void {
    this.#track(local);
    local.on('error', () => local.destroy());
    openGateway(this.#endpoint).then(
      (remote) => {
        this.#track(remote);
        if (local.destroyed || this.#closed) {
          remote.destroy();
          return;
        }
        // A clean end on either side reaches the other after every byte before it; only an
        // error tears both down at once. The bytes adb sent while the gateway was unlocking
        // wait in the paused socket.
        relay(local, remote);
        local.resume();
      },
      (error: Error) => {
        this.#onError?.(error);
        local.destroy();
      },
    );
  }
}
