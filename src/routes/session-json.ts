import type { FastifyReply } from 'fastify';
import type { SessionResult } from '../domain/session.ts';
import type { sessionView } from '../services/sessions.ts';

/**
 * The session answers, serialized by hand. The session schema is a `oneOf` by status, and for a
 * `oneOf` fast-json-stringify validates the value against each branch with Ajv (every date-time
 * format included) before it writes anything: on a session read that cost more than the database
 * query. These functions write the schema's fields, and only those, in its order, with
 * JSON.stringify over objects built field by field; test/routes/session-json.test.ts holds them equal to
 * what fast-json-stringify makes of the same schemas, for every shape a session can take.
 *
 * A route sends the string with {@link sendJson}: a string with a JSON content type passes through
 * Fastify unserialized. The response schemas stay on the routes: they document the answer in the
 * OpenAPI document.
 */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Sends JSON already serialized (the route's typed reply expects the object; the string is its
 * serialization, so the type is set aside here and only here).
 */
export function sendJson(reply: unknown, json: string, statusCode = 200): FastifyReply {
  return (reply as FastifyReply).status(statusCode).type(JSON_CONTENT_TYPE).send(json);
}

type SessionView = ReturnType<typeof sessionView>;

function resultObject(result: SessionResult) {
  const { university, claims, warnings } = result;
  return {
    verified: result.verified,
    protocol: result.protocol,
    format: result.format,
    university: university && { name: university.name, domain: university.domain, country: university.country },
    claims: {
      is_active_student: claims.is_active_student,
      academic_level: claims.academic_level,
      valid_until: claims.valid_until,
      // Optional in the schema: fast-json-stringify wrote it after the required keys.
      university_domain: claims.university_domain,
    },
    failureReason: result.failureReason,
    failureMessage: result.failureMessage,
    warnings: warnings?.map((w) => ({ code: w.code, message: w.message })),
  };
}

/** `Session` (session-schemas.ts): `result` exactly when completed. */
function sessionObject(view: SessionView) {
  return {
    sessionId: view.sessionId,
    challengeNonce: view.challengeNonce,
    qrPayload: view.qrPayload,
    verificationUrl: view.verificationUrl,
    openid4vpUri: view.openid4vpUri,
    expiresAt: view.expiresAt,
    appId: view.appId,
    environment: view.environment,
    purpose: view.purpose,
    requiredClaims: view.requiredClaims,
    metadata: view.metadata,
    clientReference: view.clientReference,
    returnUrl: view.returnUrl,
    createdAt: view.createdAt,
    consentedAt: view.consentedAt,
    completedAt: view.completedAt,
    redacted: view.redacted,
    redactedAt: view.redactedAt,
    status: view.status,
    // sessionView sets it only on a completed session.
    result: view.result ? resultObject(view.result) : undefined,
  };
}

/** `{ success: true, data: Session }`. */
export function sessionJson(view: SessionView): string {
  return JSON.stringify({ success: true, data: sessionObject(view) });
}

/** `{ success: true, data: CreatedSession }`: the creation fields only (docs/sessions.md). */
export function createdSessionJson(view: SessionView): string {
  return JSON.stringify({
    success: true,
    data: {
      sessionId: view.sessionId,
      status: view.status,
      challengeNonce: view.challengeNonce,
      qrPayload: view.qrPayload,
      verificationUrl: view.verificationUrl,
      openid4vpUri: view.openid4vpUri,
      expiresAt: view.expiresAt,
    },
  });
}

/** A page of sessions: `{ success: true, data: Session[], pagination }`. */
export function sessionListJson(
  views: SessionView[],
  pagination: { hasMore: boolean; nextCursor: string | null },
): string {
  return JSON.stringify({
    success: true,
    data: views.map(sessionObject),
    pagination: { hasMore: pagination.hasMore, nextCursor: pagination.nextCursor },
  });
}
