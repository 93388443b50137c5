/**
 * Who is signed in to the dashboard, and how they got there.
 *
 * - A sign-in link (`phonelease dashboard`) carries a random token in its fragment; the store
 *   keeps only its sha256. It works once, within SIGN_IN_LINK_SECONDS of being made.
 * - Signing in (with a link, or with an API key the caller has checked) makes a dashboard
 *   session: a row in the store named by a random jti, and an HS256 JWT (sub, jti, iat, exp)
 *   that the page sends as `Authorization: Bearer`. The JWT is checked first (a forged or
 *   expired token costs no lookup), then its row, so a sign-out holds at once on every API
 *   node of a deployment: they all read the same store, as they do for keys.
 * - The signing key is derived from the server's secret, which the store keeps (created
 *   once): every API node signs and accepts the same tokens, and it never signs anything else.
 */
import { hkdfSync } from 'node:crypto';
import { ERROR_CODES } from '../../src/api/schemas.js';
import type { Clock } from '../clock.js';
import { nowSec, seconds } from '../clock.js';
import { apiError } from '../errors.js';
import { signJwt, verifyJwt } from '../jwt.js';
import { randomToken, sha256Hex, type RandomSource } from '../secrets.js';
import type { AccountRow } from './rows.js';

/** How long a sign-in link works after it is made. */
export const SIGN_IN_LINK_SECONDS = 10 * 60;
/** How long a dashboard session lasts (its JWT's exp). */
export const DASHBOARD_SESSION_SECONDS = 12 * 60 * 60;
/**
 * Used and expired links are kept this long, so that signing in with one says why it no
 * longer works (used, expired) rather than that it is unknown.
 */
const LINK_KEPT_SECONDS = 24 * 60 * 60;
/** Link tokens carry a prefix of their own, so that redaction finds them anywhere. */
const LINK_PREFIX = 'psl_';

export interface SignInLinkRow {
  token_hash: string;
  uid: string;
  created: number;
  used: number | null;
}

export interface DashboardSessionRow {
  jti: string;
  uid: string;
  created: number;
  expires_at: number;
  signed_out: number | null;
}

/** Which account a link is for: `phonelease dashboard --email E | --uid U`. */
export type AccountRef = { uid: string } | { email: string };

/** What the dashboard's sign-in asks of a store (SQLite's, or a deployment's PostgreSQL). */
export interface DashboardStore {
  /** The accounts with this uid (at most one) or this email (there may be several). */
  accounts(ref: AccountRef): Promise<AccountRow[]>;
  /** Stores a new link, and forgets links made before `forgetBefore` (long expired). */
  insertLink(row: SignInLinkRow, forgetBefore: number): Promise<void>;
  /**
   * Marks the link used at `at` when it is unused and was made after `createdAfter`, in one
   * statement (two sign-ins with one link cannot both win); returns the link as it was.
   */
  useLink(tokenHash: string, at: number, createdAfter: number): Promise<SignInLinkRow | undefined>;
  /** Stores a new session, and forgets sessions that expired before `forgetBefore`. */
  insertSession(row: DashboardSessionRow, forgetBefore: number): Promise<void>;
  session(jti: string): Promise<DashboardSessionRow | undefined>;
  /** Ends the session (no-op when it already ended). */
  signOut(jti: string, at: number): Promise<void>;
}

/** What a sign-in answers (POST /dashboard/api/sign-in). */
export interface SignedIn {
  token: string;
  expires_at: number;
  account: { uid: string; email: string; name: string; operator: boolean };
}

const newLinkAdvice = 'ask for a new link: phonelease dashboard --email <your email> (or --uid <account>)';

/**
 * Makes a sign-in link for an account: `<baseUrl>/dashboard/sign-in#token=...`. The token is
 * in the fragment, so a browser never sends it to a server (no access log or Referer holds it).
 */
