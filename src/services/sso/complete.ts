import {
  judgeAffiliation,
  type IdentityProvider,
  type LoginEvidenceFormat,
  type ReleasedAffiliation,
} from '../../domain/identity-providers.ts';
import type { Session } from '../../domain/session.ts';
import type { RejectionReason } from '../../proofs/types.ts';
import { findIdentityProvider, type StoredIdentityProvider } from '../../store/identity-providers.ts';
import { findSession } from '../../store/sessions.ts';
import { findSsoRequest, purgeExpiredSsoRows, spendAssertion, type SsoRequest } from '../../store/sso-requests.ts';
import type { ServiceDeps } from '../deps.ts';
import { ERROR_STATUS } from '../../errors.ts';
import { rejectedMessage, REFUSAL_API_CODES, type NotAccepted } from '../judgement.ts';
import { sessionRefused } from '../sessions.ts';
import { completeSession, decide, rejectAttempt, sameSecret } from '../wallet.ts';
import { loginResult } from './judge.ts';
import { browserHash } from './login.ts';

/**
 * A university login refused before it could count against a session: it answers no outstanding
 * request, came back to another browser, or replays an accepted assertion. The session is not
 * touched (whoever posted it may not be its student).
 */
export class LoginRefused extends Error {
  constructor(
    /** Shown on the page and in X-Matricula-Rejection-Reason: a rejection reason, or a refusal's API code. */
    readonly reason: RejectionReason | ApiRefusalCode,
    message: string,
    /** The page's HTTP status. */
    readonly status: number = 400,
  ) {
    super(message);
    this.name = 'LoginRefused';
  }
}

type ApiRefusalCode = (typeof REFUSAL_API_CODES)[keyof typeof REFUSAL_API_CODES];

/**
 * A login that completed nothing, as the page the student's browser is shown: a rejection is a
 * 400 with its reason, in the same words as on every other channel (services/judgement.ts); a
 * refusal has the API's status and code (the session expired: 410 `session_expired`).
 */
export function loginRefusalOf(outcome: NotAccepted): LoginRefused {
  if (outcome.kind === 'rejected') return new LoginRefused(outcome.reason, rejectedMessage(outcome));
  const code = REFUSAL_API_CODES[outcome.refusal];
  return new LoginRefused(code, outcome.message, ERROR_STATUS[code]);
}

/** The outstanding request a response answers, if it came back to the browser that asked. */
export async function requestAnswered(
  deps: ServiceDeps,
  requestId: string,
  browserSecret: string | undefined,
): Promise<SsoRequest> {
  const request = await findSsoRequest(deps.db, requestId);
  if (!request || Date.parse(request.expiresAt) <= deps.clock.now().getTime())
    throw new LoginRefused('nonce_mismatch', 'the response answers no outstanding login request of ours');
  if (!browserSecret || !sameSecret(browserHash(browserSecret), request.browserHash))
    throw new LoginRefused(
      'nonce_mismatch',
      'the response came back to another browser than the one that asked for it',
    );
  return request;
}

export async function requestedProvider(deps: ServiceDeps, request: SsoRequest): Promise<StoredIdentityProvider> {
  const idp = await findIdentityProvider(deps.db, request.idpId);
  if (!idp) throw new LoginRefused('untrusted_issuer', 'the identity provider was removed from the registry');
  return idp;
}

/** The student answered through their university: that is their consent (`consent.approved`). */
async function consented(deps: ServiceDeps, session: Session): Promise<Session> {
  if (session.status === 'consented') return session;
  if (!(await decide(deps, session, 'approved')))
    throw loginRefusalOf(await sessionRefused(deps, session.id, 'answer'));
  return { ...session, status: 'consented' };
}

async function openSession(deps: ServiceDeps, request: SsoRequest): Promise<Session> {
  const session = await findSession(deps.db, request.sessionId);
  if (!session) throw new LoginRefused('nonce_mismatch', 'the session of this login no longer exists');
  return consented(deps, session);
}

/** A login whose cryptography failed: a rejected attempt of the session (the fifth completes it), refused. */
export async function rejectLogin(
  deps: ServiceDeps,
  request: SsoRequest,
  protocol: 'saml' | 'oidc',
  rejection: { reason: RejectionReason; message: string },
): Promise<never> {
  throw loginRefusalOf(await rejectAttempt(deps, await openSession(deps, request), protocol, rejection));
}

export interface LoginOutcome {
  sessionId: string;
  verified: boolean;
}

/**
 * A login whose cryptography held: its assertion (or ID token) id is spent first, so a replay is
 * refused as such even once the session has ended; then the affiliation is judged and the
 * session completes, through the same unit of work, events and webhooks as a wallet's answer.
 */
export async function completeLogin(
  deps: ServiceDeps,
  input: {
    request: SsoRequest;
    idp: IdentityProvider;
    protocol: 'saml' | 'oidc';
    format: LoginEvidenceFormat;
    evidenceId: string;
    evidenceExpiresAt: string;
    affiliation: ReleasedAffiliation;
  },
): Promise<LoginOutcome> {
  const { request, idp, protocol } = input;
  const spent = await spendAssertion(deps.db, {
    issuer: idp.entityId,
    assertionId: input.evidenceId,
    expiresAt: input.evidenceExpiresAt,
  });
  if (!spent) throw new LoginRefused('assertion_replayed', 'this assertion was accepted before: a replay is refused');
  const verdict = judgeAffiliation(input.affiliation, idp.scopes);
  if (verdict.kind === 'untrusted_scope')
    return rejectLogin(deps, request, protocol, {
      reason: 'untrusted_issuer',
      message: `the identity provider may not vouch for the scope ${verdict.scope} (not a shibmd:Scope of its metadata)`,
    });
  const session = await openSession(deps, request);
  const result = loginResult(session, idp, verdict, { protocol, format: input.format });
  if (!(await completeSession(deps, session, result, deps.clock.now().toISOString())))
    throw loginRefusalOf(await sessionRefused(deps, session.id, 'answer'));
  return { sessionId: session.id, verified: result.verified };
}

/** Login requests and spent assertion ids past their expiry (the expired-rows purge job). */
export function purgeExpiredLoginRows(deps: Pick<ServiceDeps, 'db' | 'clock'>): Promise<number> {
  return purgeExpiredSsoRows(deps.db, deps.clock.now().toISOString());
}
