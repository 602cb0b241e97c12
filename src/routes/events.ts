import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EVENT_TYPES } from '../domain/events.ts';
import { notFound } from '../errors.ts';
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
import { applicationForCaller, assertSameEnvironment } from '../services/access.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { findEvent, listEvents } from '../store/events.ts';

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
        const principal = principalOf(request);
        const { appId, event, limit, startingAfter } = request.query;
        if (appId) await applicationForCaller(deps.db, principal, appId, { param: 'appId' });
        const page = await listEvents(
          deps.db,
          { orgId: principal.orgId, environment: principal.environment, appId, type: event },
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
        const principal = principalOf(request);
        const event = await findEvent(deps.db, principal.orgId, request.params.eventId);
        if (!event) throw notFound('event', 'eventId');
        assertSameEnvironment(principal, event.environment);
        return { success: true as const, data: event };
      },
    });
  };
