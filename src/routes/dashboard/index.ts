import type { FastifyPluginAsync } from 'fastify';
import type { ServiceDeps } from '../../services/deps.ts';
import { appRoutes } from './apps.ts';
import { authRoutes } from './auth.ts';
import { passkeyRoutes } from './passkeys.ts';
import { recordRoutes } from './records.ts';
import { webhookRoutes } from './webhooks.ts';

const FORM = 'application/x-www-form-urlencoded';

/**
 * The dashboard (`/dashboard`, docs/dashboard.md): server-rendered pages for the members of an
 * organization, doing through the same services what the API does. Its forms post
 * application/x-www-form-urlencoded, parsed in this plugin only (the API stays JSON-only).
 */
export const dashboardRoutes =
  (deps: ServiceDeps): FastifyPluginAsync =>
  async (app) => {
    // Pages and their forms are for people, not API clients: kept out of the OpenAPI document.
    app.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true };
    });
    app.addContentTypeParser(FORM, { parseAs: 'string' }, (_request, body, done) => {
      const out: Record<string, string | string[]> = {};
      for (const [key, value] of new URLSearchParams(body as string)) {
        const seen = out[key];
        out[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
      }
      done(null, out);
    });
    await app.register(authRoutes(deps));
    await app.register(passkeyRoutes(deps));
    await app.register(appRoutes(deps));
    await app.register(webhookRoutes(deps));
    await app.register(recordRoutes(deps));
  };
