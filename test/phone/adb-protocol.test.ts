/**
 * The device side of the ADB wire protocol, checked with a raw TCP client: the CNXN
 * handshake (no AUTH), maxdata, one WRTE in flight per stream, delayed acks with hosts that
 * announce them, refused streams, checksums for old hosts.
 */
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DeviceBackend, DevicePhone } from '../../server/devices/types.js';
import { A_CLSE } from '../../server/devices/virtual/adb/protocol.js';
import { AdbStream } from '../../server/devices/virtual/adb/stream.js';
import { createVirtualBackend } from '../../server/devices/virtual/index.js';
import type { VirtualPhone } from '../../server/devices/virtual/phone.js';
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
  private nextBarrierId = 1000;
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
  next(ms = 2000): Promise<Msg | null> {
    return this.take(() => true, ms);
  }

  /** Next message the device sends on the stream the host calls hostId (others stay queued). */
  nextFor(hostId: number, ms = 2000): Promise<Msg | null> {
    return this.take((m) => m.arg1 === hostId, ms);
  }

  /** Removes and returns the first queued message matching `match`, waiting up to ms for it. */
  async take(match: (m: Msg) => boolean, ms: number): Promise<Msg | null> {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.queue.findIndex(match);
      if (i >= 0) return this.queue.splice(i, 1)[0]!;
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
  }

  /** Whether a message matching `match` is queued (without taking it). */
  has(match: (m: Msg) => boolean): boolean {
    return this.queue.some(match);
  }

  /**
   * Runs a command to completion on a stream of its own. The device handles a connection's
   * messages in order and only closes that stream after the command ran, so whatever it
   * would send at once in reply to earlier messages is queued by the time this returns.
   */
  async barrier(command = 'true'): Promise<string> {
    const id = this.nextBarrierId++;
    this.send(OPEN, id, 0, Buffer.from(`exec:${command}\0`));
    let out = '';
    for (;;) {
      const m = await this.nextFor(id, 10_000);
      if (!m) throw new Error(`barrier ${command} timed out`);
      if (m.command === WRTE) {
        out += m.payload.toString();
        this.send(OKAY, id, m.arg0);
      } else if (m.command === CLSE) return out;
    }
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
/** The phone's ADB port (a virtual phone opens it when first asked). */
let phonePort: number;

beforeAll(async () => {
  backend = createVirtualBackend({ bootMs: 0 });
  phone = await backend.boot({
    sessionId: 'protocol',
    restoreFrom: null,
    signal: new AbortController().signal,
    log: quietLog,
  });
  phonePort = (await phone.adbEndpoint()).port;
});

afterAll(async () => {
  await backend?.close();
});

const HOST_FEATURES = 'shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,abb_exec';

async function handshake(
  version = 0x01000001,
  maxdata = 4096,
  port = phonePort,
  features = HOST_FEATURES,
): Promise<{ host: RawHost; reply: Msg }> {
  const host = await RawHost.open(port);
  host.send(CNXN, version, maxdata, Buffer.from(`host::features=${features}\0`));
  const reply = await host.next();
  if (!reply) throw new Error('no CNXN reply');
  return { host, reply };
}

/** A sync request: 4-byte id, u32 length, argument. */
function syncRequest(id: string, arg: Buffer | string | number): Buffer {
  const body = typeof arg === 'number' ? Buffer.alloc(0) : typeof arg === 'string' ? Buffer.from(arg) : arg;
  const h = Buffer.alloc(8);
  h.write(id, 0, 'latin1');
  h.writeUInt32LE(typeof arg === 'number' ? arg : body.length, 4);
  return Buffer.concat([h, body]);
}

/** A shell protocol (v2) packet: id, u32 length, data. */
function shellPacket(id: number, data: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header[0] = id;
  header.writeUInt32LE(data.length, 1);
  return Buffer.concat([header, data]);
}

/** Collects a shell v2 stream's output packets, acknowledging each WRTE. */
class ShellReply {
  private bytes = Buffer.alloc(0);
  closed = false;

  constructor(
    private readonly host: RawHost,
    private readonly hostId: number,
    private readonly deviceId: number,
  ) {}

  /** Reads until `done` holds for what arrived (or, by default, until the device closes the stream). */
  async read(done: (r: ShellReply) => boolean = (r) => r.closed): Promise<this> {
    while (!done(this)) {
      if (this.closed) throw new Error(`stream closed; got ${JSON.stringify(this.stdout)}`);
      const m = await this.host.nextFor(this.hostId, 10_000);
      if (!m) throw new Error(`no reply after ${this.bytes.length} bytes`);
      if (m.command === CLSE) this.closed = true;
      else if (m.command === WRTE) {
        this.bytes = Buffer.concat([this.bytes, m.payload]);
        this.host.send(OKAY, this.hostId, this.deviceId);
      }
    }
    return this;
  }

  private packets(id: number): Buffer[] {
    const out: Buffer[] = [];
    for (let p = 0; p + 5 <= this.bytes.length;) {
      const len = this.bytes.readUInt32LE(p + 1);
      if (p + 5 + len > this.bytes.length) break;
      if (this.bytes[p] === id) out.push(this.bytes.subarray(p + 5, p + 5 + len));
      p += 5 + len;
    }
    return out;
  }

  get stdout(): string {
    return Buffer.concat(this.packets(1)).toString();
  }

  get stderr(): string {
    return Buffer.concat(this.packets(2)).toString();
  }

  get exit(): number | null {
    return this.packets(3)[0]?.[0] ?? null;
  }
}

/** Reads a shell v2 stream's output until the device closes it. */
function readShellReply(host: RawHost, hostId: number, deviceId: number): Promise<ShellReply> {
  return new ShellReply(host, hostId, deviceId).read();
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
          'features=shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,abb_exec,fixed_push_symlink_timestamp,remount_shell,delayed_ack',
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
      await host.barrier('yes | head -c 20000 > /sdcard/flow.txt');
      // cat writes the whole file to the stream at once: only flow control spaces the WRTEs.
      host.send(OPEN, 1, 0, Buffer.from('exec:cat /sdcard/flow.txt\0'));
      const okay = await host.nextFor(1);
      expect(okay?.command).toBe(OKAY);
      const deviceId = okay!.arg0;
      let received = 0;
      for (;;) {
        const m = await host.nextFor(1);
        if (!m) throw new Error(`stalled after ${received} bytes`);
        if (m.command === CLSE) break;
        expect(m.command).toBe(WRTE);
        expect(m.payload.length).toBeLessThanOrEqual(4096);
        received += m.payload.length;
        // A command run to completion on another stream: the device had every chance to
        // send more, yet nothing more came on this stream until this WRTE is acknowledged.
        await host.barrier();
        expect(host.has((x) => x.arg1 === 1)).toBe(false);
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

  it('stops acknowledging stdin nobody reads, and acknowledges again once the service reads', async () => {
    const { host } = await handshake(0x01000001, 1024 * 1024);
    try {
      await host.barrier('rm -f /sdcard/go /sdcard/x');
      host.send(
        OPEN,
        3,
        0,
        Buffer.from(
          'shell,v2,raw:while [ ! -e /sdcard/go ]; do sleep 0.05; done; cat > /sdcard/x; stat -c %s /sdcard/x\0',
        ),
      );
      const okay = await host.nextFor(3);
      expect(okay?.command).toBe(OKAY);
      const deviceId = okay!.arg0;
      // 8 MiB of stdin packets, then close-stdin, cut into 1 MiB WRTEs.
      const total = 8 * 1024 * 1024;
      const packets: Buffer[] = [];
      for (let i = 0; i < total / 65536; i++) packets.push(shellPacket(0, Buffer.alloc(65536, i)));
      packets.push(shellPacket(4, Buffer.alloc(0)));
      const bytes = Buffer.concat(packets);
      const writes: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += 1024 * 1024) writes.push(bytes.subarray(i, i + 1024 * 1024));
      // One WRTE in flight. While the command reads nothing, the device stops acknowledging
      // once its buffers are full: after each WRTE, a command run on another stream shows
      // whether the OKAY came.
      let sent = 0;
      for (;;) {
        host.send(WRTE, 3, deviceId, writes[sent++]!);
        await host.barrier();
        if (!(await host.take((m) => m.arg1 === 3 && m.command === OKAY, 0))) break;
        if (sent === writes.length)
          throw new Error('the device acknowledged every WRTE while nothing read stdin');
      }
      expect(sent).toBeLessThanOrEqual(4);
      // The command starts reading: the owed OKAY arrives and the rest flows.
      await host.barrier('touch /sdcard/go');
      expect(await host.nextFor(3, 10_000)).toMatchObject({ command: OKAY, arg0: deviceId, arg1: 3 });
      while (sent < writes.length) {
        host.send(WRTE, 3, deviceId, writes[sent++]!);
        expect(await host.nextFor(3, 10_000)).toMatchObject({ command: OKAY, arg0: deviceId, arg1: 3 });
      }
      const { stdout, exit } = await readShellReply(host, 3, deviceId);
      expect(stdout).toBe(`${total}\n`);
      expect(exit).toBe(0);
    } finally {
      host.close();
    }
  });

  it('keeps acknowledging 1 MiB WRTEs to a command that starts reading late (the OKAY comes back once the service reads)', async () => {
    const { host } = await handshake(0x01000001, 1024 * 1024);
    try {
      host.send(OPEN, 4, 0, Buffer.from('exec:sleep 0.5; cat > /sdcard/late\0'));
      const okay = await host.nextFor(4);
      expect(okay?.command).toBe(OKAY);
      const deviceId = okay!.arg0;
      for (let i = 0; i < 6; i++) {
        host.send(WRTE, 4, deviceId, Buffer.alloc(1024 * 1024, i));
        const ack = await host.nextFor(4, 10_000);
        if (!ack) throw new Error(`no OKAY for WRTE ${i + 1}`);
        expect(ack).toMatchObject({ command: OKAY, arg0: deviceId, arg1: 4 });
      }
      host.send(CLSE, 4, deviceId);
    } finally {
      host.close();
    }
  });

  it('closes a shell stream whose stdin packet claims more than 1 MiB', async () => {
    const { host } = await handshake(0x01000001, 1024 * 1024);
    try {
      host.send(OPEN, 6, 0, Buffer.from('shell,v2,raw:cat\0'));
      const deviceId = (await host.nextFor(6))!.arg0;
      const header = Buffer.alloc(5);
      header.writeUInt32LE(0xffffffff, 1);
      host.send(WRTE, 6, deviceId, Buffer.concat([header, Buffer.alloc(64 * 1024)]));
      const replies = [await host.nextFor(6), await host.nextFor(6)];
      expect(replies.map((m) => m?.command)).toContain(CLSE);
    } finally {
      host.close();
    }
  });

  it('closes a stream whose host writes again before the device acknowledged', async () => {
    const { host } = await handshake(0x01000001, 1024 * 1024);
    try {
      host.send(OPEN, 7, 0, Buffer.from('exec:sleep 30\0'));
      const deviceId = (await host.nextFor(7))!.arg0;
      // Fill the device's buffers until it withholds an OKAY (nothing reads stdin) ...
      for (let sent = 0; ; sent++) {
        if (sent === 8) throw new Error('the device acknowledged every WRTE while nothing read stdin');
        host.send(WRTE, 7, deviceId, Buffer.alloc(1024 * 1024));
        await host.barrier();
        if (!(await host.take((m) => m.arg1 === 7 && m.command === OKAY, 0))) break;
      }
      // ... then break the one-WRTE-in-flight rule: the device ends the stream.
      host.send(WRTE, 7, deviceId, Buffer.alloc(1024 * 1024));
      expect(await host.nextFor(7)).toMatchObject({ command: CLSE, arg0: deviceId, arg1: 7 });
      expect(await host.barrier('echo still here')).toBe('still here\n');
    } finally {
      host.close();
    }
  });

  it('keeps a UTF-8 character split between two WRTEs whole in an interactive shell', async () => {
    const { host } = await handshake();
    try {
      host.send(OPEN, 8, 0, Buffer.from('shell,v2,raw:\0'));
      const deviceId = (await host.nextFor(8))!.arg0;
      const line = Buffer.from('echo hé\n');
      const cut = line.indexOf(0xc3) + 1;
      for (const part of [line.subarray(0, cut), line.subarray(cut), Buffer.alloc(0)]) {
        host.send(WRTE, 8, deviceId, part.length > 0 ? shellPacket(0, part) : shellPacket(4, part));
        expect(await host.take((m) => m.arg1 === 8 && m.command === OKAY, 2000)).not.toBeNull();
      }
      const reply = await readShellReply(host, 8, deviceId);
      expect(reply.stdout).toBe('hé\n');
      expect(reply.exit).toBe(0);
    } finally {
      host.close();
    }
  });

  it('ends a shell stream only once no process holds its output, as adbd does', async () => {
    const device = (phone as VirtualPhone).device;
    const { host } = await handshake();
    try {
      // An interactive session (no command) that starts a job and then reaches end of input.
      host.send(OPEN, 5, 0, Buffer.from('shell,v2,raw:\0'));
      const okay = await host.nextFor(5);
      expect(okay?.command).toBe(OKAY);
      const deviceId = okay!.arg0;
      const go = '/data/local/tmp/holder.go';
      host.send(
        WRTE,
        5,
        deviceId,
        shellPacket(
          0,
          Buffer.from(`(while [ ! -e ${go} ]; do sleep 0.02; done; echo late) &\necho started $$\n`),
        ),
      );
      expect(await host.nextFor(5)).toMatchObject({ command: OKAY });
      const reply = await new ShellReply(host, 5, deviceId).read((r) => r.stdout.endsWith('\n'));
      const shellPid = Number(/^started (\d+)\n$/.exec(reply.stdout)![1]);
      expect(device.runningJobs).toBe(1);
      // End of input ends the shell; the job still writes to the stream afterwards.
      host.send(WRTE, 5, deviceId, shellPacket(4, Buffer.alloc(0)));
      await vi.waitFor(() => expect(device.processes.get(shellPid)).toBeUndefined(), { timeout: 5000 });
      device.fs.writeFile(go, Buffer.alloc(0));
      expect(await reply.read()).toMatchObject({ stdout: `started ${shellPid}\nlate\n`, exit: 0 });
      expect(device.runningJobs).toBe(0);
      device.fs.remove(go);
      // The host's CLSE for a stream the device already closed is harmless.
      host.send(CLSE, 5, deviceId);
      expect(await host.barrier('echo alive')).toBe('alive\n');
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
      expect((await exchange(request('STAT', '/no/such/path'), (b) => b.length >= 16)).readUInt32LE(4)).toBe(
        0,
      );
      // SEND path,mode + DATA + DONE(mtime)
      const data = Buffer.from('v1 push');
      const dataHeader = Buffer.alloc(8);
      dataHeader.write('DATA', 0, 'latin1');
      dataHeader.writeUInt32LE(data.length, 4);
      const done = Buffer.alloc(8);
      done.write('DONE', 0, 'latin1');
      done.writeUInt32LE(1_700_000_000, 4);
      const sent = await exchange(
        Buffer.concat([request('SEND', '/data/local/tmp/v1.txt,33188'), dataHeader, data, done]),
        (b) => b.length >= 8,
      );
      expect(sent.toString('latin1', 0, 4)).toBe('OKAY');
      const listing = await exchange(
        request('LIST', '/data/local/tmp'),
        (b) => b.length >= 20 && b.toString('latin1', b.length - 20, b.length - 16) === 'DONE',
      );
      const names: string[] = [];
      for (let p = 0; p + 20 <= listing.length && listing.toString('latin1', p, p + 4) === 'DENT';) {
        const len = listing.readUInt32LE(p + 16);
        names.push(listing.toString('utf8', p + 20, p + 20 + len));
        if (listing.toString('utf8', p + 20, p + 20 + len) === 'v1.txt') {
          expect(listing.readUInt32LE(p + 8)).toBe(data.length);
          expect(listing.readUInt32LE(p + 12)).toBe(1_700_000_000);
        }
        p += 20 + len;
      }
      expect(names).toEqual(['.', '..', 'v1.txt']);
      const recv = await exchange(
        request('RECV', '/data/local/tmp/v1.txt'),
        (b) => b.length >= 8 && b.toString('latin1', b.length - 8, b.length - 4) === 'DONE',
      );
      expect(recv.toString('latin1', 0, 4)).toBe('DATA');
      expect(recv.subarray(8, 8 + recv.readUInt32LE(4)).toString()).toBe('v1 push');
      const fail = await exchange(
        request('RECV', '/data/local/tmp/missing'),
        (b) => b.length >= 8 && b.length >= 8 + b.readUInt32LE(4),
      );
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

/** A delayed-ack OKAY's payload: the u32 byte count. */
function acked(bytes: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(bytes, 0);
  return b;
}

describe('delayed acks (hosts that announce delayed_ack)', () => {
  const DELAYED = `${HOST_FEATURES},delayed_ack`;

  it('sends WRTEs without waiting for OKAYs up to the window the host granted, and more after its OKAY', async () => {
    const { host } = await handshake(0x01000001, 4096, phonePort, DELAYED);
    try {
      await host.barrier('yes | head -c 20000 > /sdcard/delayed.txt');
      // The host grants 12288 bytes: three full WRTEs of its maxdata, then the device waits.
      host.send(OPEN, 1, 12288, Buffer.from('exec:cat /sdcard/delayed.txt\0'));
      const okay = await host.nextFor(1);
      expect(okay?.command).toBe(OKAY);
      // The device's own window: what the host may send before the device's OKAY.
      expect(okay!.payload.length).toBe(4);
      expect(okay!.payload.readUInt32LE(0)).toBeGreaterThanOrEqual(1024 * 1024);
      const deviceId = okay!.arg0;
      let received = 0;
      for (let i = 0; i < 3; i++) {
        const m = await host.nextFor(1);
        expect(m?.command).toBe(WRTE);
        expect(m!.payload.length).toBe(4096);
        received += m!.payload.length;
      }
      // The window is used up: nothing more arrives, however long the device had.
      await host.barrier();
      expect(host.has((x) => x.arg1 === 1)).toBe(false);
      // Acknowledging 12288 bytes at once lets the rest flow, again without waiting.
      host.send(OKAY, 1, deviceId, acked(12288));
      let unacknowledged = 0;
      while (received < 20000) {
        const m = await host.nextFor(1);
        if (!m) throw new Error(`stalled after ${received} bytes`);
        expect(m.command).toBe(WRTE);
        received += m.payload.length;
        unacknowledged += m.payload.length;
      }
      expect(received).toBe(20000);
      // Everything arrived, but the host has not taken the last bytes: the device does not
      // close yet, so its CLSE cannot overtake data the host still holds.
      await host.barrier();
      expect(host.has((x) => x.arg1 === 1)).toBe(false);
      host.send(OKAY, 1, deviceId, acked(unacknowledged));
      expect((await host.nextFor(1))?.command).toBe(CLSE);
    } finally {
      host.close();
    }
  });

  it('takes several WRTEs in flight from the host, acknowledges each with its byte count, and closes a stream written past its window', async () => {
    const { host } = await handshake(0x01000001, 1024 * 1024, phonePort, DELAYED);
    try {
      host.send(OPEN, 2, 1024 * 1024, Buffer.from('exec:cat > /sdcard/burst\0'));
      const okay = await host.nextFor(2);
      const deviceId = okay!.arg0;
      const window = okay!.payload.readUInt32LE(0);
      // Three writes back to back, none waiting for an OKAY.
      for (const size of [1000, 2000, 3000]) host.send(WRTE, 2, deviceId, Buffer.alloc(size, 0x61));
      const acks = [await host.nextFor(2), await host.nextFor(2), await host.nextFor(2)];
      expect(acks.map((m) => m?.command)).toEqual([OKAY, OKAY, OKAY]);
      expect(acks.map((m) => m!.payload.readUInt32LE(0))).toEqual([1000, 2000, 3000]);
      host.send(CLSE, 2, deviceId);
      expect(await host.barrier('stat -c %s /sdcard/burst')).toBe('6000\n');

      // A stream nobody reads: the host may keep its window full, but not one byte more.
      host.send(OPEN, 3, 1024 * 1024, Buffer.from('exec:sleep 30\0'));
      const sleeper = (await host.nextFor(3))!.arg0;
      let sent = 0;
      let granted = 0;
      for (let round = 0; ; round++) {
        if (round === 8) throw new Error('the device acknowledged everything while nothing read stdin');
        while (sent - granted < window) {
          const size = Math.min(1024 * 1024, window - (sent - granted));
          host.send(WRTE, 3, sleeper, Buffer.alloc(size));
          sent += size;
        }
        await host.barrier();
        const before = granted;
        for (let m; (m = await host.take((x) => x.arg1 === 3 && x.command === OKAY, 0));)
          granted += m.payload.readUInt32LE(0);
        // Its buffers are full: the device stopped acknowledging, the window stays used up.
        if (granted === before) break;
      }
      host.send(WRTE, 3, sleeper, Buffer.alloc(1));
      expect(await host.nextFor(3)).toMatchObject({ command: CLSE, arg0: sleeper, arg1: 3 });
      expect(await host.barrier('echo still here')).toBe('still here\n');
    } finally {
      host.close();
    }
  });

  it('keeps one WRTE in flight with hosts that do not announce delayed_ack, whatever their OPEN says', async () => {
    const { host } = await handshake(0x01000001, 4096);
    try {
      await host.barrier('yes | head -c 9000 > /sdcard/classic.txt');
      host.send(OPEN, 1, 65536, Buffer.from('exec:cat /sdcard/classic.txt\0'));
      const okay = await host.nextFor(1);
      expect(okay).toMatchObject({ command: OKAY, arg1: 1 });
      expect(okay!.payload.length).toBe(0);
      const first = await host.nextFor(1);
      expect(first?.command).toBe(WRTE);
      await host.barrier();
      expect(host.has((x) => x.arg1 === 1)).toBe(false);
      host.send(OKAY, 1, okay!.arg0);
      expect((await host.nextFor(1))?.command).toBe(WRTE);
    } finally {
      host.close();
    }
  });

  it('grants its window in the OPENs it makes for adb reverse, and only to hosts that announce delayed_ack', async () => {
    for (const [features, delayed] of [
      [DELAYED, true],
      [HOST_FEATURES, false],
    ] as const) {
      const { host } = await handshake(0x01000001, 1024 * 1024, phonePort, features);
      try {
        const phonePortNumber = 42000 + Math.floor(Math.random() * 1000);
        expect(await host.barrier()).toBe('');
        host.send(
          OPEN,
          5,
          delayed ? 65536 : 0,
          Buffer.from(`reverse:forward:tcp:${phonePortNumber};tcp:1\0`),
        );
        const deviceId = (await host.nextFor(5))!.arg0;
        await host.nextFor(5); // OKAY + port, as one WRTE
        const ack = delayed ? acked(64) : Buffer.alloc(0);
        host.send(OKAY, 5, deviceId, ack);
        const inner = (phone as VirtualPhone).device.network.connectPort(phonePortNumber);
        expect(inner).not.toBeNull();
        const open = await host.take((m) => m.command === OPEN, 2000);
        expect(open?.payload.toString()).toBe('tcp:1\0');
        expect(open!.arg1 > 0).toBe(delayed);
        inner!.destroy();
      } finally {
        host.close();
      }
    }
  });
});

describe('sync pushes that cannot succeed', () => {
  /** Opens sync: and returns a sender of one WRTE that waits for its OKAY. */
  async function openSync(
    port = phonePort,
  ): Promise<{ host: RawHost; write: (data: Buffer) => Promise<void>; deviceId: number }> {
    const { host } = await handshake(0x01000001, 1024 * 1024, port);
    host.send(OPEN, 20, 0, Buffer.from('sync:\0'));
    const okay = await host.nextFor(20);
    expect(okay?.command).toBe(OKAY);
    const deviceId = okay!.arg0;
    const write = async (data: Buffer) => {
      host.send(WRTE, 20, deviceId, data);
      if (!(await host.take((m) => m.arg1 === 20 && m.command === OKAY, 5000))) throw new Error('no OKAY');
    };
    return { host, write, deviceId };
  }

  /** Collects the device's WRTE payloads on the sync stream until `done` holds. */
  async function replyUntil(host: RawHost, deviceId: number, done: (b: Buffer) => boolean): Promise<Buffer> {
    let out = Buffer.alloc(0);
    while (!done(out)) {
      const m = await host.take((x) => x.arg1 === 20 && x.command === WRTE, 5000);
      if (!m) throw new Error(`no reply after ${JSON.stringify(out.toString('latin1'))}`);
      out = Buffer.concat([out, m.payload]);
      host.send(OKAY, 20, deviceId);
    }
    return out;
  }

  const failMessage = (b: Buffer) => b.length >= 8 && b.length >= 8 + b.readUInt32LE(4);

  it('fails a push to a read-only path at SEND, drops its data and ends the service', async () => {
    const { host, write, deviceId } = await openSync();
    try {
      await write(syncRequest('SEND', '/system/evil.bin,33188'));
      // The FAIL comes before any data is sent, let alone DONE.
      const fail = await replyUntil(host, deviceId, failMessage);
      expect(fail.toString('latin1', 0, 4)).toBe('FAIL');
      expect(fail.subarray(8).toString()).toBe("couldn't create file: Read-only file system");
      for (let i = 0; i < 4; i++) await write(Buffer.concat([syncRequest('DATA', Buffer.alloc(65536, i))]));
      host.send(WRTE, 20, deviceId, syncRequest('DONE', 1_700_000_000));
      expect(await host.take((m) => m.arg1 === 20 && m.command === CLSE, 5000)).not.toBeNull();
    } finally {
      host.close();
    }
  });

  it('lists only DONE for a regular file', async () => {
    const { host, write, deviceId } = await openSync();
    try {
      await host.barrier('echo x > /data/local/tmp/plain.txt');
      await write(syncRequest('LIS2', '/data/local/tmp/plain.txt'));
      const listing = await replyUntil(host, deviceId, (b) => b.length >= 76);
      expect(listing.length).toBe(76);
      expect(listing.toString('latin1', 0, 4)).toBe('DONE');
      await write(syncRequest('LIST', '/data/local/tmp/plain.txt'));
      const v1 = await replyUntil(host, deviceId, (b) => b.length >= 20);
      expect(v1.length).toBe(20);
      expect(v1.toString('latin1', 0, 4)).toBe('DONE');
      await host.barrier('rm /data/local/tmp/plain.txt');
    } finally {
      host.close();
    }
  });

  it('treats LSTA as the unknown request it is (v1 lstat is STAT)', async () => {
    const { host, write, deviceId } = await openSync();
    try {
      await write(syncRequest('LSTA', '/data/local/tmp'));
      const fail = await replyUntil(host, deviceId, failMessage);
      expect(fail.toString('latin1', 0, 4)).toBe('FAIL');
      expect(fail.subarray(8).toString()).toBe('unknown sync request LSTA');
    } finally {
      host.close();
    }
  });

  it('fails a push that outgrows the free space as soon as it does, without keeping its data', async () => {
    const small = createVirtualBackend({ bootMs: 0, storageBytes: 256 * 1024 });
    const tiny = await small.boot({
      sessionId: 'protocol-small',
      restoreFrom: null,
      signal: new AbortController().signal,
      log: quietLog,
    });
    const { host, write, deviceId } = await openSync((await tiny.adbEndpoint()).port);
    try {
      await write(syncRequest('SEND', '/sdcard/big.bin,33188'));
      for (let i = 0; i < 5; i++) await write(syncRequest('DATA', Buffer.alloc(65536, i)));
      // 320 KiB sent into 256 KiB: the FAIL arrives before DONE.
      const fail = await replyUntil(host, deviceId, failMessage);
      expect(fail.subarray(8).toString()).toBe('write failed: No space left on device');
      host.send(WRTE, 20, deviceId, syncRequest('DONE', 0));
      expect(await host.take((m) => m.arg1 === 20 && m.command === CLSE, 5000)).not.toBeNull();
      expect((tiny as VirtualPhone).device.fs.exists('/sdcard/big.bin')).toBe(false);
    } finally {
      host.close();
      await small.close();
    }
  });
});

describe('AdbStream', () => {
  /** Resolves on 'close'; rejects if it has not come after 5 s. */
  function closeOf(stream: AdbStream): Promise<void> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("no 'close' event")), 5000);
      stream.once('close', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  function streamWithTransport(): { stream: AdbStream; sent: number[] } {
    const sent: number[] = [];
    const transport = {
      maxPayload: 4096,
      send: (command: number) => void sent.push(command),
      release: () => undefined,
    };
    return { stream: new AdbStream(transport, 1, 2, 'test:'), sent };
  }

  it("aborts its signal, ends and emits 'close' when the device closes it, even with unread data", async () => {
    const { stream, sent } = streamWithTransport();
    // A consumer that paused with data still buffered (a command not reading its stdin).
    stream.on('data', () => stream.pause());
    stream.handleWrite(Buffer.from('first'));
    stream.handleWrite(Buffer.from('unread'));
    const closed = closeOf(stream);
    stream.end();
    await closed;
    expect(sent).toContain(A_CLSE);
    expect(stream.signal.aborted).toBe(true);
  });

  it("emits 'close' after the host closes it once the consumer has read everything", async () => {
    const { stream, sent } = streamWithTransport();
    const chunks: string[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c.toString()));
    stream.handleWrite(Buffer.from('last words'));
    const closed = closeOf(stream);
    stream.handlePeerClose();
    await closed;
    expect(chunks.join('')).toBe('last words');
    expect(stream.signal.aborted).toBe(true);
    expect(sent).not.toContain(A_CLSE);
  });
});
