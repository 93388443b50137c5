/**
 * View grants and viewer capabilities.
 *
 * A view grant (pvg_...) is an HMAC of the session id under the server's secret followed by
 * the session id itself: it needs no storage, survives restarts, can only ever name its own
 * session, and the server can tell a forged grant (401) from a real grant of another
 * session (404) without a lookup.
 * Viewer capability URLs are random, held in memory and expire; they die with the process,
 * as do the phones they show. A grant outlives its session until it expires, so a page can
 * tell "this session has ended" from "this link has expired".
 */
import type { Clock } from '../clock.js';
import { seconds } from '../clock.js';
import { hmacB64url, randomToken, safeEqual, sha256Hex, type RandomSource } from '../secrets.js';

/** `pvg_` and an HMAC-SHA256 in base64url (43 characters); the session id follows. */
const GRANT_PREFIX_CHARS = 4 + 43;
const MAX_GRANT_CHARS = 512;

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
    return `pvg_${hmacB64url(this.secret, `view:${sid}`)}${Buffer.from(sid).toString('base64url')}`;
  }

  /** The session a view grant was issued for, or null when the token is not a grant of this server. */
  viewGrantSession(token: string): string | null {
    if (!token.startsWith('pvg_') || token.length <= GRANT_PREFIX_CHARS || token.length > MAX_GRANT_CHARS)
      return null;
    const sid = Buffer.from(token.slice(GRANT_PREFIX_CHARS), 'base64url').toString('utf8');
    // Comparing the whole token also refuses non-canonical encodings of the same id.
    return safeEqual(token, this.viewGrant(sid)) ? sid : null;
  }

  /** True when token is the view grant of exactly this session. */
  isViewGrantFor(token: string, sid: string): boolean {
    return this.viewGrantSession(token) === sid;
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
