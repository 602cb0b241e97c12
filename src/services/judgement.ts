import type { SessionResult } from '../domain/session.ts';
import { ApiError, type ErrorCode } from '../errors.ts';
import type { RejectionReason } from '../proofs/types.ts';
import { rejectionSentence } from './presentations.ts';

/**
 * What became of a student's answer to a session, whichever channel carried it (the wallet
 * protocol, OpenID4VP, a university login): a value, never an exception. Each channel maps it to
 * its own wire format in one place, by its kind, never by an error's code string:
 *
 * - the API's error envelope (the wallet protocol, and the session refusals of the business API):
 *   {@link apiErrorOf} below;
 * - OpenID4VP's OAuth error responses: `openid4vp/answer-errors.ts` `oauthErrorOf`;
 * - a university login's refusal page: `sso/complete.ts` `loginRefusalOf`.
 *
 * `test/services/judgement-channels.test.ts` checks that every rejection reason and every refusal maps to
 * the same wire code, status and words on each channel, whatever the reason.
 */

/** The answer proves something: the session's result, verified or not (the channel completes the session with it). */
export interface Accepted {
  kind: 'accepted';
  result: SessionResult;
}

/** The answer proves nothing: a failed attempt of the session, already counted. */
export interface Rejected {
  kind: 'rejected';
  reason: RejectionReason;
  /** The verifier's words, a lower-case fragment: the student and the business may read them. */
  message: string;
  /** For the operator's log only, never sent: addresses, error codes of a fetch. */
  detail?: string;
  /** The attempts the session still takes; 0: this one was the last, the session completed `too_many_attempts`. */
  attemptsLeft: number;
}

/**
 * Why a session takes no answer at all: it expired, it is no longer open for this (another
 * answer, a decline or a cancellation moved it), or it does not accept this answer method.
 */
export const SESSION_REFUSALS = ['expired', 'not_open', 'method_not_allowed'] as const;
export type SessionRefusal = (typeof SESSION_REFUSALS)[number];

/** The session takes no answer: nothing was counted. */
export interface Refused {
  kind: 'refused';
  refusal: SessionRefusal;
  /** A sentence for the caller, e.g. "Cannot present to a completed session." */
  message: string;
}

/** The judgement of an answer: accepted (a result), rejected (a failed attempt) or refused (by the session). */
export type Judgement = Accepted | Rejected | Refused;

/** What an answer came to when it completed nothing: the part every channel maps to its wire format. */
export type NotAccepted = Rejected | Refused;

/** The one wording of a rejection, the same on every channel: the verifier's words and the attempts left. */
export function rejectedMessage(rejection: Pick<Rejected, 'message' | 'attemptsLeft'>): string {
  const sentence = rejectionSentence(rejection.message);
  const left = rejection.attemptsLeft;
  if (left <= 0)
    return `${sentence} That was the last attempt: the session is completed unverified (too_many_attempts).`;
  return `${sentence} ${left} attempt${left === 1 ? '' : 's'} left.`;
}

/** A session refusal in the API's vocabulary (docs/sessions.md): 410, 409 or 403. */
export const REFUSAL_API_CODES = {
  expired: 'session_expired',
  not_open: 'invalid_state',
  method_not_allowed: 'forbidden',
} as const satisfies Record<SessionRefusal, ErrorCode>;

/**
 * The API's wire format (the wallet protocol's envelope): a rejection is 400
 * `presentation_rejected` with its `reason`; a refusal its code of {@link REFUSAL_API_CODES}.
 */
export function apiErrorOf(outcome: NotAccepted): ApiError {
  if (outcome.kind === 'refused') return new ApiError(REFUSAL_API_CODES[outcome.refusal], outcome.message);
  return new ApiError('presentation_rejected', rejectedMessage(outcome), {
    param: 'presentation',
    reason: outcome.reason,
    detail: outcome.detail,
  });
}
