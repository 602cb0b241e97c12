import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { FixedWindowLimiter } from '../domain/rate-limit.ts';
import { ApiError, invalidRequest, invalidState, notFound } from '../errors.ts';
import { requireOperatorToken } from '../http/operator-token.ts';
import {
  envelope,
  Environment,
  errorResponses,
  IsoTimestamp,
  listBody,
  listEnvelope,
  MultilineText,
  pageOf,
  PageQuery,
  StringEnum,
} from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { MEMBER_ROLES } from '../domain/members.ts';
import { createOrganizationWithOwner, operatorInvite } from '../services/members.ts';
import { createOrganization, listAllOrganizations } from '../services/organizations.ts';
import {
  addIssuer,
  refreshIssuerMetadata,
  registeredIssuer,
  registeredIssuersPage,
  removeIssuer,
} from '../services/trust-registry.ts';
import { adminIdentityProviderRoutes } from './admin-identity-providers.ts';
import { adminIdentityFederationRoutes } from './admin-identity-federations.ts';
import { ApplicationListEntry } from './apps.ts';
import { registerProfileRoutes } from './admin-profiles.ts';

/** Requests per client address per minute, before the token is even looked at. */
export const ADMIN_RATE_LIMIT_PER_MINUTE = 60;

const ADMIN = [{ adminToken: [] }];
const ADMIN_ERRORS = ['invalid_request', 'unauthenticated', 'rate_limited'] as const;
const tags = ['Admin'];

const Organization = Type.Object({
  id: Type.String({ description: 'Prefix org_' }),
  name: Type.String(),
  createdAt: IsoTimestamp,
});

const CreatedOrganization = Type.Object({
  organization: Type.Object({ id: Type.String(), name: Type.String() }),
  application: ApplicationListEntry,
  apiKey: Type.Object({
    id: Type.String(),
    appId: Type.String(),
    name: Type.String(),
    environment: Environment,
    keyHint: Type.String(),
    rawSecret: Type.Union([Type.String(), Type.Null()], {
      description: 'The secret key, shown in this response only (null in an idempotent replay)',
    }),
    createdAt: IsoTimestamp,
  }),
  ownerInvitation: Type.Optional(
    Type.Object(
      {
        email: Type.String(),
        role: Type.Literal('owner'),
        url: Type.String({ description: 'The one-time link where the owner chooses a password (the dashboard)' }),
        expiresAt: IsoTimestamp,
      },
      { description: 'With ownerEmail: the invitation of the first owner' },
    ),
  ),
});

const IssuerKeys = Type.Object(
  {
    sdJwtVc: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: 'Public JWK, P-256 or Ed25519 (sd-jwt-vc)' }),
    ),
    bbs: Type.Optional(Type.String({ description: 'base64url BLS12-381 G2 public key (bbs)' })),
    babyJubJub: Type.Optional(
      Type.Object(
        { x: Type.String(), y: Type.String() },
        { additionalProperties: false, description: 'BabyJubJub point, decimal (groth16)' },
      ),
    ),
  },
  { additionalProperties: false },
);

const IssuerInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    domain: Type.String({ maxLength: 253, description: 'Lowercase DNS name, e.g. uni.example.edu' }),
    country: Type.String({ description: 'ISO 3166-1 alpha-2, e.g. ES' }),
    environment: Environment,
    keys: Type.Optional(IssuerKeys),
    anchors: Type.Optional(
      // PEM is lines by definition: each anchor may span lines (the text guard refuses line breaks elsewhere).
      Type.Array(MultilineText({ maxLength: 16_384 }), {
        maxItems: 10,
        description: 'X.509 trust anchors (PEM CA certificates): sd-jwt-vc credentials whose x5c chain leads to one',
      }),
    ),
    metadataIssuer: Type.Optional(
      Type.String({
        maxLength: 2048,
        description:
          'SD-JWT VC issuer identifier (https://…) whose /.well-known/jwt-vc-issuer publishes the keys, or a did:web DID whose DID document publishes the keys of its W3C credentials (jwt_vc_json)',
      }),
    ),
  },
  { additionalProperties: false },
);

