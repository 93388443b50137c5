/**
 * buildApp(deps): the phone-session API as a fastify instance, without listening, over any
 * session directory: the single server's and an API node's are the same app. The assemblies
 * (main.ts, distributed/api-node.ts) own ports and processes; tests build the same app.
 *
 * The app is fastify's own pattern: what applies to every request is set on the root
 * (refusals as error bodies, the credential check that decorates the request with its
 * caller), and each resource is a plugin registered with the server's dependencies.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { accessRoutes } from './access.js';
import { accountRoutes } from './account.js';
import { installAuth, type AuthDeps } from './auth.js';
import { dashboardRoutes } from './dashboard.js';
import type { AppDeps } from './deps.js';
import { historyRoutes } from './history.js';
import { openApiRoutes, recordRoutes } from './openapi.js';
import { opRoutes } from './ops.js';
import {
  BODY_LIMIT,
  MAX_HEADER_SIZE,
  clientErrorHandler,
  frameworkErrors,
  MAX_PARAM_LENGTH,
  installRefusals,
} from './refusals.js';
import { installFastSerialization } from './serialization.js';
import { sessionRoutes } from './sessions.js';
import { viewerPages } from './viewer-pages.js';
import type { ApiError } from '../errors.js';
import type { Logger } from '../log.js';
import type { App } from './types.js';

export type { AppDeps } from './deps.js';

/**
 * The app every HTTP side of the server is built on, before its routes: the server's limits,
 * refusals as error bodies, the credential check, fast serialisation, and the route recorder
 * of the OpenAPI document. The API (buildApp) and a device host's own routes register on it.
 */
export function baseApp(
  auth: AuthDeps,
  log: Logger,
  translate?: (err: Error) => ApiError | undefined,
): { app: App; routes: ReturnType<typeof recordRoutes> } {
  const app = Fastify({
    logger: false,
    bodyLimit: BODY_LIMIT,
    http: {
      maxHeaderSize: MAX_HEADER_SIZE,
      // Node would answer a missing Host with an empty 400; the app says it with the
      // error body instead (see installRefusals).
      requireHostHeader: false,
    },
    // Node's parser refusals (malformed requests, oversized headers) get the error body too.
    clientErrorHandler,
    // On close every connection goes, also one that connected but never sent a request
    // (an aborted client): the idle-only default would wait for Node's headers timeout.
    // Live sessions have ended by then (main.ts closes the runtime first).
    forceCloseConnections: true,
    // Session ids and keys are case-sensitive; trailing slashes are not part of the contract.
    // Path parameters up to 4096 characters reach the routes, so an over-long session id is
    // a 404 (or a 401 without a credential) like any unknown one; only longer ones are 414.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors,
  }).withTypeProvider<TypeBoxTypeProvider>();

  const routes = recordRoutes(app);
  installFastSerialization(app);
  installRefusals(app, log, translate);
  installAuth(app, auth);

  if (log.enabled('debug')) {
    app.addHook('onResponse', async (req, reply) => {
      log.debug('http', {
        method: req.method,
        url: req.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      });
    });
  }
  return { app, routes };
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { app, routes } = baseApp(deps, deps.log, deps.translate);
  // Committed before acknowledged: the single server's store commits the writes of a turn of
  // the event loop together (group commit), so an answer that may reflect them leaves only
  // once they are committed. Nothing waits when no write is pending (reads answer in the same
  // turn), nor on an API node, whose store commits each change before it answers.
  app.addHook('onSend', (_req, _reply, payload, done) => {
    const uncommitted = deps.directory.uncommitted;
    if (!uncommitted) return done(null, payload);
    uncommitted.then(
      () => done(null, payload),
      (error: unknown) => done(error instanceof Error ? error : new Error(String(error))),
    );
  });

  // Before the routes: the hook then times every one of them.
  deps.metrics?.observe?.(app);
  await app.register(sessionRoutes, { deps });
  await app.register(accessRoutes, { deps });
  await app.register(opRoutes, { deps });
  await app.register(accountRoutes, { deps });
  await app.register(historyRoutes, { deps });
  await app.register(viewerPages, { deps });
  await app.register(dashboardRoutes, { deps });
  // GET /metrics (--metrics) needs no key, as Prometheus scrapers have none: it carries counts
  // and durations for the whole server, never an account, session id, key or code.
  const { metrics } = deps;
  if (metrics)
    app.get('/metrics', { config: { auth: 'public' } }, async (_req, reply) => {
      const { contentType, body } = await metrics.text();
      return reply.type(contentType).send(body);
    });
  await app.register(openApiRoutes, { routes });

  await app.ready();
  return app;
}
