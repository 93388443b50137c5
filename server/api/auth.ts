/**
 * Authentication: one `onRequest` hook that checks the credential the route declares
 * (`config.auth`) and decorates the request with its caller. It runs before the body is
 * parsed and before anything is validated, so a missing or bad credential is a 401 whatever
 * else is wrong with the request. It is the one place credentials are read, for every API
 * the server runs (the single server's, an API node's): a new kind of credential is a new
 * branch of owner() below and, if it reads as someone new, a new kind of Caller.
 */
import type { FastifyRequest } from 'fastify';
import { ERROR_CODES } from '../../src/api/schemas.js';
import { apiError, notFound, type ApiError } from '../errors.js';
import { looksLikeJwt } from '../jwt.js';
import type { DashboardSessions } from '../runtime/dashboard-sessions.js';
import type { SessionDirectory } from '../runtime/directory.js';
import type { Grants } from '../runtime/grants.js';
import type { App, Caller } from './types.js';

/**
 * What the credential check needs: keys resolved to accounts (by the session directory:
 * synchronously on the single server, asynchronously over the shared store) and view grants.
 */
export interface AuthDeps {
  directory: Pick<SessionDirectory, 'authenticate'>;
  grants: Pick<Grants, 'viewGrantSession'>;
  /** Dashboard sessions (JWTs), on the apps that serve the dashboard. */
  signIns?: Pick<DashboardSessions, 'authenticate'>;
}

type Checked = Caller | Promise<Caller>;

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const PUBLIC: Caller = Object.freeze({ kind: 'public' });

const unauthenticated = (message = 'Send a valid API key as "Authorization: Bearer pck_...".'): ApiError =>
  apiError(ERROR_CODES.unauthenticated, message);

const invalidGrant = (): ApiError =>
  unauthenticated(
    'The view grant is not valid; open the session\'s current watch_url, or send an account key as "Authorization: Bearer pck_...".',
  );

/** The bearer token, '' for an Authorization header of another form, null without one. */
export function bearer(req: FastifyRequest): string | null {
  const h = req.headers.authorization;
  if (!h) return null;
  const m = BEARER.exec(h);
  return m ? m[1]! : '';
}

/** A string-valued field of the parsed path or query, without trusting its shape. */
function field(source: unknown, name: string): string | undefined {
  if (typeof source !== 'object' || source === null || !(name in source)) return undefined;
  const value: unknown = (source as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

export function installAuth(app: App, { directory, grants, signIns }: AuthDeps): void {
  /** The owner a credential names, or a 401 saying why it does not work. */
  const ownerOr =
    (why: string) =>
    (uid: string | null): Caller => {
      if (!uid) throw unauthenticated(why);
      return { kind: 'owner', uid };
    };
  const keyCaller = ownerOr(
    'The API key is not valid (unknown or revoked); send a valid key as "Authorization: Bearer pck_...".',
  );
  const sessionCaller = ownerOr(
    'The dashboard session has ended (signed out or expired); sign in again, or send an API key as "Authorization: Bearer pck_...".',
  );

  /** Owner-only endpoints: an account key, or a dashboard session (a JWT) with the same rights. */
  function owner(req: FastifyRequest): Checked {
    // A view grant in the query is as much a credential as one in the header: a valid one
    // is refused for lack of access (403), not taken for no credential at all (401).
    const query = field(req.query, 'token');
    const token = bearer(req) ?? (query?.startsWith('pvg_') ? query : null);
    if (token === null) throw unauthenticated();
    if (token.startsWith('pvg_')) {
      if (grants.viewGrantSession(token) === null) throw invalidGrant();
      throw apiError(
        ERROR_CODES.forbidden,
        'A view grant can only read its own session; this call needs an account API key.',
      );
    }
    if (signIns && looksLikeJwt(token)) return signIns.authenticate(token).then(sessionCaller);
    const uid = token.startsWith('pck_') ? directory.authenticate(token) : null;
    return uid instanceof Promise ? uid.then(keyCaller) : keyCaller(uid);
  }

  /**
   * The read endpoints also take a view grant, in the header or as ?token=. A forged grant
   * is a bad credential (401); a real grant of another session answers 404, exactly as a
   * session the caller cannot see.
   */
  function reader(req: FastifyRequest): Checked {
    const sid = field(req.params, 'sid') ?? '';
    const query = field(req.query, 'token');
    if (query !== undefined && query !== '') {
      if (query.startsWith('pck_')) {
        throw unauthenticated(
          'Never put an account key in a URL; send it as "Authorization: Bearer pck_..." instead.',
        );
      }
      if (looksLikeJwt(query)) {
        throw unauthenticated(
          'Never put a dashboard session token in a URL; send it as "Authorization: Bearer <token>" instead.',
        );
      }
      return grantCaller(query, sid);
    }
    const token = bearer(req);
    if (token?.startsWith('pvg_')) return grantCaller(token, sid);
    return owner(req);
  }

  function grantCaller(token: string, sid: string): Caller {
    const granted = grants.viewGrantSession(token);
    if (granted === null) throw invalidGrant();
    if (granted !== sid) throw notFound();
    return { kind: 'grant', sid };
  }

  app.decorateRequest('caller', null);
  app.addHook('onRoute', (route) => {
    // A route that forgot its credential would be open to anyone: refuse it at startup.
    if (route.config?.auth === undefined)
      throw new Error(`Route ${String(route.method)} ${route.url} declares no config.auth.`);
  });
  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook('onRequest', (req, _reply, done) => {
    const auth = req.routeOptions.config.auth;
    const fail = (err: unknown) => done(err instanceof Error ? err : new Error(String(err)));
    let caller: Checked;
    try {
      caller = auth === 'owner' ? owner(req) : auth === 'read' ? reader(req) : PUBLIC;
    } catch (err) {
      return fail(err);
    }
    // Only a store that answers asynchronously (API nodes) makes a promise here.
    if (caller instanceof Promise) {
      caller.then((c) => {
        req.caller = c;
        done();
      }, fail);
      return;
    }
    req.caller = caller;
    done();
  });
}

/** The account of an owner-only route's caller (the hook has checked it). */
export function ownerUid(req: FastifyRequest): string {
  const caller = req.caller;
  if (caller?.kind !== 'owner') throw new Error(`${req.routeOptions.url} is not an owner-only route`);
  return caller.uid;
}

/** The caller of a read route: an owner or the view grant of the session in the path. */
export function readCaller(req: FastifyRequest): Exclude<Caller, { kind: 'public' }> {
  const caller = req.caller;
  if (caller === null || caller.kind === 'public')
    throw new Error(`${req.routeOptions.url} is not an authenticated route`);
  return caller;
}
