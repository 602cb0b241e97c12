import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  envelope,
  Environment,
  errorResponses,
  IsoTimestamp,
  POST_ERRORS,
  PUBLIC,
  Ref,
  StringEnum,
} from '../http/schemas.ts';
import { limitedPerSession } from '../http/rate-limit.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { presentationRequest, recordConsent, submitPresentation } from '../services/wallet.ts';
import { ClaimNameSchema, FormatSchema, SessionStatusSchema } from './session-schemas.ts';

/**
 * Wallet-facing endpoints: no bearer key. Knowing the session id and its nonce is the
 * authorization; a wrong nonce is a 404, an expired session a 410.
 */
const tags = ['Wallet'];
const SessionParams = Type.Object({ sessionId: Type.String({ maxLength: 64 }) });
const Nonce = Type.String({ minLength: 1, maxLength: 128, description: 'The challengeNonce of the session' });
const WALLET_ERRORS = ['invalid_request', 'not_found', 'session_expired'] as const;

const PresentationRequestSchema = Type.Object(
  {
    sessionId: Type.String(),
    status: SessionStatusSchema,
    nonce: Type.String(),
    audience: Type.String({ description: 'BASE_URL: presentations are bound to it' }),
    purpose: Type.String(),
    requiredClaims: Type.Array(ClaimNameSchema, {
      description: 'Always includes is_active_student, and valid_until so that currency can be checked',
    }),
    application: Type.Object({ name: Type.String() }),
    environment: Environment,
    acceptedFormats: Type.Array(FormatSchema),
    expiresAt: IsoTimestamp,
  },
  { $id: 'PresentationRequest', description: 'What the wallet is asked to present, and for whom' },
);

const ConsentResult = Type.Object(
  { sessionId: Type.String(), status: SessionStatusSchema },
  { $id: 'ConsentResult', description: 'The session after the decision: consented or declined' },
);

const PresentationOutcome = Type.Object(
  {
    sessionId: Type.String(),
    status: Type.Literal('completed'),
    verified: Type.Boolean(),
    failureReason: Type.Union([Type.String(), Type.Null()], {
      description: 'A FailureReason; null when verified',
    }),
    failureMessage: Type.Union([Type.String(), Type.Null()], {
      description: 'What was wrong, in words; null when verified',
    }),
  },
  { $id: 'PresentationOutcome', description: 'The session completed: verified, or why not' },
);

export const WALLET_COMPONENTS = [PresentationRequestSchema, ConsentResult, PresentationOutcome];

export const walletRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/verification/v1/sessions/:sessionId/request', {
      config: limitedPerSession({ nonce: 'query' }),
      schema: {
        tags,
        operationId: 'retrievePresentationRequest',
        summary: 'The presentation request a wallet answers',
        security: PUBLIC,
        params: SessionParams,
        querystring: Type.Object({ nonce: Nonce }, { additionalProperties: false }),
        response: { 200: envelope(Ref(PresentationRequestSchema)), ...errorResponses(...WALLET_ERRORS) },
      },
      handler: async (request) => ({
        success: true as const,
        data: await presentationRequest(deps, request.params.sessionId, request.query.nonce),
      }),
    });

    app.post('/verification/v1/sessions/:sessionId/consent', {
      config: limitedPerSession({ nonce: 'body' }),
      schema: {
        tags,
        operationId: 'submitConsent',
        summary: "Record the student's consent (or refusal)",
        security: PUBLIC,
        params: SessionParams,
        body: Type.Object(
          { nonce: Nonce, decision: StringEnum(['approved', 'declined']) },
          { additionalProperties: false, examples: [{ nonce: 'nonce_7f3a9c2e', decision: 'approved' }] },
        ),
        response: {
          200: envelope(Ref(ConsentResult)),
          ...errorResponses(...WALLET_ERRORS, ...POST_ERRORS, 'invalid_state'),
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: await recordConsent(deps, request.params.sessionId, request.body.nonce, request.body.decision),
      }),
    });

    app.post('/verification/v1/sessions/:sessionId/presentation', {
      // Its proof work is bounded by the proof pool's queue and the session's attempt limit.
      config: limitedPerSession({ nonce: 'body' }),
      schema: {
        tags,
        operationId: 'submitPresentation',
        summary: 'Submit a presentation (signed credential or proof) for a consented session',
        security: PUBLIC,
        params: SessionParams,
        body: Type.Object(
          {
            nonce: Nonce,
            format: FormatSchema,
            presentation: Type.Unknown({
              description:
                "The format's presentation: a string (sd-jwt-vc: a compact SD-JWT VC; jwt-vc: a W3C Verifiable Presentation JWT) or an object (bbs, groth16)",
            }),
          },
          {
            additionalProperties: false,
            examples: [
              {
                nonce: 'nonce_7f3a9c2e',
                format: 'sd-jwt-vc',
                presentation: 'eyJhbGciOiJFUzI1NiIsInR5cCI6ImRjK3NkLWp3dCJ9…~WyJzYWx0Ii…~eyJhbGciOiJFUzI1NiJ9…',
              },
            ],
          },
        ),
        response: {
          200: envelope(Ref(PresentationOutcome)),
          ...errorResponses(...WALLET_ERRORS, ...POST_ERRORS, 'presentation_rejected', 'invalid_state'),
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: await submitPresentation(deps, request.params.sessionId, request.body),
      }),
    });
  };
