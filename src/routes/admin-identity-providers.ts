import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { invalidRequest, invalidState, notFound } from '../errors.ts';
import {
  Environment,
  envelope,
  errorResponses,
  IsoTimestamp,
  listEnvelope,
  MultilineText,
  PageQuery,
} from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import {
  addIdentityProvider,
  registeredProvider,
  registeredProvidersPage,
  removeProvider,
  samlMetadataFrom,
} from '../services/sso/registry.ts';

const ADMIN = [{ adminToken: [] }];
const ADMIN_ERRORS = ['invalid_request', 'unauthenticated', 'rate_limited'] as const;
const tags = ['Admin'];

const IdentityProviderInput = Type.Object(
  {
    environment: Type.Optional(Environment),
    samlMetadata: Type.Optional(
      MultilineText({ maxLength: 1_048_576, description: 'SAML 2.0 metadata of one IdP (XML)' }),
    ),
    samlMetadataUrl: Type.Optional(
      Type.String({ maxLength: 2048, description: 'Where to fetch it (through the outbound SSRF guard)' }),
    ),
    oidcIssuer: Type.Optional(Type.String({ maxLength: 2048, description: 'OpenID Connect issuer identifier' })),
    clientId: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    clientSecret: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: 'Sealed at rest; never shown again' }),
    ),
    affiliationClaim: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: 'Default eduperson_scoped_affiliation' }),
    ),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    domain: Type.Optional(Type.String({ maxLength: 253 })),
    country: Type.Optional(Type.String({ description: 'ISO 3166-1 alpha-2' })),
  },
  { additionalProperties: false },
);

const IdentityProviderSchema = Type.Object({
  id: Type.String({ description: 'Prefix idp_' }),
  environment: Environment,
  protocol: Type.Union([Type.Literal('saml'), Type.Literal('oidc')]),
  entityId: Type.String({ description: 'SAML entityID or OpenID Connect issuer' }),
  name: Type.String(),
  domain: Type.String(),
  country: Type.String(),
  scopes: Type.Array(Type.String(), { description: 'Domains it may vouch for (shibmd:Scope)' }),
  saml: Type.Optional(Type.Object({ ssoUrl: Type.String(), certificates: Type.Array(Type.String()) })),
  oidc: Type.Optional(Type.Object({ clientId: Type.String(), affiliationClaim: Type.String() })),
  federation: Type.Union([Type.String(), Type.Null()]),
  clientSecretSet: Type.Boolean(),
  createdAt: IsoTimestamp,
});

const Params = Type.Object({ idpId: Type.String({ maxLength: 64 }) });

/** /admin/v1/identity-providers: what `matricula idps …` does; registered inside the admin API (its token and limit). */
export const adminIdentityProviderRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/admin/v1/identity-providers', {
      schema: {
        tags,
        summary: 'List the identity providers of university login, newest first',
        security: ADMIN,
        querystring: Type.Object(
          { ...PageQuery, environment: Type.Optional(Environment) },
          { additionalProperties: false },
        ),
        response: { 200: listEnvelope(IdentityProviderSchema), ...errorResponses(...ADMIN_ERRORS) },
      },
      handler: async (request) => {
        const page = await registeredProvidersPage(
          deps,
          { limit: request.query.limit ?? 20, startingAfter: request.query.startingAfter },
          request.query.environment,
        );
        return {
          success: true as const,
          data: page.items,
          pagination: { hasMore: page.hasMore, nextCursor: page.nextCursor },
        };
      },
    });

    app.post('/admin/v1/identity-providers', {
      schema: {
        tags,
        summary: 'Register an identity provider (as `matricula idps add`)',
        description:
          'SAML metadata (by value or URL) or an OpenID Connect issuer with client credentials. One entry per entity id and environment.',
        security: ADMIN,
        body: IdentityProviderInput,
        response: { 201: envelope(IdentityProviderSchema), ...errorResponses(...ADMIN_ERRORS, 'invalid_state') },
      },
      handler: async (request, reply) => {
        const added = await addIdentityProvider(deps, await samlMetadataFrom(deps, request.body));
        if (!added.ok) {
          if (added.kind === 'duplicate') throw invalidState(added.message);
          throw invalidRequest(`Invalid identity provider: ${added.problems.join('; ')}.`);
        }
        return reply.status(201).send({ success: true as const, data: added.provider });
      },
    });

    app.get('/admin/v1/identity-providers/:idpId', {
      schema: {
        tags,
        summary: 'One identity provider',
        security: ADMIN,
        params: Params,
        response: { 200: envelope(IdentityProviderSchema), ...errorResponses(...ADMIN_ERRORS, 'not_found') },
      },
      handler: async (request) => {
        const provider = await registeredProvider(deps, request.params.idpId);
        if (!provider) throw notFound('identity provider', 'idpId');
        return { success: true as const, data: provider };
      },
    });

    app.delete('/admin/v1/identity-providers/:idpId', {
      schema: {
        tags,
        summary: 'Remove an identity provider: logins through it stop at once',
        security: ADMIN,
        params: Params,
        response: { 200: envelope(IdentityProviderSchema), ...errorResponses(...ADMIN_ERRORS, 'not_found') },
      },
      handler: async (request) => {
        const provider = await removeProvider(deps, request.params.idpId);
        if (!provider) throw notFound('identity provider', 'idpId');
        return { success: true as const, data: provider };
      },
    });
  };
