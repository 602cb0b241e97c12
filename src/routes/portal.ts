import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { envelope, errorResponses, IsoTimestamp, PUBLIC, Ref } from '../http/schemas.ts';
import { findAsset } from '../portal/assets.ts';
import { sendPage } from '../portal/layout.ts';
import { notFoundPage } from '../portal/message-page.ts';
import { pageHandler } from '../portal/page-handler.ts';
import { verifyPage } from '../portal/verify-page.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { portalSession, publicSessionStatus } from '../services/portal.ts';
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
    app.get('/verification/v1/sessions/:sessionId/status', {
      schema: {
        tags: ['Portal'],
        operationId: 'retrieveSessionStatus',
        summary: 'Public status of a session, for the portal page',
        security: PUBLIC,
        description:
          'No API key: anyone holding the session id may read it. It reveals the state, whether a completed session ended verified, and the timing; never the claims, the university, the format, a failure reason or the nonce. The portal page polls it every 1.5 s.',
        params: Type.Object({ sessionId: Type.String({ maxLength: 64 }) }),
        response: { 200: envelope(Ref(PublicStatusSchema)), ...errorResponses('invalid_request', 'not_found') },
      },
      handler: async (request, reply) => {
        const data = await publicSessionStatus(deps, request.params.sessionId);
        reply.header('cache-control', 'no-store');
        return { success: true as const, data };
      },
    });

    app.get<{ Params: { sessionId: string } }>(
      '/verify/:sessionId',
      HIDDEN,
      pageHandler(async (request: FastifyRequest<{ Params: { sessionId: string } }>) => {
        const session = await portalSession(deps, request.params.sessionId);
        if (!session) return { status: 404, page: notFoundPage() };
        return { status: 200, page: await verifyPage(session) };
      }),
    );
    app.get('/verify', HIDDEN, sendNotFoundPage);
    app.get('/verify/*', HIDDEN, sendNotFoundPage);

    app.get<{ Params: { name: string }; Querystring: { v?: string } }>(
      '/assets/:name',
      HIDDEN,
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
