import { createHash, timingSafeEqual } from 'node:crypto';
import { noReportedClaims } from '../domain/claims.ts';
import { effectiveStatus, MAX_FAILED_ATTEMPTS, type SessionStatus } from '../domain/session-state.ts';
import { ApiError, notFound } from '../errors.ts';
import { acceptedFormats } from '../proofs/formats.ts';
import { claimsToRequest } from '../proofs/qualify.ts';
import type { CredentialFormat } from '../domain/credentials.ts';
import type { CredentialProfile } from '../domain/credential-profiles.ts';
import { findApplicationById } from '../store/applications.ts';
import { recordFailedAttempt, transitionSession } from '../store/session-transitions.ts';
import { findSession } from '../store/sessions.ts';
import { type Session, type SessionResult, type WalletProtocol } from '../domain/session.ts';
import type { RejectionReason } from '../proofs/types.ts';
import type { Db } from '../store/db.ts';
import { acceptedMethods } from './answer-methods.ts';
import type { ServiceDeps } from './deps.ts';
import { checkPresentation, rejectionSentence } from './presentations.ts';
import { apiErrorOf, type Judgement, type Refused, type Rejected } from './judgement.ts';
import { completedEventData, refusal, sessionRefused } from './sessions.ts';

/** Compares digests so the comparison takes the same time whatever the inputs' lengths. */
export function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

/**
 * The wallet's authorization is knowing the session id and its nonce. A wrong nonce reads as an
 * unknown session (404): nothing about the session is revealed. An expired one is a 410.
 */
async function openSessionForWallet(deps: ServiceDeps, sessionId: string, nonce: string): Promise<Session> {
  const session = await findSession(deps.db, sessionId);
  if (!session || !sameSecret(nonce, session.challengeNonce)) throw notFound('session');
  if (effectiveStatus(session.status, session.expiresAt, deps.clock.now()) === 'expired') {
    throw new ApiError('session_expired', 'The session has expired.');
  }
  return session;
}

/** What the wallet shows the student and binds its presentation to. */
export async function presentationRequest(deps: ServiceDeps, sessionId: string, nonce: string) {
  const session = await openSessionForWallet(deps, sessionId, nonce);
  const app = await findApplicationById(deps.db, session.appId);
  return {
    sessionId: session.id,
    status: effectiveStatus(session.status, session.expiresAt, deps.clock.now()),
    nonce: session.challengeNonce,
    audience: deps.config.baseUrl,
    purpose: session.purpose,
    requiredClaims: claimsToRequest(session.requiredClaims),
    application: { name: app?.name ?? '' },
    environment: session.environment,
    acceptedFormats: acceptedFormats(deps.verifiers),
    expiresAt: session.expiresAt,
  };
}

export async function recordConsent(
  deps: ServiceDeps,
  sessionId: string,
  nonce: string,
  decision: 'approved' | 'declined',
) {
  const session = await openSessionForWallet(deps, sessionId, nonce);
  const to: SessionStatus = decision === 'approved' ? 'consented' : 'declined';
  if (!(await decide(deps, session, decision)))
    throw await refusal(deps, session.id, decision === 'approved' ? 'consent to' : 'decline');
  return { sessionId: session.id, status: to };
}

/**
 * The student's decision, whichever protocol carried it: consented (`consent.approved`) or
 * declined (`consent.declined`, the session ends). Returns whether this call moved the session.
 */
export async function decide(deps: ServiceDeps, session: Session, decision: 'approved' | 'declined'): Promise<boolean> {
  const at = deps.clock.now().toISOString();
  const to: SessionStatus = decision === 'approved' ? 'consented' : 'declined';
  const moved = await deps.unitOfWork.moveSession(
    session,
    { to, at, requireUnexpired: true },
    decision === 'approved' ? 'consent.approved' : 'consent.declined',
    { sessionId: session.id },
  );
  if (moved && to === 'declined') deps.metrics.sessionCompleted({ outcome: 'declined', format: 'none' });
  return moved;
}

export interface SubmissionOutcome {
  sessionId: string;
  status: 'completed';
  verified: boolean;
  failureReason: string | null;
  failureMessage: string | null;
}

/** More writes for the transaction that completes a session (a held answer deleted, say). */
export type AlsoInTransaction = (db: Db) => Promise<void>;

/**
 * Completes a consented session with its result, whichever channel produced it: the transition,
 * `verification.completed` and its deliveries in one unit of work. False when the session had
 * already moved (another answer won, or it expired).
 */
export async function completeSession(
  deps: ServiceDeps,
  session: Session,
  result: SessionResult,
  at: string,
  also?: AlsoInTransaction,
): Promise<boolean> {
  const transition = { to: 'completed' as const, at, requireUnexpired: true, result };
  const data = completedEventData(session.id, result);
  const moved = also
    ? await deps.unitOfWork(async (work) => {
        if (!(await transitionSession(work.db, session.id, transition))) return false;
        await work.record(session, 'verification.completed', data);
        await also(work.db);
        return true;
      })
    : await deps.unitOfWork.moveSession(session, transition, 'verification.completed', data);
  if (moved)
    deps.metrics.sessionCompleted({
      outcome: result.verified ? 'verified' : 'not_verified',
      format: result.format ?? 'none',
    });
  return moved;
}

/**
 * A presentation for a consented session. Cryptographically invalid: 400 with the reason, the
 * session stays open, and the fifth rejection completes it unverified. Valid: the session
 * completes, verified or not. Of two racing presentations exactly one completes the session;
 * afterwards the nonce is spent and every further presentation is refused.
 */
