import { Type, type FastifyPluginAsyncTypebox, type TSchema } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import { limitedPerSession } from '../http/rate-limit.ts';
import { PUBLIC, Ref } from '../http/schemas.ts';
import { MULTILINE } from '../http/text-guard.ts';
import type { ServiceDeps } from '../services/deps.ts';
import {
  certificateChainPem,
  Openid4vpError,
  receiveAuthorizationResponse,
  signedRequestObject,
} from '../services/openid4vp/index.ts';

/**
 * OpenID for Verifiable Presentations 1.0, the verifier's two endpoints: `request_uri` (the
 * signed request object, by GET or by POST with the wallet's metadata) and `response_uri`
 * (`direct_post` / `direct_post.jwt`). Wallets speak OAuth here, so errors are OAuth's
 * `{error, error_description}`, never the API envelope, and bodies are form-encoded.
 */
const tags = ['OpenID4VP'];
const REQUEST_OBJECT_TYPE = 'application/oauth-authz-req+jwt';
const FORM = 'application/x-www-form-urlencoded';
const PEM_CHAIN = 'application/pem-certificate-chain';

const SessionParams = Type.Object({ sessionId: Type.String({ maxLength: 64 }) });
const FlowQuery = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 128, description: 'The request token of openid4vpUri' }),
    device: Type.Optional(
      Type.Literal('same', { description: 'Same-device flow: the response redirects to the portal' }),
    ),
  },
  { additionalProperties: false },
);

const OAuthErrorSchema = Type.Object(
  {
    error: Type.String({
      description: 'OAuth 2.0 error code: invalid_request, temporarily_unavailable, server_error',
    }),
    error_description: Type.String(),
    reason: Type.Optional(Type.String({ description: 'Why a presentation was rejected (a RejectionReason)' })),
  },
  { $id: 'OAuthError', description: 'An OAuth 2.0 error response, as wallets expect it' },
);

const ResponseAcknowledgementSchema = Type.Object(
  {
    redirect_uri: Type.Optional(
      Type.String({ description: 'Same-device flow: the portal page, with a response_code, for the wallet to open' }),
    ),
  },
  { $id: 'Openid4vpResponseAcknowledgement', description: 'The response was received' },
);

export const OPENID4VP_COMPONENTS = [OAuthErrorSchema, ResponseAcknowledgementSchema];

/**
 * An OAuth error response with one example (Swagger UI shows it): the `error` code is the
 * description's first word, the rest its `error_description`. Fastify's content form, as the API's
 * own error responses use (http/schemas.ts errorResponses).
 */
const errorRef = (description: string): TSchema => {
  const [error, ...words] = description.split(': ');
  return {
    description,
    content: {
      'application/json': {
        schema: Ref(OAuthErrorSchema),
        examples: {
          [error]: { summary: error, value: { error, error_description: words.join(': ') || 'Something went wrong.' } },
        },
      },
    },
  } as unknown as TSchema;
};
export const OAUTH_ERRORS = {
  400: errorRef('invalid_request: malformed, expired, already answered, or a rejected presentation'),
  404: errorRef('invalid_request: no such authorization request (unknown session or wrong token)'),
  413: errorRef('invalid_request: the body is larger than the limit'),
  415: errorRef('invalid_request: the body is not application/x-www-form-urlencoded'),
  429: errorRef(
    'temporarily_unavailable: too many requests from this address, or the proof workers are saturated; Retry-After says when to come back',
  ),
  500: errorRef('server_error'),
  503: errorRef('temporarily_unavailable: the server is shutting down; Retry-After says when to come back'),
};

