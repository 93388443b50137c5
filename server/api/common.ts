/**
 * What several route plugins share: response schemas for refusals, the private-response
 * headers, the session a caller may see, and the context sessions are rendered in.
 */
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../src/api/schemas.js';
import type { AppDeps } from './deps.js';
import type { ViewContext } from './views.js';

/** Responses that carry secrets or per-caller state are never cached by a proxy. */
export const PRIVATE_HEADERS = { 'cache-control': 'private, no-store' } as const;

export const SidParams = Type.Object({ sid: Type.String() });

/** The refusals every authenticated route may answer. */
export const REFUSALS = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
  500: ErrorBody,
} as const;

/** At most this many view grants are kept computed; past it the cache starts over. */
const GRANT_CACHE_SIZE = 10_000;

/**
 * The context sessions are rendered in for a request (URLs name the host it reached). A
 * session's view grant is an HMAC of its id that never changes, and computing it was the
 * largest cost of a session read: it is computed once per session and kept.
 */
export class SessionViews {
  private readonly grants = new Map<string, string>();
  constructor(private readonly deps: AppDeps) {}

  private readonly eta: ViewContext['eta'] = (s) => this.deps.directory.eta(s);

  context(req: FastifyRequest): ViewContext {
    const { deps } = this;
    const host = req.headers.host;
    const base = deps.publicUrl(host);
    return {
      nowMs: deps.clock.now(),
      watchUrl: (sid) => `${base}/watch/${sid}?token=${this.viewGrant(sid)}`,
      adbEndpoint: deps.adbEndpoint?.(host) ?? null,
      eta: this.eta,
    };
  }

  private viewGrant(sid: string): string {
    let grant = this.grants.get(sid);
    if (grant === undefined) {
      if (this.grants.size >= GRANT_CACHE_SIZE) this.grants.clear();
      grant = this.deps.grants.viewGrant(sid);
      this.grants.set(sid, grant);
    }
    return grant;
  }
}
