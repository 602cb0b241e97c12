import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { EnvironmentSchema, IsoTimestamp, Ref, ReportedClaimsSchema, StringEnum, UniversitySchema } from './schemas.ts';
import { WALLET_PROTOCOLS } from './session.ts';

/** Every event the service emits (docs/webhooks.md, Events); webhook subscriptions name these. */
export const EVENT_TYPES = [
  'verification.completed',
  'verification.expired',
  'verification.cancelled',
  'verification.redacted',
  'consent.approved',
  'consent.declined',
  'webhook.test',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/*
 * One schema per event type: the `data` the producer must pass to the unit of work (its type is
 * `Static` of the schema), what `GET /org/v1/events` answers (the route's response schema, which
 * drops any field it lacks) and what a webhook delivery carries (its body type). A field added to
 * a producer but not here fails to compile; test/domain/event-schemas.test.ts checks the three agree.
 */

const VerificationCompletedData = Type.Object(
  {
    sessionId: Type.String(),
    verified: Type.Boolean(),
    university: Type.Union([Ref(UniversitySchema), Type.Null()]),
    claims: Ref(ReportedClaimsSchema),
    redacted: Type.Optional(
      Type.Literal(true, {
        description:
          'Present once the session was redacted: university and claim values are null from then on (a delivery sent after the redaction carries them so)',
      }),
    ),
    protocol: Type.Optional(
      StringEnum(WALLET_PROTOCOLS, {
        description:
          'What answered (matricula, openid4vp, or a university login: saml, oidc); absent on events recorded before it existed',
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

/** The schema of each event type's `data`. */
export const EVENT_DATA_SCHEMAS = {
  'verification.completed': VerificationCompletedData,
  'verification.expired': SessionEventData,
  'verification.cancelled': SessionEventData,
  'verification.redacted': VerificationRedactedData,
  'consent.approved': SessionEventData,
  'consent.declined': SessionEventData,
  'webhook.test': WebhookTestData,
} satisfies { [E in EventType]: TSchema };

/** The `data` of an event of type `E`, as its schema says. */
export type EventData<E extends EventType> = Static<(typeof EVENT_DATA_SCHEMAS)[E]>;

/** (docs/webhooks.md) the envelope of one event type, with its data. */
function eventSchema<E extends EventType>(event: E, $id: string, description: string) {
  return Type.Object(
    {
      id: Type.String({ description: 'Prefix evt_' }),
      event: Type.Literal(event),
      createdAt: IsoTimestamp,
      appId: Type.String(),
      environment: Ref(EnvironmentSchema),
      data: Ref(EVENT_DATA_SCHEMAS[event] as (typeof EVENT_DATA_SCHEMAS)[E]),
    },
    { $id, description },
  );
}

/** Every event type, its envelope schema: the events route's answers and the document's `webhooks` section. */
export const EVENT_SCHEMAS = {
  'verification.completed': eventSchema(
    'verification.completed',
    'VerificationCompletedEvent',
    'A session completed, verified or not',
  ),
  'verification.expired': eventSchema(
    'verification.expired',
    'VerificationExpiredEvent',
    'An open session reached its expiry',
  ),
  'verification.cancelled': eventSchema(
    'verification.cancelled',
    'VerificationCancelledEvent',
    'You cancelled an open session',
  ),
  'verification.redacted': eventSchema(
    'verification.redacted',
    'VerificationRedactedEvent',
    "A session's data was erased: by you (POST /verification/v1/sessions/{sessionId}/redact) or by result retention (RESULT_RETENTION_DAYS)",
  ),
  'consent.approved': eventSchema(
    'consent.approved',
    'ConsentApprovedEvent',
    'The student agreed to share the requested claims',
  ),
  'consent.declined': eventSchema(
    'consent.declined',
    'ConsentDeclinedEvent',
    'The student refused: the session ends declined',
  ),
  'webhook.test': eventSchema('webhook.test', 'WebhookTestEvent', 'Sent by the test endpoint only'),
} satisfies { [E in EventType]: TSchema };

/** (docs/webhooks.md) an event of type `E`, as stored, listed and delivered. */
export type EventOf<E extends EventType> = Static<(typeof EVENT_SCHEMAS)[E]>;

/** (docs/webhooks.md) any event; `event` tells which, and so the shape of `data`. */
export type EventEnvelope = { [E in EventType]: EventOf<E> }[EventType];

/** (docs/webhooks.md) any event, by its name (`event` discriminates the union). */
export const EventEnvelopeSchema = Type.Unsafe<EventEnvelope>({
  $id: 'Event',
  description: 'An event; `event` says which, and the shape of `data`',
  oneOf: Object.values(EVENT_SCHEMAS).map((schema) => ({ $ref: schema.$id })),
  discriminator: {
    propertyName: 'event',
    mapping: Object.fromEntries(
      Object.entries(EVENT_SCHEMAS).map(([event, schema]) => [event, `#/components/schemas/${schema.$id}`]),
    ),
  },
});

/** The named schemas above (and those they refer to), for the app to register once. */
export const EVENT_COMPONENTS: TSchema[] = [
  VerificationCompletedData,
  VerificationRedactedData,
  SessionEventData,
  WebhookTestData,
  ...Object.values(EVENT_SCHEMAS),
  EventEnvelopeSchema,
];
