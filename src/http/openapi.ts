/**
 * What the route schemas cannot say, added to the OpenAPI document once: the headers of the
 * idempotency layer and the request id, on every operation they apply to, and the `webhooks`
 * section (OAS 3.1): the request we send to an endpoint, one per event type.
 */

type Json = Record<string, unknown>;

interface Response {
  headers?: Json;
  description?: string;
  content?: Record<string, { schema?: Json } & Json>;
}
interface Operation {
  summary?: string;
  tags?: string[];
  parameters?: unknown[];
  responses?: Record<string, Response>;
}

/** What @fastify/swagger writes when a response schema has no description. */
const DEFAULT_DESCRIPTION = 'Default Response';

/** `CreatedSession` → `created session`. */
const words = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
const componentName = (schema: unknown) =>
  typeof (schema as { $ref?: unknown } | undefined)?.$ref === 'string'
    ? (schema as { $ref: string }).$ref.split('/').at(-1)
    : undefined;

/**
 * A success response's description, for Swagger UI and generators, instead of "Default Response":
 * what `data` holds (`The session`, `A page of events`), else the operation's summary.
 */
export function successDescription(operation: Operation, response: Response): string {
  const data = (response.content?.['application/json']?.schema?.properties as Json | undefined)?.data as
    Json | undefined;
  const single = componentName(data);
  if (single) return `The ${words(single)}`;
  const item = data?.type === 'array' ? componentName(data.items) : undefined;
  if (item) return `A page of ${words(item)} items and the cursor to the next page`;
  return operation.summary ?? 'Success';
}
/** The parts of the document this file completes. */
export interface OpenApiDocument {
  components?: { headers?: Json; parameters?: Json };
  paths?: Record<string, Partial<Record<string, Operation>>>;
  webhooks?: Json;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const HEADERS: Json = {
  RequestId: {
    description: 'The id of this request (prefix req_); quote it when you report a problem',
    required: true,
    schema: { type: 'string' },
  },
  IdempotentReplayed: {
    description: 'true when this response is the replay of an earlier request with the same Idempotency-Key',
    schema: { type: 'string', enum: ['true'] },
  },
  RetryAfter: {
    description: 'Seconds to wait before trying again',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  RateLimitLimit: {
    description: 'Requests allowed in the current window of this limit (IETF httpapi RateLimit draft)',
    schema: { type: 'integer', minimum: 1 },
  },
  RateLimitRemaining: {
    description: 'Requests left in the current window of this limit',
    schema: { type: 'integer', minimum: 0 },
  },
  RateLimitReset: {
    description: 'Seconds until the current window ends and the limit is whole again',
    schema: { type: 'integer', minimum: 1 },
  },
};

/** Operations the rate limits skip (http/rate-limit.ts): probes and metrics, by their tags. */
const NOT_LIMITED_TAGS = ['Health', 'Operations'];

const RATE_LIMIT_HEADERS: Json = {
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimitLimit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimitRemaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimitReset' },
};

const TOO_MANY_REQUESTS = {
  description:
    'Too many requests (rate_limited): per API key with one; without, per session for a call naming a session (with its nonce or token where the route takes one), per client address otherwise; tighter on /verification/v1/verify; also when the proof workers are saturated or too many status requests wait',
  content: {
    'application/json': {
      schema: { $ref: '#/components/schemas/ErrorResponse' },
      examples: {
        rate_limited: {
          summary: 'rate_limited',
          value: {
            success: false,
            error: {
              code: 'rate_limited',
              message: 'Too many requests; retry after the seconds in Retry-After.',
              requestId: 'req_01jd3q5wq8e5s7v2k4m6n8p0r2',
            },
          },
        },
      },
    },
  },
};

const PARAMETERS: Json = {
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes the POST safe to retry: the first response is kept 24 h and replayed for the same key and the same request; the same key with another request is a 409 idempotency_conflict. 1 to 255 printable ASCII characters.',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
  },
};

/** The headers of every delivery (docs/webhooks.md, The request). */
const DELIVERY_PARAMETERS: Json = {
  WebhookSignature: {
    name: 'X-Service-Signature',
    in: 'header',
    required: true,
    description:
      't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the endpoint secret>; several v1 while a rotated secret still signs',
    schema: { type: 'string' },
  },
  WebhookEvent: {
    name: 'X-Service-Event',
    in: 'header',
    required: true,
    description: 'The event name, as in the body',
    schema: { $ref: '#/components/schemas/EventType' },
  },
  WebhookDelivery: {
    name: 'X-Service-Delivery',
    in: 'header',
    required: true,
    description: 'The delivery id (prefix del_), the same on every attempt',
    schema: { type: 'string' },
  },
  // Standard Webhooks (standardwebhooks.com), sent beside the headers above on every delivery.
  StandardWebhookId: {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'Standard Webhooks: the event id (prefix evt_), the same on every attempt; deduplicate on it',
    schema: { type: 'string' },
  },
  StandardWebhookTimestamp: {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Standard Webhooks: unix seconds of the signing; refuse deliveries too far from your clock',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  StandardWebhookSignature: {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      'Standard Webhooks: space-separated v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>"> with the key after whsec_ (base64-decoded); one per secret that signs',
    schema: { type: 'string' },
  },
};

/** `event name → $id of its envelope schema`. */
export type WebhookEventSchemas = Record<string, string>;

function webhookOperationId(event: string): string {
  const words = event.split(/[._]/);
  return `${words[0]}${words
    .slice(1)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('')}Webhook`;
}

function webhooksSection(events: WebhookEventSchemas): Json {
  const section: Json = {};
  for (const [event, schemaId] of Object.entries(events)) {
    section[event] = {
      post: {
        operationId: webhookOperationId(event),
        summary: `The ${event} event, sent to the endpoints subscribed to it`,
        description:
          'POSTed to your endpoint, signed (see docs/webhooks.md). Verify the signature on the raw body before parsing it. Any 2xx acknowledges; anything else, or no answer within the timeout, is retried; 410 Gone disables the endpoint.',
        tags: ['Webhooks'],
        security: [],
        parameters: [
          'WebhookSignature',
          'WebhookEvent',
          'WebhookDelivery',
          'StandardWebhookId',
          'StandardWebhookTimestamp',
          'StandardWebhookSignature',
        ].map((name) => ({
          $ref: `#/components/parameters/${name}`,
        })),
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: `#/components/schemas/${schemaId}` } } },
        },
        responses: {
          '200': { description: 'Acknowledged: any 2xx status' },
          '410': { description: 'Gone: the endpoint is disabled and receives nothing more' },
        },
      },
    };
  }
  return section;
}

