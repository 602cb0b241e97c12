import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { requireOperatorToken } from '../http/operator-token.ts';
import { errorResponses } from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';

/** GET /metrics: the Prometheus exposition of this instance, behind METRICS_TOKEN when it is set. */
export const metricsRoutes =
  (deps: Pick<ServiceDeps, 'metrics' | 'config'>): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/metrics', {
      // Scraped on a schedule by the operator's Prometheus; METRICS_TOKEN guards it.
      config: { rateLimit: 'none' },
      schema: {
        tags: ['Operations'],
        summary: 'Prometheus metrics (text exposition format)',
        description:
          'Requests, sessions, presentation verification time, webhook deliveries, the outbox backlog and the database pool. ' +
          'When METRICS_TOKEN is set, send Authorization: Bearer <METRICS_TOKEN>; otherwise it is open.',
        operationId: 'getMetrics',
        security: [{ metricsToken: [] }],
        response: {
          200: {
            description: 'Prometheus text exposition format',
            content: { 'text/plain': { schema: Type.String() } },
          },
          ...errorResponses('unauthenticated'),
        },
      },
      handler: async (request, reply) => {
        const token = deps.config.metricsToken;
        if (token) requireOperatorToken(request, token, 'METRICS_TOKEN');
        const { contentType, body } = await deps.metrics.scrape();
        return reply.type(contentType).send(body);
      },
    });
  };
