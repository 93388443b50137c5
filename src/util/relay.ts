/**
 * Relays two byte streams both ways, as a TCP proxy (or adbd between a socket and an ADB
 * stream) does: a side that ends cleanly has everything it wrote delivered to the other
 * side, which is then ended in turn (a half-close after the queued bytes); only an error on
 * either side destroys both at once. Used by the ADB gateway, the client's local tunnel and
 * the virtual phone's sockets, so bytes written just before a close are never lost.
 */
import type { Duplex } from 'node:stream';

export interface RelayOptions {
  /**
   * How long a side whose peer has closed may take to hand its last bytes on before it is
   * destroyed anyway (a reader that never reads must not keep a connection alive).
   */
  lingerMs?: number;
}

const DEFAULT_LINGER_MS = 30_000;

export function relay(a: Duplex, b: Duplex, options: RelayOptions = {}): void {
  const lingerMs = options.lingerMs ?? DEFAULT_LINGER_MS;
  const destroyBoth = () => {
    a.destroy();
    b.destroy();
  };
  // The relay ends each side's writing itself, after relaying the other side's end: a
  // socket must not end its own side when its peer half-closes.
  a.allowHalfOpen = true;
  b.allowHalfOpen = true;
  a.on('error', destroyBoth);
  b.on('error', destroyBoth);
  // pipe() ends the destination after the source's last byte ('end'), so a clean end
  // flushes what is queued and then half-closes the other side.
  a.pipe(b);
  b.pipe(a);
  afterClose(a, b, lingerMs);
  afterClose(b, a, lingerMs);
}

/**
 * Once `from` is over, `to` (ended by pipe() if `from` ended cleanly) finishes on its own
 * terms: it writes what it holds, and what it still receives is read and dropped until its
 * peer closes too. Closing a TCP socket with unread input sends a reset, which can throw away
 * bytes the peer has not read yet; reading to the end avoids that.
 */
function afterClose(from: Duplex, to: Duplex, lingerMs: number): void {
  const onClose = () => {
    if (to.destroyed) return;
    // Closed without its end being read: reset or torn down, so nothing more will come.
    if (!from.readableEnded) {
      to.destroy();
      return;
    }
    if (!to.writableEnded) to.end();
    to.resume();
    const timer = setTimeout(() => to.destroy(), lingerMs);
    timer.unref();
    to.once('close', () => clearTimeout(timer));
  };
  if (from.closed) onClose();
  else from.once('close', onClose);
}
