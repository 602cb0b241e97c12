import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ATTEMPT_OUTCOMES, DELIVERY_STATUSES } from '../domain/delivery-state.ts';
import { EVENT_TYPES } from '../domain/events.ts';
import { principalOf } from '../http/auth.ts';
import {
  AUTHENTICATED_ERRORS,
  BEARER,
  BODY_ERRORS,
  envelope,
  Environment,
  errorResponses,
  IsoTimestamp,
  listBody,
  listEnvelope,
  MultilineText,
  pageOf,
  PageQuery,
  POST_ERRORS,
  Ref,
  StringEnum,
} from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import {
  createEndpoint,
  deleteEndpointFor,
  endpointForCaller,
  endpointView,
  endpointWithSecret,
  getDelivery,
  listDeliveriesFor,
  listEndpointsFor,
  retryDelivery,
  rotateSecret,
  sendTestEvent,
  updateEndpointFor,
} from '../services/webhooks.ts';

export const EventTypeEnum = StringEnum(EVENT_TYPES, { $id: 'EventType', description: 'The name of an event' });
const EventName = Ref(EventTypeEnum);
const NullableTimestamp = Type.Union([IsoTimestamp, Type.Null()]);

/** The endpoint record (docs/webhooks.md); the signing secret is not part of it. */
const endpointFields = {
  id: Type.String({ description: 'Prefix whk_' }),
  appId: Type.String(),
  environment: Environment,
  url: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  events: Type.Array(EventName),
  enabled: Type.Boolean(),
  disabledReason: Type.Union([StringEnum(['manual', 'endpoint_gone']), Type.Null()], {
    description: 'Why the endpoint is disabled: by you (manual), or because it answered 410 Gone (endpoint_gone)',
  }),
  previousSecretExpiresAt: Type.Union([IsoTimestamp, Type.Null()], {
    description: 'Until then, the secret replaced by the last rotation signs too',
  }),
  createdAt: IsoTimestamp,
  updatedAt: IsoTimestamp,
};

export const WebhookEndpointSchema = Type.Object(endpointFields, {
  $id: 'WebhookEndpoint',
  description: 'A webhook endpoint; its signing secret is not part of it',
});

/** Creation and rotation only: the record with its signing secret. */
export const WebhookEndpointWithSecret = Type.Object(
  {
    ...endpointFields,
    // A string: the response that creates or rotates always holds it. The secret is never stored
    // for replays, so a replay of the request (Idempotent-Replayed: true) carries null instead;
    // the SDK refuses such a replay (packages/sdk) rather than hand back a null typed string.
    secret: Type.String({
      description:
        'whsec_…: the HMAC key of the signatures, shown in this response only. An idempotent replay of the request (Idempotent-Replayed: true) carries null: the secret is never stored; rotate it if it was lost.',
    }),
  },
  { $id: 'WebhookEndpointWithSecret', description: 'A webhook endpoint with its signing secret' },
);

const DeliveryStatusEnum = StringEnum(DELIVERY_STATUSES, { $id: 'DeliveryStatus' });
const DeliveryStatus = Ref(DeliveryStatusEnum);

/** How an attempt ended: the sender's failure kinds (webhooks/sender.ts), or succeeded. */
export const AttemptOutcomeEnum = StringEnum(ATTEMPT_OUTCOMES, {
  $id: 'AttemptOutcome',
  description: 'succeeded, or why not',
});

const AttemptSchema = Type.Object({
  attempt: Type.Integer({ description: '1 for the first attempt' }),
  startedAt: IsoTimestamp,
  durationMs: Type.Integer(),
  statusCode: Type.Union([Type.Integer(), Type.Null()], { description: 'HTTP status of the answer, null without one' }),
  outcome: Ref(AttemptOutcomeEnum),
  errorMessage: Type.Union([Type.String(), Type.Null()]),
  responseBody: Type.String({ description: 'The start of the answer, at most 2 KiB' }),
  responseBodyTruncated: Type.Boolean(),
});

export const DeliverySchema = Type.Object(
  {
    id: Type.String({ description: 'Prefix del_; sent as X-Service-Delivery' }),
    endpointId: Type.String(),
    eventId: Type.String(),
    event: EventName,
    status: DeliveryStatus,
    attemptCount: Type.Integer(),
    nextAttemptAt: NullableTimestamp,
    createdAt: IsoTimestamp,
    updatedAt: IsoTimestamp,
    deliveredAt: NullableTimestamp,
    attempts: Type.Array(AttemptSchema),
  },
  { $id: 'Delivery', description: 'One event sent to one endpoint, with every attempt' },
);

