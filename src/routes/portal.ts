import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readCookie, serializeCookie } from '../http/cookies.ts';
import { limitedPerSession } from '../http/rate-limit.ts';
import { envelope, errorResponses, IsoTimestamp, PUBLIC, Ref } from '../http/schemas.ts';
import { findAsset } from '../portal/assets.ts';
import { sendPage } from '../portal/layout.ts';
import { notFoundPage } from '../portal/message-page.ts';
import { pageHandler } from '../portal/page-handler.ts';
import { verifyPage } from '../portal/verify-page.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { SAME_DEVICE_COOKIE, visitPortal } from '../services/openid4vp/index.ts';
import { awaitSessionStatus, portalSession } from '../services/portal.ts';
import { DEFAULT_WATCH_LIMITS, STATUS_WAIT_MAX_SECONDS } from '../services/session-watch.ts';
import { SessionStatusSchema } from './session-schemas.ts';

const PublicStatusSchema = Type.Object(
  {
    sessionId: Type.String(),
    status: SessionStatusSchema,
    verified: Type.Union([Type.Boolean(), Type.Null()], {
      description: 'Once completed, whether the student was verified; null before',
    }),
    expiresAt: IsoTimestamp,
    now: Type.String({
      format: 'date-time',
      description: "The server's clock, so that a page can count down without trusting the device's",
    }),
  },
  { $id: 'PublicSessionStatus', description: 'What anyone holding the session id may know of it' },
);

export const PORTAL_COMPONENTS = [PublicStatusSchema];

/** Pages are for people, not API clients: kept out of the OpenAPI document. */
const HIDDEN = { schema: { hide: true } } as const;

const sendNotFoundPage = async (_request: FastifyRequest, reply: FastifyReply) => sendPage(reply, 404, notFoundPage());

/**
 * The verification portal: the page behind `verificationUrl`, its assets, and the public status
 * endpoint the page follows the session with.
 */
export const portalRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    // Before the server closes, every waiting status request answers with what it knows.
    app.addHook('preClose', async () => deps.sessionWatch.close());

    app.get('/verification/v1/sessions/:sessionId/status', {
      config: limitedPerSession({}),
      schema: {
        tags: ['Portal'],
        operationId: 'retrieveSessionStatus',
        summary: 'Public status of a session, for the portal page',
        security: PUBLIC,
        description: `No API key: anyone holding the session id may read it. It reveals the state, whether a completed session ended verified, and the timing; never the claims, the university, the format, a failure reason or the nonce. With \`wait\`, a long poll: the answer comes once the status differs from \`seen\` (or is final), when the session expires, or after \`wait\` seconds with the status unchanged. The portal page holds one such request open at a time. At most ${DEFAULT_WATCH_LIMITS.maxPerSession} requests wait on one session at once, and a bounded number per process: one more is a 429 with Retry-After.`,
        params: Type.Object({ sessionId: Type.String({ maxLength: 64 }) }),
        querystring: Type.Object(
          {
            wait: Type.Optional(
              Type.Integer({
                minimum: 0,
                maximum: STATUS_WAIT_MAX_SECONDS,
                default: 0,
                description: 'Seconds to wait for a change before answering; 0 answers at once',
              }),
            ),
            seen: Type.Optional(SessionStatusSchema),
          },
          { additionalProperties: false },
        ),
        response: {
          200: envelope(Ref(PublicStatusSchema)),
          ...errorResponses('invalid_request', 'not_found'),
        },
      },
      handler: async (request, reply) => {
        // The client going away (a closed tab) ends its wait and frees its place.
        const gone = new AbortController();
        reply.raw.once('close', () => gone.abort());
        const data = await awaitSessionStatus(deps, request.params.sessionId, {
          waitSeconds: request.query.wait ?? 0,
          seen: request.query.seen,
          signal: gone.signal,
        });
        reply.header('cache-control', 'no-store');
        return { success: true as const, data };
      },
    });

    type VerifyRequest = FastifyRequest<{
      Params: { sessionId: string };
      Querystring: { response_code?: unknown; embed?: unknown };
    }>;
    app.get(
      '/verify/:sessionId',
      { ...HIDDEN, config: limitedPerSession({}) },
      pageHandler(async (request: VerifyRequest) => {
        // The same-device binding (services/openid4vp/same-device.ts): the cookie, or the wallet's redirect.
        const code = request.query.response_code;
        const visit = await visitPortal(deps, request.params.sessionId, {
          responseCode: typeof code === 'string' ? code : code === undefined ? undefined : '',
          cookie: readCookie(request.headers.cookie, SAME_DEVICE_COOKIE),
        });
        const session = await portalSession(deps, request.params.sessionId);
        if (!session) return { status: 404, page: notFoundPage() };
        const headers = visit.setCookie ? { 'set-cookie': serializeCookie(visit.setCookie) } : undefined;
        // In the drop-in's modal (`?embed=<the shop's origin>`), the page reports the outcome to that
        // origin by postMessage: only to one of the application's allowed origins, else to nobody.
        const { embed } = request.query;
        const embedOrigin = typeof embed === 'string' && session.frameAncestors.includes(embed) ? embed : null;
        const page = await verifyPage(session, { embedOrigin });
        return { status: 200, page, headers, frameAncestors: session.frameAncestors, digitalCredentials: true };
      }),
    );
    app.get('/verify', HIDDEN, sendNotFoundPage);
    app.get('/verify/*', HIDDEN, sendNotFoundPage);

    app.get<{ Params: { name: string }; Querystring: { v?: string } }>(
      '/assets/:name',
      // Not limited: served from memory, no database, cheaper than the 429 that would refuse it, and
      // every student's browser fetches each one once (a campus behind one address is hundreds).
      { ...HIDDEN, config: { rateLimit: 'none' } },
      async (request, reply) => {
        const asset = findAsset(request.params.name);
        if (!asset) return sendPage(reply, 404, notFoundPage());
        // Versioned links never change content, so they may be cached for good; anything else is revalidated.
        const versioned = request.query.v === asset.version;
        return reply
          .header('content-type', asset.contentType)
          .header('cache-control', versioned ? 'public, max-age=31536000, immutable' : 'no-cache')
          .header('x-content-type-options', 'nosniff')
          .send(asset.body);
      },
    );
  };
