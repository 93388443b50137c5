/**
 * One ADB stream (an OPENed service) as a Node Duplex, so services, pipes and the
 * UiAutomator2 server's HTTP parser can use ordinary stream code.
 *
 * Flow control follows the protocol, in one of two modes a stream keeps for its life:
 *
 * - Classic (every host adb 29 and earlier, and hosts without `delayed_ack`): at most one
 *   WRTE in flight per direction. Outgoing writes wait for the host's OKAY; what queues up
 *   meanwhile is coalesced into WRTEs of up to the negotiated payload size (without
 *   concatenating buffers).
 * - Delayed acks (AOSP's `delayed_ack`, when both sides announce it and the OPEN carries a
 *   window): each side may send as many bytes as the other granted without waiting; an OKAY
 *   carries a u32 count of bytes that grows the sender's window again. A DevTools answer and
 *   the events behind it then leave at once instead of one per round trip through the host.
 *
 * Incoming data is acknowledged at once while the readable buffer has room (push() returned
 * true); otherwise the OKAY is owed and _read sends it, which Node calls as soon as the
 * consumer wants more. A consumer that pauses keeps data in the readable buffer, so it
 * throttles the host the same way in both modes.
 */
import { Duplex } from 'node:stream';
import { A_CLSE, A_OKAY, A_WRTE } from './protocol.js';

/** How long data that arrived before our CLSE waits to be read before the stream is dropped. */
const UNREAD_GRACE_MS = 2_000;

export interface StreamTransport {
  /** Largest WRTE payload the host accepts. */
  readonly maxPayload: number;
  send(command: number, arg0: number, arg1: number, payload?: readonly Buffer[]): void;
  /** The stream is finished; forget its id. */
  release(localId: number): void;
}

/** A delayed-ack stream's windows: what each side may send before hearing an OKAY. */
export interface DelayedAckWindows {
  /** Bytes the host accepts from us now (its OPEN's arg1, or its OKAY to our OPEN). */
  send: number;
  /** Bytes we let the host send (what our OKAY to its OPEN, or our OPEN's arg1, said). */
  receive: number;
}

/** The OKAY payload of a delayed-ack stream: how many bytes it acknowledges. */
export function ackPayload(bytes: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32LE(bytes >>> 0, 0);
  return payload;
}

