import { Type, type TSchema } from '@sinclair/typebox';
import { ERROR_STATUS, type ErrorCode, type ErrorReason } from '../errors.ts';
import { EnvironmentSchema, IsoTimestamp, Ref, StringEnum } from '../domain/schemas.ts';
import { REJECTION_REASONS } from '../proofs/types.ts';
import { TARGET_URL_REFUSALS } from '../outbound/ssrf.ts';
import { MULTILINE } from './text-guard.ts';

/** Schemas shared by every route: the envelopes, the error body, pagination. */

export { Ref, StringEnum };

export const ErrorCodeSchema = StringEnum(Object.keys(ERROR_STATUS) as ErrorCode[], {
  $id: 'ErrorCode',
  description: 'The closed list of error codes; each has one HTTP status',
});

/**
 * The closed list of an error's `reason`: why a presentation was rejected (`presentation_rejected`)
 * and why a webhook URL was refused (`invalid_request` on `url`). ApiError's `reason` has the same
 * type (errors.ts), so the compiler keeps the two together.
 */
export const ERROR_REASONS: ErrorReason[] = [...new Set([...REJECTION_REASONS, ...TARGET_URL_REFUSALS])];

export const ErrorReasonSchema = StringEnum(ERROR_REASONS, {
  $id: 'ErrorReason',
  description: 'Cause within the code: why a presentation was rejected, or why a webhook URL was refused',
});

export const ErrorBody = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Ref(ErrorCodeSchema),
      message: Type.String(),
      param: Type.Optional(Type.String()),
      reason: Type.Optional(Ref(ErrorReasonSchema)),
      requestId: Type.String(),
    }),
  },
  { $id: 'ErrorResponse', description: 'Error envelope' },
);

export function envelope<T extends TSchema>(data: T) {
  return Type.Object({ success: Type.Literal(true), data });
}

export const Pagination = Type.Object(
  {
    hasMore: Type.Boolean(),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description: 'Pass as startingAfter for the next page; null on the last page',
    }),
  },
  { $id: 'Pagination' },
);

export function listEnvelope<T extends TSchema>(item: T) {
  return Type.Object({ success: Type.Literal(true), data: Type.Array(item), pagination: Ref(Pagination) });
}

/** A list route's answer: a page as {@link listEnvelope} shapes it. */
export function listBody<T>(page: { items: T[]; hasMore: boolean; nextCursor: string | null }) {
  return {
    success: true as const,
    data: page.items,
    pagination: { hasMore: page.hasMore, nextCursor: page.nextCursor },
  };
}

/** The page a list route's {@link PageQuery} asks for, its default size filled in. */
export function pageOf(query: { limit?: number; startingAfter?: string }): { limit: number; startingAfter?: string } {
  return { limit: query.limit ?? 20, startingAfter: query.startingAfter };
}

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size, 1 to 100.' })),
  startingAfter: Type.Optional(
    Type.String({ maxLength: 64, description: 'Id of the last item of the previous page.' }),
  ),
};

/**
 * Free text that may span lines: tab and line breaks are allowed here and nowhere else in a body
 * (http/text-guard.ts refuses every other control character everywhere).
 */
export function MultilineText(options: { maxLength: number; description?: string }) {
  return Type.String({ ...options, [MULTILINE]: true });
}

// Defined in domain/schemas.ts, beside the schemas of the event envelope that use them.
export { EnvironmentSchema, IsoTimestamp };
export const Environment = Ref(EnvironmentSchema);

const STATUS_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request',
  401: 'Missing, invalid or revoked API key',
  403: 'The key may not act on this resource',
  404: 'No such resource',
  409: 'Conflict with the current state, or an Idempotency-Key reused with another request',
  410: 'The session has expired',
  413: 'Body too large',
  415: 'Unsupported Content-Type',
  429: 'Too many requests',
  500: 'Internal error',
  503: 'Service unavailable: the server is shutting down (send again on a new connection) or its database is not reachable',
};

