import { buildOpenid4vpUri } from './openid4vp/request.ts';
import type { Config } from '../config.ts';
import { BoundedCache } from '../domain/bounded-cache.ts';
import { isClaimName, CLAIM_CATALOGUE, type ClaimName } from '../domain/claims.ts';
import { isoTimestamp } from '../domain/clock.ts';
import { newId, pooledRandomBytes } from '../domain/ids.ts';
import { checkReturnUrl } from '../domain/return-url.ts';
import { effectiveStatus, SESSION_TTL, type SessionStatus } from '../domain/session-state.ts';
import { ApiError, invalidRequest, invalidState, notFound } from '../errors.ts';
import type { KeyToConfirm, Principal } from '../domain/principal.ts';
import type { PageRequest } from '../store/pagination.ts';
import { findSession, listSessions } from '../store/sessions.ts';
import { type Session, type SessionResult } from '../domain/session.ts';
import type { EventData } from '../domain/events.ts';
import { applicationForCaller, assertSameEnvironment } from './access.ts';
import type { ServiceDeps } from './deps.ts';
import { apiErrorOf, type Refused } from './judgement.ts';
import type { AnswerMethod } from '../domain/identity-providers.ts';
import { setAnswerMethods } from '../store/answer-methods.ts';

export interface NewSession {
  appId: string;
  purpose: string;
  requiredClaims: string[];
  expiresInSeconds?: number;
  metadata?: Record<string, string>;
  clientReference?: string;
  /** Where the portal sends the student once the session ends; at one of the application's allowed origins. */
  returnUrl?: string;
  /** The channels this session accepts (docs/university-login.md); by default its application's, else all. */
  allowedMethods?: AnswerMethod[];
}

/** `nonce_` + 43 base64url characters: 256 random bits, unique per session. */
export function newChallengeNonce(): string {
  return `nonce_${pooledRandomBytes(32).toString('base64url')}`;
}

function checkedClaims(requested: string[]): ClaimName[] {
  const unknown = requested.filter((claim) => !isClaimName(claim));
  if (unknown.length > 0) {
    throw invalidRequest(
      `Unknown claim ${unknown.map((c) => `"${c}"`).join(', ')}. The catalogue is: ${CLAIM_CATALOGUE.join(', ')}.`,
      'requiredClaims',
    );
  }
  return [...new Set(requested)] as ClaimName[];
}

/** A `returnUrl` at one of the application's allowed origins (domain/return-url.ts), else a 400. */
function checkedReturnUrl(deps: Pick<ServiceDeps, 'config'>, allowed: readonly string[], returnUrl: string): string {
  const check = checkReturnUrl(returnUrl, allowed, deps.config.outboundAllowPrivateTargets);
  if (!check.ok) throw invalidRequest(check.message, 'returnUrl');
  return check.value;
}

/**
 * A caller admitted without reading its key (http/auth.ts `confirmsKey`): the key the insert checks,
 * and how to authenticate the caller as usual if the insert refuses it.
 */
export interface KeyConfirmation {
  key: KeyToConfirm;
  /** Reads the key; throws authentication's error for a key revoked, unknown or archived since. */
  reauthenticate(): Promise<Principal>;
}

/**
 * Creates a session for `principal`. With `confirmation`, the insert stores it only while the key
 * still exists and its application is active; if it refuses, the caller is authenticated again
 * (its error thrown) and, should the key be good after all, the session created under it.
 */
export async function createSession(
  deps: ServiceDeps,
  principal: Principal,
  input: NewSession,
  confirmation?: KeyConfirmation,
): Promise<Session> {
  const requiredClaims = checkedClaims(input.requiredClaims);
  const ttl = input.expiresInSeconds ?? SESSION_TTL.defaultSeconds;
  // The key's own application was found active, in the key's organization and environment, by
  // authentication a moment ago: no second read for it. Any other application is checked here, and
  // so is the key's own when a returnUrl must be checked against its allowed origins.
  const app =
    input.appId === principal.appId && input.returnUrl === undefined
      ? { id: principal.appId, orgId: principal.orgId, environment: principal.environment, allowedReturnOrigins: [] }
      : await applicationForCaller(deps.db, principal, input.appId, { param: 'appId', mustBeActive: true });
  const returnUrl =
    input.returnUrl === undefined ? null : checkedReturnUrl(deps, app.allowedReturnOrigins, input.returnUrl);
  const now = deps.clock.now();
  const createdAt = isoTimestamp(now);
  const session: Session = {
    id: newId('session', deps.clock),
    appId: app.id,
    orgId: app.orgId,
    environment: app.environment,
    status: 'pending',
    challengeNonce: newChallengeNonce(),
    purpose: input.purpose,
    requiredClaims,
    metadata: input.metadata ?? null,
    clientReference: input.clientReference ?? null,
    failedAttempts: 0,
    result: null,
    expiresAt: isoTimestamp(new Date(now.getTime() + ttl * 1000)),
    createdAt,
    updatedAt: createdAt,
    consentedAt: null,
    completedAt: null,
    redactedAt: null,
    returnUrl,
  };
  const stored = await deps.sessionInserts.insert(session, confirmation?.key);
  // Refused (only a session with a key to check can be): the key is read as on any other route.
  if (!stored && confirmation) return createSession(deps, await confirmation.reauthenticate(), input);
  if (input.allowedMethods) await setAnswerMethods(deps.db, session.id, [...new Set(input.allowedMethods)]);
  deps.metrics.sessionCreated({ environment: session.environment });
  return session;
}