export class AdbStream extends Duplex {
  /** A writer waiting until it may send (an OKAY arrived, or the stream is over). */
  private okayWaiter: (() => void) | null = null;
  /** Classic mode: a WRTE of ours awaits its OKAY. */
  private inFlight = false;
  /** Delayed acks: bytes we may still send, and bytes the host may still send. */
  private sendWindow: number;
  private receiveWindow: number;
  /** Bytes buffered without room for more: their OKAY goes out from _read. */
  private owed = 0;
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
    /** Null for a classic stream (one WRTE in flight each way). */
    private readonly delayedAck: DelayedAckWindows | null = null,
  ) {
    // The writable buffer holds what accumulates while a WRTE awaits its OKAY, so the next
    // _writev can send it as one message.
    super({
      writableHighWaterMark: transport.maxPayload,
      readableHighWaterMark: 256 * 1024,
      allowHalfOpen: true,
    });
    this.sendWindow = delayedAck?.send ?? 0;
    this.receiveWindow = delayedAck?.receive ?? 0;
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

  /** The host's OKAY: in delayed-ack mode its payload is how many of our bytes it took. */
  handleOkay(payload?: Buffer): void {
    if (this.delayedAck) {
      if (payload?.length !== 4) {
        this.destroy(new Error('ADB protocol violation: delayed-ack OKAY without a byte count'));
        return;
      }
      this.sendWindow += payload.readUInt32LE(0);
    } else {
      this.inFlight = false;
    }
    this.wake();
  }

  handleWrite(payload: Buffer): void {
    if (this.peerClosed) return;
    // A host that writes past what we allowed would make us buffer without limit: a
    // protocol violation ends the stream (CLSE).
    if (this.delayedAck) {
      if (payload.length > this.receiveWindow) {
        this.destroy(new Error('ADB protocol violation: WRTE beyond the delayed-ack window'));
        return;
      }
      this.receiveWindow -= payload.length;
    } else if (this.owesOkay) {
      this.destroy(new Error('ADB protocol violation: WRTE before OKAY'));
      return;
    }
    // Only withhold the OKAY when the buffer is full: Node calls _read once the consumer
    // takes data again (including after pause/resume), and only if push() said no.
    if (this.push(payload)) {
      // The buffer has room: everything received so far may be acknowledged.
      const bytes = this.owed + payload.length;
      this.owesOkay = false;
      this.owed = 0;
      this.sendOkay(bytes);
    } else {
      this.owesOkay = true;
      this.owed += payload.length;
    }
  }

  private sendOkay(bytes: number): void {
    if (this.peerClosed || this.closeSent) return;
    if (!this.delayedAck) {
      this.transport.send(A_OKAY, this.localId, this.remoteId);
      return;
    }
    this.receiveWindow += bytes;
    this.transport.send(A_OKAY, this.localId, this.remoteId, [ackPayload(bytes)]);
  }

  /** Lets a waiting writer look again at whether it may send. */
  private wake(): void {
    const waiter = this.okayWaiter;
    this.okayWaiter = null;
    waiter?.();
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
    const owed = this.owed;
    this.owesOkay = false;
    this.owed = 0;
    this.sendOkay(owed);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.sendAll([chunk]).then(() => callback(), callback);
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    this.sendAll(chunks.map((c) => c.chunk)).then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    void this.allAcknowledged().then(() => {
      if (this.sendClose()) {
        // Closed from this side: the host forgets the stream and nothing more arrives, but
        // what it sent before is still delivered (adbd drains a socket's queue before it
        // closes it). The readable side ends after those bytes; a consumer that stopped
        // reading (a paused stdin, an HTTP parser that is done) must not keep the stream
        // alive, so it is destroyed after a grace period if it has not closed by then (a
        // consumer that reads to the end closes it at once).
        this.once('finish', () => {
          const timer = setTimeout(() => this.destroy(), UNREAD_GRACE_MS);
          timer.unref();
          this.once('close', () => clearTimeout(timer));
        });
      }
      callback();
    });
  }

  /**
   * Delayed acks: resolves once the host has taken every byte we sent, so our CLSE never
   * overtakes data it still holds (as in classic mode, where the last WRTE's OKAY comes
   * before the CLSE). A host may drop what it has not consumed when a stream closes: the
   * lease's ADB client cut shell v2 exit packets short that way.
   */
  private async allAcknowledged(): Promise<void> {
    if (!this.delayedAck) return;
    while (!this.peerClosed && !this.closeSent && this.sendWindow < this.delayedAck.send) {
      await new Promise<void>((resolve) => (this.okayWaiter = resolve));
    }
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
    this.wake();
    if (!this.readableDone && !this.destroyed) {
      this.readableDone = true;
      this.push(null);
    }
  }

  /** Sends `buffers` as WRTEs as the mode allows, split to the payload size and the window. */
  private async sendAll(buffers: Buffer[]): Promise<void> {
    let index = 0;
    let offset = 0;
    while (index < buffers.length) {
      await this.mayWrite();
      // Data written after the host closed has nowhere to go; drop it quietly.
      if (this.peerClosed || this.closeSent) return;
      const limit = this.delayedAck
        ? Math.min(this.transport.maxPayload, this.sendWindow)
        : this.transport.maxPayload;
      const group: Buffer[] = [];
      let size = 0;
      while (index < buffers.length && size < limit) {
        const buf = buffers[index]!;
        const piece = buf.subarray(offset, offset + (limit - size));
        if (piece.length > 0) group.push(piece);
        size += piece.length;
        offset += piece.length;
        if (offset === buf.length) {
          index++;
          offset = 0;
        }
      }
      if (size === 0) continue;
      if (this.delayedAck) this.sendWindow -= size;
      else this.inFlight = true;
      this.transport.send(A_WRTE, this.localId, this.remoteId, group);
    }
    // Classic mode: the write completes with its OKAY, so what the service writes meanwhile
    // queues in the writable buffer and leaves as one WRTE.
    if (!this.delayedAck) await this.mayWrite();
  }

  /** Resolves once a WRTE may go out (or the stream is over). */
  private async mayWrite(): Promise<void> {
    while (!this.peerClosed && !this.closeSent && (this.delayedAck ? this.sendWindow <= 0 : this.inFlight)) {
      await new Promise<void>((resolve) => (this.okayWaiter = resolve));
    }
  }
}
