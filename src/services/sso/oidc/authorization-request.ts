import { createHash } from 'node:crypto';
import * as client from 'openid-client';
import type { IdentityProvider } from '../../../domain/identity-providers.ts';

/**
 * The authorization request of a university login over OpenID Connect: the code flow with PKCE
 * (S256), `state` the login request's id (the row that binds it to the session and this browser),
 * and a `nonce` derived from the session. Neither the nonce nor the code verifier is stored:
 *
 * - nonce = SHA-256(session challenge ‖ request id): only an ID token minted for this login of
 *   this session carries it, and the session's challenge never leaves the service and the portal;
 * - code verifier = SHA-256(browser secret ‖ request id): only the browser holding the HttpOnly
 *   binding cookie (whose secret the service keeps only hashed) lets the code be redeemed, so a
 *   code that leaks or is injected into another browser's callback cannot be.
 *
 * Only the affiliation is asked for: scope `openid`, plus the affiliation claim's scope when the
 * provider lists one by that name (the eduGAIN/SATOSA convention), and the claim itself through
 * the `claims` parameter where supported. Never `profile` or `email`.
 */

export const CALLBACK_PATH = '/oidc/v1/callback';

function derive(label: string, secret: string, requestId: string): string {
  return createHash('sha256').update(`matricula/oidc/${label}\0${secret}\0${requestId}`).digest('base64url');
}

export function loginNonce(challengeNonce: string, requestId: string): string {
  return derive('nonce', challengeNonce, requestId);
}

export function pkceVerifier(browserSecret: string, requestId: string): string {
  return derive('pkce', browserSecret, requestId);
}

export function callbackUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${CALLBACK_PATH}`;
}

export async function authorizationUrl(
  config: client.Configuration,
  idp: IdentityProvider,
  input: { baseUrl: string; requestId: string; challengeNonce: string; browserSecret: string },
): Promise<string> {
  const metadata = config.serverMetadata();
  const claim = idp.oidc!.affiliationClaim;
  const scopes = ['openid'];
  if (metadata.scopes_supported?.includes(claim)) scopes.push(claim);
  const parameters: Record<string, string> = {
    response_type: 'code',
    redirect_uri: callbackUrl(input.baseUrl),
    scope: scopes.join(' '),
    state: input.requestId,
    nonce: loginNonce(input.challengeNonce, input.requestId),
    code_challenge: await client.calculatePKCECodeChallenge(pkceVerifier(input.browserSecret, input.requestId)),
    code_challenge_method: 'S256',
  };
  if (metadata.claims_parameter_supported)
    parameters.claims = JSON.stringify({ id_token: { [claim]: { essential: true } } });
  return client.buildAuthorizationUrl(config, parameters).href;
}
