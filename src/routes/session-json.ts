import type { FastifyReply } from 'fastify';
import type { SessionResult } from '../domain/session.ts';
import type { SessionLinks, sessionView } from '../services/sessions.ts';

/**
 * The session answers, serialized by hand. The session schema is a `oneOf` by status, and for a
 * `oneOf` fast-json-stringify validates the value against each branch with Ajv (every date-time
 * format included) before it writes anything: on a session read that cost more than the database
 * query. These functions write the schema's fields, and only those, in its order: the strings
 * with {@link jsonString}, the result and the metadata with JSON.stringify over objects built field
 * by field; test/routes/session-json.test.ts holds them equal to what fast-json-stringify makes
 * of the same schemas, for every shape a session can take.
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

/**
 * A string with none of the characters JSON.stringify writes escaped: the quote, the backslash,
 * the controls, and a surrogate (escaped when it is lone; a string holding any goes to
 * JSON.stringify, which knows). Anchored, one loop over the string: a third faster than searching
 * for one of them.
 */
// eslint-disable-next-line no-control-regex -- the controls are what JSON escapes
const NOTHING_TO_ESCAPE = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/**
 * A string as JSON.stringify writes it. Most strings of a session answer hold nothing to escape
 * (ids, times, the URLs made from them): those are written between quotes as they are, after one
 * test of the expression above, as fast-json-stringify does. On Node 20, JSON.stringify copies a
 * string longer than its buffer's free space one character at a time, about 20 instructions each:
 * the answer's thousand characters cost a session GET some 24,000 instructions under callgrind
 * (bench/route-instructions.ts), the most of any one piece of the service.
 */
function jsonString(value: string): string {
  return NOTHING_TO_ESCAPE.test(value) ? `"${value}"` : JSON.stringify(value);
}

const jsonNullable = (value: string | null): string => (value === null ? 'null' : jsonString(value));

/**
 * A session's links as the answer writes them, kept beside the links object sessionView keeps
 * (services/sessions.ts): a third of the answer's characters, tested for escapes once per session
 * rather than on every read.
 */
const linksJson = new WeakMap<SessionLinks, string>();

function sessionLinksJson(links: SessionLinks): string {
  let json = linksJson.get(links);
  if (json === undefined) {
    json =
      `,"qrPayload":${jsonString(links.qrPayload)},"verificationUrl":${jsonString(links.verificationUrl)}` +
      `,"openid4vpUri":${jsonString(links.openid4vpUri)}`;
    linksJson.set(links, json);
  }
  return json;
}

/** `Session` (session-schemas.ts): `result` exactly when completed (sessionView sets it only then). */
function sessionObjectJson(view: SessionView): string {
  return (
    `{"sessionId":${jsonString(view.sessionId)},"challengeNonce":${jsonString(view.challengeNonce)}` +
    `${sessionLinksJson(view.links)},"expiresAt":${jsonString(view.expiresAt)}` +
    `,"appId":${jsonString(view.appId)},"environment":${jsonString(view.environment)}` +
    `,"purpose":${jsonString(view.purpose)},"requiredClaims":${JSON.stringify(view.requiredClaims)}` +
    `,"metadata":${JSON.stringify(view.metadata)},"clientReference":${jsonNullable(view.clientReference)}` +
    `,"returnUrl":${jsonNullable(view.returnUrl)},"createdAt":${jsonString(view.createdAt)}` +
    `,"consentedAt":${jsonNullable(view.consentedAt)},"completedAt":${jsonNullable(view.completedAt)}` +
    `,"redacted":${view.redacted},"redactedAt":${jsonNullable(view.redactedAt)}` +
    `,"status":${jsonString(view.status)}` +
    (view.result ? `,"result":${JSON.stringify(resultObject(view.result))}}` : '}')
  );
}

/** `{ success: true, data: Session }`. */
export function sessionJson(view: SessionView): string {
  return `{"success":true,"data":${sessionObjectJson(view)}}`;
}

/** `{ success: true, data: CreatedSession }`: the creation fields only (docs/sessions.md). */
export function createdSessionJson(view: SessionView): string {
  return (
    `{"success":true,"data":{"sessionId":${jsonString(view.sessionId)},"status":${jsonString(view.status)}` +
    `,"challengeNonce":${jsonString(view.challengeNonce)}${sessionLinksJson(view.links)}` +
    `,"expiresAt":${jsonString(view.expiresAt)}}}`
  );
}

/** A page of sessions: `{ success: true, data: Session[], pagination }`. */
export function sessionListJson(
  views: SessionView[],
  pagination: { hasMore: boolean; nextCursor: string | null },
): string {
  return (
    `{"success":true,"data":[${views.map(sessionObjectJson).join(',')}]` +
    `,"pagination":{"hasMore":${pagination.hasMore},"nextCursor":${jsonNullable(pagination.nextCursor)}}}`
  );
}
