/**
 * The adapter between a node:net socket and @yume-chan/adb's daemon transport, which speaks
 * in whole ADB packets over web streams: a readable of parsed packets (24-byte little-endian
 * header + payload) and a writable of packets to serialise.
 */
import type { Socket } from 'node:net';
import type { AdbDaemonConnection, AdbPacketData, AdbPacketInit } from '@yume-chan/adb';
import { Consumable, ReadableStream } from '@yume-chan/stream-extra';

const HEADER = 24;
/** Largest payload accepted from the phone (adb's own limit is 1 MiB; allow headroom). */
const MAX_PAYLOAD = 16 * 1024 * 1024;

export function socketToAdbConnection(socket: Socket): AdbDaemonConnection {
  let pending: Buffer = Buffer.alloc(0);
  const readable = new ReadableStream<AdbPacketData>(
    {
      start(controller) {
        socket.on('data', (chunk: Buffer) => {
          pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
          while (pending.length >= HEADER) {
            const length = pending.readUInt32LE(12);
            if (length > MAX_PAYLOAD) {
              controller.error(new Error(`ADB packet of ${length} bytes is too large`));
              socket.destroy();
              return;
            }
            if (pending.length < HEADER + length) break;
            controller.enqueue({
              command: pending.readUInt32LE(0),
              arg0: pending.readUInt32LE(4),
              arg1: pending.readUInt32LE(8),
              // A copy: the packet outlives this chunk.
              payload: Uint8Array.prototype.slice.call(pending, HEADER, HEADER + length),
            });
            pending = pending.subarray(HEADER + length);
          }
          // Backpressure: stop reading the socket while the consumer is behind.
          if ((controller.desiredSize ?? 1) <= 0) socket.pause();
        });
        socket.once('close', () => {
          try {
            controller.close();
          } catch {
            // already closed or errored
          }
        });
        socket.on('error', (error: NodeJS.ErrnoException) => {
          try {
            // The far end going away (the session ended while a stream still wrote, e.g. a
            // browser's DevTools traffic) is the connection's end, not a failure to report.
            if (error.code === 'EPIPE' || error.code === 'ECONNRESET') controller.close();
            else controller.error(error);
          } catch {
            // already closed
          }
        });
      },
      pull() {
        socket.resume();
      },
      cancel() {
        socket.destroy();
      },
    },
    { highWaterMark: 16 },
  );

  const writable = new Consumable.WritableStream<AdbPacketInit>({
    write(packet) {
      const header = Buffer.alloc(HEADER);
      header.writeUInt32LE(packet.command >>> 0, 0);
      header.writeUInt32LE(packet.arg0 >>> 0, 4);
      header.writeUInt32LE(packet.arg1 >>> 0, 8);
      header.writeUInt32LE(packet.payload.length, 12);
      header.writeUInt32LE(packet.checksum >>> 0, 16);
      header.writeInt32LE(packet.magic | 0, 20);
      // One write, one copy: the caller may reuse its payload buffer once this resolves.
      const ok = socket.write(Buffer.concat([header, packet.payload]));
      if (ok) return;
      return new Promise<void>((resolve) => {
        const onDrain = () => {
          socket.off('close', onClose);
          resolve();
        };
        // A packet still waiting when the connection closes is dropped, not failed: the
        // readable side ends and tells the dispatcher. A rejection here would surface as an
        // unhandled rejection inside @yume-chan's Consumable (nobody awaits `consumed`).
        const onClose = () => {
          socket.off('drain', onDrain);
          resolve();
        };
        socket.once('drain', onDrain);
        socket.once('close', onClose);
      });
    },
    close() {
      socket.end();
    },
    abort() {
      socket.destroy();
    },
  });

  return { readable, writable };
}
