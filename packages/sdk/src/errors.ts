import type { components } from './openapi.js';

export type ErrorCode = components['schemas']['ErrorCode'];
export type ErrorReason = components['schemas']['ErrorReason'];

/**
 * Every failure of a call: an error answer of the API (`code`, `status`, `requestId`, and `param`
 * or `reason` when the API gives them), or no answer at all (`code` is `network_error`).
 */
export class MatriculaError extends Error {
  /**
   * The API's error code, or `network_error` when no answer came, or `secret_not_replayed` when a
   * retried creation or rotation was answered by the replay of the first answer, whose secret the
   * service does not keep (rotate the secret to get a new one).
   */
  readonly code: ErrorCode | 'network_error' | 'unexpected_response' | 'secret_not_replayed';
  /** The HTTP status; 0 without an answer. */
  readonly status: number;
  /** The request id (X-Request-Id): quote it when you report a problem. */
  readonly requestId?: string;
  /** The field the error is about, when there is one. */
  readonly param?: string;
  /** The cause within the code, e.g. why a presentation was rejected. */
  readonly reason?: ErrorReason;

  constructor(init: {
    message: string;
    status: number;
    code?: MatriculaError['code'];
    requestId?: string;
    param?: string;
    reason?: ErrorReason;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'MatriculaError';
    this.code = init.code ?? 'unexpected_response';
    this.status = init.status;
    this.requestId = init.requestId;
    this.param = init.param;
    this.reason = init.reason;
  }

  static network(cause: unknown): MatriculaError {
    const message = cause instanceof Error ? cause.message : String(cause);
    return new MatriculaError({
      message: `No answer from Matricula: ${message}`,
      status: 0,
      code: 'network_error',
      cause,
    });
  }

  static fromResponse(status: number, body: unknown, requestId: string | undefined): MatriculaError {
    const error = (body as { error?: Partial<components['schemas']['ErrorResponse']['error']> } | undefined)?.error;
    if (!error?.code) return new MatriculaError({ message: `HTTP ${status}`, status, requestId });
    return new MatriculaError({
      message: error.message ?? `HTTP ${status}`,
      status,
      code: error.code,
      requestId: error.requestId ?? requestId,
      param: error.param,
      reason: error.reason,
    });
  }
}
