import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { notFound } from '../errors.ts';
import { errorResponses, PUBLIC } from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { sandboxStatusList } from '../services/sandbox-status-lists.ts';

/**
 * `GET /sandbox/status-lists/{domain}`: the Token Status List of a sandbox university, as any
 * issuer publishes one (docs/trust.md). Public, like every status list: it says which indexes are
 * revoked and nothing about who holds them.
 */
export const sandboxStatusListRoutes =
  (deps: Pick<ServiceDeps, 'db' | 'clock' | 'config'>): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/sandbox/status-lists/:domain', {
      schema: {
        tags: ['Sandbox status lists'],
        operationId: 'getSandboxStatusList',
        summary: "A sandbox university's status list token (IETF Token Status List)",
        description:
          'A signed JWT (`typ: statuslist+jwt`, signed with the published sandbox key of the university) whose `sub` is this URL. Indexes 0–15 are always revoked, 16–31 always suspended; an operator sets others with `matricula sandbox revoke`.',
        security: PUBLIC,
        params: Type.Object({ domain: Type.String({ maxLength: 253 }) }),
        response: {
          200: {
            description: 'The status list token',
            content: { 'application/statuslist+jwt': { schema: Type.String() } },
          },
          ...errorResponses('not_found'),
        },
      },
      handler: async (request, reply) => {
        const token = await sandboxStatusList(deps, request.params.domain);
        if (!token) throw notFound('sandbox university', 'domain');
        return reply.type('application/statuslist+jwt').header('cache-control', 'max-age=60').send(token);
      },
    });
  };
