import type { ClaimName } from '../domain/claims.ts';
import { isId } from '../domain/ids.ts';
import { returnAddress } from '../domain/return-url.ts';
import { effectiveStatus, isTerminal, type SessionStatus } from '../domain/session-state.ts';
import { ApiError, notFound } from '../errors.ts';
import type { Environment } from '../domain/environment.ts';
import { findApplicationById } from '../store/applications.ts';
import { findSession } from '../store/sessions.ts';
import { type Session } from '../domain/session.ts';
import type { ServiceDeps } from './deps.ts';
import { openid4vpUri } from './openid4vp/request.ts';
import { requestToken } from './openid4vp/session-secrets.ts';
import { sessionView } from './sessions.ts';

type PortalDeps = Pick<ServiceDeps, 'db' | 'clock' | 'config'>;

/**
 * What anyone holding a session id may learn: its state, whether it ended verified, and its
 * timing. Never the claims, the university, the format, the reason of a failure or the nonce:
 * the portal is public, the proof result belongs to the business.
 */
export interface PublicSessionStatus {
  sessionId: string;
  status: SessionStatus;
  /** Once completed, whether the student was verified; null before. */
  verified: boolean | null;
  expiresAt: string;
  /** The server's clock: the page counts down from it, never from the device's own clock. */
  now: string;
}

/** Everything the portal page shows for a session. */
export interface PortalSession extends PublicSessionStatus {
  environment: Environment;
  applicationName: string;
  purpose: string;
  requiredClaims: ClaimName[];
  /** What the QR code encodes; the portal is the place the student gets it from. */
  qrPayload: string;
  /** The same request for a standard OpenID4VP wallet: scanned from another device… */
  openid4vpUri: string;
  /** …or opened on this one: the wallet sends the student back here afterwards. */
  openid4vpSameDeviceUri: string;
  /**
   * The Digital Credentials API endpoints of the session (paths on the page's own origin, with the
   * request token of openid4vpUri): the page asks a wallet on the device through the browser.
   */
  dcApi: { requestPath: string; responsePath: string };
  /** Where the student goes once the session ends: its returnUrl with `session=<id>`; null without one. */
  returnTo: string | null;
  /** The origins that may frame the page (the application's allowedReturnOrigins); none: no framing. */
  frameAncestors: readonly string[];
}

async function lookup(deps: PortalDeps, sessionId: string): Promise<Session | undefined> {
  // A malformed id is answered like an unknown one, without touching the database.
  return isId('session', sessionId) ? findSession(deps.db, sessionId) : undefined;
}

function statusOf(session: Session, now: Date): PublicSessionStatus {
  const status = effectiveStatus(session.status, session.expiresAt, now);
  return {
    sessionId: session.id,
    status,
    verified: status === 'completed' ? (session.result?.verified ?? false) : null,
    expiresAt: session.expiresAt,
    now: now.toISOString(),
  };
}

/** The public status of a session; an unknown or malformed id is a 404. */
export async function publicSessionStatus(deps: PortalDeps, sessionId: string): Promise<PublicSessionStatus> {
  const session = await lookup(deps, sessionId);
  if (!session) throw notFound('session', 'sessionId');
  return statusOf(session, deps.clock.now());
}

/** How long a status request may wait for a change, and from which status. */
export interface StatusWait {
  /** Seconds to wait at most (0: answer at once). The session's expiry ends the wait too. */
  waitSeconds: number;
  /** The status the caller last saw; by default the status when the request arrived. */
  seen?: SessionStatus;
  /** Aborts when the caller went away: its wait ends, freeing its place. */
  signal?: AbortSignal;
}

/**
 * The public status of a session once it differs from `seen` (the portal page's long poll): at
 * once when it already does or is final, else when the session changes (a change in this process
 * wakes the request at once, one in another process within the watch's recheck), when it expires,
 * or after `waitSeconds` with the status unchanged. Refused with a 429 when too many requests
 * wait already (in this process, or on this session).
 */
export async function awaitSessionStatus(
  deps: PortalDeps & Pick<ServiceDeps, 'sessionWatch'>,
  sessionId: string,
  wait: StatusWait,
): Promise<PublicSessionStatus> {
  const until = deps.clock.now().getTime() + wait.waitSeconds * 1000;
  let current = await publicSessionStatus(deps, sessionId);
  const seen = wait.seen ?? current.status;
  for (let first = true; current.status === seen && !isTerminal(seen) && !wait.signal?.aborted; first = false) {
    const deadline = Math.min(until, Date.parse(current.expiresAt));
    if (deadline <= deps.clock.now().getTime()) break;
    const waiting = deps.sessionWatch.wait(sessionId, seen, deadline, wait.signal);
    if (!waiting) {
      // Refused on arrival: too many waiting. Later, or while the server stops: answer what is known.
      if (first && !deps.sessionWatch.closed)
        throw new ApiError('rate_limited', 'Too many status requests are waiting. Retry in 5 s.', {
          retryAfterSeconds: 5,
        });
      break;
    }
    await waiting;
    current = await publicSessionStatus(deps, sessionId);
  }
  return current;
}

/** The portal's view of a session, or undefined when there is no such session. */
export async function portalSession(deps: PortalDeps, sessionId: string): Promise<PortalSession | undefined> {
  const session = await lookup(deps, sessionId);
  if (!session) return undefined;
  const app = await findApplicationById(deps.db, session.appId);
  return {
    ...statusOf(session, deps.clock.now()),
    environment: session.environment,
    applicationName: app?.name ?? 'This service',
    purpose: session.purpose,
    requiredClaims: session.requiredClaims,
    qrPayload: sessionView(session, deps).qrPayload,
    openid4vpUri: openid4vpUri(deps.config, session),
    openid4vpSameDeviceUri: openid4vpUri(deps.config, session, { sameDevice: true }),
    dcApi: dcApiPaths(session),
    returnTo: session.returnUrl === null ? null : returnAddress(session.returnUrl, session.id),
    frameAncestors: app?.allowedReturnOrigins ?? [],
  };
}

function dcApiPaths(session: Session): PortalSession['dcApi'] {
  const base = `/openid4vp/v1/sessions/${encodeURIComponent(session.id)}/dc-api`;
  const query = `?token=${requestToken(session.challengeNonce)}`;
  return { requestPath: `${base}/request${query}`, responsePath: `${base}/response${query}` };
}
