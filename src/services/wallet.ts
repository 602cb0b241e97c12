import { createHash, timingSafeEqual } from 'node:crypto';
import { noReportedClaims } from '../domain/claims.ts';
import { effectiveStatus, MAX_FAILED_ATTEMPTS, type SessionStatus } from '../domain/session-state.ts';
import { ApiError, notFound } from '../errors.ts';
import { acceptedFormats } from '../proofs/formats.ts';
import { claimsToRequest } from '../proofs/qualify.ts';
import type { CredentialFormat } from '../domain/credentials.ts';
import { findApplicationById } from '../store/applications.ts';
import { findSession, recordFailedAttempt, transitionSession } from '../store/sessions.ts';
import { type Session, type SessionResult } from '../domain/session.ts';
import type { ServiceDeps } from './deps.ts';
import { checkPresentation, rejectionSentence } from './presentations.ts';
import { completedEventData, refusal } from './sessions.ts';

/** Compares digests so the comparison takes the same time whatever the inputs' lengths. */
function sameSecret(a: string, b: string): boolean {
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
  const at = deps.clock.now().toISOString();
  const to: SessionStatus = decision === 'approved' ? 'consented' : 'declined';
  const moved = await deps.unitOfWork(async (work) => {
    if (!(await transitionSession(work.db, session.id, { to, at, requireUnexpired: true }))) return false;
    await work.record(session, decision === 'approved' ? 'consent.approved' : 'consent.declined', {
      sessionId: session.id,
    });
    return true;
  });
  if (moved && to === 'declined') deps.metrics.sessionCompleted({ outcome: 'declined', format: 'none' });
  if (!moved) throw await refusal(deps, session.id, decision === 'approved' ? 'consent to' : 'decline');
  return { sessionId: session.id, status: to };
}

export interface SubmissionOutcome {
  sessionId: string;
  status: 'completed';
  verified: boolean;
  failureReason: string | null;
  failureMessage: string | null;
}

async function complete(deps: ServiceDeps, session: Session, result: SessionResult, at: string): Promise<boolean> {
  const moved = await deps.unitOfWork(async (work) => {
    if (!(await transitionSession(work.db, session.id, { to: 'completed', at, requireUnexpired: true, result })))
      return false;
    await work.record(session, 'verification.completed', completedEventData(session.id, result));
    return true;
  });
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
  const now = deps.clock.now();
  const outcome = await checkPresentation(deps, {
    format: input.format,
    presentation: input.presentation,
    nonce: session.challengeNonce,
    audience: deps.config.baseUrl,
    environment: session.environment,
    requiredClaims: session.requiredClaims,
    now,
  });
  const at = now.toISOString();

  if (outcome.kind === 'judged') {
    if (!(await complete(deps, session, outcome.result, at))) throw await refusal(deps, session.id, 'present to');
    return {
      sessionId: session.id,
      status: 'completed',
      verified: outcome.result.verified,
      failureReason: outcome.result.failureReason,
      failureMessage: outcome.result.failureMessage,
    };
  }

  const attempts = await recordFailedAttempt(deps.db, session.id, at);
  if (attempts === undefined) throw await refusal(deps, session.id, 'present to');
  if (attempts >= MAX_FAILED_ATTEMPTS) {
    const result: SessionResult = {
      verified: false,
      format: null,
      university: null,
      claims: noReportedClaims(),
      failureReason: 'too_many_attempts',
      failureMessage: `${MAX_FAILED_ATTEMPTS} presentations were rejected. The last one: ${rejectionSentence(outcome.message)}`,
    };
    await complete(deps, session, result, at);
    throw new ApiError(
      'presentation_rejected',
      `${rejectionSentence(outcome.message)} That was the last attempt: the session is completed unverified (too_many_attempts).`,
      {
        param: 'presentation',
        reason: outcome.reason,
      },
    );
  }
  const left = MAX_FAILED_ATTEMPTS - attempts;
  const attemptsLeft = `${left} attempt${left === 1 ? '' : 's'} left.`;
  throw new ApiError('presentation_rejected', `${rejectionSentence(outcome.message)} ${attemptsLeft}`, {
    param: 'presentation',
    reason: outcome.reason,
  });
}
