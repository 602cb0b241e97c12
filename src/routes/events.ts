import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EVENT_TYPES } from '../domain/events.ts';
import { principalOf } from '../http/auth.ts';
import {
  AUTHENTICATED_ERRORS,
  BEARER,
  Environment,
  envelope,
  errorResponses,
  IsoTimestamp,
  listEnvelope,
  PageQuery,
} from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { eventForCaller, listEventsFor } from '../services/events.ts';

/** Spec 2.4. */
export const EventEnvelopeSchema = Type.Object({
  id: Type.String({ description: 'Prefix evt_' }),
  event: Type.Union(EVENT_TYPES.map((t) => Type.Literal(t))),
  createdAt: IsoTimestamp,
  appId: Type.String(),
  environment: Environment,
  data: Type.Record(Type.String(), Type.Unknown()),
});

const tags = ['Events'];

export const eventRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/org/v1/events', {
      schema: {
        tags,
        summary: "Events of the caller's environment, newest first",
        security: BEARER,
        querystring: Type.Object(
          {
            appId: Type.Optional(Type.String({ maxLength: 64 })),
            event: Type.Optional(Type.Union(EVENT_TYPES.map((t) => Type.Literal(t)))),
            ...PageQuery,
          },
          { additionalProperties: false },
        ),
        response: {
          200: listEnvelope(EventEnvelopeSchema),
          ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden', 'not_found'),
        },
      },
      handler: async (request) => {
        const { appId, event, limit, startingAfter } = request.query;
        const page = await listEventsFor(
          deps,
          principalOf(request),
          { appId, type: event },
          { limit: limit ?? 20, startingAfter },
        );
        return {
          success: true as const,
          data: page.items,
          pagination: { hasMore: page.hasMore, nextCursor: page.nextCursor },
        };
      },
    });

    app.get('/org/v1/events/:eventId', {
      schema: {
        tags,
        summary: 'One event',
        security: BEARER,
        params: Type.Object({ eventId: Type.String({ maxLength: 64 }) }),
        response: {
          200: envelope(EventEnvelopeSchema),
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
