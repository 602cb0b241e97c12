import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { limitedPerSession } from '../http/rate-limit.ts';
import { StringEnum } from '../domain/schemas.ts';
import { PUBLIC } from '../http/schemas.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { DC_API_PROTOCOLS, dcApiRequests, receiveDcApiResponse } from '../services/openid4vp/index.ts';
import { OAUTH_ERRORS, oauthErrors } from './openid4vp.ts';

/**
 * OpenID4VP over the browser's Digital Credentials API (OpenID4VP 1.0 Appendix A), for the
 * portal page: the requests it passes to `navigator.credentials.get`, and the wallet's answer it
 * posts back. JSON both ways (the browser's objects), OAuth's errors like the other OpenID4VP
 * endpoints, authorized by the request token of `openid4vpUri` that the page holds.
 */
const tags = ['OpenID4VP'];

const SessionParams = Type.Object({ sessionId: Type.String({ maxLength: 64 }) });
const TokenQuery = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 128, description: 'The request token of openid4vpUri' }) },
  { additionalProperties: false },
);
const Protocol = StringEnum(DC_API_PROTOCOLS, {
  description: 'The OpenID4VP protocol identifier of the Digital Credentials API',
});
const AnyObject = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const openid4vpDcApiRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.setErrorHandler(oauthErrors);

    app.get('/openid4vp/v1/sessions/:sessionId/dc-api/request', {
      config: limitedPerSession({ token: 'query' }),
      schema: {
        tags,
        operationId: 'retrieveDigitalCredentialsRequest',
        summary: 'The OpenID4VP requests of a session for the Digital Credentials API',
        description:
          "What the portal page passes to navigator.credentials.get({digital: {requests}}): openid4vp-v1-signed (the signed request object, response_mode dc_api.jwt, expected_origins the portal's origin; under an x509 client identifier prefix) and openid4vp-v1-unsigned. Both ask for an answer encrypted to the session's key.",
        security: PUBLIC,
        params: SessionParams,
        querystring: TokenQuery,
        response: {
          200: Type.Object(
            {
              requests: Type.Array(Type.Object({ protocol: Protocol, data: AnyObject('The request, for the wallet') })),
            },
            { description: 'The requests, signed one first' },
          ),
          ...OAUTH_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const requests = await dcApiRequests(deps, request.params.sessionId, request.query.token);
        return reply.header('cache-control', 'no-store').send(requests);
      },
    });

    app.post('/openid4vp/v1/sessions/:sessionId/dc-api/response', {
      config: limitedPerSession({ token: 'query' }),
      schema: {
        tags,
        operationId: 'submitDigitalCredentialsResponse',
        summary: "A wallet's answer through the Digital Credentials API, as the portal page received it",
        description:
          "The DigitalCredential's protocol and data: data.response is the JWE (dc_api.jwt) holding the vp_token, whose key-binding JWT has aud origin:<the portal's origin> and the request's nonce; or an error response (data.error). Judged like an answer at the response_uri: a rejected presentation is a failed attempt (400, with its reason); access_denied declines the session; another error leaves it open.",
        security: PUBLIC,
        params: SessionParams,
        querystring: TokenQuery,
        body: Type.Object(
          { protocol: Protocol, data: AnyObject("The DigitalCredential's data") },
          {
            additionalProperties: false,
            examples: [
              {
                protocol: 'openid4vp-v1-signed',
                data: { response: 'eyJhbGciOiJFQ0RILUVTIiwiZW5jIjoiQTI1NkdDTSIsImtpZCI6InNlc3NfMS1lbmMifQ..…' },
              },
            ],
          },
        ),
        response: { 200: Type.Object({}, { description: 'The answer was received' }), ...OAUTH_ERRORS },
      },
      handler: async (request, reply) => {
        const receipt = await receiveDcApiResponse(deps, request.params.sessionId, request.query.token, request.body);
        if (receipt.walletError)
          request.log.info({ walletError: receipt.walletError }, 'the wallet answered with an error response');
        return reply.header('cache-control', 'no-store').send({});
      },
    });
  };
