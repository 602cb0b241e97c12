import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EVENT_COMPONENTS, EVENT_SCHEMAS, EventEnvelopeSchema } from '../domain/events.ts';
import { principalOf } from '../http/auth.ts';
import {
  AUTHENTICATED_ERRORS,
  BEARER,
  envelope,
  errorResponses,
  listBody,
  listEnvelope,
  pageOf,
  PageQuery,
  Ref,
} from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { eventForCaller, listEventsFor } from '../services/events.ts';
import { EventTypeEnum } from './webhooks.ts';

// The event schemas live in domain/events.ts: the producers' types and the webhook bodies share them.
export { EVENT_COMPONENTS, EVENT_SCHEMAS };

const tags = ['Events'];

export const eventRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/org/v1/events', {
      schema: {
        tags,
        operationId: 'listEvents',
        summary: "Events of the caller's environment, newest first",
        security: BEARER,
        querystring: Type.Object(
          {
            appId: Type.Optional(Type.String({ maxLength: 64 })),
            event: Type.Optional(Ref(EventTypeEnum)),
            ...PageQuery,
          },
          { additionalProperties: false },
        ),
        response: {
          200: listEnvelope(Ref(EventEnvelopeSchema)),
          ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden', 'not_found'),
        },
      },
      handler: async (request) => {
        const { appId, event } = request.query;
        const page = await listEventsFor(deps, principalOf(request), { appId, type: event }, pageOf(request.query));
        return listBody(page);
      },
    });

    app.get('/org/v1/events/:eventId', {
      schema: {
        tags,
        operationId: 'retrieveEvent',
        summary: 'One event',
        security: BEARER,
        params: Type.Object({ eventId: Type.String({ maxLength: 64 }) }),
        response: {
          200: envelope(Ref(EventEnvelopeSchema)),
          ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden', 'not_found'),
        },
      },
      handler: async (request) => {
        return {
          success: true as const,
          data: await eventForCaller(deps, principalOf(request), request.params.eventId),
        };
      },
    });
  };
