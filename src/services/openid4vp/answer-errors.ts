import { rejectedMessage, type NotAccepted } from '../judgement.ts';
import { invalidRequest, type Openid4vpError } from './open-request.ts';

/**
 * An answer that completed nothing, in OpenID4VP's words (an OAuth 2.0 error response): 400
 * `invalid_request`, a rejection with its `reason` and the same words as on every other channel
 * (services/judgement.ts).
 */
export function oauthErrorOf(outcome: NotAccepted): Openid4vpError {
  if (outcome.kind === 'rejected') return invalidRequest(rejectedMessage(outcome), outcome.reason);
  // The wallet knows an authorization request, not a session.
  return invalidRequest(outcome.refusal === 'expired' ? 'The authorization request has expired.' : outcome.message);
}
