/**
 * Requests between the nodes of a deployment (an API node asking a device host for a
 * session's frame, input or apps) carry a signature, not a secret: an HMAC of the method,
 * the path and the time under a key derived from the deployment's shared secret. A captured
 * header is good for that one request for a minute, and nothing in it unlocks anything else
 * (no API key, no unlock code, no view grant travels between nodes).
 */
import { request } from 'undici';
import { ERROR_CODES, type ErrorCode } from '../../src/api/schemas.js';
import type { AppSummary, PhoneInput } from '../devices/types.js';
import { apiError, type ApiError, type ErrorDetails } from '../errors.js';
import type { Logger } from '../log.js';
import type { RemotePhones } from '../runtime/ports.js';
import { hmacB64url, safeEqual } from '../secrets.js';

export const NODE_HEADER = 'x-phonelease-node';
const MAX_SKEW_MS = 60_000;
const HOST_TIMEOUT_MS = 10_000;
/** A revocation waits no longer for its host (the host applies the stored one on its own). */
const HOST_REVOKE_TIMEOUT_MS = 1500;
const KNOWN_CODES = new Set<string>(Object.values(ERROR_CODES));

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

/** The internal path of a session's phone on its device host (what the host's routes serve). */
export const hostPath = (sid: string, rest: string): string =>
  `/internal/sessions/${encodeURIComponent(sid)}/${rest}`;

/** A host's refusal as the same ApiError (its code, message and details), passed on as it is. */
function hostRefusal(status: number, payload: Buffer): ApiError {
  try {
    const { code, error, ...details } = JSON.parse(payload.toString('utf8')) as Record<string, unknown>;
    if (typeof code === 'string' && KNOWN_CODES.has(code) && typeof error === 'string')
      return apiError(code as ErrorCode, error, details as ErrorDetails);
  } catch {
    // not a refusal body: a generic error below
  }
  return apiError(ERROR_CODES.internal, `The device host answered ${status}; retry shortly.`);
}

/** The phones of a deployment's sessions, asked of their device hosts over signed HTTP. */
export class HostPhones implements RemotePhones {
  constructor(
    private readonly signer: NodeSigner,
    private readonly log: Logger,
  ) {}

  /**
   * Asks the device host at `hostUrl` about a session's phone, signed, and returns its 200
   * answer. A host that does not answer is a 500 that says what to do; its own refusals are
   * passed on. `timeoutMs` gives up sooner than a host's usual time to answer.
   */
  private async call(
    hostUrl: string,
    sid: string,
    method: 'GET' | 'POST',
    rest: string,
    body?: unknown,
    timeoutMs?: number,
  ): Promise<Buffer> {
    const path = hostPath(sid, rest);
    let status: number;
    let payload: Buffer;
    try {
      const res = await request(hostUrl + path, {
        method,
        ...(timeoutMs !== undefined ? { signal: AbortSignal.timeout(timeoutMs) } : {}),
        headers: {
          [NODE_HEADER]: this.signer.sign(method, path),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        headersTimeout: HOST_TIMEOUT_MS,
        bodyTimeout: HOST_TIMEOUT_MS,
      });
      status = res.statusCode;
      payload = Buffer.from(await res.body.arrayBuffer());
    } catch (err) {
      this.log.warn('device host did not answer', { session: sid, error: String(err) });
      throw apiError(
        ERROR_CODES.internal,
        'The device host holding this phone did not answer; retry shortly (if the host is gone, the session ends as lost).',
      );
    }
    if (status !== 200) throw hostRefusal(status, payload);
    return payload;
  }

  frame(hostUrl: string, sid: string): Promise<Buffer> {
    return this.call(hostUrl, sid, 'GET', 'frame.png');
  }

  async input(hostUrl: string, sid: string, event: PhoneInput): Promise<void> {
    await this.call(hostUrl, sid, 'POST', 'input', event);
  }

  async apps(hostUrl: string, sid: string): Promise<AppSummary[]> {
    return JSON.parse((await this.call(hostUrl, sid, 'GET', 'apps')).toString('utf8')) as AppSummary[];
  }

  async revokeAdb(hostUrl: string, sid: string): Promise<void> {
    await this.call(hostUrl, sid, 'POST', 'adb/revoke', undefined, HOST_REVOKE_TIMEOUT_MS);
  }
}
