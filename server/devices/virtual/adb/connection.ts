/**
 * The device end of one ADB TCP connection: answers the host's CNXN (no AUTH: the
 * gateway in front of the phone guards access), then multiplexes streams.
 */
import type { Socket } from 'node:net';
import {
  A_AUTH,
  A_CLSE,
  A_CNXN,
  A_OKAY,
  A_OPEN,
  A_STLS,
  A_VERSION,
  A_WRTE,
  DEVICE_MAX_PAYLOAD,
  MessageReader,
  commandName,
  encodeHeader,
} from './protocol.js';
import type { AdbMessage } from './protocol.js';
import { AdbStream, ackPayload } from './stream.js';
import type { DelayedAckWindows, StreamTransport } from './stream.js';
import type { DeviceLogger } from '../../types.js';

export type ServiceHandler = (stream: AdbStream) => void;

/**
 * What a service may do with the connection it arrived on. `adb reverse` needs it: the
 * phone's listener opens streams back to the host (a device-initiated OPEN) on the same
 * transport, and its listeners go away with that transport, as in adbd.
 */
export interface DeviceTransport {
  /** Names the transport in `reverse:list-forward` (adbd says `host-N` for TCP transports). */
  readonly serial: string;
  /** Opens a stream to `destination` on the host side; rejects when the host refuses it. */
  openStream(destination: string): Promise<AdbStream>;
  /** Runs once when the connection closes; returns a function that unregisters it. */
  onClose(listener: () => void): () => void;
}

/** Maps an OPEN destination to its handler, or null to refuse the stream (CLSE). */
export type ServiceResolver = (destination: string, transport: DeviceTransport) => ServiceHandler | null;

export interface ConnectionOptions {
  /** `device::ro.product.name=...;features=...` */
  banner: string;
  resolve: ServiceResolver;
  log: DeviceLogger;
}

let nextTransportNumber = 1;

/** AOSP's feature name for delayed acks (docs/dev/delayed_ack.md). */
export const DELAYED_ACK_FEATURE = 'delayed_ack';
/**
 * What a delayed-ack stream lets the host send before our OKAY. At least two WRTEs of the
 * largest payload: a host never splits a write below its max payload, and one that waits
 * for room for a whole WRTE must get it.
 */
export const DELAYED_ACK_WINDOW = 2 * DEVICE_MAX_PAYLOAD;

/** A device-initiated OPEN waiting for the host's OKAY (or CLSE). */
interface PendingOpen {
  destination: string;
  resolve: (stream: AdbStream) => void;
  reject: (error: Error) => void;
}

export class AdbConnection implements StreamTransport, DeviceTransport {
  readonly serial = `host-${nextTransportNumber++}`;
  private readonly streams = new Map<number, AdbStream>();
  private readonly pendingOpens = new Map<number, PendingOpen>();
  private readonly closeListeners = new Set<() => void>();
  private nextLocalId = 1;
  private online = false;
  private hostMaxPayload = DEVICE_MAX_PAYLOAD;
  /** Hosts older than version 0x01000001 expect payload checksums. */
  private checksums = false;
  /** Both this device and the host announced `delayed_ack`: streams may use it. */
  private delayedAck = false;
  private readonly reader: MessageReader;
  private closed = false;

  constructor(
    private readonly socket: Socket,
    private readonly options: ConnectionOptions,
    /** Bytes the host sent before this connection took the socket (the gateway read them). */
    early?: Buffer,
  ) {
    socket.setNoDelay(true);
    this.reader = new MessageReader((m) => this.onMessage(m));
    const receive = (chunk: Buffer) => {
      try {
        this.reader.push(chunk);
      } catch (error) {
        this.options.log.debug('virtual adb: dropping connection', { error: String(error) });
        this.close();
      }
    };
    if (early && early.length > 0) receive(early);
    socket.on('data', receive);
    socket.on('error', () => this.close());
    socket.on('close', () => this.close());
  }

  get maxPayload(): number {
    return Math.min(this.hostMaxPayload, DEVICE_MAX_PAYLOAD);
  }

  send(command: number, arg0: number, arg1: number, payload?: readonly Buffer[]): void {
    if (this.closed) return;
    let length = 0;
    if (payload) for (const p of payload) length += p.length;
    const header = encodeHeader(command, arg0, arg1, length);
    if (this.checksums && payload) {
      let sum = 0;
      for (const p of payload) for (let i = 0; i < p.length; i++) sum += p[i]!;
      header.writeUInt32LE(sum >>> 0, 16);
    }
    if (!payload || payload.length === 0) {
      this.socket.write(header);
      return;
    }
    // Cork so header and payload pieces leave in one writev, without concatenating them.
    this.socket.cork();
    this.socket.write(header);
    for (const p of payload) this.socket.write(p);
    this.socket.uncork();
  }

  release(localId: number): void {
    this.streams.delete(localId);
  }

  openStream(destination: string): Promise<AdbStream> {
    if (this.closed || !this.online) return Promise.reject(new Error('the ADB connection is closed'));
    const localId = this.nextLocalId++;
    return new Promise<AdbStream>((resolve, reject) => {
      this.pendingOpens.set(localId, { destination, resolve, reject });
      // arg1: the window we grant with delayed acks, 0 (one WRTE in flight) without them.
      const window = this.delayedAck ? DELAYED_ACK_WINDOW : 0;
      this.send(A_OPEN, localId, window, [Buffer.from(`${destination}\0`, 'utf8')]);
    });
  }

