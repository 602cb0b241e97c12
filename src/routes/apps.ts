import { AnswerMethodEnum } from './session-schemas.ts';
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
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
import {
  archiveApplication,
  createApplication,
  getApplication,
  listApplications,
  updateApplication,
} from '../services/applications.ts';
import { MAX_ALLOWED_ORIGINS } from '../domain/return-url.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { AppWebhookFields, WebhookEndpointWithSecret } from './webhooks.ts';

/** The list entry, exactly these fields (clients depend on the set). */
const appFields = {
  id: Type.String({ description: 'Prefix app_' }),
  name: Type.String(),
  environment: Environment,
  status: StringEnum(['active', 'archived']),
  createdAt: IsoTimestamp,
  webhookCount: Type.Integer(),
  keyCount: Type.Integer(),
};

export const ApplicationListEntry = Type.Object(appFields, {
  $id: 'App',
  description: 'An application, as listed',
});

const KeySummary = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    environment: Environment,
    keyHint: Type.String(),
    createdAt: IsoTimestamp,
  },
  { $id: 'KeySummary', description: 'A key of an application, its hint only' },
);

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

export const ApplicationDetails = Type.Object(
  {
    ...appFields,
    description: Type.Union([Type.String(), Type.Null()]),
    updatedAt: IsoTimestamp,
    allowedReturnOrigins: Type.Array(Type.String(), {
      description:
        "Origins (https://shop.example) a session's returnUrl may point to, and the only pages that may frame the portal (the drop-in, /js/v1/matricula.js)",
    }),
    keys: Type.Array(Ref(KeySummary), { description: 'Keys of the application, hints only' }),
    metrics: Type.Object({ sessions: SessionMetrics }),
    allowedMethods: Type.Union([Type.Array(Ref(AnswerMethodEnum)), Type.Null()], {
      description:
        "The channels that may answer its sessions (a session's own allowedMethods wins); null: every channel (docs/university-login.md)",
    }),
  },
  { $id: 'AppDetails', description: 'An application with its configuration, keys (hints) and metrics' },
);

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Description = MultilineText({ maxLength: 2000 });
const AppIdParams = Type.Object({ appId: Type.String({ maxLength: 64 }) });
const AllowedReturnOrigins = Type.Array(Type.String({ maxLength: 300 }), {
  maxItems: MAX_ALLOWED_ORIGINS,
  description:
    "Origins (scheme, host and port: https://shop.example) that sessions' returnUrl may point to and that may frame the portal; https only unless the operator allows private targets. Replaces the list.",
});

export const CreateApplicationBody = {
  name: Name,
  environment: Type.Optional(Environment),
  description: Type.Optional(Description),
  allowedReturnOrigins: Type.Optional(AllowedReturnOrigins),
  ...AppWebhookFields,
};

/** The created application; `webhook` (with its signing secret) when webhookUrl was given. */
const CreatedApplication = Type.Object(
  { ...appFields, webhook: Type.Optional(Ref(WebhookEndpointWithSecret)) },
  { $id: 'CreatedApp', description: 'The created application, with its webhook endpoint when webhookUrl was given' },
);

export const APP_COMPONENTS = [ApplicationListEntry, KeySummary, ApplicationDetails, CreatedApplication];

const tags = ['Applications'];

export const appRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/org/v1/apps', {
      schema: {
        tags,
        operationId: 'listApps',
        summary: 'List active applications of the organization',
        security: BEARER,
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: { 200: listEnvelope(Ref(ApplicationListEntry)), ...errorResponses(...AUTHENTICATED_ERRORS) },
      },
      handler: async (request) => {
        const page = await listApplications(deps, principalOf(request), pageOf(request.query));
        return listBody(page);
      },
    });

    app.post('/org/v1/apps', {
      config: { secretFields: ['data.webhook.secret'] },
      schema: {
        tags,
        operationId: 'createApp',
        summary: 'Create an application, optionally with a webhook endpoint (one transaction)',
        security: BEARER,
        body: Type.Object(CreateApplicationBody, {
          additionalProperties: false,
          examples: [
            {
              name: 'Student discounts',
              environment: 'sandbox',
              description: 'Checkout discount for students',
              webhookUrl: 'https://example.com/hooks/matricula',
              webhookEvents: ['verification.completed'],
            },
          ],
        }),
        response: {
          201: envelope(Ref(CreatedApplication)),
          ...errorResponses(...AUTHENTICATED_ERRORS, ...POST_ERRORS, 'forbidden'),
        },
      },
      handler: async (request, reply) => {
        const created = await createApplication(deps, principalOf(request), request.body);
        return reply.status(201).send({ success: true as const, data: created });
      },
    });

    app.get('/org/v1/apps/:appId', {
      schema: {
        tags,
        operationId: 'retrieveApp',
        summary: 'Application details: configuration, keys (hints), metrics',
        security: BEARER,
        params: AppIdParams,
        response: {
          200: envelope(Ref(ApplicationDetails)),
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
        operationId: 'updateApp',
        summary: 'Rename or describe an application, or set its allowed return origins',
        security: BEARER,
        params: AppIdParams,
        body: Type.Object(
          {
            name: Type.Optional(Name),
            description: Type.Optional(Type.Union([Description, Type.Null()])),
            allowedReturnOrigins: Type.Optional(AllowedReturnOrigins),
            allowedMethods: Type.Optional(
              Type.Union(
                [Type.Array(Ref(AnswerMethodEnum), { minItems: 1, maxItems: 2, uniqueItems: true }), Type.Null()],
                {
                  description: 'The channels that may answer its sessions; null for every channel',
                },
              ),
            ),
          },
          { additionalProperties: false, minProperties: 1, examples: [{ name: 'Student discounts (EU)' }] },
        ),
        response: {
          200: envelope(Ref(ApplicationDetails)),
          ...errorResponses(...AUTHENTICATED_ERRORS, ...BODY_ERRORS, 'forbidden', 'not_found', 'invalid_state'),
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
        operationId: 'archiveApp',
        summary: 'Archive an application: it leaves the list and its keys stop working',
        security: BEARER,
        params: AppIdParams,
        response: {
          200: envelope(Ref(ApplicationDetails)),
          ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden', 'not_found'),
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: await archiveApplication(deps, principalOf(request), request.params.appId),
      }),
    });
  };
