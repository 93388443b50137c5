/**
 * `adb forward` and `adb reverse` on a lease's own ADB connection, without the stock adb.
 *
 * forward: a local TCP listener; each connection opens an ADB stream to the phone-side spec
 * (`tcp:PORT`, `localabstract:NAME`), exactly what the adb server does for `adb forward`.
 * reverse: asks the phone to listen on its port (`reverse:forward:norebind:tcp:R;tcp:L`);
 * the phone opens a stream back over this connection for each connection, and it is bridged
 * to 127.0.0.1:L here. Both end with the connection: the listeners here are closed, and the
 * phone drops reverse listeners when the transport that made them goes away.
 */
import { connect as netConnect, createServer, type Server, type Socket } from 'node:net';
import type { Adb, AdbSocket } from '@yume-chan/adb';
import { PhoneleaseError } from '../errors.js';
import { messageOf } from '../util/message.js';

/** `phone.reverse(port)` for a phone port this lease already reversed. */
export class PortAlreadyReversedError extends PhoneleaseError {
  override name = 'PortAlreadyReversedError';
  declare readonly code: 'port_already_reversed';
  constructor(readonly remotePort: number) {
    super(
      'port_already_reversed',
      `The phone's port ${remotePort} is already reversed; reverse another port, or call phone.removeReverse(${remotePort}) first.`,
    );
  }
}

/** A forward or reverse the phone or this machine refused. */
export class PortForwardError extends PhoneleaseError {
  override name = 'PortForwardError';
  declare readonly code: 'port_forward_failed';
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('port_forward_failed', message, options);
  }
}

/** `3000` means `tcp:3000`; strings are ADB socket specs (`tcp:N`, `localabstract:NAME`, ...). */
export function socketSpec(remote: number | string): string {
  return typeof remote === 'number' ? `tcp:${remote}` : remote;
}

/** Closes an ADB stream, ignoring a failure (the connection may be gone already). */
function closeQuietly(adb: AdbSocket): void {
  Promise.resolve()
    .then(() => adb.close())
    .catch(() => undefined);
}

/** Relays a TCP connection and an ADB stream both ways until either ends. */
function bridge(tcp: Socket, adb: AdbSocket): void {
  const writer = adb.writable.getWriter();
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    tcp.destroy();
    closeQuietly(adb);
  };
  // The writer's closed promise rejects when the connection dies; close() handles that.
  writer.closed.catch(() => close());
  tcp.on('data', (chunk: Buffer) => {
    if (closed) return;
    tcp.pause();
    writer.write(new Uint8Array(chunk)).then(
      () => tcp.resume(),
      () => close(),
    );
  });
  tcp.once('end', () => close());
  tcp.once('error', () => close());
  tcp.once('close', () => close());
  void (async () => {
    const reader = adb.readable.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done || closed) break;
        // Backpressure: wait for the socket to drain before reading more from the phone.
        if (!tcp.write(value)) await new Promise<void>((resolve) => tcp.once('drain', () => resolve()));
      }
    } catch {
      // The stream failed: the connection ends below.
    } finally {
      if (!closed) tcp.end();
      close();
    }
  })();
}

export class PortForwards {
  readonly #adb: Adb;
  readonly #forwards = new Map<number, { server: Server; sockets: Set<Socket> }>();
  readonly #reverses = new Map<number, string>();
  /** How many reverses use each host-side spec (their stream handler is shared). */
  readonly #targets = new Map<string, number>();

  constructor(adb: Adb) {
    this.#adb = adb;
  }