const DeletedWebhookEndpoint = Type.Object(
  { id: Type.String(), deleted: Type.Literal(true), deletedAt: IsoTimestamp },
  { $id: 'DeletedWebhookEndpoint' },
);

export const WEBHOOK_COMPONENTS = [
  AttemptOutcomeEnum,
  EventTypeEnum,
  WebhookEndpointSchema,
  WebhookEndpointWithSecret,
  DeliveryStatusEnum,
  DeliverySchema,
  DeletedWebhookEndpoint,
];

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'https:// URL of a public host' });
const Events = Type.Array(EventName, {
  minItems: 1,
  maxItems: EVENT_TYPES.length,
  description: 'The events to send; each at most once',
});
const Description = MultilineText({ maxLength: 2000 });
const WebhookParams = Type.Object({ webhookId: Type.String({ maxLength: 64 }) });
const DeliveryParams = Type.Object({
  webhookId: Type.String({ maxLength: 64 }),
  deliveryId: Type.String({ maxLength: 64 }),
});

/** The webhook fields of application creation (docs/webhooks.md, Subscription API). */
export const AppWebhookFields = {
  webhookUrl: Type.Optional(Url),
  webhookEvents: Type.Optional(Events),
};

const tags = ['Webhooks'];
const READ_ERRORS = [...AUTHENTICATED_ERRORS, 'forbidden', 'not_found'] as const;
const WRITE_ERRORS = [...READ_ERRORS, 'invalid_state'] as const;
const EXAMPLE_URL = 'https://example.com/hooks/matricula';

