/**
 * The fastify types the API is built with: the app with TypeBox as its type provider, route
 * plugins over it, and what every route declares (its credential) and every request carries
 * (its caller), added to fastify's own interfaces so that no handler needs a cast.
 */
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Reader } from '../runtime/directory.js';
import type { AppDeps } from './deps.js';

/**
 * The credential a route takes, checked before anything else of the request:
 * - `owner`: an account API key (Authorization: Bearer pck_...), or a dashboard session's token;
 * - `read`: an account key, or the view grant of the session in the path (header or ?token=);
 * - `public`: none (pages whose URL is the capability, the OpenAPI document).
 */
export type RouteAuth = 'owner' | 'read' | 'public';

/**
 * Who is calling, once the route's credential was checked: an account (owner) or a view
 * grant, whose reads a session directory answers (a Reader), or nobody (public routes).
 */
export type Caller = Reader | { kind: 'public' };

declare module 'fastify' {
  interface FastifySchema {
    /** Not part of the API (the dashboard's pages and files): the OpenAPI document leaves it out. */
    hide?: boolean;
  }
  interface FastifyContextConfig {
    /** Every route names its credential; a route without one is refused at startup. */
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    /** Set by the authentication hook before the request is parsed or validated. */
    caller: Caller | null;
  }
}

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** A group of routes registered on the app with its dependencies. */
export type RoutePlugin = FastifyPluginAsyncTypebox<{ deps: AppDeps }>;
