import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { MAX_RETURN_URL_LENGTH } from '../domain/return-url.ts';
import { SESSION_TTL } from '../domain/session-state.ts';
import { confirmPrincipal, principalOf } from '../http/auth.ts';
import {
  AUTHENTICATED_ERRORS,
  BEARER,
  envelope,
  errorResponses,
  listEnvelope,
  PageQuery,
  POST_ERRORS,
  Ref,
} from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { redactSessionForCaller } from '../services/redaction.ts';
import { cancelSession, createSession, listSessionsFor, sessionForCaller, sessionView } from '../services/sessions.ts';
import { createdSessionJson, sendJson, sessionJson, sessionListJson } from './session-json.ts';
import {
  AnswerMethodEnum,
  ClaimNameSchema,
  CreatedSessionSchema,
  SessionSchema,
  SessionStatusSchema,
} from './session-schemas.ts';

const tags = ['Verification sessions'];
const SessionParams = Type.Object({ sessionId: Type.String({ maxLength: 64 }) });

export const sessionRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post('/verification/v1/sessions', {
      schema: {
        tags,
        operationId: 'createSession',
        summary: 'Create a verification session',
        security: BEARER,
        body: Type.Object(
          {
            appId: Type.String({ maxLength: 64 }),
            purpose: Type.String({ minLength: 1, maxLength: 500, description: 'Shown to the student' }),
            requiredClaims: Type.Array(ClaimNameSchema, { minItems: 1, maxItems: 10 }),
            expiresInSeconds: Type.Optional(
              Type.Integer({
                minimum: SESSION_TTL.minSeconds,
                maximum: SESSION_TTL.maxSeconds,
                default: SESSION_TTL.defaultSeconds,
                description: '30 to 900, default 300',
              }),
            ),
            metadata: Type.Optional(
              Type.Record(Type.String({ maxLength: 40 }), Type.String({ maxLength: 500 }), { maxProperties: 20 }),
            ),
            clientReference: Type.Optional(Type.String({ maxLength: 200 })),
            returnUrl: Type.Optional(
              Type.String({
                maxLength: MAX_RETURN_URL_LENGTH,
                description:
                  "Where the portal sends the student once the session ends (completed, declined, expired or cancelled), with ?session=<sessionId> added and never the result. Its origin must be one of the application's allowedReturnOrigins (400 otherwise); https only unless the operator allows private targets.",
              }),
            ),
            allowedMethods: Type.Optional(
              Type.Array(Ref(AnswerMethodEnum), {
                minItems: 1,
                maxItems: 2,
                uniqueItems: true,
                description:
                  "The channels that may answer: wallet (Matricula's protocol, OpenID4VP), university_login (SAML, OpenID Connect). Default: the application's allowedMethods, else every channel",
              }),
            ),
          },
          {
            additionalProperties: false,
            examples: [
              {
                appId: 'app_01jd8x4m2n5p6q7r8s9t0v1w2x',
                purpose: 'Student discount on your subscription',
                requiredClaims: ['is_active_student', 'university_domain'],
                expiresInSeconds: 300,
                clientReference: 'order-1234',
                returnUrl: 'https://shop.example/checkout/student',
              },
            ],
          },
        ),
        response: {
          201: envelope(Ref(CreatedSessionSchema)),
          ...errorResponses(...AUTHENTICATED_ERRORS, ...POST_ERRORS, 'forbidden', 'not_found', 'invalid_state'),
        },
      },
      // The INSERT checks the key: no read of it first when this process has seen it (http/auth.ts).
      config: { confirmsKey: true },
      handler: async (request, reply) => {
        const { keyToConfirm } = request;
        const session = await createSession(
          deps,
          principalOf(request),
          request.body,
          keyToConfirm
            ? { key: keyToConfirm, reauthenticate: () => confirmPrincipal(deps.keyLookups, request) }
            : undefined,
        );
        return sendJson(reply, createdSessionJson(sessionView(session, deps)), 201);
      },
    });

    app.get('/verification/v1/sessions', {
      schema: {
        tags,
        operationId: 'listSessions',
        summary: "List sessions of the caller's environment, newest first",
        security: BEARER,
        querystring: Type.Object(
          {
            appId: Type.Optional(Type.String({ maxLength: 64 })),
            status: Type.Optional(SessionStatusSchema),
            ...PageQuery,
          },
          { additionalProperties: false },
        ),
        response: {
          200: listEnvelope(SessionSchema),
          ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden', 'not_found'),
        },
      },
      handler: async (request, reply) => {
        const { appId, status, limit, startingAfter } = request.query;
        const page = await listSessionsFor(
          deps,
          principalOf(request),
          { appId, status },
          { limit: limit ?? 20, startingAfter },
        );
        const views = page.items.map((s) => sessionView(s, deps));
        return sendJson(reply, sessionListJson(views, page));
      },
    });

    app.get('/verification/v1/sessions/:sessionId', {
      // The session is read with the key, in one query (http/auth.ts).
      config: { readsSession: 'sessionId' },
      schema: {
        tags,
        operationId: 'retrieveSession',
        summary: 'Session status, and the result once completed',
        security: BEARER,
        params: SessionParams,
        response: {
          200: envelope(SessionSchema),
          ...errorResponses(...AUTHENTICATED_ERRORS, 'forbidden', 'not_found'),
        },
      },
      handler: async (request, reply) => {
        const { sessionId } = request.params;
        const session = await sessionForCaller(deps, principalOf(request), sessionId, request.prefetchedSession);
        return sendJson(reply, sessionJson(sessionView(session, deps)));
      },
    });

    app.post('/verification/v1/sessions/:sessionId/cancel', {
      schema: {
        tags,
        operationId: 'cancelSession',
        summary: 'Cancel an open session',
        security: BEARER,
        params: SessionParams,
        response: {
          200: envelope(SessionSchema),
          ...errorResponses(...AUTHENTICATED_ERRORS, ...POST_ERRORS, 'forbidden', 'not_found', 'invalid_state'),
        },
      },
      handler: async (request, reply) => {
        const session = await cancelSession(deps, principalOf(request), request.params.sessionId);
        return sendJson(reply, sessionJson(sessionView(session, deps)));
      },
    });

    app.post('/verification/v1/sessions/:sessionId/redact', {
      schema: {
        tags,
        operationId: 'redactSession',
        summary: "Erase a session's data: result claims, university, metadata, clientReference",
        description:
          "Erases, in the session and in every stored event about it, the result's claims and university, its failureMessage, metadata and clientReference; keeps the id, status, verified, format, failureReason and timestamps, and emits verification.redacted. Only a session that has ended can be redacted (409 invalid_state for an open one). Redacting a redacted session returns it unchanged.",
        security: BEARER,
        params: SessionParams,
        response: {
          200: envelope(SessionSchema),
          ...errorResponses(...AUTHENTICATED_ERRORS, ...POST_ERRORS, 'forbidden', 'not_found', 'invalid_state'),
        },
      },
      handler: async (request, reply) => {
        const session = await redactSessionForCaller(deps, principalOf(request), request.params.sessionId);
        return sendJson(reply, sessionJson(sessionView(session, deps)));
      },
    });
  };
