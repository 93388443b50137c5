/**
 * The ADB gateway: one TCP port for every session's phone. A client connects, sends the
 * line `UNLOCK <code>\n`, and gets `OK\n` followed by a raw byte relay to that session's
 * phone, or `DENIED\n` and a closed socket (nothing ever follows DENIED). Codes stop
 * working when ADB is revoked, the session closes or its deadline passes; open relays are
 * cut at that moment too. Wrong codes are limited per source and per session, dead codes
 * are refused without counting as wrong ones (adb-limits.ts).
 * A phone in this process (the virtual phone) is handed the unlocked socket instead of a
 * relay: one TCP connection from the client to the phone's adbd, not two. For a phone whose
 * adbd asks for a key (an emulator), the gateway signs in for the client before it relays
 * (adb-sign-in.ts), so any client with the code gets in, whatever its own adb key.
 */
import net from 'node:net';
import { systemClock, type Clock } from './clock.js';
import { RetiredCodes, TAG_LENGTH, UnlockLimiter } from './adb-limits.js';
import { signInForClient } from './adb-sign-in.js';
import type { AdbEndpoint } from './devices/types.js';
import type { Logger } from './log.js';
import { relay as relayBytes } from '../src/util/relay.js';
import { messageOf } from '../src/util/message.js';

/** A session the gateway relays to: its id and code, and its phone's ADB while it has one. */
export interface AdbSession {
  readonly row: { readonly id: string; readonly adb_code: string | null };
  readonly phone: {
    adbEndpoint(): Promise<AdbEndpoint>;
    /** A phone in this process takes the unlocked socket itself (DevicePhone.serveAdb). */
    serveAdb?(socket: net.Socket, early: Buffer): void;
  } | null;
}

/**
 * Whose phones the gateway serves: the in-process runtime, or a device host's phones. It
 * announces `closing` and `adb-revoked` with the session, whose relays are then cut.
 */
export interface AdbSessions {
  sessionForAdbCode(code: string): AdbSession | null;
  all(): Iterable<AdbSession>;
  on(event: 'closing' | 'adb-revoked', listener: (live: AdbSession) => void): unknown;
}

const MAX_LINE = 512;
const LINE_TIMEOUT_MS = 10_000;
/** A denied peer that never closes its side is dropped after this long. */
const DENIED_LINGER_MS = 2_000;

/**
 * One client connection relayed to one phone connection, or (phone null) served by a phone
 * in this process directly.
 */
interface Relay {
  client: net.Socket;
  phone: net.Socket | null;
}

export class AdbGateway {
  private server: net.Server | null = null;
  /**
   * Open relays by session. A relay removes only itself when it ends, and a session's set is
   * dropped only by cut(): a late close event of an old relay can never forget a newer one.
   */
  private readonly relays = new Map<string, Set<Relay>>();
  private readonly all = new Set<net.Socket>();
  private readonly limiter: UnlockLimiter;
  private readonly retired: RetiredCodes;

