/**
 * The ADB gateway: one TCP port for every session's phone. A client connects, sends the
 * line `UNLOCK <code>\n`, and gets `OK\n` followed by a raw byte relay to that session's
 * phone, or `DENIED\n` and a closed socket. Codes stop working when ADB is revoked, the
 * session closes or its deadline passes; open relays are cut at that moment too.
 */
import net from 'node:net';
import type { Logger } from './log.js';
import type { LiveSession, Runtime } from './runtime/runtime.js';

const MAX_LINE = 512;
const LINE_TIMEOUT_MS = 10_000;

export class AdbGateway {
  private server: net.Server | null = null;
  private readonly relays = new Map<string, Set<net.Socket>>();
  private readonly all = new Set<net.Socket>();

  constructor(
    private readonly runtime: Runtime,
    private readonly log: Logger,
  ) {
    const cut = (live: LiveSession) => this.cut(live.row.id);
    runtime.on('closing', cut);
    runtime.on('adb-revoked', cut);
  }

  async listen(host: string, port = 0): Promise<number> {
    const server = net.createServer((socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    return (server.address() as net.AddressInfo).port;
  }

  private accept(client: net.Socket): void {
    this.all.add(client);
    client.once('close', () => this.all.delete(client));
    client.setNoDelay(true);
    client.on('error', () => client.destroy());
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => deny('no unlock line'), LINE_TIMEOUT_MS);
    const deny = (why: string) => {
      clearTimeout(timer);
      this.log.debug('adb gateway denied a connection', { why });
      client.end('DENIED\n');
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const nl = buffered.indexOf(0x0a);
      if (nl < 0) {
        if (buffered.length > MAX_LINE) {
          client.off('data', onData);
          deny('unlock line too long');
        }
        return;
      }
      client.off('data', onData);
      clearTimeout(timer);
      const line = buffered.subarray(0, nl).toString('utf8').replace(/\r$/, '');
      const rest = buffered.subarray(nl + 1);
      const match = /^UNLOCK (\S+)$/.exec(line);
      const live = match ? this.runtime.sessionForAdbCode(match[1]!) : null;
      if (!live?.phone) return deny('bad or expired code');
      this.relay(client, live, rest);
    };
    client.on('data', onData);
  }

  private relay(client: net.Socket, live: LiveSession, early: Buffer): void {
    const sid = live.row.id;
    const { host, port } = live.phone!.adb;
    client.pause();
    const phone = net.connect({ host, port });
    phone.setNoDelay(true);
    let set = this.relays.get(sid);
    if (!set) this.relays.set(sid, (set = new Set()));
    set.add(client);
    const close = () => {
      client.destroy();
      phone.destroy();
      set.delete(client);
      if (set.size === 0) this.relays.delete(sid);
    };
    phone.once('connect', () => {
      client.write('OK\n');
      if (early.length > 0) phone.write(early);
      client.pipe(phone);
      phone.pipe(client);
      client.resume();
    });
    phone.on('error', (err) => {
      this.log.warn('adb gateway could not reach the phone', { session: sid, error: err.message });
      close();
    });
    phone.on('close', close);
    client.on('close', close);
  }

  /** Closes every relay of a session. */
  private cut(sid: string): void {
    const set = this.relays.get(sid);
    if (!set) return;
    for (const socket of set) socket.destroy();
    this.relays.delete(sid);
  }

  async close(): Promise<void> {
    for (const socket of this.all) socket.destroy();
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
