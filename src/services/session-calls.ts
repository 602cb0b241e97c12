import { isId } from '../domain/ids.ts';
import { findSession } from '../store/sessions.ts';
import type { ServiceDeps } from './deps.ts';
import { requestToken } from './openid4vp/session-secrets.ts';
import { sameSecret } from './wallet.ts';

/** A call on a session's public routes: the session it names, and the secret it presents, if any. */
export interface SessionCall {
  sessionId: string;
  /** The challenge nonce (Matricula's wallet endpoints, the sandbox builder). */
  nonce?: string;
  /** The OpenID4VP request token (request_uri, response_uri). */
  token?: string;
}

/**
 * Whether a call names an existing session together with its secret: the nonce or the OpenID4VP
 * token when it presents one (compared in constant time), the session id alone otherwise (the
 * page and its status, which the id authorizes). The rate limits count an admitted call per
 * session, any other per client address (docs/security.md#rate-limits). Expiry does not matter
 * here: the use case answers an expired session with its own error, counted against the session.
 */
export async function sessionCallAdmitted(deps: Pick<ServiceDeps, 'db'>, call: SessionCall): Promise<boolean> {
  if (!isId('session', call.sessionId)) return false;
  const session = await findSession(deps.db, call.sessionId);
  if (!session) return false;
  if (call.nonce !== undefined) return sameSecret(call.nonce, session.challengeNonce);
  if (call.token !== undefined) return sameSecret(call.token, requestToken(session.challengeNonce));
  return true;
}
