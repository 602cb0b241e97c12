import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { ApiError, ERROR_STATUS, type ErrorCode } from '../errors.ts';
import { ProofPoolBusyError } from '../proofs/worker/pool.ts';

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  /** The offending value (the validators run with `verbose`). */
  data?: unknown;
}

function pathToParam(context: string | undefined, instancePath: string, extra?: string): string | undefined {
  const parts = instancePath.split('/').filter(Boolean);
  if (extra) parts.push(extra);
  if (parts.length === 0) return context === 'body' ? undefined : context;
  return parts.join('.');
}

/** Turns the first schema violation into one clear sentence naming the field. */
export function validationToApiError(errors: AjvError[], context: string | undefined): ApiError {
  const first = errors[0];
  const where = context === 'querystring' ? 'query parameter' : context === 'params' ? 'path parameter' : 'field';
  switch (first.keyword) {
    case 'additionalProperties': {
      const name = String(first.params.additionalProperty);
      const param = pathToParam(context, first.instancePath, name);
      return new ApiError('invalid_request', `Unknown ${where} '${param}'.`, { param });
    }
    case 'required': {
      const name = String(first.params.missingProperty);
      const param = pathToParam(context, first.instancePath, name);
      return new ApiError('invalid_request', `Missing required ${where} '${param}'.`, { param });
    }
    case 'enum': {
      // A closed list (claims, events, formats…): name the list itself, not the item's index.
      const param = pathToParam(context, first.instancePath.replace(/(\/\d+)+$/, ''));
      const allowed = (first.params.allowedValues as unknown[]).join(', ');
      const given = first.data === undefined ? '' : ` ${JSON.stringify(first.data).slice(0, 100)} is not allowed;`;
      return new ApiError(
        'invalid_request',
        `Invalid ${where} '${param ?? 'body'}':${given} must be one of ${allowed}.`,
        { param },
      );
    }
    default: {
      const param = pathToParam(context, first.instancePath);
      if (!param) return new ApiError('invalid_request', `The request body ${first.message ?? 'is invalid'}.`);
      return new ApiError('invalid_request', `Invalid ${where} '${param}': ${first.message ?? 'invalid value'}.`, {
        param,
      });
    }
  }
}

const STATUS_CODES: Partial<Record<number, ErrorCode>> = {
  400: 'invalid_request',
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'invalid_state',
  410: 'session_expired',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  503: 'service_unavailable',
};

/** Seconds a client is told to wait (Retry-After) when the database cannot serve. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

/**
 * Tells errors that mean "the database cannot serve now" (unreachable, restarting, disk full,
 * read-only) from faults: the composition root passes the store's classifier in.
 */
export type UnavailableCheck = (err: unknown) => boolean;

/**
 * Maps framework errors (body parsing, limits) onto the closed list; a database that cannot serve
 * now is a 503 with Retry-After; anything else unknown is a 500.
 */
function toApiError(error: FastifyError, isUnavailable: UnavailableCheck): ApiError {
  if (error instanceof ApiError) return error;
  if (isUnavailable(error))
    return new ApiError('service_unavailable', 'The service cannot reach its database. Try again in a moment.', {
      retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
      detail: error.message,
    });
  // The proof pool's queue is full: every client slows down, the way a rate limit says it.
  if (error instanceof ProofPoolBusyError)
    return new ApiError('rate_limited', 'The service is busy checking other proofs. Try again in a moment.', {
      retryAfterSeconds: 1,
    });
  if (error.validation) return validationToApiError(error.validation as AjvError[], error.validationContext);
  const status = error.statusCode ?? 500;
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return new ApiError('payload_too_large', 'The request body is larger than the limit.');
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return new ApiError('unsupported_media_type', 'Send the body as application/json.');
  if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
    return new ApiError('invalid_request', 'The body is empty but Content-Type is application/json.');
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY')
    return new ApiError('invalid_request', 'The body is not valid JSON.');
  const code = status < 500 ? STATUS_CODES[status] : undefined;
  if (code) return new ApiError(code, status === 400 ? 'The request is malformed.' : error.message);
  return new ApiError('internal_error', 'Something went wrong on our side. Quote the request id when you report it.');
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.status === 401) reply.header('www-authenticate', 'Bearer');
  // Every 429 and 503 says when to come back (RFC 9110 §10.2.3); a limiter may have set it already.
  if ((error.status === 429 || error.retryAfterSeconds !== undefined) && !reply.hasHeader('retry-after'))
    reply.header('retry-after', String(error.retryAfterSeconds ?? 1));
  return reply.status(ERROR_STATUS[error.code]).send({
    success: false,
    error: {
      code: error.code,
      message: error.message,
      ...(error.param ? { param: error.param } : {}),
      ...(error.reason ? { reason: error.reason } : {}),
      requestId: String(request.id),
    },
  });
}

