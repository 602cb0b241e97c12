import { effectiveStatus } from '../../domain/session-state.ts';
import type { Session } from '../../domain/session.ts';
import { findSession } from '../../store/sessions.ts';
import type { ServiceDeps } from '../deps.ts';
import { sameSecret } from '../wallet.ts';
import { requestToken } from './session-secrets.ts';

/** An OAuth-style error (`{error, error_description}`) for the wallet. */
export class Openid4vpError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    /** The rejection reason, when a presentation was rejected. */
    readonly reason?: string,
  ) {
    super(description);
    this.name = 'Openid4vpError';
  }
}

export const invalidRequest = (description: string, reason?: string) =>
  new Openid4vpError(400, 'invalid_request', description, reason);

/** The session a request/response URI names, if its token is right (compared in constant time) and it is still open. */
export async function openSession(deps: ServiceDeps, sessionId: string, token: string): Promise<Session> {
  const session = await findSession(deps.db, sessionId);
  if (!session || !sameSecret(token, requestToken(session.challengeNonce)))
    throw new Openid4vpError(404, 'invalid_request', 'There is no such authorization request.');
  const status = effectiveStatus(session.status, session.expiresAt, deps.clock.now());
  if (status === 'expired') throw invalidRequest('The authorization request has expired.');
  if (status !== 'pending' && status !== 'consented')
    throw invalidRequest(`The authorization request was already answered: the session is ${status}.`);
  return session;
}
