import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.ts';

/**
 * Graceful stop, the same in every role. `app.close()` stops accepting connections and closes the
 * idle ones; then:
 * - a request already in flight (its body still arriving, its handler running) finishes normally;
 * - every response sent while closing carries `Connection: close`, so the client does not reuse
 *   the connection and the process does not wait out the keep-alive timeout (72 s) before exiting;
 * - a request that starts on a connection still open answers 503 `service_unavailable` in the usual
 *   envelope, with X-Request-Id, instead of Fastify's own body.
 * Must be installed after the hook that sets X-Request-Id.
 */
export function installDrain(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Callback-style: every request runs them (an async hook costs a promise per request).
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done();
    reply.header('connection', 'close');
    throw new ApiError(
      'service_unavailable',
      'The server is shutting down: send the request again on a new connection.',
    );
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
}
