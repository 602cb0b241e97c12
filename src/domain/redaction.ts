import type { ReportedClaims } from './claims.ts';
import type { SessionResult } from './session.ts';
import { OPEN_STATUSES, effectiveStatus, type SessionStatus } from './session-state.ts';

/**
 * Redaction (docs/sessions.md): a business forgets what a session learnt about a student and what it
 * attached to the session itself. Erased: the result's claims and university, the free-text
 * `failureMessage` (it may quote the presentation), the messages of `warnings` (kept: their
 * codes), `metadata`, `clientReference` and `returnUrl`, wherever
 * they are stored. Kept: the id, the status, `verified`, the timestamps, and the codes `format`
 * and `failureReason`, which say nothing about the student and keep the statistics whole.
 */

/** Days a session's data is kept after the session ended, unless `RESULT_RETENTION_DAYS` says otherwise. */
export const DEFAULT_RESULT_RETENTION_DAYS = 30;

/** Only a session that has ended can be redacted: an open one could still learn what was erased. */
export function canRedact(status: SessionStatus, expiresAt: string, now: Date): boolean {
  return !OPEN_STATUSES.includes(effectiveStatus(status, expiresAt, now));
}

/** Every claim key kept, each value null: the shape of the result survives, the values do not. */
export function redactedClaims(claims: ReportedClaims): ReportedClaims {
  return Object.fromEntries(Object.keys(claims).map((key) => [key, null])) as unknown as ReportedClaims;
}

export function redactedResult(result: SessionResult): SessionResult {
  const redacted = { ...result, university: null, claims: redactedClaims(result.claims), failureMessage: null };
  const warnings = redactedWarnings(result.warnings);
  return warnings === undefined ? redacted : { ...redacted, warnings: warnings as SessionResult['warnings'] };
}

/**
 * The message of a redacted warning. The API requires a message beside the code, so the original
 * (which may name the university, e.g. its status list URL) is replaced by this fixed sentence.
 */
export const REDACTED_WARNING_MESSAGE = 'Erased by redaction.';

/** Warnings reduced to their codes: a message may name the university (its status list URL). */
function redactedWarnings(warnings: unknown): unknown[] | undefined {
  if (!Array.isArray(warnings)) return undefined;
  return warnings.map((warning: unknown) =>
    warning !== null && typeof warning === 'object' && 'code' in warning
      ? { code: warning.code, message: REDACTED_WARNING_MESSAGE }
      : null,
  );
}

function hasWarningMessages(warnings: unknown): boolean {
  return (
    Array.isArray(warnings) &&
    warnings.some((warning: unknown) => {
      if (warning === null || typeof warning !== 'object') return warning !== null;
      const entries = Object.entries(warning);
      return entries.some(
        ([key, value]) => key !== 'code' && !(key === 'message' && value === REDACTED_WARNING_MESSAGE),
      );
    })
  );
}

/** Fields that hold erased data wherever a stored JSON object about the session carries them. */
const NULLED_FIELDS = ['university', 'metadata', 'clientReference', 'returnUrl', 'failureMessage'] as const;

/**
 * The stored `data` of an event about the redacted session: the erased fields null, the rest as
 * it was, and `redacted: true` when anything was erased (a re-sent `verification.completed`
 * tells its receiver why its claims are null).
 */
export function redactedEventData(data: Record<string, unknown>): Record<string, unknown> {
  const redacted = redactedObject(data);
  return redacted === data ? data : { ...redacted, redacted: true };
}

/**
 * A stored JSON document (a response kept for idempotent replays) with the erased fields of every
 * object about `sessionId` nulled. Objects about other sessions are left alone, so a document that
 * merely quotes the id (someone's `clientReference`) keeps its own data. Returns the input
 * unchanged when there was nothing to erase or it is not JSON.
 */
export function redactedDocument(json: string, sessionId: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return json;
  }
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) {
      const items = node.map(walk);
      return items.some((item, i) => item !== node[i]) ? items : node;
    }
    if (node === null || typeof node !== 'object') return node;
    const object = node as Record<string, unknown>;
    const own = object.sessionId === sessionId ? redactedObject(object) : object;
    let changed = own !== object;
    const out: Record<string, unknown> = { ...own };
    for (const [key, value] of Object.entries(own)) {
      const next = walk(value);
      if (next !== value) {
        out[key] = next;
        changed = true;
      }
    }
    return changed ? out : node;
  };
  const redacted = walk(parsed);
  return redacted === parsed ? json : JSON.stringify(redacted);
}

/** The object with its erased fields null (and a `result` or `claims` redacted); the same object if none held data. */
function redactedObject(object: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...object };
  let changed = false;
  for (const field of NULLED_FIELDS) {
    if (out[field] !== undefined && out[field] !== null) {
      out[field] = null;
      changed = true;
    }
  }
  if (isClaims(out.claims) && Object.values(out.claims).some((value) => value !== null)) {
    out.claims = redactedClaims(out.claims);
    changed = true;
  }
  if (hasWarningMessages(out.warnings)) {
    out.warnings = redactedWarnings(out.warnings);
    changed = true;
  }
  if (out.result && typeof out.result === 'object') {
    const result = redactedObject(out.result as Record<string, unknown>);
    if (result !== out.result) {
      out.result = result;
      changed = true;
    }
  }
  return changed ? out : object;
}

function isClaims(value: unknown): value is ReportedClaims {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