/** Every error of these routes as OAuth's JSON; faults are logged and stay generic. */
export function oauthErrors(
  error: FastifyError | Openid4vpError | ApiError,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  let status: number;
  let body: { error: string; error_description: string; reason?: string };
  if (error instanceof Openid4vpError) {
    status = error.status;
    body = {
      error: error.error,
      error_description: error.description,
      ...(error.reason ? { reason: error.reason } : {}),
    };
  } else if (error instanceof ApiError && (error.status === 429 || error.status === 503)) {
    // The rate limiter and the drain: not the wallet's mistake nor a fault, so come back later.
    status = error.status;
    if (!reply.hasHeader('retry-after')) reply.header('retry-after', String(error.retryAfterSeconds ?? 1));
    body = { error: 'temporarily_unavailable', error_description: error.message };
  } else if (error instanceof ApiError && error.status < 500) {
    // Raised by the app's shared hooks (the text guard: NUL and control characters), in OAuth's words.
    status = error.status;
    body = { error: 'invalid_request', error_description: error.message };
  } else if (!(error instanceof ApiError) && error.validation) {
    status = 400;
    body = {
      error: 'invalid_request',
      error_description: `The request ${error.validationContext ?? ''} ${error.message}`.replace(/\s+/g, ' '),
    };
  } else if (!(error instanceof ApiError) && error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    status = 413;
    body = { error: 'invalid_request', error_description: 'The request body is larger than the limit.' };
  } else if (!(error instanceof ApiError) && error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    status = 415;
    body = { error: 'invalid_request', error_description: `Send the body as ${FORM}.` };
  } else {
    request.log.error({ err: error }, 'request failed');
    status = 500;
    body = { error: 'server_error', error_description: 'Something went wrong on our side.' };
  }
  return reply.status(status).header('cache-control', 'no-store').send(body);
}

