import { isId } from '../../domain/ids.ts';
import { effectiveStatus } from '../../domain/session-state.ts';
import type { Session, SessionResult } from '../../domain/session.ts';
import { deleteHeldResult, findHeldResult, holdResult } from '../../store/openid4vp-held-results.ts';
import { findSession } from '../../store/sessions.ts';
import type { ServiceDeps } from '../deps.ts';
import { completeWithResult, sameSecret } from '../wallet.ts';
import type { RequestFlow } from './request.ts';
import { responseCode, sameDeviceBinding } from './session-secrets.ts';

/**
 * The same-device flow, bound to the browser that opened the portal (HAIP 1.0; OpenID4VP 1.0
 * §13.3): the portal page hands its browser a cookie; the wallet's answer is judged but held; the
 * wallet sends the student back to the portal with a response_code; only that redirect, arriving
 * with the cookie, completes the session. A same-device link forwarded to someone else's phone
 * therefore completes nothing: their browser has no cookie, the attacker's has no code, and the
 * session stays open until it expires. Cross-device flows (QR) complete on the response itself.
 */

/** The cookie's name; its path is the session's portal page, so sessions never share one. */
export const SAME_DEVICE_COOKIE = 'matricula_device';

/** A cookie for the HTTP layer to set. */
export interface BindingCookie {
  name: string;
  value: string;
  path: string;
  maxAgeSeconds: number;
  secure: boolean;
}

const portalPage = (deps: Pick<ServiceDeps, 'config'>, session: Pick<Session, 'id'>) =>
  `${deps.config.portalUrl}/verify/${encodeURIComponent(session.id)}`;

/** Same-device flows: where the wallet sends the student back after an error or a refusal (no code: nothing to complete). */
export function portalReturn(deps: ServiceDeps, session: Session, flow: RequestFlow): { redirect_uri?: string } {
  return flow.sameDevice ? { redirect_uri: portalPage(deps, session) } : {};
}

/** A judged same-device answer: kept until the redirect comes back; the wallet is told where to send the student. */
export async function holdForRedirect(
  deps: ServiceDeps,
  session: Session,
  result: SessionResult,
): Promise<{ redirect_uri: string }> {
  await holdResult(deps.db, session.id, result, deps.clock.now().toISOString());
  return { redirect_uri: `${portalPage(deps, session)}?response_code=${responseCode(session.challengeNonce)}` };
}

export interface PortalVisit {
  /** The response_code of the wallet's redirect, when the page is opened by one. */
  responseCode?: string;
  /** The binding cookie the browser sent, if any. */
  cookie?: string;
}

/**
 * A browser opens the portal page of a session. A plain visit to an open session gets the binding
 * cookie (unless it has it). The wallet's redirect (a `response_code`) never gets one (else a
 * reload of a redirect that reached the wrong browser would pass): it completes the session with
 * the held answer when the cookie and the code are both right, and otherwise changes nothing.
 */
export async function visitPortal(
  deps: ServiceDeps,
  sessionId: string,
  visit: PortalVisit,
): Promise<{ setCookie?: BindingCookie; completed?: boolean }> {
  const session = isId('session', sessionId) ? await findSession(deps.db, sessionId) : undefined;
  if (!session) return {};
  const now = deps.clock.now();
  const status = effectiveStatus(session.status, session.expiresAt, now);
  if (status !== 'pending' && status !== 'consented') return {};
  const binding = sameDeviceBinding(session.challengeNonce);
  const bound = visit.cookie !== undefined && sameSecret(visit.cookie, binding);
  if (visit.responseCode === undefined) {
    if (bound) return {};
    const maxAgeSeconds = Math.max(1, Math.ceil((Date.parse(session.expiresAt) - now.getTime()) / 1000));
    return {
      setCookie: {
        name: SAME_DEVICE_COOKIE,
        value: binding,
        path: `/verify/${encodeURIComponent(session.id)}`,
        maxAgeSeconds,
        secure: deps.config.portalUrl.startsWith('https://'),
      },
    };
  }
  if (!bound || !sameSecret(visit.responseCode, responseCode(session.challengeNonce)) || status !== 'consented')
    return { completed: false };
  const held = await findHeldResult(deps.db, session.id);
  if (!held) return { completed: false };
  const completed = await completeWithResult(deps, session, held, (db) => deleteHeldResult(db, session.id));
  // Refused: completed, cancelled or expired meanwhile; the page shows what it is now.
  return { completed: completed.kind === 'completed' };
}
