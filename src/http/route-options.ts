import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** `routeOptions` once read: see {@link routeOf}. */
    keptRouteOptions: FastifyRequest['routeOptions'] | null;
  }
}

/**
 * The request's route options (its URL pattern, config and schema), read once and kept on the
 * request. Fastify's `request.routeOptions` is a getter that builds a new object of twelve fields
 * on every read, and the service's hooks read it eight times a session GET (authentication, rate
 * limits, CORS, the text guard, metrics). A request's route does not change while it is answered.
 */
export function routeOf(request: FastifyRequest): FastifyRequest['routeOptions'] {
  return (request.keptRouteOptions ??= request.routeOptions);
}

/** Gives every request of `app` the slot {@link routeOf} keeps the options in. */
export function installRouteOptions(app: FastifyInstance): void {
  app.decorateRequest('keptRouteOptions', null);
}
