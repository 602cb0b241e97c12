import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { envelope, Environment, errorResponses, IsoTimestamp } from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { presentationRequest, recordConsent, submitPresentation } from '../services/wallet.ts';
import { FormatSchema, SessionStatusSchema } from './session-schemas.ts';

/**
 * Wallet-facing endpoints: no bearer key. Knowing the session id and its nonce is the
 * authorization; a wrong nonce is a 404, an expired session a 410.
 */
const tags = ['Wallet'];
const SessionParams = Type.Object({ sessionId: Type.String({ maxLength: 64 }) });
const Nonce = Type.String({ minLength: 1, maxLength: 128, description: 'The challengeNonce of the session' });
const WALLET_ERRORS = errorResponses(
  'invalid_request',
  'not_found',
  'session_expired',
  'invalid_state',
  'idempotency_conflict',
);

export const walletRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/verification/v1/sessions/:sessionId/request', {
      schema: {
        tags,
        summary: 'The presentation request a wallet answers',
        params: SessionParams,
        querystring: Type.Object({ nonce: Nonce }, { additionalProperties: false }),
        response: {
          200: envelope(
            Type.Object({
              sessionId: Type.String(),
              status: SessionStatusSchema,
              nonce: Type.String(),
              audience: Type.String({ description: 'BASE_URL: presentations are bound to it' }),
              purpose: Type.String(),
              requiredClaims: Type.Array(Type.String(), {
                description: 'Always includes is_active_student, and valid_until so that currency can be checked',
              }),
              application: Type.Object({ name: Type.String() }),
              environment: Environment,
              acceptedFormats: Type.Array(FormatSchema),
              expiresAt: IsoTimestamp,
            }),
          ),
          ...WALLET_ERRORS,
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: await presentationRequest(deps, request.params.sessionId, request.query.nonce),
      }),
    });

    app.post('/verification/v1/sessions/:sessionId/consent', {
      schema: {
        tags,
        summary: "Record the student's consent (or refusal)",
        params: SessionParams,
        body: Type.Object(
          { nonce: Nonce, decision: Type.Union([Type.Literal('approved'), Type.Literal('declined')]) },
          { additionalProperties: false },
        ),
        response: {
          200: envelope(Type.Object({ sessionId: Type.String(), status: SessionStatusSchema })),
          ...WALLET_ERRORS,
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: await recordConsent(deps, request.params.sessionId, request.body.nonce, request.body.decision),
      }),
    });

    app.post('/verification/v1/sessions/:sessionId/presentation', {
      schema: {
        tags,
        summary: 'Submit a presentation (signed credential or proof) for a consented session',
        params: SessionParams,
        body: Type.Object(
          {
            nonce: Nonce,
            format: FormatSchema,
            presentation: Type.Unknown({
              description: "The format's presentation: a string (sd-jwt-vc) or an object (bbs, groth16)",
            }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: envelope(
            Type.Object({
              sessionId: Type.String(),
              status: Type.Literal('completed'),
              verified: Type.Boolean(),
              failureReason: Type.Union([Type.String(), Type.Null()]),
              failureMessage: Type.Union([Type.String(), Type.Null()], {
                description: 'What was wrong, in words; null when verified',
              }),
            }),
          ),
          ...errorResponses(
            'invalid_request',
            'presentation_rejected',
            'not_found',
            'session_expired',
            'invalid_state',
            'idempotency_conflict',
          ),
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: await submitPresentation(deps, request.params.sessionId, request.body),
      }),
    });
  };
