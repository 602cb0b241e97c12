import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import type { EventEnvelope, EventType } from '../domain/events.ts';
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
  Ref,
  StringEnum,
} from '../http/schemas.ts';
import { WALLET_PROTOCOLS } from '../domain/session.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { eventForCaller, listEventsFor } from '../services/events.ts';
import { ReportedClaims, University } from './session-schemas.ts';
import { EventTypeEnum } from './webhooks.ts';

const VerificationCompletedData = Type.Object(
  {
    sessionId: Type.String(),
    verified: Type.Boolean(),
    university: Type.Union([University, Type.Null()]),
    claims: ReportedClaims,
    redacted: Type.Optional(
      Type.Literal(true, {
        description:
          'Present once the session was redacted: university and claim values are null from then on (a delivery sent after the redaction carries them so)',
      }),
    ),
    protocol: Type.Optional(
      StringEnum(WALLET_PROTOCOLS, {
        description:
          'Which wallet protocol answered (matricula or openid4vp); absent on events recorded before it existed',
      }),
    ),
  },
  { $id: 'VerificationCompletedData', description: 'data of verification.completed, plus the protocol that answered' },
);

const VerificationRedactedData = Type.Object(
  {
    sessionId: Type.String(),
    redactedAt: IsoTimestamp,
  },
  { $id: 'VerificationRedactedData', description: 'data of verification.redacted' },
);

const SessionEventData = Type.Object(
  { sessionId: Type.String() },
  { $id: 'SessionEventData', description: 'data of the events about a session other than its completion' },
);

const WebhookTestData = Type.Object(
  { endpointId: Type.String(), message: Type.String() },
  { $id: 'WebhookTestData', description: 'data of webhook.test' },
);

/** The envelope of one event type, with its data (docs/webhooks.md). */
function eventSchema<E extends EventType, D extends TSchema>(event: E, $id: string, data: D, description: string) {
  return Type.Object(
    {
      id: Type.String({ description: 'Prefix evt_' }),
      event: Type.Literal(event),
      createdAt: IsoTimestamp,
      appId: Type.String(),
      environment: Environment,
      data: Ref(data),
    },
    { $id, description },
  );
}

/** Every event type, its envelope schema: what the webhooks section of the document describes. */
export const EVENT_SCHEMAS = {
  'verification.completed': eventSchema(
    'verification.completed',
    'VerificationCompletedEvent',
    VerificationCompletedData,
    'A session completed, verified or not',
  ),
  'verification.expired': eventSchema(
    'verification.expired',
    'VerificationExpiredEvent',
    SessionEventData,
    'An open session reached its expiry',
  ),
  'verification.cancelled': eventSchema(
    'verification.cancelled',
    'VerificationCancelledEvent',
    SessionEventData,
    'You cancelled an open session',
  ),
  'verification.redacted': eventSchema(
    'verification.redacted',
    'VerificationRedactedEvent',
    VerificationRedactedData,
    "A session's data was erased: by you (POST /verification/v1/sessions/{sessionId}/redact) or by result retention (RESULT_RETENTION_DAYS)",
  ),
  'consent.approved': eventSchema(
    'consent.approved',
    'ConsentApprovedEvent',
    SessionEventData,
    'The student agreed to share the requested claims',
  ),
  'consent.declined': eventSchema(
    'consent.declined',
    'ConsentDeclinedEvent',
    SessionEventData,
    'The student refused: the session ends declined',
  ),
  'webhook.test': eventSchema('webhook.test', 'WebhookTestEvent', WebhookTestData, 'Sent by the test endpoint only'),
} satisfies { [E in EventType]: TSchema };

/** Any event, by its name (docs/webhooks.md). */
export const EventEnvelopeSchema = Type.Unsafe<EventEnvelope>({
  $id: 'Event',
  description: 'An event; `event` says which, and the shape of `data`',
  oneOf: Object.values(EVENT_SCHEMAS).map((schema) => ({ $ref: schema.$id })),
});

export const EVENT_COMPONENTS: TSchema[] = [
  VerificationCompletedData,
  VerificationRedactedData,
  SessionEventData,
  WebhookTestData,
  ...Object.values(EVENT_SCHEMAS),
  EventEnvelopeSchema,
];

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
