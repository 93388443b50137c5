/**
 * ADB credentials for the in-process client. The virtual phone never asks for AUTH (the
 * gateway's unlock code guards access), so in the common case nothing here runs. A real
 * emulator behind a gateway may ask: then the host's usual key (~/.android/adbkey, the one
 * an emulator trusts at boot) is offered first, and a key made for this process after
 * that. Keys are read or made only when a phone asks, and a made key is never written
 * anywhere.
 */
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { AdbCredentialStore, AdbPrivateKey } from '@yume-chan/adb';

export class LazyAdbCredentialStore implements AdbCredentialStore {
  #generated: AdbPrivateKey | null = null;

  constructor(
    private readonly keyPath: string = join(
      process.env.ANDROID_USER_HOME ?? join(homedir(), '.android'),
      'adbkey',
    ),
  ) {}

  generateKey(): AdbPrivateKey {
    if (!this.#generated) {
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 65537 });
      this.#generated = {
        buffer: new Uint8Array(privateKey.export({ type: 'pkcs8', format: 'der' })),
        name: 'phonelease',
      };
    }
    return this.#generated;
  }

  *iterateKeys(): Generator<AdbPrivateKey> {
    const host = this.#hostKey();
    if (host) yield host;
    if (this.#generated) yield this.#generated;
  }

  #hostKey(): AdbPrivateKey | null {
    try {
      const pem = readFileSync(this.keyPath, 'utf8');
      const der = createPrivateKey(pem).export({ type: 'pkcs8', format: 'der' });
      return { buffer: new Uint8Array(der), name: 'phonelease' };
    } catch {
      return null;
    }
  }
}