export async function submitPresentation(
  deps: ServiceDeps,
  sessionId: string,
  input: { nonce: string; format: CredentialFormat; presentation: unknown },
): Promise<SubmissionOutcome> {
  const session = await openSessionForWallet(deps, sessionId, input.nonce);
  if (session.status !== 'consented')
    throw new ApiError(
      'invalid_state',
      session.status === 'pending'
        ? "Record the student's consent before presenting."
        : `Cannot present to a ${session.status} session.`,
    );
  return answerConsentedSession(deps, session, {
    protocol: 'matricula',
    format: input.format,
    presentation: input.presentation,
    nonce: session.challengeNonce,
    audience: deps.config.baseUrl,
  });
}

/** A presentation for a consented session, as one wallet protocol carried it. */
export interface Answer {
  protocol: WalletProtocol;
  format: CredentialFormat;
  presentation: unknown;
  /** What the presentation must be bound to: the protocol's nonce and audience. */
  nonce: string;
  audience: string;
  /** The profiles this answer is checked against; every accepted one when absent (OpenID4VP narrows to the query answered). */
  profiles?: readonly CredentialProfile[];
}

/**
 * The wallet protocol's answer to a consented session: completed (verified or not), or an
 * `ApiError` in the API's words (`presentation_rejected` with its reason, `forbidden`, or the
 * session's state).
 */
export async function answerConsentedSession(
  deps: ServiceDeps,
  session: Session,
  answer: Answer,
  also?: AlsoInTransaction,
): Promise<SubmissionOutcome> {
  const judgement = await judgeAnswer(deps, session, answer);
  if (judgement.kind !== 'accepted') throw apiErrorOf(judgement);
  const completed = await completeWithResult(deps, session, judgement.result, also);
  if (completed.kind === 'refused') throw apiErrorOf(completed);
  return completed.outcome;
}

/**
 * Judges an answer without completing the session, whichever channel carried it: accepted (the
 * result to complete the session with), rejected (a failed attempt, counted: {@link rejectAttempt})
 * or refused (the session does not take wallets, or is no longer open). A value each channel maps
 * to its own wire format (services/judgement.ts).
 */
export async function judgeAnswer(deps: ServiceDeps, session: Session, answer: Answer): Promise<Judgement> {
  if (!(await acceptedMethods(deps, session)).includes('wallet'))
    return {
      kind: 'refused',
      refusal: 'method_not_allowed',
      message: 'This session does not accept wallets (allowedMethods).',
    };
  const outcome = await checkPresentation(deps, {
    format: answer.format,
    presentation: answer.presentation,
    nonce: answer.nonce,
    audience: answer.audience,
    environment: session.environment,
    requiredClaims: session.requiredClaims,
    now: deps.clock.now(),
    // The same profiles hold for every protocol (docs/credential-profiles.md).
    profiles: answer.profiles ?? (await deps.profiles.accepted()),
  });
  if (outcome.kind === 'judged') return { kind: 'accepted', result: { ...outcome.result, protocol: answer.protocol } };
  return rejectAttempt(deps, session, answer.protocol, outcome);
}

/** A session completed by an answer: the wallet protocol's response body. */
export interface Completed {
  kind: 'completed';
  outcome: SubmissionOutcome;
}

/**
 * Completes a consented session with an accepted result (`verification.completed`); refused when
 * the session had moved meanwhile (another answer won, it expired, it was cancelled).
 */
export async function completeWithResult(
  deps: ServiceDeps,
  session: Session,
  result: SessionResult,
  also?: AlsoInTransaction,
): Promise<Completed | Refused> {
  if (!(await completeSession(deps, session, result, deps.clock.now().toISOString(), also)))
    return sessionRefused(deps, session.id, 'present to');
  return {
    kind: 'completed',
    outcome: {
      sessionId: session.id,
      status: 'completed',
      verified: result.verified,
      failureReason: result.failureReason,
      failureMessage: result.failureMessage,
    },
  };
}

/**
 * Counts a rejected answer of a consented session, whichever channel carried it: the fifth
 * completes the session unverified (too_many_attempts), and the business learns why. Refused
 * when the session is no longer open (nothing counted).
 */
export async function rejectAttempt(
  deps: ServiceDeps,
  session: Session,
  protocol: WalletProtocol,
  rejection: { reason: RejectionReason; message: string; detail?: string },
): Promise<Rejected | Refused> {
  const at = deps.clock.now().toISOString();
  const attempts = await recordFailedAttempt(deps.db, session.id, at);
  if (attempts === undefined) return sessionRefused(deps, session.id, 'present to');
  const rejected: Rejected = {
    kind: 'rejected',
    reason: rejection.reason,
    message: rejection.message,
    ...(rejection.detail !== undefined ? { detail: rejection.detail } : {}),
    attemptsLeft: Math.max(0, MAX_FAILED_ATTEMPTS - attempts),
  };
  if (rejected.attemptsLeft === 0) {
    const result: SessionResult = {
      verified: false,
      protocol,
      format: null,
      university: null,
      claims: noReportedClaims(),
      failureReason: 'too_many_attempts',
      failureMessage: `${MAX_FAILED_ATTEMPTS} presentations were rejected. The last one: ${rejectionSentence(rejection.message)}`,
    };
    await completeSession(deps, session, result, at);
  }
  return rejected;
}
