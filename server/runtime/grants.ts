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
 * On a deployment of several API nodes (`signedViewers`), a viewer URL issued by one node
 * is opened through whichever node the load balancer picks: the token then carries its
 * session, mode and expiry under an HMAC of the deployment's secret instead of naming an
 * entry in one process's memory.
 */
import type { Clock } from '../clock.js';
import { seconds } from '../clock.js';
import { hmacB64url, randomToken, safeEqual, sha256Hex, type RandomSource } from '../secrets.js';

/** `pvg_` and an HMAC-SHA256 in base64url (43 characters); the session id follows. */
const GRANT_PREFIX_CHARS = 4 + 43;
const MAX_GRANT_CHARS = 512;
/** An HMAC-SHA256 in base64url. */
const MAC_CHARS = 43;
/** Viewer tokens travel in URL paths limited to 200 characters (pages.ts, stream.ts). */
const MAX_VIEWER_CHARS = 200;

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
    /** Viewer tokens any process holding the secret accepts (API nodes of a deployment). */
    private readonly signedViewers = false,
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

  /** A new viewer capability token; the URL is built by the caller. */
  issueViewer(sid: string, mode: ViewerMode, expiresAt: number): string {
    if (this.signedViewers) return this.signedViewer(sid, mode, expiresAt);
    this.sweep();
    const token = randomToken(this.random, 43);
    this.viewers.set(sha256Hex(token), { sid, mode, expiresAt });
    return token;
  }

  /** The grant behind a viewer token, or null when unknown or expired. */
  viewer(token: string): ViewerGrant | null {
    if (this.signedViewers) {
      const grant = this.verifySignedViewer(token);
      return grant && grant.expiresAt > seconds(this.clock.now()) ? grant : null;
    }
    const grant = this.viewers.get(sha256Hex(token));
    if (!grant) return null;
    if (grant.expiresAt <= seconds(this.clock.now())) {
      this.viewers.delete(sha256Hex(token));
      return null;
    }
    return grant;
  }

  /** The MAC first (fixed length), then `o|v`, the expiry and the session id in base64url. */
  private signedViewer(sid: string, mode: ViewerMode, expiresAt: number): string {
    const payload = Buffer.from(`${mode === 'owner' ? 'o' : 'v'}${expiresAt}.${sid}`).toString('base64url');
    // Its own domain ("viewer:"): a viewer token can never pass as a view grant, or back.
    return `${hmacB64url(this.secret, `viewer:${payload}`)}${payload}`;
  }

  private verifySignedViewer(token: string): ViewerGrant | null {
    if (token.length <= MAC_CHARS || token.length > MAX_VIEWER_CHARS) return null;
    const m = /^([ov])(\d{1,12})\.(.+)$/s.exec(
      Buffer.from(token.slice(MAC_CHARS), 'base64url').toString('utf8'),
    );
    if (!m) return null;
    const grant: ViewerGrant = { sid: m[3]!, mode: m[1] === 'o' ? 'owner' : 'view', expiresAt: Number(m[2]) };
    // Re-signing what was decoded also refuses non-canonical encodings of the same payload.
    return safeEqual(token, this.signedViewer(grant.sid, grant.mode, grant.expiresAt)) ? grant : null;
  }

  private sweep(): void {
    const now = seconds(this.clock.now());
    for (const [hash, grant] of this.viewers) if (grant.expiresAt <= now) this.viewers.delete(hash);
  }
}
