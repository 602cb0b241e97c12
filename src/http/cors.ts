import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { routeOf } from './route-options.ts';

/**
 * CORS for the endpoints a browser may call across origins: the public session status (a shop's
 * front end polls it) and the wallet endpoints (a web wallet). Nothing else answers with
 * Access-Control-Allow-Origin: endpoints that take a secret key are server-to-server, and a
 * browser holding `sk_…` would leak it to every visitor.
 *
 * Only origins listed in CORS_ORIGINS are allowed, echoed one at a time (never `*`), without
 * credentials: these endpoints authorize by session id and nonce, not cookies.
 *
 * This is a hook rather than @fastify/cors: that plugin answers preflights with a catch-all
 * OPTIONS route, which would take over the 204-with-Allow, 404 and 405 answers every other path
 * gets from the error handler, and the decision here is per route.
 */
export const PUBLIC_CORS_ROUTES: Readonly<Record<string, readonly string[]>> = {
  '/verification/v1/sessions/:sessionId/status': ['GET', 'HEAD'],
  '/verification/v1/sessions/:sessionId/request': ['GET', 'HEAD'],
  '/verification/v1/sessions/:sessionId/consent': ['POST'],
  '/verification/v1/sessions/:sessionId/presentation': ['POST'],
};

/** Request headers a browser may send to them (beyond the CORS-safelisted ones). */
const ALLOWED_HEADERS = 'content-type, idempotency-key';
/** How long a browser may cache a preflight answer, seconds. */
const PREFLIGHT_MAX_AGE = '600';

const PATTERNS = Object.entries(PUBLIC_CORS_ROUTES).map(([url, methods]) => ({
  pattern: new RegExp(`^${url.replace(/:[A-Za-z]+/g, '[^/]+')}$`),
  methods,
}));

/** The methods a public route answers at `path` (no query), or undefined if it is not one. */
function publicMethods(path: string): readonly string[] | undefined {
  return PATTERNS.find(({ pattern }) => pattern.test(path))?.methods;
}

function allowOrigin(reply: FastifyReply, origin: string): void {
  reply.header('access-control-allow-origin', origin);
  reply.header('access-control-expose-headers', 'x-request-id');
}

export function installCors(app: FastifyInstance, origins: readonly string[]): void {
  const allowed = new Set(origins);
  // Callback-style, as every request runs it: a preflight is answered here (and `done` not called).
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!preflight(request, reply)) done();
  });

  /** Sets the CORS headers of a public route; answers a preflight and says so. */
  function preflight(request: FastifyRequest, reply: FastifyReply): boolean {
    const route = routeOf(request).url;
    const isPublic = route !== undefined && PUBLIC_CORS_ROUTES[route] !== undefined;
    const preflightMethods =
      request.method === 'OPTIONS' && !isPublic ? publicMethods(request.url.split('?')[0]!) : undefined;
    if (!isPublic && !preflightMethods) return false;
    // The answer depends on Origin: caches must keep one per origin.
    reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (origin === undefined || !allowed.has(origin)) return false;

    if (!preflightMethods) {
      allowOrigin(reply, origin);
      return false;
    }
    const requested = request.headers['access-control-request-method'];
    // An OPTIONS that is not a preflight, or one for a method the route does not answer, gets the
    // ordinary OPTIONS answer (204 with Allow) and no CORS grant.
    if (typeof requested !== 'string' || !preflightMethods.includes(requested.toUpperCase())) return false;
    allowOrigin(reply, origin);
    reply
      .status(204)
      .header('access-control-allow-methods', preflightMethods.join(', '))
      .header('access-control-allow-headers', ALLOWED_HEADERS)
      .header('access-control-max-age', PREFLIGHT_MAX_AGE)
      .header('allow', [...preflightMethods, 'OPTIONS'].join(', '))
      .send();
    return true;
  }
}
