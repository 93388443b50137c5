/**
 * Signing in to a phone's adbd on behalf of a gateway client.
 *
 * An emulator's adbd trusts only the public keys in its adb_keys (seeded from the server
 * machine's ~/.android/adbkey.pub), so a client on another machine, or with another adb
 * key, would see the phone `unauthorized` through a plain byte relay. The gateway already
 * knows who may use the phone (the client presented the session's unlock code), so it
 * answers for the client, as the virtual phone does (it never asks a client for a key):
 *
 *   client CNXN ──▶ gateway ──▶ phone           (the client's own CNXN: version, max
 *                                                 payload and features, so the phone
 *                                                 settles the connection with the client's
 *                                                 terms, as if it were connected directly)
 *                   gateway ◀── AUTH(TOKEN)
 *                   gateway ──▶ AUTH(SIGNATURE)  (signed with the server's own adb key;
 *                                                 each key it has, in turn, as adb does)
 *   client ◀─────── gateway ◀── CNXN             (the phone's banner, untouched)
 *   then raw bytes both ways.
 *
 * The client never sees AUTH. Why this rather than adding each client's public key to the
 * phone's adb_keys: that needs a client key (a user of the library's in-process ADB has
 * none), writes to the phone (a profile phone would keep every key it ever saw), and works
 * only once adbd has re-read its keys; signing in needs nothing from the client and nothing
 * on the phone.
 *
 * When the phone refuses every key the server has (its adb_keys were made on another
 * machine), the gateway steps aside: it hands the client the phone's last AUTH(TOKEN) and
 * relays raw bytes, so a client whose own key the phone trusts still gets in and any other
 * sees the phone `unauthorized`, as it would directly; the server's log says why. A first
 * message that is not CNXN, or a phone that answers with anything but AUTH or CNXN (TLS),
 * is relayed untouched too.
 */
import type { Socket } from 'node:net';
import type { AdbKey, AdbKeyring } from './devices/types.js';
import type { Logger } from './log.js';
import { A_AUTH, A_CNXN, HEADER_SIZE, encodeHeader } from './devices/virtual/adb/protocol.js';

/** AUTH's arg0. */
const AUTH_TOKEN = 1;
const AUTH_SIGNATURE = 2;
/** A CNXN or AUTH is small; a larger first "message" is not ADB. */
const MAX_HANDSHAKE_PAYLOAD = 64 * 1024;
/** A booted phone answers at once; past this the client is dropped rather than left hanging. */
const SIGN_IN_TIMEOUT_MS = 20_000;

interface Message {
  command: number;
  arg0: number;
  /** The whole message as it arrived (header and payload). */
  raw: Buffer;
  payload: Buffer;
}

/** The first whole message in `buffer`, `null` when more bytes are needed, `'bad'` when not ADB. */
function firstMessage(buffer: Buffer): Message | null | 'bad' {
  if (buffer.length < HEADER_SIZE) return null;
  const command = buffer.readUInt32LE(0);
  const length = buffer.readUInt32LE(12);
  if ((command ^ 0xffffffff) >>> 0 !== buffer.readUInt32LE(20) || length > MAX_HANDSHAKE_PAYLOAD)
    return 'bad';
  if (buffer.length < HEADER_SIZE + length) return null;
  const raw = buffer.subarray(0, HEADER_SIZE + length);
  return { command, arg0: buffer.readUInt32LE(4), raw, payload: raw.subarray(HEADER_SIZE) };
}

/** An AUTH message with its payload checksum (a phone settled on a pre-2016 version checks it). */
function authMessage(type: number, payload: Buffer): Buffer {
  const header = encodeHeader(A_AUTH, type, 0, payload.length);
  let sum = 0;
  for (const byte of payload) sum += byte;
  header.writeUInt32LE(sum >>> 0, 16);
  return Buffer.concat([header, payload]);
}

/**
 * Runs the sign-in between an unlocked client and a connected phone socket. Resolves once
 * the relay may start, with the client's bytes still to be passed to the phone; whatever the
 * phone sent past the handshake has been passed to the client. Rejects when either side
 * closes or the phone does not answer in time. Both sockets are left paused.
 */