  /** Listens on 127.0.0.1:localPort (0: any free port) and forwards to `remote` on the phone; the port. */
  async forward(localPort: number, remote: number | string): Promise<number> {
    const spec = socketSpec(remote);
    const sockets = new Set<Socket>();
    // No Nagle on either side of the relay: DevTools is many small request/response messages,
    // and Nagle holding each one for the previous one's ACK cost ~8 ms per round trip.
    const server = createServer({ noDelay: true }, (tcp) => {
      sockets.add(tcp);
      tcp.once('close', () => sockets.delete(tcp));
      tcp.on('error', () => undefined);
      tcp.pause();
      this.#adb.createSocket(spec).then(
        (adb) => {
          bridge(tcp, adb);
          tcp.resume();
        },
        // The phone refused the stream (nothing listens there): like adb, drop the connection.
        () => tcp.destroy(),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error) =>
        reject(
          new PortForwardError(`Cannot listen on 127.0.0.1:${localPort}: ${error.message}.`, {
            cause: error,
          }),
        ),
      );
      server.listen({ host: '127.0.0.1', port: localPort }, () => resolve());
    });
    const address = server.address();
    const port = address && typeof address === 'object' ? address.port : localPort;
    this.#forwards.set(port, { server, sockets });
    return port;
  }

  /** Stops a forward made by forward(). */
  async removeForward(localPort: number): Promise<void> {
    const forward = this.#forwards.get(localPort);
    if (!forward) return;
    this.#forwards.delete(localPort);
    for (const s of forward.sockets) s.destroy();
    await new Promise<void>((resolve) => forward.server.close(() => resolve()));
  }

  /**
   * Makes the phone's port `remotePort` reach 127.0.0.1:`localPort` on this machine (the
   * phone's `localhost:remotePort` is then your server). Resolves with the phone's port
   * (the one it picked, for 0).
   */
  async reverse(remotePort: number, localPort: number = remotePort): Promise<number> {
    if (this.#reverses.has(remotePort)) throw new PortAlreadyReversedError(remotePort);
    const target = `tcp:${localPort}`;
    const transport = this.#adb.transport;
    if (!this.#targets.has(target)) {
      await transport.addReverseTunnel((adb) => {
        const tcp = netConnect({ host: '127.0.0.1', port: localPort, noDelay: true });
        tcp.on('error', () => undefined);
        tcp.pause();
        tcp.once('connect', () => {
          bridge(tcp, adb);
          tcp.resume();
        });
        // Nothing listens here: the phone's connection is closed, as with adb reverse.
        tcp.once('error', () => closeQuietly(adb));
      }, target);
    }
    this.#targets.set(target, (this.#targets.get(target) ?? 0) + 1);
    try {
      // norebind: a port someone else reversed is an error, not silently taken over.
      const spec = remotePort === 0 ? 'tcp:0' : `norebind:tcp:${remotePort}`;
      const bound = await this.#adb.reverse.addExternal(spec, target);
      const port = remotePort === 0 ? Number(bound.replace(/^tcp:/, '')) : remotePort;
      this.#reverses.set(port, target);
      return port;
    } catch (error) {
      await this.#releaseTarget(target);
      if (/cannot rebind/i.test(messageOf(error))) throw new PortAlreadyReversedError(remotePort);
      throw new PortForwardError(
        `The phone refused to reverse its port ${remotePort}: ${messageOf(error)}.`,
        {
          cause: error,
        },
      );
    }
  }

  /** Undoes reverse(remotePort). */
  async removeReverse(remotePort: number): Promise<void> {
    const target = this.#reverses.get(remotePort);
    if (!target) return;
    this.#reverses.delete(remotePort);
    try {
      await this.#adb.reverse.remove(`tcp:${remotePort}`);
    } finally {
      await this.#releaseTarget(target);
    }
  }

  async #releaseTarget(target: string): Promise<void> {
    const count = (this.#targets.get(target) ?? 1) - 1;
    if (count > 0) {
      this.#targets.set(target, count);
      return;
    }
    this.#targets.delete(target);
    await this.#adb.transport.removeReverseTunnel(target);
  }

  /** Closes every local listener (the phone drops its reverse listeners with the connection). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#forwards.keys()].map((port) => this.removeForward(port)));
    this.#reverses.clear();
  }
}
