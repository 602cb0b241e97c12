import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql } from 'kysely';
import { ApiError } from '../errors.ts';
import { errorResponses } from '../http/schemas.ts';
import type { Db } from '../store/db.ts';

const tags = ['Health'];

export const healthRoutes =
  (deps: { db: Db }): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/healthz', {
      schema: {
        tags,
        summary: 'Liveness: the process answers',
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
      handler: async () => ({ status: 'ok' as const }),
    });

    app.get('/readyz', {
      schema: {
        tags,
        summary: 'Readiness: the database answers',
        response: {
          200: Type.Object({ status: Type.Literal('ready'), database: Type.Literal('ok') }),
          ...errorResponses('service_unavailable'),
        },
      },
      handler: async (request) => {
        try {
          await sql`select 1`.execute(deps.db);
        } catch (err) {
          request.log.warn({ err }, 'readiness check failed');
          throw new ApiError('service_unavailable', 'The database is not reachable.');
        }
        return { status: 'ready' as const, database: 'ok' as const };
      },
    });
  };
