/**
 * The byte relay behind the ADB gateway, the local tunnel and the virtual phone's sockets:
 * what a side writes before it closes reaches the other side, even when that side reads
 * slowly; only an error tears both down at once.
 */
import net from 'node:net';
import { PassThrough, type Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { relay } from '../../src/util/relay.js';
import { socketPair } from '../../server/devices/virtual/local-socket.js';
import { trackedServer, type TrackedServer } from '../support/tcp.js';

const servers: TrackedServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

/** Reads a stream slowly (a pause after every chunk), ends it at its end; the byte count. */
function slowRead(socket: Duplex): Promise<{ bytes: number; ended: boolean }> {
  return new Promise((resolve) => {
    let bytes = 0;
    let ended = false;
    socket.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      socket.pause();
      setTimeout(() => socket.resume(), 1);
    });
    socket.once('end', () => {
      ended = true;
      socket.end();
    });
    socket.once('close', () => resolve({ bytes, ended }));
    socket.on('error', () => undefined);
  });
}

/** A TCP proxy on a free port that relays each connection to `target` with relay(). */
async function proxyTo(target: number): Promise<number> {
  const proxy = await trackedServer((inbound, track) => {
    const outbound = net.connect({ host: '127.0.0.1', port: target });
    track(outbound);
    relay(inbound, outbound);
  });
  servers.push(proxy);
  return proxy.port;
}

describe('relay', () => {
  it('delivers every byte a server wrote right before it closed, to a slow reader behind a proxy', async () => {
    const body = Buffer.alloc(4 * 1024 * 1024, 7);
    const origin = await trackedServer((socket) => socket.end(body));
    servers.push(origin);
    const port = await proxyTo(origin.port);
    for (let round = 0; round < 3; round++) {
      const client = net.connect({ host: '127.0.0.1', port });
      expect(await slowRead(client)).toEqual({ bytes: body.length, ended: true });
    }
  });

  it('delivers what a client wrote before it half-closed, and the answer after it', async () => {
    const origin = await trackedServer((socket) => {
      let bytes = 0;
      socket.on('data', (c: Buffer) => (bytes += c.length));
      socket.once('end', () => socket.end(`got ${bytes}`));
    });
    servers.push(origin);
    const port = await proxyTo(origin.port);
    const answer = await new Promise<string>((resolve, reject) => {
      const client = net.connect({ host: '127.0.0.1', port }, () => client.end(Buffer.alloc(3_000_000, 1)));
      const chunks: Buffer[] = [];
      client.on('data', (c: Buffer) => chunks.push(c));
      client.once('close', () => resolve(Buffer.concat(chunks).toString()));
      client.once('error', reject);
    });
    expect(answer).toBe('got 3000000');
  });

  it('hands the last bytes of a stream closed as a whole (an ADB stream the host closed) to an app that reads slowly', async () => {
    const [app, phoneSide] = socketPair();
    // An ADB stream has no half-close: a CLSE ends both directions at once, like this one.
    const adbStream = new PassThrough({ highWaterMark: 256 * 1024 });
    relay(phoneSide, adbStream);
    const reading = slowRead(app);
    for (let i = 0; i < 40; i++) adbStream.write(Buffer.alloc(10_000, i));
    adbStream.end();
    expect(await reading).toEqual({ bytes: 400_000, ended: true });
  });

  it('tears both sides down at once when one side fails', async () => {
    const [a, aPeer] = socketPair();
    const [b, bPeer] = socketPair();
    relay(aPeer, bPeer);
    // Data still queued towards b is dropped, not delivered: a failure is not a clean end.
    aPeer.write(Buffer.alloc(1));
    const bEnded = new Promise<void>((resolve) => b.once('end', () => resolve()));
    b.resume();
    aPeer.destroy(new Error('connection reset'));
    await bEnded;
    expect(bPeer.destroyed).toBe(true);
    expect(a.destroyed).toBe(true);
  });
});