/**
 * A session of the caller's organization and environment (404 for another organization's).
 * `prefetched` is the session as authentication already read it with the key, in the caller's
 * organization (null: none there); without it the session is read here.
 */
export async function sessionForCaller(
  deps: ServiceDeps,
  principal: Principal,
  id: string,
  prefetched?: { sessionId: string; session: Session | null } | null,
): Promise<Session> {
  const session = prefetched?.sessionId === id ? prefetched.session : await findSession(deps.db, id);
  if (!session || session.orgId !== principal.orgId) throw notFound('session', 'sessionId');
  assertSameEnvironment(principal, session.environment);
  return session;
}

export async function listSessionsFor(
  deps: ServiceDeps,
  principal: Principal,
  filter: { appId?: string; status?: SessionStatus },
  page: PageRequest,
) {
  if (filter.appId) await applicationForCaller(deps.db, principal, filter.appId, { param: 'appId' });
  return listSessions(
    deps.db,
    { orgId: principal.orgId, environment: principal.environment, ...filter, now: deps.clock.now() },
    page,
  );
}

/** Where a session's answer points: its QR payload, its portal page and its OpenID4VP URI. */
export interface SessionLinks {
  readonly qrPayload: string;
  readonly verificationUrl: string;
  readonly openid4vpUri: string;
}

const KEPT_LINKS = 10_000;
const keptLinks = new WeakMap<Config, BoundedCache<string, SessionLinks>>();

/**
 * A session's links, made once and kept per configuration (bounded, least recently used out
 * first): they depend on the configuration and on the session's id and challenge only, which never
 * change, and a business reads the same session until it completes. The same object on every read
 * while kept, so that what is made of it can be kept beside it (routes/session-json.ts).
 */
function sessionLinks(config: Config, session: Session): SessionLinks {
  let kept = keptLinks.get(config);
  if (!kept) keptLinks.set(config, (kept = new BoundedCache<string, SessionLinks>(KEPT_LINKS)));
  const key = `${session.id}:${session.challengeNonce}`;
  let links = kept.get(key);
  if (!links) {
    links = {
      qrPayload: `${config.appScheme}://verify?session=${encodeURIComponent(session.id)}&nonce=${encodeURIComponent(session.challengeNonce)}`,
      verificationUrl: `${config.portalUrl}/verify/${session.id}`,
      // Made afresh: kept here, it need not also be kept by openid4vpUri's own cache.
      openid4vpUri: buildOpenid4vpUri(config, session),
    };
    kept.set(key, links);
  }
  return links;
}

/** The public view: creation fields (docs/sessions.md), state, and the result once completed. */
export function sessionView(session: Session, deps: Pick<ServiceDeps, 'config' | 'clock'>) {
  const { config } = deps;
  const status = effectiveStatus(session.status, session.expiresAt, deps.clock.now());
  const links = sessionLinks(config, session);
  return {
    sessionId: session.id,
    status,
    challengeNonce: session.challengeNonce,
    links,
    qrPayload: links.qrPayload,
    verificationUrl: links.verificationUrl,
    openid4vpUri: links.openid4vpUri,
    expiresAt: session.expiresAt,
    appId: session.appId,
    environment: session.environment,
    purpose: session.purpose,
    requiredClaims: session.requiredClaims,
    metadata: session.metadata,
    clientReference: session.clientReference,
    returnUrl: session.returnUrl,
    createdAt: session.createdAt,
    consentedAt: session.consentedAt,
    completedAt: session.completedAt,
    redacted: session.redactedAt !== null,
    redactedAt: session.redactedAt,
    ...(status === 'completed' && session.result ? { result: session.result } : {}),
  };
}

/** `verification.completed` data (docs/webhooks.md), plus the wallet protocol that answered. */
export function completedEventData(sessionId: string, result: SessionResult): EventData<'verification.completed'> {
  return {
    sessionId,
    verified: result.verified,
    university: result.university,
    claims: result.claims,
    protocol: result.protocol,
  };
}

/** Explains why a session did not move, from its state as it is now. */
export async function sessionRefused(deps: ServiceDeps, sessionId: string, action: string): Promise<Refused> {
  const current = await findSession(deps.db, sessionId);
  const status = current ? effectiveStatus(current.status, current.expiresAt, deps.clock.now()) : 'expired';
  if (status === 'expired') return { kind: 'refused', refusal: 'expired', message: 'The session has expired.' };
  return { kind: 'refused', refusal: 'not_open', message: `Cannot ${action} a ${status} session.` };
}

/** {@link sessionRefused} in the API's words: 410 `session_expired` or 409 `invalid_state`. */
export async function refusal(deps: ServiceDeps, sessionId: string, action: string): Promise<ApiError> {
  return apiErrorOf(await sessionRefused(deps, sessionId, action));
}

export async function cancelSession(deps: ServiceDeps, principal: Principal, id: string): Promise<Session> {
  const session = await sessionForCaller(deps, principal, id);
  const at = deps.clock.now().toISOString();
  const moved = await deps.unitOfWork.moveSession(
    session,
    { to: 'cancelled', at, requireUnexpired: true },
    'verification.cancelled',
    { sessionId: session.id },
  );
  if (moved) deps.metrics.sessionCompleted({ outcome: 'cancelled', format: 'none' });
  if (!moved) {
    const refused = await sessionRefused(deps, session.id, 'cancel');
    // For the business, an expired session is a state like any other: not a 410.
    throw refused.refusal === 'expired' ? invalidState('Cannot cancel an expired session.') : apiErrorOf(refused);
  }
  return (await findSession(deps.db, session.id))!;
}
