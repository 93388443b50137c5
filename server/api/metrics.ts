/**
 * GET /metrics: the server's metrics in the Prometheus text format, registered only when the
 * server runs with --metrics. It needs no API key, as Prometheus scrapers usually have none:
 * it carries counts and durations for the whole server, never an account, session id, key
 * or code. Whoever can reach the port can read it; bind the server to a private address
 * (--host) or leave --metrics off where that matters.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ApiMetrics } from './deps.js';

export const metricsRoutes: FastifyPluginAsyncTypebox<{ metrics: Pick<ApiMetrics, 'text'> }> = async (
  app,
  { metrics },
) => {
  app.get('/metrics', { config: { auth: 'public' } }, async (_req, reply) => {
    const { contentType, body } = await metrics.text();
    return reply.type(contentType).send(body);
  });
};
