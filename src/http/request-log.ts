import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';
import { newId } from '../domain/ids.ts';
import { loggableUrl } from '../logging.ts';
import { routeOf } from './route-options.ts';

/** The levels at which the "request received" line is written. */
const VERBOSE_LEVELS = new Set(['debug', 'trace']);

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
 * What Fastify logs of each request. Its own two lines ("incoming request" with the full URL, and
 * "request completed") are replaced by at most one, when the answer is sent, with the method, the
 * URL without its nonce, the route, the status and the time taken; no header is logged.
 *
 * - With the access log on (ACCESS_LOG=true), every request gets that line at info.
 * - Off (the default), only answers that went wrong get it, at error: a 5xx, or a request that
 *   failed while being answered. A line per request costs about as much as the rest of a cached
 *   read (bench/README.md), and a proxy in front usually keeps access logs anyway. The error
 *   handler logs a 5xx's error with the same reqId either way, and every answer carries its id
 *   in X-Request-Id.
 */
export class AccessLog extends LogController {
  readonly #everyRequest: boolean;

  constructor(options: { everyRequest: boolean }) {
    super();
    this.#everyRequest = options.everyRequest;
  }

  /** At debug only (off by default): the request has begun, before its body has arrived. */
  override incomingRequest(request: FastifyRequest): void {
    // The line's fields cost something to build even when debug is off (the default).
    if (VERBOSE_LEVELS.has(request.log.level))
      request.log.debug({ method: request.method, url: loggableUrl(request.url) }, 'request received');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const failed = Boolean(error) || reply.statusCode >= 500;
    if (!failed && !this.#everyRequest) return;
    const line = {
      method: request.method,
      url: loggableUrl(request.url),
      route: routeOf(request).url,
      statusCode: reply.statusCode,
      responseTimeMs: Math.round(reply.elapsedTime * 10) / 10,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request');
    else if (failed) reply.log.error(line, 'request');
    else reply.log.info(line, 'request');
  }
}

/**
 * Fastify's `childLoggerFactory`: each request's logger is pino's child with the request id,
 * made on the request's first line rather than when it arrives. With the access log off (the
 * default) most requests write no line, and a pino child costs 1.3 to 2.3 µs (its bindings
 * serialized), a few percent of a cached read. A route with its own level or serializers gets
 * its child at once.
 */
export function requestLogger(
  this: unknown,
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined || options.serializers !== undefined) return parent.child(bindings, options);
  return new RequestLogger(parent, bindings);
}

/** A request's logger, pino's child made on first use (see {@link requestLogger}). */
class RequestLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  #logger(): FastifyBaseLogger {
    return (this.#child ??= this.#parent.child(this.#bindings));
  }

  get level(): string {
    return this.#child?.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.#logger().level = level;
  }

  fatal(obj: unknown, msg?: string, ...args: unknown[]): void {
    this.#logger().fatal(obj, msg, ...args);
  }

  error(obj: unknown, msg?: string, ...args: unknown[]): void {
    this.#logger().error(obj, msg, ...args);
  }

  warn(obj: unknown, msg?: string, ...args: unknown[]): void {
    this.#logger().warn(obj, msg, ...args);
  }

  info(obj: unknown, msg?: string, ...args: unknown[]): void {
    this.#logger().info(obj, msg, ...args);
  }

  debug(obj: unknown, msg?: string, ...args: unknown[]): void {
    this.#logger().debug(obj, msg, ...args);
  }

  trace(obj: unknown, msg?: string, ...args: unknown[]): void {
    this.#logger().trace(obj, msg, ...args);
  }

  silent(obj: unknown, msg?: string, ...args: unknown[]): void {
    this.#logger().silent(obj, msg, ...args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger().child(bindings, options);
  }
}