/** A form body as a flat object; a parameter given twice is refused rather than guessed at. */
function parseForm(body: string): Record<string, string> {
  const params = new URLSearchParams(body);
  const out: Record<string, string> = {};
  for (const [key, value] of params) {
    if (Object.hasOwn(out, key))
      throw new Openid4vpError(400, 'invalid_request', `The form parameter ${key} is given more than once.`);
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * Form fields that may span lines: JSON a wallet may pretty-print, and prose. The text guard still
 * refuses NUL and every other control character in them, and a line break in any other field.
 */
const MultilineField = (description: string) => Type.Optional(Type.String({ description, [MULTILINE]: true }));

const formBody = (example: Record<string, string>) =>
  Type.Object(
    {
      vp_token: MultilineField('direct_post: the presentations, JSON keyed by DCQL credential query id'),
      wallet_metadata: MultilineField("request_uri_method=post: the wallet's metadata, JSON"),
      error_description: MultilineField("An error response: the wallet's explanation"),
    },
    {
      additionalProperties: Type.String(),
      description: 'application/x-www-form-urlencoded parameters',
      examples: [example],
    },
  );

export const openid4vpRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    // Only these routes read forms (encapsulated in this plugin); every other route stays JSON only.
    app.addContentTypeParser(FORM, { parseAs: 'string' }, (_request, body, done) => {
      try {
        done(null, parseForm(body as string));
      } catch (err) {
        done(err as Error, undefined);
      }
    });
    // Forms only: a JSON body is a 415, as for any other type OpenID4VP does not define here.
    app.removeContentTypeParser(['application/json', 'text/plain']);
    app.setErrorHandler(oauthErrors);

    const sendRequestObject = async (
      target: { sessionId: string; token: string; device?: 'same' },
      reply: FastifyReply,
      form: Record<string, string> = {},
    ) => {
      const jwt = await signedRequestObject(deps, target.sessionId, target.token, {
        sameDevice: target.device === 'same',
        walletNonce: form.wallet_nonce,
        walletMetadata: form.wallet_metadata,
      });
      return reply.header('content-type', REQUEST_OBJECT_TYPE).header('cache-control', 'no-store').send(jwt);
    };

    const requestObjectResponse = {
      200: {
        description: 'The signed request object (JAR): a JWT of typ oauth-authz-req+jwt, signed with x5c',
        content: { [REQUEST_OBJECT_TYPE]: { schema: Type.String() } },
      },
      ...OAUTH_ERRORS,
    };

    app.get('/openid4vp/v1/sessions/:sessionId/request', {
      config: limitedPerSession({ token: 'query' }),
      schema: {
        tags,
        operationId: 'retrieveWalletRequestObject',
        summary: 'The signed OpenID4VP request object of a session (request_uri, GET)',
        security: PUBLIC,
        params: SessionParams,
        querystring: FlowQuery,
        response: requestObjectResponse,
      },
      handler: (request, reply) => sendRequestObject({ ...request.params, ...request.query }, reply),
    });

    app.post('/openid4vp/v1/sessions/:sessionId/request', {
      config: limitedPerSession({ token: 'query' }),
      schema: {
        tags,
        operationId: 'createWalletRequestObject',
        summary: 'The signed OpenID4VP request object, for a wallet that sends its metadata (request_uri_method=post)',
        description:
          'Form parameters wallet_metadata (JSON) and wallet_nonce, both optional; wallet_nonce is echoed in the signed request object.',
        security: PUBLIC,
        params: SessionParams,
        querystring: FlowQuery,
        body: formBody({
          wallet_nonce: 'qPmxiNFCR3QTm19POc8u',
          wallet_metadata: '{"request_object_signing_alg_values_supported":["ES256"]}',
        }),
        response: requestObjectResponse,
      },
      handler: (request, reply) => sendRequestObject({ ...request.params, ...request.query }, reply, request.body),
    });

    app.get('/openid4vp/v1/certificate', {
      schema: {
        tags,
        operationId: 'retrieveRequestSigningCertificate',
        summary: 'The certificate chain that signs request objects (PEM, leaf first)',
        description:
          'What a wallet tester pins as trust anchor when the service signs with its self-signed sandbox certificate (generated for the BASE_URL host). Without the trust anchor of a configured chain.',
        security: PUBLIC,
        response: {
          200: { description: 'PEM certificates, leaf first', content: { [PEM_CHAIN]: { schema: Type.String() } } },
          ...OAUTH_ERRORS,
        },
      },
      handler: async (_request, reply) =>
        reply.header('content-type', PEM_CHAIN).send(certificateChainPem(await deps.requestSigner())),
    });

    app.post('/openid4vp/v1/sessions/:sessionId/response', {
      // A presentation to check, like the wallet protocol's: bounded by the proof pool's queue and
      // the session's attempt limit, counted per session.
      config: limitedPerSession({ token: 'query' }),
      schema: {
        tags,
        operationId: 'submitWalletAuthorizationResponse',
        summary: "A wallet's OpenID4VP authorization response (response_uri: direct_post or direct_post.jwt)",
        description:
          "direct_post: vp_token (JSON, DCQL), or an error response (error, state). direct_post.jwt: response, a JWE (ECDH-ES, A128GCM or A256GCM) to the key in the request's client_metadata.jwks, holding either. A rejected presentation is a failed attempt of the session (400, with its reason). An error response is processed (200): access_denied declines the session, any other error leaves it open. Same-device (device=same): the answer completes the session only when the returned redirect_uri, with its response_code, is opened in the browser that opened the portal page.",
        security: PUBLIC,
        params: SessionParams,
        querystring: FlowQuery,
        body: formBody({ response: 'eyJhbGciOiJFQ0RILUVTIiwiZW5jIjoiQTI1NkdDTSIsImtpZCI6InNlc3NfMS1lbmMifQ..…' }),
        response: { 200: Ref(ResponseAcknowledgementSchema), ...OAUTH_ERRORS },
      },
      handler: async (request, reply) => {
        const acknowledgement = await receiveAuthorizationResponse(
          deps,
          request.params.sessionId,
          request.query.token,
          { sameDevice: request.query.device === 'same' },
          request.body,
        );
        // A known error code or `other`: a wallet's own words are not logged.
        if (acknowledgement.walletError)
          request.log.info({ walletError: acknowledgement.walletError }, 'the wallet answered with an error response');
        return reply
          .header('cache-control', 'no-store')
          .send(acknowledgement.redirect_uri ? { redirect_uri: acknowledgement.redirect_uri } : {});
      },
    });
  };
