import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { invalidRequest, invalidState, notFound } from '../errors.ts';
import { Environment, envelope, errorResponses, IsoTimestamp, MultilineText } from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import {
  addFederation,
  refreshFederation,
  registeredFederation,
  registeredFederations,
  removeFederation,
} from '../services/sso/federation.ts';

const ADMIN = [{ adminToken: [] }];
const ADMIN_ERRORS = ['invalid_request', 'unauthenticated', 'rate_limited'] as const;
const tags = ['Admin'];

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

const FederationSchema = Type.Object({
  id: Type.String({ description: 'Prefix fed_' }),
  environment: Environment,
  name: Type.String(),
  metadataUrl: Nullable(Type.String({ description: 'Where it is refreshed from; null when loaded from a file' })),
  defaultCountry: Nullable(Type.String({ description: 'Country of entries whose metadata tells none' })),
  signingCertificateSha256: Type.String({ description: 'Fingerprint of the pinned signing certificate' }),
  validUntil: Nullable(IsoTimestamp),
  cacheDurationSeconds: Type.Union([Type.Integer(), Type.Null()]),
  entityCount: Type.Integer({ description: 'Registry entries loaded from it' }),
  refreshedAt: Nullable(IsoTimestamp),
  nextRefreshAt: Nullable(IsoTimestamp),
  lastError: Nullable(Type.String()),
  createdAt: IsoTimestamp,
});

const Counts = Type.Object({
  added: Type.Integer(),
  updated: Type.Integer(),
  removed: Type.Integer(),
  unchanged: Type.Integer(),
  skipped: Type.Integer(),
});

const LoadResult = Type.Object({
  federation: FederationSchema,
  counts: Counts,
  skipped: Type.Array(Type.String(), { description: 'Why entities were skipped (the first 100)' }),
});

const Params = Type.Object({ fedId: Type.String({ maxLength: 64 }) });

/** /admin/v1/identity-federations: `matricula idps add --federation-metadata` and its kin. */
export const adminIdentityFederationRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    // An aggregate by value is large (eduGAIN's is tens of MB), and JSON escaping grows it.
    const bodyLimit = deps.config.universityLogin.federationMaxBytes * 2 + 65_536;
    const Metadata = MultilineText({
      maxLength: 2 ** 30,
      description: 'The signed aggregate (XML); its size is limited by FEDERATION_METADATA_MAX_BYTES',
    });

    app.get('/admin/v1/identity-federations', {
      schema: {
        tags,
        summary: 'List the identity federations whose aggregates feed the IdP registry',
        security: ADMIN,
        querystring: Type.Object({ environment: Type.Optional(Environment) }, { additionalProperties: false }),
        response: { 200: envelope(Type.Array(FederationSchema)), ...errorResponses(...ADMIN_ERRORS) },
      },
      handler: async (request) => ({
        success: true as const,
        data: await registeredFederations(deps, request.query.environment),
      }),
    });

    app.post('/admin/v1/identity-federations', {
      bodyLimit,
      schema: {
        tags,
        summary: 'Load a signed federation metadata aggregate (as `matricula idps add --federation-metadata`)',
        description:
          'The aggregate (by value or URL, fetched through the outbound SSRF guard) must verify under `signingCertificate` and be within its validUntil. Each SAML 2.0 IdP in it becomes a registry entry; a URL is refreshed per its cacheDuration.',
        security: ADMIN,
        body: Type.Object(
          {
            environment: Type.Optional(Environment),
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            metadata: Type.Optional(Metadata),
            metadataUrl: Type.Optional(Type.String({ maxLength: 2048 })),
            signingCertificate: MultilineText({ maxLength: 65_536, description: 'PEM X.509 certificate' }),
            country: Type.Optional(Type.String({ description: 'ISO 3166-1 alpha-2, for entries that tell none' })),
          },
          { additionalProperties: false },
        ),
        response: { 201: envelope(LoadResult), ...errorResponses(...ADMIN_ERRORS) },
      },
      handler: async (request, reply) => {
        const loaded = await addFederation(deps, request.body);
        if (!loaded.ok) throw invalidRequest(`Invalid federation metadata: ${loaded.problems.join('; ')}.`);
        const { federation, counts, skipped } = loaded;
        return reply.status(201).send({ success: true as const, data: { federation, counts, skipped } });
      },
    });

    app.get('/admin/v1/identity-federations/:fedId', {
      schema: {
        tags,
        summary: 'One identity federation',
        security: ADMIN,
        params: Params,
        response: { 200: envelope(FederationSchema), ...errorResponses(...ADMIN_ERRORS, 'not_found') },
      },
      handler: async (request) => {
        const federation = await registeredFederation(deps, request.params.fedId);
        if (!federation) throw notFound('identity federation', 'fedId');
        return { success: true as const, data: federation };
      },
    });

    app.post('/admin/v1/identity-federations/:fedId/refresh', {
      bodyLimit,
      schema: {
        tags,
        summary: 'Refresh a federation now: from its URL, or from the aggregate given',
        security: ADMIN,
        params: Params,
        body: Type.Optional(Type.Object({ metadata: Type.Optional(Metadata) }, { additionalProperties: false })),
        response: {
          200: envelope(LoadResult),
          ...errorResponses(...ADMIN_ERRORS, 'not_found', 'invalid_state'),
        },
      },
      handler: async (request) => {
        const refreshed = await refreshFederation(deps, request.params.fedId, request.body ?? {});
        if (!refreshed) throw notFound('identity federation', 'fedId');
        if (!refreshed.ok) throw invalidState(`The refresh failed: ${refreshed.problem}`);
        const { federation, counts, skipped } = refreshed;
        return { success: true as const, data: { federation, counts, skipped } };
      },
    });

    app.delete('/admin/v1/identity-federations/:fedId', {
      schema: {
        tags,
        summary: 'Remove a federation and every IdP loaded from it',
        security: ADMIN,
        params: Params,
        response: {
          200: envelope(Type.Object({ federation: FederationSchema, removed: Type.Integer() })),
          ...errorResponses(...ADMIN_ERRORS, 'not_found'),
        },
      },
      handler: async (request) => {
        const removed = await removeFederation(deps, request.params.fedId);
        if (!removed) throw notFound('identity federation', 'fedId');
        return { success: true as const, data: removed };
      },
    });
  };
