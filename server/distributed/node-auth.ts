/**
 * Requests between the nodes of a deployment (an API node asking a device host for a
 * session's frame or an operation) carry a signature, not a secret: an HMAC of the method,
 * the path and the time under a key derived from the deployment's shared secret. A captured
 * header is good for that one request for a minute, and nothing in it unlocks anything else
 * (no API key, no unlock code, no view grant travels between nodes).
 */
import { hmacB64url, safeEqual } from '../secrets.js';

export const NODE_HEADER = 'x-phonelease-node';
const MAX_SKEW_MS = 60_000;

export class NodeSigner {
  private readonly key: Buffer;

  constructor(secret: Buffer) {
    // Its own key: a signature can never be mistaken for a view grant made with the secret.
    this.key = Buffer.from(hmacB64url(secret, 'phonelease node-to-node v1'), 'utf8');
  }

  sign(method: string, path: string, nowMs = Date.now()): string {
    return `${nowMs}.${hmacB64url(this.key, `${nowMs}\n${method.toUpperCase()}\n${path}`)}`;
  }

  verify(header: string | undefined, method: string, path: string, nowMs = Date.now()): boolean {
    if (!header) return false;
    const dot = header.indexOf('.');
    const at = Number(header.slice(0, dot));
    if (dot <= 0 || !Number.isSafeInteger(at) || Math.abs(nowMs - at) > MAX_SKEW_MS) return false;
    return safeEqual(header, this.sign(method, path, at));
  }
}