  constructor(
    private readonly runtime: AdbSessions,
    private readonly log: Logger,
    private readonly clock: Clock = systemClock,
  ) {
    this.limiter = new UnlockLimiter(clock);
    this.retired = new RetiredCodes(clock);
    const cut = (live: AdbSession) => {
      if (live.row.adb_code) this.retired.add(live.row.adb_code);
      this.cut(live.row.id);
    };
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
    const source = client.remoteAddress ?? 'unknown';
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => deny('no unlock line'), LINE_TIMEOUT_MS);
    const deny = (why: string) => {
      clearTimeout(timer);
      client.off('data', onData);
      this.log.debug('adb gateway denied a connection', { why });
      // Whatever the peer sent after its line is read and dropped, so the socket closes
      // cleanly (unread bytes would turn the close into a reset that can swallow DENIED).
      client.resume();
      client.end('DENIED\n');
      setTimeout(() => client.destroy(), DENIED_LINGER_MS).unref();
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const nl = buffered.indexOf(0x0a);
      if (nl < 0) {
        if (buffered.length > MAX_LINE) deny('unlock line too long');
        return;
      }
      client.off('data', onData);
      clearTimeout(timer);
      const line = buffered.subarray(0, nl).toString('utf8').replace(/\r$/, '');
      const rest = buffered.subarray(nl + 1);
      const code = /^UNLOCK (\S+)$/.exec(line)?.[1] ?? '';
      const aimedAt = this.sessionByTag(code);
      if (!this.limiter.mayTry(source, aimedAt)) return deny('too many wrong codes');
      const live = code ? this.runtime.sessionForAdbCode(code) : null;
      if (!live?.phone) {
        // A code that worked until its session ended or its ADB was revoked is no guess.
        if (this.retired.has(code)) return deny('the code no longer works');
        this.limiter.failed(source, aimedAt);
        return deny('bad or expired code');
      }
      this.limiter.succeeded(source, live.row.id);
      this.relay(client, live, code, rest);
    };
    client.on('data', onData);
  }

  /** The live session whose code starts like `code` (the code's tag), if any. */
  private sessionByTag(code: string): string | null {
    if (code.length < TAG_LENGTH) return null;
    const tag = code.slice(0, TAG_LENGTH);
    for (const live of this.runtime.all()) {
      if (live.row.adb_code?.startsWith(tag)) return live.row.id;
    }
    return null;
  }

  private relay(client: net.Socket, live: AdbSession, code: string, early: Buffer): void {
    client.pause();
    if (live.phone!.serveAdb) {
      this.serveInProcess(client, live, early);
      return;
    }
    // A virtual phone opens its ADB port only now, on its first unlocked connection.
    live.phone!.adbEndpoint().then(
      (endpoint) => {
        // The client left, or the code died (revoked, closed), while the port opened.
        if (client.destroyed || this.runtime.sessionForAdbCode(code) !== live) client.destroy();
        else this.connectPhone(client, live, code, early, endpoint);
      },
      (err: unknown) => {
        this.log.warn('adb gateway could not reach the phone', { session: live.row.id, error: String(err) });
        client.destroy();
      },
    );
  }

  /**
   * A phone in this process (the virtual phone) serves the client's socket itself: every ADB
   * message then crosses one TCP connection instead of two and a relay between them.
   */
  private serveInProcess(client: net.Socket, live: AdbSession, early: Buffer): void {
    const relay: Relay = { client, phone: null };
    const own = this.track(live.row.id, relay);
    client.on('close', () => own.delete(relay));
    client.write('OK\n');
    try {
      live.phone!.serveAdb!(client, early);
    } catch (err) {
      // The phone began to stop between the unlock and now.
      this.log.warn('adb gateway could not reach the phone', {
        session: live.row.id,
        error: messageOf(err),
      });
      client.destroy();
      return;
    }
    client.resume();
  }

  /** Adds a relay to its session's set; returns that set. */
  private track(sid: string, relay: Relay): Set<Relay> {
    let set = this.relays.get(sid);
    if (!set) this.relays.set(sid, (set = new Set()));
    set.add(relay);
    return set;
  }

  private connectPhone(
    client: net.Socket,
    live: AdbSession,
    code: string,
    early: Buffer,
    { host, port, signIn }: AdbEndpoint,
  ): void {
    const sid = live.row.id;
    const phone = net.connect({ host, port });
    phone.setNoDelay(true);
    const entry: Relay = { client, phone };
    const own = this.track(sid, entry);
    const forget = () => own.delete(entry);
    const close = () => {
      client.destroy();
      phone.destroy();
      forget();
    };
    const onConnectError = (err: Error) => {
      this.log.warn('adb gateway could not reach the phone', { session: sid, error: err.message });
      close();
    };
    phone.once('error', onConnectError);
    client.once('close', () => {
      if (phone.connecting) close();
    });
    const start = (pending: Buffer) => {
      if (pending.length > 0) phone.write(pending);
      // A clean end on either side reaches the other after every byte before it; only an
      // error (a reset) or cut() tears both down at once.
      relayBytes(client, phone);
      client.once('close', forget);
      phone.once('close', forget);
      client.resume();
    };
    phone.once('connect', () => {
      phone.off('error', onConnectError);
      // The code may have died while the phone connection opened.
      if (this.runtime.sessionForAdbCode(code) !== live || client.destroyed) return close();
      client.write('OK\n');
      if (!signIn) return start(early);
      // The phone's adbd asks for a key the client may not have: the gateway signs in for it.
      phone.once('error', close);
      void signInForClient({ client, phone, early, keyring: signIn, log: this.log, session: sid }).then(
        (pending) => {
          phone.off('error', close);
          start(pending);
        },
        close,
      );
    });
  }

  /** Closes every relay of a session; its code is dead from now on. */
  private cut(sid: string): void {
    const set = this.relays.get(sid);
    this.relays.delete(sid);
    this.limiter.forget(sid);
    if (!set) return;
    for (const { client, phone } of set) {
      client.destroy();
      phone?.destroy();
    }
  }

  async close(): Promise<void> {
    for (const socket of this.all) socket.destroy();
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
