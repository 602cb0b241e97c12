import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../errors.ts';
import { DATABASE_RETRY_AFTER_SECONDS } from '../http/error-handler.ts';
import { errorResponses, PUBLIC } from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { checkDatabase } from '../services/health.ts';

const tags = ['Health'];

export const healthRoutes =
  (deps: Pick<ServiceDeps, 'db' | 'clock'>): FastifyPluginAsyncTypebox =>
  async (app) => {
    // Probes are never limited: an orchestrator that got a 429 would restart a healthy process.
    app.get('/healthz', {
      config: { rateLimit: 'none' },
      schema: {
        tags,
        operationId: 'checkLiveness',
        summary: 'Liveness: the process answers',
        security: PUBLIC,
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
      handler: async () => ({ status: 'ok' as const }),
    });

    app.get('/readyz', {
      config: { rateLimit: 'none' },
      schema: {
        tags,
        operationId: 'checkReadiness',
        summary: 'Readiness: the database answers and takes a write',
        security: PUBLIC,
        response: {
          200: Type.Object({ status: Type.Literal('ready'), database: Type.Literal('ok') }),
          ...errorResponses('service_unavailable'),
        },
      },
      handler: async (request) => {
        try {
          await checkDatabase(deps);
        } catch (err) {
          request.log.warn({ err }, 'readiness check failed');
          throw new ApiError('service_unavailable', 'The database cannot take a write now.', {
            retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
          });
        }
        return { status: 'ready' as const, database: 'ok' as const };
      },
    });
  };
