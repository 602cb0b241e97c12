import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { isClaimName, CLAIM_CATALOGUE, type ClaimName } from '../domain/claims.ts';
import { invalidRequest } from '../errors.ts';
import { principalOf } from '../http/auth.ts';
import {
  AUTHENTICATED_ERRORS,
  BEARER,
  envelope,
  errorResponses,
  POST_ERRORS,
  Ref,
  StringEnum,
} from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { verifyDirectly } from '../services/direct-verify.ts';
import { REJECTION_REASONS } from '../services/presentations.ts';
import {
  ClaimNameSchema,
  FailureReasonEnum,
  FormatSchema,
  ReportedClaims,
  ResultWarnings,
  University,
} from './session-schemas.ts';

export const RejectionReasonEnum = StringEnum(REJECTION_REASONS, {
  $id: 'RejectionReason',
  description: 'Why a presentation is cryptographically unacceptable',
});

const VerifyResult = Type.Object(
  {
    verified: Type.Boolean(),
    format: FormatSchema,
    university: Type.Union([University, Type.Null()]),
    claims: ReportedClaims,
    issuer: Type.Union([
      Type.String({ description: 'Trust-registry id of the issuer whose key verified' }),
      Type.Null(),
    ]),
    failureReason: Type.Union([Ref(RejectionReasonEnum), Ref(FailureReasonEnum), Type.Null()], {
      description: 'A rejection reason or a qualification failure; null when verified',
    }),
    failureMessage: Type.Union([Type.String(), Type.Null()], {
      description:
        "What was wrong, in words that let you debug an issuer's credential (which check failed and why); null when verified",
    }),
    warnings: Type.Optional(ResultWarnings),
  },
  { $id: 'VerificationResult', description: 'The outcome of verifying one presentation' },
);

export const VERIFY_COMPONENTS = [RejectionReasonEnum, VerifyResult];

export const verifyRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post('/verification/v1/verify', {
      config: { rateLimit: 'heavy' },
      schema: {
        tags: ['Verification sessions'],
        operationId: 'verifyPresentation',
        summary: 'Verify one presentation directly; a negative outcome is a 200 with verified: false',
        description:
          'Each nonce is single-use per organization: once a presentation with it verified cryptographically ' +
          '(whatever the qualification outcome), any later presentation with that nonce is `nonce_reused`. ' +
          "A verification session's nonce is refused (`session_nonce`). Without `requiredClaims` the " +
          'presentation is judged on what it discloses.',
        security: BEARER,
        body: Type.Object(
          {
            format: FormatSchema,
            presentation: Type.Unknown(),
            nonce: Type.String({
              minLength: 1,
              maxLength: 128,
              description:
                'The challenge you gave the wallet; every format is bound to one. Single-use per organization: use a fresh one (e.g. 256 random bits) per presentation',
            }),
            audience: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Defaults to BASE_URL' })),
            requiredClaims: Type.Optional(
              Type.Array(ClaimNameSchema, {
                maxItems: 10,
                description:
                  'What the presentation must disclose (is_active_student always). Omitted: it is judged on what it discloses, and every disclosed claim is reported',
              }),
            ),
          },
          {
            additionalProperties: false,
            examples: [
              {
                format: 'sd-jwt-vc',
                presentation: 'eyJhbGciOiJFUzI1NiIsInR5cCI6ImRjK3NkLWp3dCJ9…~WyJzYWx0Ii…~eyJhbGciOiJFUzI1NiJ9…',
                nonce: 'nonce_7f3a9c2e',
                requiredClaims: ['is_active_student'],
              },
            ],
          },
        ),
        response: { 200: envelope(Ref(VerifyResult)), ...errorResponses(...AUTHENTICATED_ERRORS, ...POST_ERRORS) },
      },
      handler: async (request) => {
        const principal = principalOf(request);
        const requested = request.body.requiredClaims;
        const unknown = (requested ?? []).filter((c) => !isClaimName(c));
        if (unknown.length)
          throw invalidRequest(
            `Unknown claim ${unknown.join(', ')}. The catalogue is: ${CLAIM_CATALOGUE.join(', ')}.`,
            'requiredClaims',
          );
        const data = await verifyDirectly(deps, principal, {
          format: request.body.format,
          presentation: request.body.presentation,
          nonce: request.body.nonce,
          audience: request.body.audience ?? deps.config.baseUrl,
          requiredClaims: requested as ClaimName[] | undefined,
        });
        return { success: true as const, data };
      },
    });
  };
