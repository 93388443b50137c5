/**
 * One ADB stream (an OPENed service) as a Node Duplex, so services, pipes and the
 * UiAutomator2 server's HTTP parser can use ordinary stream code.
 *
 * Flow control follows the protocol: at most one WRTE in flight per direction. Outgoing
 * writes wait for the host's OKAY; queued writes are coalesced into WRTEs of up to the
 * negotiated payload size (without concatenating buffers). An incoming WRTE is acknowledged
 * at once while the readable buffer has room (push() returned true); otherwise the OKAY is
 * owed and _read sends it, which Node calls as soon as the consumer wants more. A consumer
 * that pauses keeps data in the readable buffer, so it throttles the host the same way.
 */
import { Duplex } from 'node:stream';
import { A_CLSE, A_OKAY, A_WRTE } from './protocol.js';

export interface StreamTransport {
  /** Largest WRTE payload the host accepts. */
  readonly maxPayload: number;
  send(command: number, arg0: number, arg1: number, payload?: readonly Buffer[]): void;
  /** The stream is finished; forget its id. */
  release(localId: number): void;
}

export class AdbStream extends Duplex {
  private okayWaiter: (() => void) | null = null;
  /** A WRTE was buffered without room for more: its OKAY goes out from _read. */
  private owesOkay = false;
  private peerClosed = false;
  private closeSent = false;
  private readableDone = false;
  private readonly abort = new AbortController();

  constructor(
    private readonly transport: StreamTransport,
    readonly localId: number,
    readonly remoteId: number,
    readonly destination: string,
  ) {
    // The writable buffer holds what accumulates while a WRTE awaits its OKAY, so the next
    // _writev can send it as one message.
    super({
      writableHighWaterMark: transport.maxPayload,
      readableHighWaterMark: 256 * 1024,
      allowHalfOpen: true,
    });
  }

  /**
   * Aborted once the stream is over: the host closed it, the device closed it (the service
   * ended its side), or the connection dropped. Work started for the stream stops then.
   */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get closedByPeer(): boolean {
    return this.peerClosed;
  }

  // ---- called by the connection ----

  handleOkay(): void {
    const waiter = this.okayWaiter;
    this.okayWaiter = null;
    waiter?.();
  }

  handleWrite(payload: Buffer): void {
    if (this.peerClosed) return;
    if (this.owesOkay) {
      // One WRTE in flight: a host that writes before its OKAY would make us buffer without
      // limit. A protocol violation ends the stream (CLSE).
      this.destroy(new Error('ADB protocol violation: WRTE before OKAY'));
      return;
    }
    // Only withhold the OKAY when the buffer is full: Node calls _read once the consumer
    // takes data again (including after pause/resume), and only if push() said no.
    if (this.push(payload)) this.sendOkay();
    else this.owesOkay = true;
  }

  private sendOkay(): void {
    if (this.peerClosed || this.closeSent) return;
    this.transport.send(A_OKAY, this.localId, this.remoteId);
  }

  handlePeerClose(): void {
    if (this.peerClosed) return;
    this.peerClosed = true;
    this.closeSent = true; // the host already forgot this stream; never answer with CLSE
    this.transport.release(this.localId);
    this.over();
    // A writer that never ends must not keep the stream alive; readers still get buffered data.
    if (!this.writableEnded) this.end();
  }

  // ---- Duplex implementation ----

  override _read(): void {
    // Node asks for more: the consumer has room now, whatever the buffer holds at this moment.
    if (!this.owesOkay) return;
    this.owesOkay = false;
    this.sendOkay();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.sendAll([chunk]).then(() => callback(), callback);
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    this.sendAll(chunks.map((c) => c.chunk)).then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.sendClose()) {
      // Closed from this side: the host forgets the stream, nothing more arrives and unread
      // data is moot. Destroy once finished, so 'close' fires even if the consumer stopped
      // reading (a paused stdin, an HTTP parser that is done).
      this.once('finish', () => this.destroy());
    }
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.sendClose();
    this.over();
    callback(error);
  }

  /** Sends CLSE unless either side already closed; true when it did. */
  private sendClose(): boolean {
    if (this.closeSent) return false;
    this.closeSent = true;
    this.transport.send(A_CLSE, this.localId, this.remoteId);
    this.transport.release(this.localId);
    this.over();
    return true;
  }

  /** The stream is over on the wire: stop its work, release a waiting writer, end the readable side. */
  private over(): void {
    this.abort.abort();
    this.handleOkay();
    if (!this.readableDone && !this.destroyed) {
      this.readableDone = true;
      this.push(null);
    }
  }

  private async sendAll(buffers: Buffer[]): Promise<void> {
    const max = this.transport.maxPayload;
    let group: Buffer[] = [];
    let size = 0;
    for (let buf of buffers) {
      while (buf.length > 0) {
        const room = max - size;
        const piece = buf.length > room ? buf.subarray(0, room) : buf;
        buf = buf.length > room ? buf.subarray(room) : Buffer.alloc(0);
        group.push(piece);
        size += piece.length;
        if (size === max) {
          await this.sendOne(group);
          group = [];
          size = 0;
        }
      }
    }
    if (size > 0) await this.sendOne(group);
  }

  private sendOne(group: Buffer[]): Promise<void> {
    // Data written after the host closed has nowhere to go; drop it quietly.
    if (this.peerClosed || this.closeSent) return Promise.resolve();
    return new Promise((resolve) => {
      this.okayWaiter = resolve;
      this.transport.send(A_WRTE, this.localId, this.remoteId, group);
    });
  }
}
