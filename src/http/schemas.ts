import { Type, type TSchema } from '@sinclair/typebox';
import { ERROR_STATUS, type ErrorCode } from '../errors.ts';
import { ENVIRONMENTS } from '../domain/environment.ts';
import { MULTILINE } from './text-guard.ts';

/** Schemas shared by every route: the envelopes, the error body, pagination. */

export const ErrorBody = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Type.Union(Object.keys(ERROR_STATUS).map((code) => Type.Literal(code))),
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

export const Pagination = Type.Object({
  hasMore: Type.Boolean(),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});

export function listEnvelope<T extends TSchema>(item: T) {
  return Type.Object({ success: Type.Literal(true), data: Type.Array(item), pagination: Pagination });
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

export const Environment = Type.Union(ENVIRONMENTS.map((e) => Type.Literal(e)));

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
};

/** The error responses of a route, by status, all with the one error body. */
export function errorResponses(...codes: ErrorCode[]): Record<number, TSchema> {
  const statuses = new Set<number>([...codes.map((c) => ERROR_STATUS[c]), 400, 413, 415, 500]);
  const out: Record<number, TSchema> = {};
  for (const status of [...statuses].sort())
    out[status] = Type.Ref(ErrorBody, { description: STATUS_DESCRIPTIONS[status] ?? 'Error' });
  return out;
}

/** Errors every bearer-authenticated route can answer. */
export const AUTHENTICATED_ERRORS: ErrorCode[] = [
  'invalid_request',
  'unauthenticated',
  'idempotency_conflict',
  'rate_limited',
];

export const BEARER = [{ bearerAuth: [] }];
