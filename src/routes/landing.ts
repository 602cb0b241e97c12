import type { FastifyPluginAsync } from 'fastify';
import { landingPage } from '../portal/landing-page.ts';
import { sendPage } from '../portal/layout.ts';

/** `GET /`: a small page pointing to the API reference, the sandbox wallet and the first steps. */
export const landingRoutes: FastifyPluginAsync = async (app) => {
  app.get('/', { schema: { hide: true } }, async (_request, reply) => sendPage(reply, 200, landingPage()));
};