  onClose(listener: () => void): () => void {
    if (this.closed) {
      listener();
      return () => undefined;
    }
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stream of [...this.streams.values()]) {
      stream.handlePeerClose();
      stream.destroy();
    }
    this.streams.clear();
    for (const pending of this.pendingOpens.values()) pending.reject(new Error('the ADB connection closed'));
    this.pendingOpens.clear();
    for (const listener of [...this.closeListeners]) {
      try {
        listener();
      } catch (error) {
        this.options.log.debug('virtual adb: close listener failed', { error: String(error) });
      }
    }
    this.closeListeners.clear();
    this.socket.destroy();
  }

  private addStream(
    localId: number,
    remoteId: number,
    destination: string,
    delayedAck: DelayedAckWindows | null,
  ): AdbStream {
    const stream = new AdbStream(this, localId, remoteId, destination, delayedAck);
    // Streams are full-duplex Node streams; an unhandled 'error' would crash the server.
    stream.on('error', () => undefined);
    this.streams.set(localId, stream);
    return stream;
  }

  private onMessage(message: AdbMessage): void {
    switch (message.command) {
      case A_CNXN: {
        // A second CNXN restarts the session: forget every stream, as adbd does.
        for (const stream of [...this.streams.values()]) stream.handlePeerClose();
        this.hostMaxPayload = message.arg1 > 0 ? message.arg1 : DEVICE_MAX_PAYLOAD;
        this.checksums = message.arg0 < A_VERSION;
        this.delayedAck =
          bannerFeatures(this.options.banner).includes(DELAYED_ACK_FEATURE) &&
          bannerFeatures(message.payload.toString('utf8')).includes(DELAYED_ACK_FEATURE);
        this.online = true;
        this.send(
          A_CNXN,
          Math.min(message.arg0, A_VERSION),
          this.checksums ? Math.min(DEVICE_MAX_PAYLOAD, 256 * 1024) : DEVICE_MAX_PAYLOAD,
          [Buffer.from(this.options.banner, 'utf8')],
        );
        return;
      }
      case A_AUTH:
      case A_STLS:
        // We never challenge, so a host AUTH/STLS is unexpected; ignore it.
        return;
      case A_OPEN: {
        if (!this.online) return;
        const remoteId = message.arg0;
        let destination = message.payload.toString('utf8');
        if (destination.endsWith('\0')) destination = destination.slice(0, -1);
        let handler: ServiceHandler | null = null;
        try {
          handler = this.options.resolve(destination, this);
        } catch (error) {
          this.options.log.debug('virtual adb: service failed to open', {
            destination,
            error: String(error),
          });
        }
        if (!handler) {
          this.options.log.debug('virtual adb: refused stream', { destination });
          this.send(A_CLSE, 0, remoteId);
          return;
        }
        const localId = this.nextLocalId++;
        // A host with delayed acks says in arg1 how much we may send before its OKAY, and
        // learns from our OKAY's payload how much it may send. Hosts without them send 0.
        const delayed = this.delayedAck && message.arg1 > 0;
        const stream = this.addStream(
          localId,
          remoteId,
          destination,
          delayed ? { send: message.arg1, receive: DELAYED_ACK_WINDOW } : null,
        );
        if (delayed) this.send(A_OKAY, localId, remoteId, [ackPayload(DELAYED_ACK_WINDOW)]);
        else this.send(A_OKAY, localId, remoteId);
        try {
          handler(stream);
        } catch (error) {
          // A failing service ends its own stream, never the connection or the server.
          this.options.log.debug('virtual adb: service failed', { destination, error: String(error) });
          stream.destroy();
        }
        return;
      }
      case A_OKAY: {
        const pending = this.pendingOpens.get(message.arg1);
        if (pending) {
          // The host accepted a stream this side opened: arg0 is its id for it.
          this.pendingOpens.delete(message.arg1);
          // With delayed acks, its payload is how much we may send on it before its next OKAY.
          const windows =
            this.delayedAck && message.payload.length === 4
              ? { send: message.payload.readUInt32LE(0), receive: DELAYED_ACK_WINDOW }
              : null;
          pending.resolve(this.addStream(message.arg1, message.arg0, pending.destination, windows));
          return;
        }
        this.streams.get(message.arg1)?.handleOkay(message.payload);
        return;
      }
      case A_WRTE: {
        const stream = this.streams.get(message.arg1);
        if (stream) stream.handleWrite(message.payload);
        else this.send(A_CLSE, 0, message.arg0);
        return;
      }
      case A_CLSE: {
        const pending = this.pendingOpens.get(message.arg1);
        if (pending) {
          this.pendingOpens.delete(message.arg1);
          pending.reject(new Error(`the host refused ${pending.destination}`));
          return;
        }
        const stream = this.streams.get(message.arg1);
        if (stream) stream.handlePeerClose();
        return;
      }
      default:
        this.options.log.debug('virtual adb: unknown message', { command: commandName(message.command) });
    }
  }
}

/** The features a CNXN banner (`host::features=a,b` or `device::k=v;...;features=a,b`) announces. */
function bannerFeatures(banner: string): string[] {
  const features = /(?:::|;)features=([^;\0]*)/.exec(banner)?.[1];
  return features ? features.split(',') : [];
}
