import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import { limitedPerSession } from '../http/rate-limit.ts';
import { envelope, errorResponses, PUBLIC, Ref } from '../http/schemas.ts';
import { MULTILINE } from '../http/text-guard.ts';
import { sendPage } from '../portal/layout.ts';
import { messagePage } from '../portal/message-page.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { LoginRefused } from '../services/sso/complete.ts';
import { BROWSER_COOKIE, providersForSession, startLogin } from '../services/sso/login.ts';
import { receiveOidcCallback } from '../services/sso/oidc/callback.ts';
import { receiveSamlResponse } from '../services/sso/saml/acs.ts';
import { spMetadata } from '../services/sso/index.ts';

/**
 * University login (docs/university-login.md): the SAML service provider's metadata and assertion
 * consumer service, and the start of a login for a session. The ACS and the start are visited by
 * the student's browser, so they answer with redirects and pages, not the API envelope.
 */
const tags = ['University login'];
const FORM = 'application/x-www-form-urlencoded';
const SAML_METADATA = 'application/samlmetadata+xml';

function cookieValue(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}

/** The binding cookie: HttpOnly, and SameSite=None over HTTPS because the IdP posts the answer cross-site. */
function bindingCookie(baseUrl: string, value: string, maxAgeSeconds: number): string {
  const secure = baseUrl.startsWith('https://');
  return [
    `${BROWSER_COOKIE}=${value}`,
    'Path=/',
    `Max-Age=${maxAgeSeconds}`,
    'HttpOnly',
    secure ? 'Secure' : '',
    secure ? 'SameSite=None' : 'SameSite=Lax',
  ]
    .filter(Boolean)
    .join('; ');
}

/** A refused login, as the page the student's browser shows; the reason is in the page and a header. */
function refusedPage(reply: FastifyReply, status: number, reason: string, message: string, sandbox: boolean) {
  reply.header('x-matricula-rejection-reason', reason);
  return sendPage(
    reply,
    status,
    messagePage({
      eyebrow: 'University login',
      heading: 'Your university’s answer was not accepted',
      text: `${message.replace(/[.\s]+$/, '')}. (Reason: ${reason}.)`,
      tone: 'failure',
      sandbox,
    }),
  );
}

const IdentityProviderChoice = Type.Object(
  {
    id: Type.String({ description: 'Prefix idp_: the idp of the start of a login' }),
    name: Type.String(),
    domain: Type.String(),
    country: Type.String({ description: 'ISO 3166-1 alpha-2' }),
  },
  { $id: 'IdentityProviderChoice', description: 'A university a student can sign in with' },
);

export const UNIVERSITY_LOGIN_COMPONENTS = [IdentityProviderChoice];

