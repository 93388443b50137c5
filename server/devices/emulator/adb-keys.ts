/**
 * The server's own adb keys: the RSA keys stock adb on this machine signs in with, so that
 * the ADB gateway can sign in to an emulator's adbd (adb-sign-in.ts), which asks for a key (an emulator trusts only
 * the public keys in its adb_keys, seeded from this machine's ~/.android/adbkey.pub).
 *
 * Where adb keeps them (packages/modules/adb, `adb_auth_host.cpp`): `adbkey` (a PEM private
 * key) in the user's Android directory, plus the files in ADB_VENDOR_KEYS. The emulator reads
 * the public half from its own user directory (ANDROID_EMULATOR_HOME, else
 * $ANDROID_SDK_HOME/.android, else ~/.android). Every key that exists is tried, the way adb
 * tries all of its own: the phone answers a signature it cannot verify with a new token.
 *
 * A signature is what adb sends in AUTH(SIGNATURE): RSA PKCS#1 v1.5 over the 20-byte token
 * the phone sent, taken as a SHA-1 digest (OpenSSL's RSA_sign(NID_sha1, token, 20, ...)),
 * i.e. the SHA-1 DigestInfo prefix and the token, padded and encrypted with the private key.
 */
import { constants, createPrivateKey, privateEncrypt, type KeyObject } from 'node:crypto';
import { readFile, readdir, stat } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import type { AdbKey } from '../types.js';
import { homeOf, nonEmpty, type Environment } from './sdk.js';

/** DER of DigestInfo { sha1, NULL } followed by OCTET STRING(20): what precedes the token. */
const SHA1_DIGEST_INFO = Buffer.from('3021300906052b0e03021a05000414', 'hex');
/** adb's token size (TOKEN_SIZE): anything else is not an adb challenge. */
const AUTH_TOKEN_BYTES = 20;

/** Private key files adb and the emulator would use on this machine, most likely first. */
function adbKeyPaths(env: Environment): string[] {
  const home = homeOf(env);
  const dirs = [
    nonEmpty(env.ANDROID_USER_HOME),
    nonEmpty(env.ANDROID_EMULATOR_HOME),
    nonEmpty(env.ANDROID_SDK_HOME) && join(env.ANDROID_SDK_HOME!, '.android'),
    join(home, '.android'),
  ].filter((d): d is string => Boolean(d));
  const paths = dirs.map((d) => join(d, 'adbkey'));
  for (const entry of (env.ADB_VENDOR_KEYS ?? '').split(delimiter)) if (entry) paths.push(entry);
  return [...new Set(paths)];
}

function signToken(key: KeyObject, token: Buffer): Buffer {
  if (token.length !== AUTH_TOKEN_BYTES) {
    throw new Error(`an adb auth token has ${AUTH_TOKEN_BYTES} bytes, not ${token.length}`);
  }
  return privateEncrypt(
    { key, padding: constants.RSA_PKCS1_PADDING },
    Buffer.concat([SHA1_DIGEST_INFO, token]),
  );
}

async function readKey(path: string): Promise<AdbKey | null> {
  try {
    const key = createPrivateKey(await readFile(path));
    if (key.asymmetricKeyType !== 'rsa') return null;
    return { path, sign: (token) => signToken(key, token) };
  } catch {
    return null; // absent or not a private key: adb skips it too
  }
}

/**
 * The keys found now (read at every call: adb creates its key at its first start, which may
 * come after the server's). ADB_VENDOR_KEYS may name directories, whose files are all tried.
 */
export async function loadAdbKeys(env: Environment): Promise<AdbKey[]> {
  const files: string[] = [];
  for (const path of adbKeyPaths(env)) {
    const s = await stat(path).catch(() => null);
    if (s?.isDirectory()) {
      for (const name of (await readdir(path)).sort())
        if (!name.endsWith('.pub')) files.push(join(path, name));
    } else if (s) files.push(path);
  }
  const keys = await Promise.all(files.map(readKey));
  return keys.filter((k): k is AdbKey => k !== null);
}
