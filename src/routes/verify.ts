import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { isClaimName, CLAIM_CATALOGUE, noReportedClaims, type ClaimName } from '../domain/claims.ts';
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
import { checkPresentation, rejectionSentence, REJECTION_REASONS } from '../services/presentations.ts';
import { ClaimNameSchema, FailureReasonEnum, FormatSchema, ReportedClaims, University } from './session-schemas.ts';

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
  },
  { $id: 'VerificationResult', description: 'The outcome of verifying one presentation' },
);

export const VERIFY_COMPONENTS = [RejectionReasonEnum, VerifyResult];

export const verifyRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post('/verification/v1/verify', {
      schema: {
        tags: ['Verification sessions'],
        operationId: 'verifyPresentation',
        summary: 'Verify one presentation directly; a negative outcome is a 200 with verified: false',
        security: BEARER,
        body: Type.Object(
          {
            format: FormatSchema,
            presentation: Type.Unknown(),
            nonce: Type.String({
              minLength: 1,
              maxLength: 128,
              description: 'The challenge you gave the wallet; every format is bound to one',
            }),
            audience: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Defaults to BASE_URL' })),
            requiredClaims: Type.Optional(Type.Array(ClaimNameSchema, { maxItems: 10 })),
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
        const requested = request.body.requiredClaims ?? ['is_active_student'];
        const unknown = requested.filter((c) => !isClaimName(c));
        if (unknown.length)
          throw invalidRequest(
            `Unknown claim ${unknown.join(', ')}. The catalogue is: ${CLAIM_CATALOGUE.join(', ')}.`,
            'requiredClaims',
          );
        const outcome = await checkPresentation(deps, {
          format: request.body.format,
          presentation: request.body.presentation,
          nonce: request.body.nonce,
          audience: request.body.audience ?? deps.config.baseUrl,
          environment: principal.environment,
          requiredClaims: requested as ClaimName[],
          now: deps.clock.now(),
        });
        const data =
          outcome.kind === 'rejected'
            ? {
                verified: false,
                format: request.body.format,
                university: null,
                claims: noReportedClaims(),
                issuer: null,
                failureReason: outcome.reason,
                failureMessage: rejectionSentence(outcome.message),
              }
            : { ...outcome.result, format: request.body.format, issuer: outcome.issuerId };
        return { success: true as const, data };
      },
    });
  };