export const universityLoginRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const maxBody = Math.ceil((deps.config.universityLogin.samlMaxResponseBytes * 4) / 3) + 8192;
    app.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: maxBody }, (_request, body, done) => {
      const params = new URLSearchParams(body as string);
      const out: Record<string, string> = {};
      for (const [key, value] of params) {
        if (Object.hasOwn(out, key))
          return done(new ApiError('invalid_request', `The form field ${key} is given twice.`));
        Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      }
      done(null, out);
    });

    app.get('/saml/v1/metadata', {
      schema: {
        tags,
        operationId: 'retrieveSamlServiceProviderMetadata',
        summary: 'SAML 2.0 metadata of this service provider (what a federation or an IdP registers)',
        security: PUBLIC,
        response: {
          200: {
            description: 'SAML 2.0 metadata (md:EntityDescriptor)',
            content: { [SAML_METADATA]: { schema: Type.String() } },
          },
        },
      },
      handler: async (_request, reply) =>
        reply
          .header('content-type', SAML_METADATA)
          .header('cache-control', 'public, max-age=3600')
          .send(await spMetadata(deps)),
    });

    app.get('/sso/v1/sessions/:sessionId/identity-providers', {
      config: limitedPerSession({}),
      schema: {
        tags,
        operationId: 'searchSessionIdentityProviders',
        summary: "The universities a session's student can sign in with (the portal's type-ahead)",
        description:
          "No API key: the session id authorizes it, as for the portal page. Identity providers of the session's environment whose name, domain or country match every word of q (accents and case ignored), at most limit; names starting with q first.",
        security: PUBLIC,
        params: Type.Object({ sessionId: Type.String({ maxLength: 64 }) }),
        querystring: Type.Object(
          {
            q: Type.Optional(Type.String({ maxLength: 100 })),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 20 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: envelope(Type.Array(Ref(IdentityProviderChoice))),
          ...errorResponses('invalid_request', 'not_found', 'rate_limited'),
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: await providersForSession(
          deps,
          request.params.sessionId,
          request.query.q ?? '',
          request.query.limit ?? 20,
        ),
      }),
    });

    app.get('/sso/v1/sessions/:sessionId/start', {
      config: limitedPerSession({ nonce: 'query' }),
      schema: {
        // Visited by the student's browser (a redirect, never an API answer): kept out of the
        // OpenAPI document like the portal's pages; docs/university-login.md describes it.
        hide: true,
        tags,
        operationId: 'startUniversityLogin',
        summary: "Start a session's university login: a redirect to the identity provider",
        description:
          "For the student's browser (the portal links here). The session's nonce authorizes it; `idp` is the entityID (SAML) or issuer (OpenID Connect) of a registered identity provider of the session's environment, or its registry id. Sets a HttpOnly cookie that binds the login to this browser, and answers 302 to the provider with a signed AuthnRequest (HTTP-Redirect) or an authorization request (code flow with PKCE).",
        security: PUBLIC,
        params: Type.Object({ sessionId: Type.String({ maxLength: 64 }) }),
        querystring: Type.Object(
          {
            nonce: Type.String({ maxLength: 128, description: "The session's challengeNonce" }),
            idp: Type.String({ minLength: 1, maxLength: 1024, description: 'entityID, issuer, or idp_ registry id' }),
          },
          { additionalProperties: false },
        ),
        response: {
          302: { description: 'To the identity provider', type: 'null' },
          ...errorResponses(
            'invalid_request',
            'forbidden',
            'not_found',
            'invalid_state',
            'session_expired',
            'rate_limited',
          ),
        },
      },
      handler: async (request, reply) => {
        const started = await startLogin(deps, {
          sessionId: request.params.sessionId,
          nonce: request.query.nonce,
          idp: request.query.idp,
          browserSecret: cookieValue(request, BROWSER_COOKIE),
        });
        return reply
          .header('set-cookie', bindingCookie(deps.config.baseUrl, started.browserSecret, started.maxAgeSeconds))
          .header('cache-control', 'no-store')
          .redirect(started.location, 302);
      },
    });

    app.post('/saml/v1/acs', {
      bodyLimit: maxBody,
      schema: {
        hide: true,
        tags,
        operationId: 'receiveSamlResponse',
        summary: "The assertion consumer service: an identity provider's SAML response (HTTP-POST binding)",
        description:
          "Posted by the student's browser from the identity provider. Accepted: a response to the login request outstanding for this session in this browser, signed (response or assertion) by a key of that IdP's metadata with RSA-SHA256 or better, for our ACS and entityID, within its validity window (60 s of clock skew), with a bearer SubjectConfirmation; encrypted assertions too. An accepted response completes the session and redirects (303) to the portal page; a refused one answers a page with the reason (also in the X-Matricula-Rejection-Reason header).",
        security: PUBLIC,
        body: Type.Object(
          {
            SAMLResponse: Type.String({
              maxLength: maxBody,
              description: 'base64 SAML 2.0 Response',
              [MULTILINE]: true,
            }),
            RelayState: Type.Optional(Type.String({ maxLength: 80 })),
          },
          { additionalProperties: false, description: 'application/x-www-form-urlencoded' },
        ),
        response: {
          303: { description: 'Accepted: to the portal page of the session', type: 'null' },
          400: { description: 'Refused: a page saying why', content: { 'text/html': { schema: Type.String() } } },
        },
      },
      handler: async (request, reply) => {
        try {
          const outcome = await receiveSamlResponse(deps, {
            samlResponse: request.body.SAMLResponse,
            relayState: request.body.RelayState,
            browserSecret: cookieValue(request, BROWSER_COOKIE),
          });
          return reply
            .header('cache-control', 'no-store')
            .redirect(`${deps.config.portalUrl}/verify/${encodeURIComponent(outcome.sessionId)}`, 303);
        } catch (err) {
          if (err instanceof LoginRefused) return refusedPage(reply, err.status, err.reason, err.message, false);
          throw err;
        }
      },
    });

    app.get('/oidc/v1/callback', {
      schema: {
        hide: true,
        tags,
        operationId: 'receiveOidcCallback',
        summary: "The redirect_uri: an OpenID provider's authorization response (code flow)",
        description:
          "Visited by the student's browser from the OpenID provider. Accepted: the answer to the login request outstanding for this session in this browser (state and the binding cookie), answered once, whose code redeems with this login's PKCE verifier for an ID token signed by a key of the provider's JWKS, for our client id, from the registered issuer, unexpired on the service clock, carrying the nonce derived from the session. An accepted answer completes the session and redirects (303) to the portal page; a refused one answers a page with the reason (also in the X-Matricula-Rejection-Reason header).",
        security: PUBLIC,
        querystring: Type.Object(
          {
            code: Type.Optional(Type.String({ maxLength: 4096 })),
            state: Type.Optional(Type.String({ maxLength: 128 })),
            iss: Type.Optional(Type.String({ maxLength: 2048 })),
            error: Type.Optional(Type.String({ maxLength: 256 })),
            error_description: Type.Optional(Type.String({ maxLength: 1024 })),
            error_uri: Type.Optional(Type.String({ maxLength: 2048 })),
            session_state: Type.Optional(Type.String({ maxLength: 1024 })),
          },
          { additionalProperties: false },
        ),
        response: {
          303: { description: 'Accepted: to the portal page of the session', type: 'null' },
          400: { description: 'Refused: a page saying why', content: { 'text/html': { schema: Type.String() } } },
        },
      },
      handler: async (request, reply) => {
        try {
          const outcome = await receiveOidcCallback(deps, {
            query: request.url.slice(request.url.indexOf('?') + 1 || request.url.length),
            browserSecret: cookieValue(request, BROWSER_COOKIE),
          });
          return reply
            .header('cache-control', 'no-store')
            .redirect(`${deps.config.portalUrl}/verify/${encodeURIComponent(outcome.sessionId)}`, 303);
        } catch (err) {
          if (err instanceof LoginRefused) return refusedPage(reply, 400, err.reason, err.message, false);
          if (err instanceof ApiError && err.status < 500)
            return refusedPage(reply, err.status, err.reason ?? err.code, err.message, false);
          throw err;
        }
      },
    });
  };
