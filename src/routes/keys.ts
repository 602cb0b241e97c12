import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../http/auth.ts';
import {
  AUTHENTICATED_ERRORS,
  BEARER,
  envelope,
  Environment,
  errorResponses,
  IsoTimestamp,
  listBody,
  listEnvelope,
  pageOf,
  PageQuery,
  POST_ERRORS,
  Ref,
} from '../http/schemas.ts';
import { generateApiKey, listKeys, revokeKey } from '../services/api-keys.ts';
import type { ServiceDeps } from '../services/deps.ts';

const keyFields = {
  id: Type.String({ description: 'Prefix key_' }),
  appId: Type.String(),
  name: Type.String(),
  environment: Environment,
  keyHint: Type.String({ description: 'Prefix, one asterisk per hidden character, last four characters' }),
};

/** A key as generated: the only response that carries rawSecret. */
export const GeneratedApiKey = Type.Object(
  {
    ...keyFields,
    rawSecret: Type.Union([Type.String(), Type.Null()], {
      description: 'sk_test_… or sk_live_…; shown once, never again (null in an idempotent replay)',
    }),
    createdAt: IsoTimestamp,
  },
  { $id: 'CreatedKey', description: 'A key as generated: the only response with its raw secret' },
);

export const ApiKeyHint = Type.Object(
  { ...keyFields, createdAt: IsoTimestamp },
  { $id: 'Key', description: 'An API key, its hint only' },
);

const RevokedKey = Type.Object(
  { id: Type.String(), revoked: Type.Literal(true), revokedAt: IsoTimestamp },
  { $id: 'RevokedKey' },
);

export const KEY_COMPONENTS = [GeneratedApiKey, ApiKeyHint, RevokedKey];

const tags = ['API keys'];

export const keyRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post('/org/v1/keys', {
      config: { secretFields: ['data.rawSecret'] },
      schema: {
        tags,
        operationId: 'createKey',
        summary: 'Generate a secret API key (the raw secret is returned once)',
        security: BEARER,
        body: Type.Object(
          {
            appId: Type.String({ maxLength: 64 }),
            name: Type.String({ minLength: 1, maxLength: 200 }),
            environment: Environment,
          },
          {
            additionalProperties: false,
            examples: [{ appId: 'app_01jd8x4m2n5p6q7r8s9t0v1w2x', name: 'Checkout backend', environment: 'sandbox' }],
          },
        ),
        response: {
          201: envelope(Ref(GeneratedApiKey)),
          ...errorResponses(...AUTHENTICATED_ERRORS, ...POST_ERRORS, 'forbidden', 'not_found', 'invalid_state'),
        },
      },
      handler: async (request, reply) => {
        const key = await generateApiKey(deps, principalOf(request), request.body);
        return reply.status(201).send({ success: true as const, data: key });
      },
    });

    app.get('/org/v1/keys', {
      schema: {
        tags,
        operationId: 'listKeys',
        summary: "List keys of the caller's environment (hints only), optionally of one application",
        security: BEARER,
        querystring: Type.Object(
          { appId: Type.Optional(Type.String({ maxLength: 64 })), ...PageQuery },
          { additionalProperties: false },
        ),
        response: {
          200: listEnvelope(Ref(ApiKeyHint)),
          ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden', 'not_found'),
        },
      },
      handler: async (request) => {
        const { appId } = request.query;
        const page = await listKeys(deps, principalOf(request), { appId }, pageOf(request.query));
        return listBody(page);
      },
    });

    app.delete('/org/v1/keys/:keyId', {
      schema: {
        tags,
        operationId: 'revokeKey',
        summary: 'Revoke a key: deleted and deny-listed; its next request gets 401 key_revoked',
        security: BEARER,
        params: Type.Object({ keyId: Type.String({ maxLength: 64 }) }),
        response: {
          200: envelope(Ref(RevokedKey)),
          ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden', 'not_found'),
        },
      },
      handler: async (request) => {
        const result = await revokeKey(deps, principalOf(request), request.params.keyId);
        return { success: true as const, data: { id: result.id, revoked: true as const, revokedAt: result.revokedAt } };
      },
    });
  };