export const webhookRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post('/org/v1/webhooks', {
      config: { secretFields: ['data.secret'] },
      schema: {
        tags,
        operationId: 'createWebhookEndpoint',
        summary: 'Register a webhook endpoint (its signing secret is returned here only)',
        security: BEARER,
        body: Type.Object(
          { appId: Type.String({ maxLength: 64 }), url: Url, events: Events, description: Type.Optional(Description) },
          {
            additionalProperties: false,
            examples: [
              {
                appId: 'app_01jd8x4m2n5p6q7r8s9t0v1w2x',
                url: EXAMPLE_URL,
                events: ['verification.completed', 'verification.expired'],
                description: 'Checkout backend',
              },
            ],
          },
        ),
        response: {
          201: envelope(Ref(WebhookEndpointWithSecret)),
          ...errorResponses(...WRITE_ERRORS, ...POST_ERRORS),
        },
      },
      handler: async (request, reply) => {
        const endpoint = await createEndpoint(deps, principalOf(request), request.body);
        return reply.status(201).send({ success: true as const, data: endpointWithSecret(endpoint) });
      },
    });

    app.get('/org/v1/webhooks', {
      schema: {
        tags,
        operationId: 'listWebhookEndpoints',
        summary: "Webhook endpoints of the caller's environment, optionally of one application",
        security: BEARER,
        querystring: Type.Object(
          { appId: Type.Optional(Type.String({ maxLength: 64 })), ...PageQuery },
          { additionalProperties: false },
        ),
        response: { 200: listEnvelope(Ref(WebhookEndpointSchema)), ...errorResponses(...READ_ERRORS) },
      },
      handler: async (request) => {
        const { appId } = request.query;
        const page = await listEndpointsFor(deps, principalOf(request), { appId }, pageOf(request.query));
        return {
          success: true as const,
          data: page.items.map(endpointView),
          pagination: { hasMore: page.hasMore, nextCursor: page.nextCursor },
        };
      },
    });

    app.get('/org/v1/webhooks/:webhookId', {
      schema: {
        tags,
        operationId: 'retrieveWebhookEndpoint',
        summary: 'One webhook endpoint',
        security: BEARER,
        params: WebhookParams,
        response: { 200: envelope(Ref(WebhookEndpointSchema)), ...errorResponses(...READ_ERRORS) },
      },
      handler: async (request) => ({
        success: true as const,
        data: endpointView(await endpointForCaller(deps, principalOf(request), request.params.webhookId)),
      }),
    });

    app.patch('/org/v1/webhooks/:webhookId', {
      schema: {
        tags,
        operationId: 'updateWebhookEndpoint',
        summary: 'Change the URL, events, description, or enable/disable',
        security: BEARER,
        params: WebhookParams,
        body: Type.Object(
          {
            url: Type.Optional(Url),
            events: Type.Optional(Events),
            enabled: Type.Optional(Type.Boolean()),
            description: Type.Optional(Type.Union([Description, Type.Null()])),
          },
          { additionalProperties: false, minProperties: 1, examples: [{ enabled: true }, { url: EXAMPLE_URL }] },
        ),
        response: { 200: envelope(Ref(WebhookEndpointSchema)), ...errorResponses(...READ_ERRORS, ...BODY_ERRORS) },
      },
      handler: async (request) => ({
        success: true as const,
        data: endpointView(await updateEndpointFor(deps, principalOf(request), request.params.webhookId, request.body)),
      }),
    });

    app.delete('/org/v1/webhooks/:webhookId', {
      schema: {
        tags,
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete an endpoint, with its pending deliveries and their log',
        security: BEARER,
        params: WebhookParams,
        response: {
          200: envelope(Ref(DeletedWebhookEndpoint)),
          ...errorResponses(...READ_ERRORS),
        },
      },
      handler: async (request) => {
        const result = await deleteEndpointFor(deps, principalOf(request), request.params.webhookId);
        return { success: true as const, data: { id: result.id, deleted: true as const, deletedAt: result.deletedAt } };
      },
    });

    app.post('/org/v1/webhooks/:webhookId/rotate-secret', {
      config: { secretFields: ['data.secret'] },
      schema: {
        tags,
        operationId: 'rotateWebhookEndpointSecret',
        summary: 'New signing secret; the old one keeps signing for 24 h',
        security: BEARER,
        params: WebhookParams,
        response: {
          200: envelope(Ref(WebhookEndpointWithSecret)),
          ...errorResponses(...READ_ERRORS, ...POST_ERRORS),
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: endpointWithSecret(await rotateSecret(deps, principalOf(request), request.params.webhookId)),
      }),
    });

    app.post('/org/v1/webhooks/:webhookId/test', {
      schema: {
        tags,
        operationId: 'testWebhookEndpoint',
        summary: 'Send a webhook.test event to this endpoint',
        security: BEARER,
        params: WebhookParams,
        response: { 201: envelope(Ref(DeliverySchema)), ...errorResponses(...WRITE_ERRORS, ...POST_ERRORS) },
      },
      handler: async (request, reply) => {
        const delivery = await sendTestEvent(deps, principalOf(request), request.params.webhookId);
        return reply.status(201).send({ success: true as const, data: delivery });
      },
    });

    app.get('/org/v1/webhooks/:webhookId/deliveries', {
      schema: {
        tags,
        operationId: 'listWebhookDeliveries',
        summary: 'Delivery log of an endpoint, newest first, with every attempt',
        security: BEARER,
        params: WebhookParams,
        querystring: Type.Object(
          { status: Type.Optional(DeliveryStatus), ...PageQuery },
          { additionalProperties: false },
        ),
        response: { 200: listEnvelope(Ref(DeliverySchema)), ...errorResponses(...READ_ERRORS) },
      },
      handler: async (request) => {
        const { status } = request.query;
        const page = await listDeliveriesFor(
          deps,
          principalOf(request),
          request.params.webhookId,
          { status },
          pageOf(request.query),
        );
        return listBody(page);
      },
    });

    app.get('/org/v1/webhooks/:webhookId/deliveries/:deliveryId', {
      schema: {
        tags,
        operationId: 'retrieveWebhookDelivery',
        summary: 'One delivery with its attempts',
        security: BEARER,
        params: DeliveryParams,
        response: { 200: envelope(Ref(DeliverySchema)), ...errorResponses(...READ_ERRORS) },
      },
      handler: async (request) => ({
        success: true as const,
        data: await getDelivery(deps, principalOf(request), request.params.webhookId, request.params.deliveryId),
      }),
    });

    app.post('/org/v1/webhooks/:webhookId/deliveries/:deliveryId/retry', {
      schema: {
        tags,
        operationId: 'retryWebhookDelivery',
        summary: 'Send a delivery again now (one more attempt)',
        security: BEARER,
        params: DeliveryParams,
        response: { 200: envelope(Ref(DeliverySchema)), ...errorResponses(...WRITE_ERRORS, ...POST_ERRORS) },
      },
      handler: async (request) => ({
        success: true as const,
        data: await retryDelivery(deps, principalOf(request), request.params.webhookId, request.params.deliveryId),
      }),
    });
  };