/** Adds the shared headers and parameters to every operation of `document`, and the webhooks, in place. */
export function completeDocument(document: OpenApiDocument, options: { webhooks: WebhookEventSchemas }): void {
  const components = (document.components ??= {});
  components.headers = { ...components.headers, ...HEADERS };
  components.parameters = { ...components.parameters, ...PARAMETERS, ...DELIVERY_PARAMETERS };
  document.webhooks = { ...document.webhooks, ...webhooksSection(options.webhooks) };
  for (const item of Object.values(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const limited = !(operation.tags ?? []).some((tag) => NOT_LIMITED_TAGS.includes(tag));
      if (limited && operation.responses && !operation.responses['429'])
        operation.responses['429'] = structuredClone(TOO_MANY_REQUESTS);
      if (method === 'post')
        operation.parameters = [...(operation.parameters ?? []), { $ref: '#/components/parameters/IdempotencyKey' }];
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (status.startsWith('2') && (response.description ?? DEFAULT_DESCRIPTION) === DEFAULT_DESCRIPTION)
          response.description = successDescription(operation, response);
        const headers: Json = { 'X-Request-Id': { $ref: '#/components/headers/RequestId' } };
        if (method === 'post' && status.startsWith('2'))
          headers['Idempotent-Replayed'] = { $ref: '#/components/headers/IdempotentReplayed' };
        if (limited && (status.startsWith('2') || status === '429')) Object.assign(headers, RATE_LIMIT_HEADERS);
        if (status === '429') headers['Retry-After'] = { $ref: '#/components/headers/RetryAfter' };
        response.headers = { ...response.headers, ...headers };
      }
    }
  }
}
