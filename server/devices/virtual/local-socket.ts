/** A connected pair of in-memory Duplex streams: a TCP connection inside the phone. */
import { Duplex } from 'node:stream';

class Endpoint extends Duplex {
  peer: Endpoint | null = null;
  private pendingCallback: (() => void) | null = null;

  override _read(): void {
    const cb = this.peer?.pendingCallback;
    if (cb && this.peer) {
      this.peer.pendingCallback = null;
      cb();
    }
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const peer = this.peer;
    if (!peer || peer.destroyed) {
      callback();
      return;
    }
    // Backpressure: finish this write only when the other side has room.
    if (peer.push(chunk)) callback();
    else this.pendingCallback = () => callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.peer?.push(null);
    callback();
  }

  /**
   * Closing one end is a close, not a reset: the other end still reads what was sent to it,
   * then its end of input; what it writes from now on goes nowhere. An error resets both.
   */
  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const peer = this.peer;
    this.peer = null;
    const waiting = this.pendingCallback;
    this.pendingCallback = null;
    waiting?.();
    if (peer && !peer.destroyed) {
      peer.peer = null;
      // A writer of ours blocked on backpressure has nowhere to write any more.
      const blocked = peer.pendingCallback;
      peer.pendingCallback = null;
      blocked?.();
      if (error) peer.destroy();
      else if (!peer.readableEnded) peer.push(null);
    }
    callback(error);
  }
}

export function socketPair(): [Duplex, Duplex] {
  const a = new Endpoint({ allowHalfOpen: true });
  const b = new Endpoint({ allowHalfOpen: true });
  a.peer = b;
  b.peer = a;
  return [a, b];
}