/**
 * The error responses of a route, by status, all with the one error body: exactly the statuses
 * of `codes`, and those any route can answer: 500, and 503 (the server is shutting down, see
 * http/drain.ts, or its database is not reachable).
 */
export function errorResponses(...codes: ErrorCode[]): Record<number, TSchema> {
  const all = [...new Set<ErrorCode>([...codes, 'internal_error', 'service_unavailable'])];
  const statuses = new Set<number>(all.map((c) => ERROR_STATUS[c]));
  const out: Record<number, TSchema> = {};
  for (const status of [...statuses].sort()) {
    // One example per code this route can answer with this status (Swagger UI shows them in a
    // list), so that a 401 does not show `invalid_request`, the first code of the enum.
    const examples = Object.fromEntries(
      all.filter((code) => ERROR_STATUS[code] === status).map((code) => [code, errorExample(code)]),
    );
    // Fastify's content form (as /metrics uses): the schema serializes, `examples` reaches the document.
    out[status] = {
      description: STATUS_DESCRIPTIONS[status] ?? 'Error',
      content: { 'application/json': { schema: Ref(ErrorBody), examples } },
    } as unknown as TSchema;
  }
  return out;
}

/** What each error looks like, as the API words it (the messages are those of the code). */
const ERROR_EXAMPLES: Record<ErrorCode, { message: string; param?: string; reason?: string }> = {
  invalid_request: { message: 'requiredClaims must NOT have fewer than 1 items.', param: 'requiredClaims' },
  presentation_rejected: {
    message: 'The presentation was rejected: the key-binding JWT is not bound to this session nonce. 4 attempts left.',
    reason: 'nonce_mismatch',
  },
  unauthenticated: { message: 'Invalid API key.' },
  key_revoked: { message: 'This API key has been revoked.' },
  forbidden: { message: 'A sandbox key cannot act on live resources.' },
  not_found: { message: 'No such session.', param: 'sessionId' },
  method_not_allowed: { message: 'PUT is not allowed on /org/v1/apps; it answers GET, POST.' },
  invalid_state: { message: 'The session is completed: it can no longer be cancelled.' },
  idempotency_conflict: {
    message: 'This Idempotency-Key was already used with a different request.',
    param: 'Idempotency-Key',
  },
  session_expired: { message: 'The session has expired.' },
  payload_too_large: { message: 'The request body is larger than the limit.' },
  unsupported_media_type: { message: 'Send the body as application/json.' },
  rate_limited: { message: 'Too many requests; retry after the seconds in Retry-After.' },
  internal_error: { message: 'Something went wrong on our side. Quote the request id when you report it.' },
  service_unavailable: { message: 'The server is shutting down: send the request again on a new connection.' },
};

function errorExample(code: ErrorCode) {
  const { message, param, reason } = ERROR_EXAMPLES[code];
  return {
    summary: code,
    value: {
      success: false,
      error: {
        code,
        message,
        ...(param ? { param } : {}),
        ...(reason ? { reason } : {}),
        requestId: 'req_01jd3q5wq8e5s7v2k4m6n8p0r2',
      },
    },
  };
}

/** Errors of a route that reads a body (POST, PATCH): invalid, too large, not JSON. */
export const BODY_ERRORS: ErrorCode[] = ['invalid_request', 'payload_too_large', 'unsupported_media_type'];

/** Errors of every POST: those of a body, and an Idempotency-Key reused or still in flight. */
export const POST_ERRORS: ErrorCode[] = [...BODY_ERRORS, 'idempotency_conflict'];

/** Errors every bearer-authenticated route can answer: a bad parameter, a bad key. */
export const AUTHENTICATED_ERRORS: ErrorCode[] = ['invalid_request', 'unauthenticated'];

export const BEARER = [{ bearerAuth: [] }];

/** Operations that take no API key: the document says so (`security: []`). */
export const PUBLIC: Array<Record<string, string[]>> = [];

/** The schemas of this file that the app registers as components. */
export const SHARED_COMPONENTS: TSchema[] = [
  ErrorCodeSchema,
  ErrorReasonSchema,
  ErrorBody,
  Pagination,
  EnvironmentSchema,
];
