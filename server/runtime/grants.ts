/**
 * View grants and viewer capabilities.
 *
 * A view grant (pvg_...) is derived from the session id with an HMAC under the server's
 * secret: it needs no storage, survives restarts, and can only ever name its own session.
 * Viewer capability URLs are random, held in memory and expire; they die with the process,
 * as do the phones they show. A grant outlives its session until it expires, so a page can
 * tell "this session has ended" from "this link has expired".
 */
import type { Clock } from '../clock.js';
import { seconds } from '../clock.js';
import { hmacB64url, randomToken, safeEqual, sha256Hex, type RandomSource } from '../secrets.js';

export type ViewerMode = 'owner' | 'view';

export interface ViewerGrant {
  sid: string;
  mode: ViewerMode;
  expiresAt: number;
}

export class Grants {
  private readonly viewers = new Map<string, ViewerGrant>();

  constructor(
    private readonly secret: Buffer,
    private readonly clock: Clock,
    private readonly random: RandomSource,
  ) {}

  viewGrant(sid: string): string {
    return `pvg_${hmacB64url(this.secret, `view:${sid}`)}`;
  }

  /** True when token is the view grant of exactly this session. */
  isViewGrantFor(token: string, sid: string): boolean {
    return token.startsWith('pvg_') && safeEqual(token, this.viewGrant(sid));
  }

  /** A new viewer capability token; the URL is built by the caller. */
  issueViewer(sid: string, mode: ViewerMode, expiresAt: number): string {
    this.sweep();
    const token = randomToken(this.random, 43);
    this.viewers.set(sha256Hex(token), { sid, mode, expiresAt });
    return token;
  }

  /** The grant behind a viewer token, or null when unknown or expired. */
  viewer(token: string): ViewerGrant | null {
    const grant = this.viewers.get(sha256Hex(token));
    if (!grant) return null;
    if (grant.expiresAt <= seconds(this.clock.now())) {
      this.viewers.delete(sha256Hex(token));
      return null;
    }
    return grant;
  }

  private sweep(): void {
    const now = seconds(this.clock.now());
    for (const [hash, grant] of this.viewers) if (grant.expiresAt <= now) this.viewers.delete(hash);
  }
}
