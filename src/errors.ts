import type { RejectionReason } from './proofs/types.ts';
import type { TargetUrlRefusal } from './outbound/ssrf.ts';
/**
 * One error vocabulary: a closed list of codes, each with its HTTP status. Every error response
 * of the API is `{success: false, error: {code, message, param?, requestId}}`.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  presentation_rejected: 400,
  unauthenticated: 401,
  key_revoked: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  invalid_state: 409,
  idempotency_conflict: 409,
  session_expired: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * The closed list of an error's `reason` (the OpenAPI document's ErrorReason, http/schemas.ts):
 * why a presentation was rejected, or why a webhook URL was refused.
 */
export type ErrorReason = RejectionReason | TargetUrlRefusal;

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly param?: string;
  /** Machine-readable cause within the code, e.g. the rejection reason of a presentation. */
  readonly reason?: ErrorReason;
  /** For a 429 or 503: when to try again, sent as Retry-After (seconds). */
  readonly retryAfterSeconds?: number;
  /** For the operator's log only, never sent: e.g. the address and error code of a failed fetch. */
  readonly detail?: string;

  constructor(
    code: ErrorCode,
    message: string,
    options: { param?: string; reason?: ErrorReason; retryAfterSeconds?: number; detail?: string } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.param = options.param;
    this.reason = options.reason;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.detail = options.detail;
  }
}

export const invalidRequest = (message: string, param?: string) => new ApiError('invalid_request', message, { param });
export const notFound = (what: string, param?: string) => new ApiError('not_found', `No such ${what}.`, { param });
export const forbidden = (message: string) => new ApiError('forbidden', message);
export const invalidState = (message: string) => new ApiError('invalid_state', message);