/** Longest path parameter the router accepts; longer ones never reach a schema (see frameworkErrors). */
export const MAX_PARAM_LENGTH = 256;

/**
 * Errors the router raises before any hook runs (Fastify's `frameworkErrors` option): a path
 * that does not decode (`/org/v1/apps/%ff`) and a path parameter longer than MAX_PARAM_LENGTH.
 * Both answer the usual envelope with X-Request-Id, a 400 `invalid_request`, instead of
 * Fastify's own body (and its undocumented 414 for long parameters).
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  // The router's errors never come from the database.
  const neverUnavailable = () => false;
  reply.header('x-request-id', request.id);
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? `A path parameter is longer than ${MAX_PARAM_LENGTH} characters.`
      : error.code === 'FST_ERR_BAD_URL'
        ? 'The path is not a valid URL: a percent-encoded sequence does not decode to UTF-8.'
        : undefined;
  if (!message) request.log.error({ err: error }, 'request failed');
  void sendError(
    request,
    reply,
    message ? new ApiError('invalid_request', message) : toApiError(error, neverUnavailable),
  );
}

/**
 * One handler for every error, one response shape; details of faults go to the log only. A
 * database that cannot serve is logged as a warning with its cause (the outage itself is logged
 * once by the store's connection listener), everything else 5xx as an error with its stack.
 */
export function installErrorHandling(
  app: FastifyInstance,
  isUnavailable: UnavailableCheck = () => false,
  /**
   * For a request whose caller is not confirmed yet (http/auth.ts `confirmsKey`): a promise that
   * confirms it, undefined for any other. It runs before the error is answered, and what it throws
   * (a key revoked since) is answered instead: such a caller never learns more than one refused.
   */
  confirmCaller: (request: FastifyRequest) => Promise<unknown> | undefined = () => undefined,
): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const confirming = confirmCaller(request);
    if (!confirming) return answer(error, request, reply);
    return confirming.then(
      () => answer(error, request, reply),
      (refused: FastifyError) => answer(refused, request, reply),
    );
  });
  function answer(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    const apiError = toApiError(error, isUnavailable);
    if (apiError.code === 'service_unavailable' && apiError.detail !== undefined)
      request.log.warn({ code: apiError.code, detail: apiError.detail }, 'database unavailable; answered 503');
    else if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
    else if (apiError.detail !== undefined)
      request.log.warn({ code: apiError.code, reason: apiError.reason, detail: apiError.detail }, apiError.message);
    return sendError(request, reply, apiError);
  }
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const allowed = allowedMethods(app, path);
    if (allowed.length === 0 || allowed.includes(request.method)) {
      // No route has this path, or the route itself answered "not found" (a missing static file).
      return sendError(request, reply, new ApiError('not_found', `No route ${request.method} ${path}.`));
    }
    // OPTIONS is answered for every known path (RFC 9110 §9.3.7): it asks for what follows.
    const allow = [...allowed, 'OPTIONS'].join(', ');
    reply.header('allow', allow);
    if (request.method === 'OPTIONS') return reply.status(204).send();
    return sendError(
      request,
      reply,
      new ApiError('method_not_allowed', `${request.method} is not allowed on ${path}; it answers ${allow}.`),
    );
  });
}

/**
 * The methods some route answers on `path` (HEAD comes with every GET), found by asking the
 * router itself so that parameters and wildcards match exactly as they do for requests.
 */
function allowedMethods(app: FastifyInstance, path: string): string[] {
  return app.supportedMethods.filter(
    (method) => method !== 'OPTIONS' && app.findRoute({ method: method as HTTPMethods, url: path }) !== null,
  );
}
