/**
 * The device side of the ADB wire protocol, checked with a raw TCP client: the CNXN
 * handshake (no AUTH), maxdata, one WRTE in flight per stream, refused streams, checksums
 * for old hosts.
 */
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeviceBackend, DevicePhone } from '../../server/devices/types.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import { quietLog } from '../support/virtual-adb.js';

const CNXN = 0x4e584e43;
const OPEN = 0x4e45504f;
const OKAY = 0x59414b4f;
const WRTE = 0x45545257;
const CLSE = 0x45534c43;

interface Msg {
  command: number;
  arg0: number;
  arg1: number;
  checksum: number;
  payload: Buffer;
}

/** A minimal host: sends messages and queues the ones it receives. */
class RawHost {
  private buffer = Buffer.alloc(0);
  private readonly queue: Msg[] = [];
  private waiter: (() => void) | null = null;
  private constructor(private readonly socket: Socket) {
    socket.on('data', (c: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, c]);
      while (this.buffer.length >= 24) {
        const len = this.buffer.readUInt32LE(12);
        if (this.buffer.length < 24 + len) break;
        this.queue.push({
          command: this.buffer.readUInt32LE(0),
          arg0: this.buffer.readUInt32LE(4),
          arg1: this.buffer.readUInt32LE(8),
          checksum: this.buffer.readUInt32LE(16),
          payload: this.buffer.subarray(24, 24 + len),
        });
        this.buffer = this.buffer.subarray(24 + len);
      }
      this.waiter?.();
    });
  }

  static open(port: number): Promise<RawHost> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(new RawHost(s)));
      s.once('error', reject);
    });
  }

  send(command: number, arg0: number, arg1: number, payload: Buffer = Buffer.alloc(0)): void {
    const h = Buffer.alloc(24);
    h.writeUInt32LE(command, 0);
    h.writeUInt32LE(arg0, 4);
    h.writeUInt32LE(arg1, 8);
    h.writeUInt32LE(payload.length, 12);
    let sum = 0;
    for (const b of payload) sum += b;
    h.writeUInt32LE(sum >>> 0, 16);
    h.writeUInt32LE((command ^ 0xffffffff) >>> 0, 20);
    this.socket.write(Buffer.concat([h, payload]));
  }

  /** Next message, or null if none arrives within ms. */
  async next(ms = 2000): Promise<Msg | null> {
    const deadline = Date.now() + ms;
    while (this.queue.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.waiter = null;
    }
    return this.queue.shift()!;
  }

  pending(): number {
    return this.queue.length;
  }

  close(): void {
    this.socket.destroy();
  }
}

let backend: DeviceBackend;
let phone: DevicePhone;

beforeAll(async () => {
  backend = createVirtualBackend({ bootMs: 0 });
  phone = await backend.boot({ sessionId: 'protocol', restoreFrom: null, signal: new AbortController().signal, log: quietLog });
});

afterAll(async () => {
  await backend?.close();
});

async function handshake(version = 0x01000001, maxdata = 4096): Promise<{ host: RawHost; reply: Msg }> {
  const host = await RawHost.open(phone.adb.port);
  host.send(CNXN, version, maxdata, Buffer.from('host::features=shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,abb_exec\0'));
  const reply = await host.next();
  if (!reply) throw new Error('no CNXN reply');
  return { host, reply };
}

