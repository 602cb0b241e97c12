import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { PROFILE_FORMATS } from '../domain/credential-profiles.ts';
import { invalidRequest, invalidState, notFound } from '../errors.ts';
import { envelope, errorResponses, IsoTimestamp, listEnvelope, StringEnum } from '../http/schemas.ts';
import { addProfile, removeProfile, type ListedProfile } from '../services/credential-profiles.ts';
import type { ServiceDeps } from '../services/deps.ts';

type AdminApp = Parameters<FastifyPluginAsyncTypebox>[0];

const ADMIN = [{ adminToken: [] }];
const ADMIN_ERRORS = ['invalid_request', 'unauthenticated', 'rate_limited'] as const;
const tags = ['Admin'];

const Path = Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { minItems: 1, maxItems: 8 });
const Texts = Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { minItems: 1, maxItems: 32 });

const ClaimSource = Type.Object(
  {
    from: Type.String({
      description:
        'claim | validity (is_active_student); claim | esi | issuer (university_domain); claim (academic_level); exp | expirationDate | claim (valid_until)',
    }),
    path: Type.Optional(Path),
    values: Type.Optional(
      Type.Array(Type.Union([Type.String(), Type.Number(), Type.Boolean()]), { minItems: 1, maxItems: 32 }),
    ),
    pinned: Type.Optional(Type.Boolean()),
    map: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  { additionalProperties: false },
);

const ProfileInput = Type.Object(
  {
    id: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$', description: 'Also the DCQL credential query id' }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    format: StringEnum(PROFILE_FORMATS),
    vct: Type.Optional(Texts),
    types: Type.Optional(Texts),
    schemas: Type.Optional(Texts),
    claims: Type.Object(
      {
        is_active_student: ClaimSource,
        university_domain: Type.Optional(ClaimSource),
        academic_level: Type.Optional(ClaimSource),
        valid_until: Type.Optional(ClaimSource),
      },
      { additionalProperties: false },
    ),
    issuers: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { minItems: 1, maxItems: 32 })),
  },
  { additionalProperties: false },
);

const Profile = Type.Object({
  ...ProfileInput.properties,
  source: StringEnum(['built_in', 'file', 'api'] as const),
  createdAt: Type.Union([IsoTimestamp, Type.Null()]),
});

const ProfileParams = Type.Object({ profileId: Type.String({ maxLength: 64 }) });

const shown = (listed: ListedProfile) => ({ ...listed.profile, source: listed.source, createdAt: listed.createdAt });

/** /admin/v1/credential-profiles: what `matricula profiles …` does (docs/credential-profiles.md). */
export function registerProfileRoutes(app: AdminApp, deps: ServiceDeps): void {
  app.get('/admin/v1/credential-profiles', {
    schema: {
      tags,
      summary: 'List the credential profiles: built-in, from CREDENTIAL_PROFILES_FILE, and added here',
      security: ADMIN,
      response: { 200: listEnvelope(Profile), ...errorResponses(...ADMIN_ERRORS) },
    },
    handler: async () => ({
      success: true as const,
      data: (await deps.profiles.all()).map(shown),
      pagination: { hasMore: false, nextCursor: null },
    }),
  });

  app.post('/admin/v1/credential-profiles', {
    schema: {
      tags,
      summary: 'Add a credential profile (as `matricula profiles add`)',
      description: 'Presentations of its type verify at once, and the DCQL query offers it. Its id must be new.',
      security: ADMIN,
      body: ProfileInput,
      response: { 201: envelope(Profile), ...errorResponses(...ADMIN_ERRORS, 'invalid_state') },
    },
    handler: async (request, reply) => {
      const added = await addProfile(deps, request.body);
      if (!added.ok) {
        if (added.kind === 'duplicate') throw invalidState(added.message);
        throw invalidRequest(`Invalid credential profile: ${added.message}.`);
      }
      return reply.status(201).send({ success: true as const, data: shown(added.listed) });
    },
  });

  app.delete('/admin/v1/credential-profiles/:profileId', {
    schema: {
      tags,
      summary: 'Remove a credential profile added here: its credentials stop verifying at once',
      security: ADMIN,
      params: ProfileParams,
      response: {
        200: envelope(Type.Object({ id: Type.String() })),
        ...errorResponses(...ADMIN_ERRORS, 'not_found', 'invalid_state'),
      },
    },
    handler: async (request) => {
      const removed = await removeProfile(deps, request.params.profileId);
      if (!removed.ok) {
        if (removed.kind === 'not_found') throw notFound('credential profile', 'profileId');
        throw invalidState(`${removed.message}.`);
      }
      return { success: true as const, data: { id: request.params.profileId } };
    },
  });
}
