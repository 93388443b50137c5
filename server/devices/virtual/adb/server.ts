/** The phone's ADB listener: a real TCP port speaking the device side of the protocol. */
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import type { DeviceLogger } from '../../types.js';
import { AdbConnection } from './connection.js';
import type { ServiceResolver } from './connection.js';

export class AdbServer {
  private readonly server: Server;
  private readonly connections = new Set<AdbConnection>();
  private readonly sockets = new Set<Socket>();
  private closed = false;

  constructor(
    private readonly options: {
      banner: string;
      resolve: ServiceResolver;
      log: DeviceLogger;
      onFailure?: (reason: string) => void;
    },
  ) {
    this.server = createServer({ noDelay: true }, (socket) => this.accept(socket));
  }

  private listening: Promise<number> | null = null;

  /**
   * Listens on a free port of `host` (once: later calls share the first call's port; a
   * failed attempt may be retried). Refused once the server is closed.
   */
  listen(host: string): Promise<number> {
    if (this.closed) return Promise.reject(new Error('virtual adb: the phone is stopped'));
    this.listening ??= this.open(host).catch((error: unknown) => {
      this.listening = null;
      throw error;
    });
    return this.listening;
  }

  private async open(host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      this.server.once('error', onError);
      this.server.listen({ host, port: 0 }, () => {
        this.server.off('error', onError);
        resolve();
      });
    });
    // After listening, a listener error means the phone can no longer be reached.
    this.server.on('error', (error: Error) => {
      this.options.log.warn('virtual adb: listener failed', { error: String(error) });
      this.options.onFailure?.(`ADB listener failed: ${error.message}`);
    });
    const address = this.server.address();
    if (!address || typeof address === 'string') throw new Error('virtual adb: no TCP address');
    return address.port;
  }

  /** Stops listening and drops every connection (and with them every stream). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const c of this.connections) c.close();
    for (const s of this.sockets) s.destroy();
    this.connections.clear();
    // A listen under way finishes first, so that its port is closed too.
    await this.listening?.catch(() => undefined);
    await new Promise<void>((resolve) => {
      if (!this.server.listening) {
        resolve();
        return;
      }
      this.server.close(() => resolve());
    });
  }

  /**
   * Serves a connection accepted elsewhere in this process (the ADB gateway, past its unlock
   * line), as if it had arrived on the port; `early` is what the host already sent.
   */
  serve(socket: Socket, early: Buffer = Buffer.alloc(0)): void {
    this.accept(socket, early);
  }

  private accept(socket: Socket, early?: Buffer): void {
    if (this.closed) {
      socket.destroy();
      return;
    }
    this.sockets.add(socket);
    const connection = new AdbConnection(socket, this.options, early);
    this.connections.add(connection);
    socket.once('close', () => {
      this.sockets.delete(socket);
      this.connections.delete(connection);
    });
  }
}
