import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth.ts';
import {
  AUTHENTICATED_ERRORS,
  BEARER,
  Environment,
  errorResponses,
  IsoTimestamp,
  envelope,
  listEnvelope,
  MultilineText,
  PageQuery,
} from '../http/schemas.ts';
import {
  archiveApplication,
  createApplication,
  getApplication,
  listApplications,
  updateApplication,
} from '../services/applications.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { AppWebhookFields, WebhookEndpointWithSecret } from './webhooks.ts';

/** Spec 2.2: the list entry, exactly these fields. */
export const ApplicationListEntry = Type.Object({
  id: Type.String({ description: 'Prefix app_' }),
  name: Type.String(),
  environment: Environment,
  status: Type.Union([Type.Literal('active'), Type.Literal('archived')]),
  createdAt: IsoTimestamp,
  webhookCount: Type.Integer(),
  keyCount: Type.Integer(),
});

const KeySummary = Type.Object({
  id: Type.String(),
  name: Type.String(),
  environment: Environment,
  keyHint: Type.String(),
  createdAt: IsoTimestamp,
});

const SessionMetrics = Type.Object({
  total: Type.Integer(),
  pending: Type.Integer(),
  consented: Type.Integer(),
  verified: Type.Integer(),
  notVerified: Type.Integer(),
  expired: Type.Integer(),
  cancelled: Type.Integer(),
  declined: Type.Integer(),
});

export const ApplicationDetails = Type.Object({
  ...ApplicationListEntry.properties,
  description: Type.Union([Type.String(), Type.Null()]),
  updatedAt: IsoTimestamp,
  keys: Type.Array(KeySummary, { description: 'Keys of the application, hints only' }),
  metrics: Type.Object({ sessions: SessionMetrics }),
});

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Description = MultilineText({ maxLength: 2000 });
const AppIdParams = Type.Object({ appId: Type.String({ maxLength: 64 }) });

export const CreateApplicationBody = {
  name: Name,
  environment: Type.Optional(Environment),
  description: Type.Optional(Description),
  ...AppWebhookFields,
};

/** The created application; `webhook` (with its signing secret) when webhookUrl was given. */
const CreatedApplication = Type.Object({
  ...ApplicationListEntry.properties,
  webhook: Type.Optional(WebhookEndpointWithSecret),
});

const tags = ['Applications'];

export const appRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/org/v1/apps', {
      schema: {
        tags,
        summary: 'List active applications of the organization',
        security: BEARER,
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: { 200: listEnvelope(ApplicationListEntry), ...errorResponses(...AUTHENTICATED_ERRORS) },
      },
      handler: async (request) => {
        const page = await listApplications(deps, principalOf(request), {
          limit: request.query.limit ?? 20,
          startingAfter: request.query.startingAfter,
        });
        return {
          success: true as const,
          data: page.items,
          pagination: { hasMore: page.hasMore, nextCursor: page.nextCursor },
        };
      },
    });

    app.post('/org/v1/apps', {
      config: { secretFields: ['data.webhook.secret'] },
      schema: {
        tags,
        summary: 'Create an application, optionally with a webhook endpoint (one transaction)',
        security: BEARER,
        body: Type.Object(CreateApplicationBody, { additionalProperties: false }),
        response: { 201: envelope(CreatedApplication), ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden') },
      },
      handler: async (request, reply) => {
        const created = await createApplication(deps, principalOf(request), request.body);
        return reply.status(201).send({ success: true as const, data: created });
      },
    });

    app.get('/org/v1/apps/:appId', {
      schema: {
        tags,
        summary: 'Application details: configuration, keys (hints), metrics',
        security: BEARER,
        params: AppIdParams,
        response: {
          200: envelope(ApplicationDetails),
          ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden', 'not_found'),
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: await getApplication(deps, principalOf(request), request.params.appId),
      }),
    });

    app.patch('/org/v1/apps/:appId', {
      schema: {
        tags,
        summary: 'Rename or describe an application',
        security: BEARER,
        params: AppIdParams,
        body: Type.Object(
          { name: Type.Optional(Name), description: Type.Optional(Type.Union([Description, Type.Null()])) },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: {
          200: envelope(ApplicationDetails),
          ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden', 'not_found', 'invalid_state'),
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: await updateApplication(deps, principalOf(request), request.params.appId, request.body),
      }),
    });

    app.delete('/org/v1/apps/:appId', {
      schema: {
        tags,
        summary: 'Archive an application: it leaves the list and its keys stop working',
        security: BEARER,
        params: AppIdParams,
        response: {
          200: envelope(ApplicationDetails),
          ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden', 'not_found'),
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: await archiveApplication(deps, principalOf(request), request.params.appId),
      }),
    });
  };
