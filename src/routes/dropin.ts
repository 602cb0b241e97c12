import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';

/** The drop-in script (docs/dashboard.md#drop-in-button), read once: part of the code, not data. */
const SCRIPT = readFileSync(new URL('../portal/assets/matricula.js', import.meta.url));

/**
 * `GET /js/v1/matricula.js`: the script a shop includes on its own pages (another origin) to open
 * a session's portal page in a modal and learn how it ended. Versioned by path: a change that
 * breaks its callers gets a new path, so caching it a few minutes is safe.
 */
export const dropinRoutes: FastifyPluginAsync = async (app) => {
  app.get('/js/v1/matricula.js', { schema: { hide: true }, config: { rateLimit: 'none' } }, async (_request, reply) =>
    reply
      .header('content-type', 'text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('x-content-type-options', 'nosniff')
      // Loaded by other origins' pages, including ones that isolate themselves (COEP).
      .header('cross-origin-resource-policy', 'cross-origin')
      .send(SCRIPT),
  );
};