export function signInForClient(o: {
  client: Socket;
  phone: Socket;
  /** Client bytes the gateway read after the unlock line. */
  early: Buffer;
  keyring: AdbKeyring;
  log: Pick<Logger, 'debug' | 'warn'>;
  /** For the log. */
  session: string;
}): Promise<Buffer> {
  const { client, phone, log, session } = o;
  return new Promise<Buffer>((resolve, reject) => {
    let fromClient = o.early;
    let fromPhone = Buffer.alloc(0);
    /** Keys still to try, once the client's CNXN went to the phone; null before. */
    let keys: AdbKey[] | null = null;
    let tried: string[] = [];
    let settled = false;

    const timer = setTimeout(
      () => fail(new Error(`the phone did not answer the ADB handshake within ${SIGN_IN_TIMEOUT_MS} ms`)),
      SIGN_IN_TIMEOUT_MS,
    );
    const finish = (toClient: Buffer) => {
      if (settled) return;
      settled = true;
      cleanup();
      if (toClient.length > 0) client.write(toClient);
      resolve(fromClient);
    };
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      cleanup();
      reject(error);
    };
    const closed = () => fail(new Error('the connection closed during the ADB handshake'));
    const cleanup = () => {
      clearTimeout(timer);
      client.off('data', onClient).off('close', closed);
      phone.off('data', onPhone).off('close', closed);
      client.pause();
      phone.pause();
    };

    /** Not ours to handle: everything so far goes on as it came, and the relay takes over. */
    const stepAside = () => {
      if (keys === null) finish(Buffer.alloc(0));
      else {
        const pending = fromPhone;
        fromPhone = Buffer.alloc(0);
        finish(pending);
      }
    };

    const onClient = (chunk: Buffer) => {
      fromClient = Buffer.concat([fromClient, chunk]);
      if (keys === null) void startWithClientCnxn();
    };

    let starting = false;
    const startWithClientCnxn = async () => {
      if (starting) return;
      const first = firstMessage(fromClient);
      if (first === null) return;
      if (first === 'bad' || first.command !== A_CNXN) return stepAside();
      starting = true;
      let available: readonly AdbKey[];
      try {
        available = await o.keyring();
      } catch {
        available = [];
      }
      if (settled) return;
      keys = [...available];
      fromClient = fromClient.subarray(first.raw.length);
      phone.write(first.raw);
      phone.on('data', onPhone);
      phone.resume();
    };

    const onPhone = (chunk: Buffer) => {
      fromPhone = Buffer.concat([fromPhone, chunk]);
      for (;;) {
        const m = firstMessage(fromPhone);
        if (m === null) return;
        if (m === 'bad') return stepAside();
        if (m.command === A_CNXN) {
          log.debug('adb gateway signed in to the phone', { session, key: tried.at(-1) ?? null });
          return finish(fromPhone);
        }
        if (m.command !== A_AUTH || m.arg0 !== AUTH_TOKEN) return stepAside();
        const key = keys!.shift();
        if (!key) {
          log.warn(
            "the phone refused this server's adb keys; only ADB clients whose own key the phone trusts get in",
            {
              session,
              keys: tried,
              fix: tried.length
                ? 'the phone trusts the adb key of the machine its AVD was first booted on; boot it from an AVD made on this server'
                : 'no adb key on this server: run `adb start-server` once (it makes ~/.android/adbkey)',
            },
          );
          return stepAside(); // the client gets this AUTH(TOKEN) and answers it itself
        }
        tried = [...tried, key.path];
        fromPhone = fromPhone.subarray(m.raw.length);
        let signature: Buffer;
        try {
          signature = key.sign(m.payload);
        } catch (error) {
          log.debug('adb gateway could not sign with a key', {
            session,
            key: key.path,
            error: String(error),
          });
          // Answer with nothing a phone accepts, so that it asks again and the next key is tried.
          signature = Buffer.alloc(0);
        }
        phone.write(authMessage(AUTH_SIGNATURE, signature));
      }
    };

    client.on('close', closed);
    phone.on('close', closed);
    client.on('data', onClient);
    client.resume();
    if (fromClient.length > 0) void startWithClientCnxn();
  });
}
