import { Type, type SchemaOptions, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { ERROR_STATUS, type ErrorCode } from '../errors.ts';
import { ENVIRONMENTS } from '../domain/environment.ts';
import { MULTILINE } from './text-guard.ts';

/** Schemas shared by every route: the envelopes, the error body, pagination. */

/**
 * A closed list of strings as one `enum` (what generators turn into a union type), not an anyOf
 * of single-value consts. Validation is the same: the value must be one of `values`.
 */
export function StringEnum<const T extends readonly string[]>(values: T, options: SchemaOptions = {}) {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] });
}

/**
 * A reference to a named component schema (one with an `$id`, registered once by the app): the
 * OpenAPI document shows `$ref: '#/components/schemas/<$id>'` instead of a copy.
 */
export function Ref<T extends TSchema>(schema: T, options: SchemaOptions = {}): TUnsafe<Static<T>> {
  if (typeof schema.$id !== 'string') throw new Error('Ref: the schema has no $id');
  return Type.Unsafe<Static<T>>({ ...options, $ref: schema.$id });
}

export const ErrorCodeSchema = StringEnum(Object.keys(ERROR_STATUS) as ErrorCode[], {
  $id: 'ErrorCode',
  description: 'The closed list of error codes; each has one HTTP status',
});

export const ErrorBody = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Ref(ErrorCodeSchema),
      message: Type.String(),
      param: Type.Optional(Type.String()),
      reason: Type.Optional(
        Type.String({ description: 'Cause within the code, e.g. why a presentation was rejected' }),
      ),
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

export const EnvironmentSchema = StringEnum(ENVIRONMENTS, {
  $id: 'Environment',
  description: 'sandbox (sk_test_ keys, sandbox universities) or live (sk_live_ keys)',
});
export const Environment = Ref(EnvironmentSchema);

export const IsoTimestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' });

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
  503: 'Service unavailable',
};

/**
 * The error responses of a route, by status, all with the one error body: exactly the statuses
 * of `codes`, and 500, which any route can answer.
 */
export function errorResponses(...codes: ErrorCode[]): Record<number, TSchema> {
  const statuses = new Set<number>([...codes.map((c) => ERROR_STATUS[c]), 500]);
  const out: Record<number, TSchema> = {};
  for (const status of [...statuses].sort())
    out[status] = Ref(ErrorBody, { description: STATUS_DESCRIPTIONS[status] ?? 'Error' });
  return out;
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
export const SHARED_COMPONENTS: TSchema[] = [ErrorCodeSchema, ErrorBody, Pagination, EnvironmentSchema];