export async function createSignInLink(
  store: DashboardStore,
  clock: Clock,
  random: RandomSource,
  ref: AccountRef,
  baseUrl: string,
): Promise<string> {
  const found = await store.accounts(ref);
  if (found.length === 0) {
    throw new Error(
      'uid' in ref
        ? `No account has the uid ${ref.uid}; see the uid printed by phonelease accounts create.`
        : `No account has the email ${ref.email}; create one with phonelease accounts create --email ${ref.email}.`,
    );
  }
  if (found.length > 1) {
    throw new Error(
      `${found.length} accounts have the email ${'email' in ref ? ref.email : ''}; name one with --uid (${found.map((a) => a.uid).join(', ')}).`,
    );
  }
  const token = `${LINK_PREFIX}${randomToken(random, 43)}`;
  const now = seconds(clock.now());
  await store.insertLink(
    { token_hash: sha256Hex(token), uid: found[0]!.uid, created: now, used: null },
    now - LINK_KEPT_SECONDS,
  );
  return `${baseUrl.replace(/\/+$/, '')}/dashboard/sign-in#token=${token}`;
}

export class DashboardSessions {
  private readonly key: Buffer;

  constructor(
    private readonly o: {
      store: DashboardStore;
      /** The server's secret (kept in its store); the signing key is derived from it. */
      secret: Buffer;
      clock: Clock;
      random: RandomSource;
    },
  ) {
    this.key = Buffer.from(hkdfSync('sha256', o.secret, Buffer.alloc(0), 'phonelease dashboard session', 32));
  }

  /** Signs in with a link's token: once, within SIGN_IN_LINK_SECONDS; refusals say what to do next. */
  async signInWithLink(token: string): Promise<SignedIn> {
    const now = nowSec(this.o.clock);
    const link = await this.o.store.useLink(sha256Hex(token), now, now - SIGN_IN_LINK_SECONDS);
    if (!link)
      throw apiError(ERROR_CODES.unauthenticated, `This sign-in link is not valid; ${newLinkAdvice}.`);
    if (link.used !== null)
      throw apiError(
        ERROR_CODES.signInLinkUsed,
        `This sign-in link was already used (each link works once); ${newLinkAdvice}.`,
      );
    if (link.created <= now - SIGN_IN_LINK_SECONDS)
      throw apiError(
        ERROR_CODES.signInLinkExpired,
        `This sign-in link expired (links work for 10 minutes); ${newLinkAdvice}.`,
      );
    return this.signIn(link.uid);
  }

  /** Starts a dashboard session for an account whose credential the caller checked (an API key). */
  async signIn(uid: string): Promise<SignedIn> {
    const [account] = await this.o.store.accounts({ uid });
    if (!account) throw apiError(ERROR_CODES.unauthenticated, 'This account no longer exists.');
    const now = nowSec(this.o.clock);
    const row: DashboardSessionRow = {
      jti: randomToken(this.o.random, 24),
      uid,
      created: now,
      expires_at: now + DASHBOARD_SESSION_SECONDS,
      signed_out: null,
    };
    await this.o.store.insertSession(row, now);
    return {
      token: signJwt(this.key, { sub: uid, jti: row.jti, iat: now, exp: row.expires_at }),
      expires_at: row.expires_at,
      account: {
        uid: account.uid,
        email: account.email,
        name: account.name,
        operator: account.operator === 1,
      },
    };
  }

  /** The account of a dashboard token that is signed, unexpired and not signed out; else null. */
  async authenticate(token: string): Promise<string | null> {
    const session = await this.live(token);
    return session?.uid ?? null;
  }

  /** Ends the session of a valid token; false when the token was not one (or had ended). */
  async signOut(token: string): Promise<boolean> {
    const session = await this.live(token);
    if (!session) return false;
    await this.o.store.signOut(session.jti, nowSec(this.o.clock));
    return true;
  }

  private async live(token: string): Promise<DashboardSessionRow | null> {
    const now = nowSec(this.o.clock);
    const claims = verifyJwt(this.key, token, now);
    if (!claims) return null;
    const row = await this.o.store.session(claims.jti);
    if (!row || row.uid !== claims.sub || row.signed_out !== null || row.expires_at <= now) return null;
    return row;
  }
}