describe('ADB wire protocol', () => {
  it('answers CNXN at once with the device banner (no AUTH)', async () => {
    const { host, reply } = await handshake();
    try {
      expect(reply.command).toBe(CNXN);
      expect(reply.arg0).toBe(0x01000001);
      expect(reply.arg1).toBe(1024 * 1024);
      expect(reply.payload.toString()).toBe(
        'device::ro.product.name=shiba;ro.product.model=Pixel 8;ro.product.device=shiba;' +
          'features=shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,abb_exec,fixed_push_symlink_timestamp,remount_shell',
      );
    } finally {
      host.close();
    }
  });

  it('refuses unknown services and closed ports with CLSE', async () => {
    const { host } = await handshake();
    try {
      host.send(OPEN, 7, 0, Buffer.from('no-such-service:\0'));
      expect(await host.next()).toMatchObject({ command: CLSE, arg0: 0, arg1: 7 });
      host.send(OPEN, 8, 0, Buffer.from('tcp:6790\0'));
      expect(await host.next()).toMatchObject({ command: CLSE, arg0: 0, arg1: 8 });
    } finally {
      host.close();
    }
  });

  it("keeps one WRTE in flight and respects the host's maxdata", async () => {
    const { host } = await handshake(0x01000001, 4096);
    try {
      host.send(OPEN, 1, 0, Buffer.from('exec:yes | head -c 20000\0'));
      const okay = await host.next();
      expect(okay?.command).toBe(OKAY);
      const deviceId = okay!.arg0;
      let received = 0;
      let closed = false;
      while (!closed) {
        const m = await host.next();
        if (!m) throw new Error(`stalled after ${received} bytes`);
        if (m.command === CLSE) {
          closed = true;
          break;
        }
        expect(m.command).toBe(WRTE);
        expect(m.payload.length).toBeLessThanOrEqual(4096);
        received += m.payload.length;
        // Nothing more may come until this WRTE is acknowledged.
        expect(await host.next(100)).toBeNull();
        host.send(OKAY, 1, deviceId);
      }
      expect(received).toBe(20000);
    } finally {
      host.close();
    }
  });

  it('sends payload checksums to hosts older than version 0x01000001', async () => {
    const { host, reply } = await handshake(0x01000000, 4096);
    try {
      expect(reply.arg0).toBe(0x01000000);
      let sum = 0;
      for (const b of reply.payload) sum += b;
      expect(reply.checksum).toBe(sum);
    } finally {
      host.close();
    }
  });

  it('does not acknowledge host data until the service has room for it', async () => {
    const { host } = await handshake(0x01000001, 1024 * 1024);
    try {
      // A shell reading nothing: stdin fills up and the device stops acknowledging.
      host.send(OPEN, 3, 0, Buffer.from('exec:sleep 5\0'));
      const okay = await host.next();
      const deviceId = okay!.arg0;
      const chunk = Buffer.alloc(512 * 1024, 1);
      host.send(WRTE, 3, deviceId, chunk);
      const first = await host.next();
      expect(first).toMatchObject({ command: OKAY, arg0: deviceId, arg1: 3 });
      host.send(WRTE, 3, deviceId, chunk);
      host.send(WRTE, 3, deviceId, chunk);
      const acks = [await host.next(300), await host.next(300)].filter((m) => m?.command === OKAY);
      expect(acks.length).toBeLessThan(2);
      host.send(CLSE, 3, deviceId);
    } finally {
      host.close();
    }
  });

  it('serves the v1 sync requests older clients use (STAT, LIST, SEND, RECV, QUIT)', async () => {
    const { host } = await handshake(0x01000001, 1024 * 1024);
    try {
      host.send(OPEN, 9, 0, Buffer.from('sync:\0'));
      const deviceId = (await host.next())!.arg0;
      const request = (id: string, arg: Buffer | string) => {
        const body = typeof arg === 'string' ? Buffer.from(arg) : arg;
        const h = Buffer.alloc(8);
        h.write(id, 0, 'latin1');
        h.writeUInt32LE(body.length, 4);
        return Buffer.concat([h, body]);
      };
      // Sends one WRTE and collects the device's reply until `done` says it is complete; the
      // OKAY for our WRTE may come before or after the reply's WRTEs.
      const exchange = async (data: Buffer, done: (b: Buffer) => boolean): Promise<Buffer> => {
        host.send(WRTE, 9, deviceId, data);
        let acked = false;
        let out: Buffer = Buffer.alloc(0);
        while (!acked || !done(out)) {
          const m = await host.next();
          if (!m) throw new Error(`timeout after ${out.length} bytes`);
          if (m.command === OKAY) acked = true;
          else if (m.command === WRTE) {
            out = Buffer.concat([out, m.payload]);
            host.send(OKAY, 9, deviceId);
          } else throw new Error(`unexpected ${m.command.toString(16)}`);
        }
        return out;
      };
      const stat = await exchange(request('STAT', '/data/local/tmp'), (b) => b.length >= 16);
      expect(stat.toString('latin1', 0, 4)).toBe('STAT');
      expect(stat.readUInt32LE(4) & 0o170000).toBe(0o040000);
      expect((await exchange(request('STAT', '/no/such/path'), (b) => b.length >= 16)).readUInt32LE(4)).toBe(0);
      // SEND path,mode + DATA + DONE(mtime)
      const data = Buffer.from('v1 push');
      const dataHeader = Buffer.alloc(8);
      dataHeader.write('DATA', 0, 'latin1');
      dataHeader.writeUInt32LE(data.length, 4);
      const done = Buffer.alloc(8);
      done.write('DONE', 0, 'latin1');
      done.writeUInt32LE(1_700_000_000, 4);
      const sent = await exchange(Buffer.concat([request('SEND', '/data/local/tmp/v1.txt,33188'), dataHeader, data, done]), (b) => b.length >= 8);
      expect(sent.toString('latin1', 0, 4)).toBe('OKAY');
      const listing = await exchange(request('LIST', '/data/local/tmp'), (b) => b.length >= 20 && b.toString('latin1', b.length - 20, b.length - 16) === 'DONE');
      const names: string[] = [];
      for (let p = 0; p + 20 <= listing.length && listing.toString('latin1', p, p + 4) === 'DENT'; ) {
        const len = listing.readUInt32LE(p + 16);
        names.push(listing.toString('utf8', p + 20, p + 20 + len));
        if (listing.toString('utf8', p + 20, p + 20 + len) === 'v1.txt') {
          expect(listing.readUInt32LE(p + 8)).toBe(data.length);
          expect(listing.readUInt32LE(p + 12)).toBe(1_700_000_000);
        }
        p += 20 + len;
      }
      expect(names).toEqual(['.', '..', 'v1.txt']);
      const recv = await exchange(request('RECV', '/data/local/tmp/v1.txt'), (b) => b.length >= 8 && b.toString('latin1', b.length - 8, b.length - 4) === 'DONE');
      expect(recv.toString('latin1', 0, 4)).toBe('DATA');
      expect(recv.subarray(8, 8 + recv.readUInt32LE(4)).toString()).toBe('v1 push');
      const fail = await exchange(request('RECV', '/data/local/tmp/missing'), (b) => b.length >= 8 && b.length >= 8 + b.readUInt32LE(4));
      expect(fail.toString('latin1', 0, 4)).toBe('FAIL');
      expect(fail.subarray(8).toString()).toBe('open failed: No such file or directory');
      host.send(WRTE, 9, deviceId, request('QUIT', ''));
      const after = [await host.next(), await host.next()];
      expect(after.map((m) => m?.command)).toContain(CLSE);
    } finally {
      host.close();
    }
  });
});
