import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { newId } from '../domain/ids.ts';
import { loggableUrl } from '../logging.ts';

/** A request id a proxy may hand us: printable ASCII without spaces, 1 to 128 characters. */
const INCOMING_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * The request id generator: a fresh `req_…` id, or with `trustProxy` the incoming X-Request-Id
 * when it is well formed (anything else is ignored, not refused: the request still gets an id).
 */
export function requestIdGenerator(trustProxy: boolean): (request: IncomingMessage) => string {
  return (request) => {
    const incoming = request.headers['x-request-id'];
    if (trustProxy && typeof incoming === 'string' && INCOMING_REQUEST_ID.test(incoming)) return incoming;
    return newId('request');
  };
}

/**
 * One access-log line per request at info, when the answer is sent: Fastify's own two ("incoming request"
 * with the full URL, and "request completed") become one with the method, the URL without its
 * nonce, the route, the status and the time taken. No header is logged. Errors of 5xx answers are
 * logged by the error handler beside it, with the same reqId.
 */
export class AccessLog extends LogController {
  /** At debug only (off by default): the request has begun, before its body has arrived. */
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ method: request.method, url: loggableUrl(request.url) }, 'request received');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      url: loggableUrl(request.url),
      route: request.routeOptions.url,
      statusCode: reply.statusCode,
      responseTimeMs: Math.round(reply.elapsedTime * 10) / 10,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request');
    else reply.log.info(line, 'request');
  }
}