const Issuer = Type.Object({
  id: Type.String({ description: 'Prefix iss_' }),
  ...IssuerInput.properties,
  keys: IssuerKeys,
  createdAt: IsoTimestamp,
});

const RefreshedIssuer = Type.Object({
  issuer: Issuer,
  keys: Type.Array(Type.Object({}, { additionalProperties: true }), {
    description: "The public JWKs the issuer's metadata publishes now",
  }),
});

const IssuerParams = Type.Object({ issuerId: Type.String({ maxLength: 64 }) });

/**
 * The admin API (/admin/v1): what `matricula org create` and `matricula issuers …` do, for an
 * operator without a shell on the database. Registered only when ADMIN_TOKEN is set; every request
 * is rate-limited per client address and must carry the token (constant-time comparison).
 */
export const adminRoutes =
  (deps: ServiceDeps & { config: { adminToken: string } }): FastifyPluginAsyncTypebox =>
  async (app) => {
    const limiter = new FixedWindowLimiter(deps.clock, ADMIN_RATE_LIMIT_PER_MINUTE, 60_000);
    // onRequest: before the body is parsed and before idempotency replays anything.
    app.addHook('onRequest', async (request, reply) => {
      const taken = limiter.take(request.ip);
      if (!taken.allowed) {
        reply.header('retry-after', String(taken.retryAfterSeconds));
        throw new ApiError('rate_limited', `Too many admin requests; retry in ${taken.retryAfterSeconds} s.`);
      }
      requireOperatorToken(request, deps.config.adminToken, 'ADMIN_TOKEN');
    });

    app.post('/admin/v1/organizations', {
      config: { secretFields: ['data.apiKey.rawSecret'] },
      schema: {
        tags,
        summary: 'Create an organization with a first application and a first API key (as `matricula org create`)',
        security: ADMIN,
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 200 }),
            environment: Type.Optional(Environment),
            ownerEmail: Type.Optional(
              Type.String({
                maxLength: 254,
                description: 'Invites the first owner of the dashboard (docs/dashboard.md)',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 201: envelope(CreatedOrganization), ...errorResponses(...ADMIN_ERRORS) },
      },
      handler: async (request, reply) => {
        const input = { name: request.body.name, environment: request.body.environment ?? 'sandbox' } as const;
        const { ownerEmail } = request.body;
        const withOwner = ownerEmail ? await createOrganizationWithOwner(deps, { ...input, ownerEmail }) : undefined;
        const created = withOwner ?? (await createOrganization(deps, input));
        return reply.status(201).send({
          success: true as const,
          data: {
            organization: { id: created.organization.id, name: created.organization.name },
            application: created.application,
            apiKey: created.apiKey,
            ...(withOwner ? { ownerInvitation: { ...withOwner.ownerInvitation, role: 'owner' as const } } : {}),
          },
        });
      },
    });

    app.post('/admin/v1/organizations/:orgId/invitations', {
      schema: {
        tags,
        summary: "Invite a member to an organization's dashboard (as `matricula members invite`)",
        security: ADMIN,
        params: Type.Object({ orgId: Type.String({ maxLength: 64 }) }),
        body: Type.Object(
          {
            email: Type.String({ maxLength: 254 }),
            role: Type.Optional(StringEnum(MEMBER_ROLES, { description: 'Default developer' })),
          },
          { additionalProperties: false },
        ),
        response: {
          201: envelope(
            Type.Object({
              email: Type.String(),
              role: StringEnum(MEMBER_ROLES),
              url: Type.String({ description: 'The one-time link where the member chooses a password' }),
              expiresAt: IsoTimestamp,
            }),
          ),
          ...errorResponses(...ADMIN_ERRORS, 'not_found'),
        },
      },
      handler: async (request, reply) => {
        const data = await operatorInvite(deps, {
          orgId: request.params.orgId,
          email: request.body.email,
          role: request.body.role ?? 'developer',
        });
        return reply.status(201).send({ success: true as const, data });
      },
    });

    app.get('/admin/v1/organizations', {
      schema: {
        tags,
        summary: 'List every organization, newest first',
        security: ADMIN,
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: { 200: listEnvelope(Organization), ...errorResponses(...ADMIN_ERRORS) },
      },
      handler: async (request) => {
        const page = await listAllOrganizations(deps, pageOf(request.query));
        return listBody(page);
      },
    });

    app.get('/admin/v1/issuers', {
      schema: {
        tags,
        summary: 'List the trust registry, newest first',
        security: ADMIN,
        querystring: Type.Object(
          { ...PageQuery, environment: Type.Optional(Environment) },
          { additionalProperties: false },
        ),
        response: { 200: listEnvelope(Issuer), ...errorResponses(...ADMIN_ERRORS) },
      },
      handler: async (request) => {
        const page = await registeredIssuersPage(deps, pageOf(request.query), request.query.environment);
        return listBody(page);
      },
    });

    app.post('/admin/v1/issuers', {
      schema: {
        tags,
        summary: 'Add a university to the trust registry (as `matricula issuers add`)',
        description:
          'Its credentials verify at once. One issuer per domain and environment: remove it to replace its keys.',
        security: ADMIN,
        body: IssuerInput,
        response: { 201: envelope(Issuer), ...errorResponses(...ADMIN_ERRORS, 'invalid_state') },
      },
      handler: async (request, reply) => {
        const added = await addIssuer(deps, request.body);
        if (!added.ok) {
          if (added.kind === 'duplicate') throw invalidState(added.message);
          throw invalidRequest(`Invalid issuer: ${added.problems.join('; ')}.`);
        }
        return reply.status(201).send({ success: true as const, data: added.issuer });
      },
    });

    app.get('/admin/v1/issuers/:issuerId', {
      schema: {
        tags,
        summary: 'One issuer of the trust registry',
        security: ADMIN,
        params: IssuerParams,
        response: { 200: envelope(Issuer), ...errorResponses(...ADMIN_ERRORS, 'not_found') },
      },
      handler: async (request) => {
        const issuer = await registeredIssuer(deps, request.params.issuerId);
        if (!issuer) throw notFound('issuer', 'issuerId');
        return { success: true as const, data: issuer };
      },
    });

    app.post('/admin/v1/issuers/:issuerId/refresh', {
      schema: {
        tags,
        summary: "Fetch an issuer's metadata now (as `matricula issuers refresh`)",
        description:
          "Re-fetches /.well-known/jwt-vc-issuer of an issuer trusted through metadata, replacing this server's cached copy, and returns the keys it publishes. A fetch failure is a 409 invalid_state with the reason.",
        security: ADMIN,
        params: IssuerParams,
        response: { 200: envelope(RefreshedIssuer), ...errorResponses(...ADMIN_ERRORS, 'not_found', 'invalid_state') },
      },
      handler: async (request) => {
        const refreshed = await refreshIssuerMetadata(deps, request.params.issuerId);
        if (!refreshed.ok) {
          if (refreshed.kind === 'not_found') throw notFound('issuer', 'issuerId');
          throw invalidState(`${refreshed.message}.`);
        }
        return { success: true as const, data: { issuer: refreshed.issuer, keys: refreshed.keys } };
      },
    });

    registerProfileRoutes(app, deps);

    app.delete('/admin/v1/issuers/:issuerId', {
      schema: {
        tags,
        summary: 'Remove an issuer: credentials it signed stop verifying at once',
        security: ADMIN,
        params: IssuerParams,
        response: { 200: envelope(Issuer), ...errorResponses(...ADMIN_ERRORS, 'not_found') },
      },
      handler: async (request) => {
        const issuer = await removeIssuer(deps, request.params.issuerId);
        if (!issuer) throw notFound('issuer', 'issuerId');
        return { success: true as const, data: issuer };
      },
    });

    // Registered here, so the token check and the rate limit above hold for them too.
    await app.register(adminIdentityProviderRoutes(deps));
    await app.register(adminIdentityFederationRoutes(deps));
  };
