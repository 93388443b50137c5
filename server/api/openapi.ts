/**
 * GET /openapi.json: an OpenAPI 3.1 document built from the same route schemas the server
 * validates and serialises with (one schema source for all three uses).
 */
import type { FastifySchema } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { API_VERSION } from '../../src/api/schemas.js';
import type { App } from './types.js';

/** A route as registered, with its schemas (`hide`: not part of the API, see types.ts). */
type RouteSchemas = { method: string | string[]; url: string; schema?: FastifySchema };

/** Starts recording every route registered from now on (call it on the root app first). */
export function recordRoutes(app: App): RouteSchemas[] {
  const routes: RouteSchemas[] = [];
  app.addHook('onRoute', (r) => void routes.push({ method: r.method, url: r.url, schema: r.schema }));
  return routes;
}

function openApiDocument(routes: readonly RouteSchemas[]): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.url.replace(/:(\w+)/g, '{$1}');
    const schema = r.schema ?? {};
    if (schema.hide === true) continue;
    const responses = typeof schema.response === 'object' && schema.response !== null ? schema.response : {};
    for (const method of [r.method].flat()) {
      if (method === 'HEAD') continue;
      (paths[path] ??= {})[method.toLowerCase()] = {
        ...(schema.params || schema.querystring
          ? { parameters: { path: schema.params, query: schema.querystring } }
          : {}),
        ...(schema.body ? { requestBody: { content: { 'application/json': { schema: schema.body } } } } : {}),
        responses: Object.fromEntries(
          Object.entries(responses).map(([status, s]) => [
            status,
            { content: { 'application/json': { schema: s } } },
          ]),
        ),
      };
    }
  }
  return { openapi: '3.1.0', info: { title: 'phonelease phone-session API', version: API_VERSION }, paths };
}

export const openApiRoutes: FastifyPluginAsyncTypebox<{ routes: readonly RouteSchemas[] }> = async (
  app,
  { routes },
) => {
  // Built on first request: by then every route is registered, and it never changes.
  let document: unknown;
  app.get(
    '/openapi.json',
    { config: { auth: 'public' } },
    async () => (document ??= openApiDocument(routes)),
  );
};
