/**
 * The fake emulator guest's adbd sign-in, in front of the virtual phone's ADB service. An
 * emulator image has `ro.adb.secure=1`, so its adbd (packages/modules/adb, `adb.cpp`
 * handle_packet, `daemon/auth.cpp`):
 *
 * - answers a host's CNXN with AUTH(TOKEN, 20 random bytes), not with its own CNXN;
 * - checks an AUTH(SIGNATURE) against every public key in its adb_keys (RSA PKCS#1 v1.5 over
 *   the token taken as a SHA-1 digest); one that verifies gets the device's CNXN, any other
 *   a new AUTH(TOKEN);
 * - takes an AUTH(RSAPUBLICKEY) as a request to show "Allow USB debugging?" to the user,
 *   which nobody answers on a headless emulator: the host lists the device `unauthorized`.
 *
 * adb_keys holds Android's public key format, one key a line followed by a comment: base64
 * of { u32 words, u32 n0inv, u8 n[words*4] little-endian, u8 rr[words*4], u32 exponent }.
 * The guest seeds it once, at its first boot, from the host key the emulator passes in
 * (`ro.boot.qemu.adb.pubkey`, read from the host's adbkey.pub); later boots keep it.
 *
 * Written from those facts alone (nothing here is shared with the server's signing code), so
 * that stock adb signing in to it checks the fake, and the fake checks the server.
 */
import { constants, createPublicKey, publicDecrypt, randomBytes, type KeyObject } from 'node:crypto';
import type { Socket } from 'node:net';

const A_CNXN = 0x4e584e43;
const A_AUTH = 0x48545541;
const AUTH_TOKEN = 1;
const AUTH_SIGNATURE = 2;
const AUTH_RSAPUBLICKEY = 3;
const HEADER = 24;
const SHA1_DIGEST_INFO = Buffer.from('3021300906052b0e03021a05000414', 'hex');

function base64url(bytes: Buffer): string {
  return bytes.toString('base64').replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');
}

/** An adb_keys line as an RSA public key, or null when it is not one. */
function parseAdbPublicKey(line: string): KeyObject | null {
  const blob = Buffer.from(line.trim().split(/\s+/)[0] ?? '', 'base64');
  if (blob.length < 12) return null;
  const words = blob.readUInt32LE(0);
  const size = words * 4;
  if (words === 0 || blob.length !== 8 + 2 * size + 4) return null;
  const modulus = Buffer.from(blob.subarray(8, 8 + size)).reverse();
  const exponent = blob.readUInt32LE(8 + 2 * size);
  const e = Buffer.alloc(4);
  e.writeUInt32BE(exponent);
  try {
    return createPublicKey({
      key: { kty: 'RSA', n: base64url(modulus), e: base64url(e.subarray(e.findIndex((b) => b !== 0))) },
      format: 'jwk',
    });
  } catch {
    return null;
  }
}

function verifies(key: KeyObject, token: Buffer, signature: Buffer): boolean {
  try {
    const digestInfo = publicDecrypt({ key, padding: constants.RSA_PKCS1_PADDING }, signature);
    return digestInfo.equals(Buffer.concat([SHA1_DIGEST_INFO, token]));
  } catch {
    return false;
  }
}

function message(command: number, arg0: number, arg1: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(HEADER);
  header.writeUInt32LE(command, 0);
  header.writeUInt32LE(arg0, 4);
  header.writeUInt32LE(arg1, 8);
  header.writeUInt32LE(payload.length, 12);
  let sum = 0;
  for (const b of payload) sum += b;
  header.writeUInt32LE(sum >>> 0, 16);
  header.writeUInt32LE((command ^ 0xffffffff) >>> 0, 20);
  return Buffer.concat([header, payload]);
}

/**
 * Signs a host in on `socket`, then hands it to `serve` together with the host's CNXN and
 * whatever followed it, so the phone's own ADB service answers that CNXN with its banner.
 */
export function signInHost(
  socket: Socket,
  adbKeys: () => readonly string[],
  serve: (socket: Socket, early: Buffer) => void,
): void {
  let buffered = Buffer.alloc(0);
  let cnxn: Buffer | null = null;
  let token = randomBytes(20);
  const challenge = () => {
    token = randomBytes(20);
    socket.write(message(A_AUTH, AUTH_TOKEN, 0, token));
  };
  const onData = (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= HEADER) {
      const length = buffered.readUInt32LE(12);
      if (buffered.length < HEADER + length) return;
      const command = buffered.readUInt32LE(0);
      const arg0 = buffered.readUInt32LE(4);
      const raw = buffered.subarray(0, HEADER + length);
      const payload = raw.subarray(HEADER);
      buffered = buffered.subarray(raw.length);
      if (command === A_CNXN) {
        cnxn = Buffer.from(raw);
        challenge();
      } else if (command === A_AUTH && arg0 === AUTH_SIGNATURE && cnxn) {
        const keys = adbKeys()
          .map(parseAdbPublicKey)
          .filter((k): k is KeyObject => k !== null);
        if (keys.some((k) => verifies(k, token, payload))) {
          socket.off('data', onData);
          socket.pause();
          serve(socket, Buffer.concat([cnxn, buffered]));
          return;
        }
        challenge();
      } else if (command === A_AUTH && arg0 === AUTH_RSAPUBLICKEY) {
        // "Allow USB debugging?" would show now; nobody is there to allow it.
      }
      // Anything else before the host is signed in is dropped, as adbd drops it.
    }
  };
  socket.on('data', onData);
  socket.resume();
}
