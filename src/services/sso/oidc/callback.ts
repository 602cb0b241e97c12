import { createHash } from 'node:crypto';
import * as client from 'openid-client';
import type { ReleasedAffiliation } from '../../../domain/identity-providers.ts';
import type { RejectionReason } from '../../../proofs/types.ts';
import { findSession } from '../../../store/sessions.ts';
import { spendAssertion } from '../../../store/sso-requests.ts';
import type { ServiceDeps } from '../../deps.ts';
import {
  completeLogin,
  LoginRefused,
  rejectLogin,
  requestAnswered,
  requestedProvider,
  type LoginOutcome,
} from '../complete.ts';
import { callbackUrl, loginNonce, pkceVerifier } from './authorization-request.ts';
import { CLOCK_TOLERANCE_SECONDS, clientSecretOf } from './discovery.ts';

/**
 * The provider's answer at `GET /oidc/v1/callback` (the redirect_uri), in the browser that asked:
 *
 * 1. `state` names an outstanding login request of ours, and the browser holds its binding cookie
 *    (else {@link LoginRefused}, the session untouched);
 * 2. the request is answered once: its state is spent before the code is redeemed, so a replayed
 *    callback never reaches the token endpoint (`assertion_replayed`);
 * 3. openid-client redeems the code with the PKCE verifier of this browser and request, and checks
 *    the ID token: signature by a key of the provider's JWKS (alg as its metadata says), `iss`,
 *    `aud` (our client id, no other untrusted audience), `azp`, `exp`/`iat` on the service clock,
 *    and the `nonce` derived from the session; a failure is a rejected attempt of the session;
 * 4. the affiliation claim (ID token, else userinfo) is judged against the provider's domain and
 *    the session completes (complete.ts), the ID token's hash spent so it answers only once.
 *
 * Nothing of the ID token but the affiliation is kept: no name, e-mail or `sub`, in storage or logs.
 */
export async function receiveOidcCallback(
  deps: ServiceDeps,
  input: { query: string; browserSecret?: string },
): Promise<LoginOutcome> {
  const params = new URLSearchParams(input.query);
  const state = params.get('state');
  if (!state) throw new LoginRefused('nonce_mismatch', 'the answer names no login request (no state)');
  const request = await requestAnswered(deps, state, input.browserSecret);
  const idp = await requestedProvider(deps, request);
  if (idp.protocol !== 'oidc' || !idp.oidc)
    throw new LoginRefused('untrusted_issuer', 'the login request was not made to an OpenID provider');
  const error = params.get('error');
  if (error !== null)
    throw new LoginRefused(
      'malformed_presentation',
      `the identity provider answered with an error (${error.replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 64)})`,
    );
  const first = await spendAssertion(deps.db, {
    issuer: idp.entityId,
    assertionId: `state:${request.requestId}`,
    expiresAt: request.expiresAt,
  });
  if (!first)
    throw new LoginRefused('assertion_replayed', 'this login was answered before: a replayed callback is refused');
  const session = await findSession(deps.db, request.sessionId);
  if (!session) throw new LoginRefused('nonce_mismatch', 'the session of this login no longer exists');

  let config: client.Configuration;
  try {
    config = await deps.oidcDiscovery.configuration(
      idp,
      clientSecretOf(idp.clientSecretSealed, idp.id, deps.config.universityLogin.secretsKey),
    );
  } catch (err) {
    throw new LoginRefused('issuer_unreachable', `the identity provider's discovery failed: ${describe(err)}`);
  }
  let tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers;
  try {
    tokens = await client.authorizationCodeGrant(
      config,
      new URL(`${callbackUrl(deps.config.baseUrl)}?${input.query}`),
      {
        pkceCodeVerifier: pkceVerifier(input.browserSecret!, request.requestId),
        expectedNonce: loginNonce(session.challengeNonce, request.requestId),
        expectedState: state,
        idTokenExpected: true,
      },
    );
  } catch (err) {
    const rejection = rejectionOf(err);
    if (!rejection) throw new LoginRefused('issuer_unreachable', `the token endpoint failed: ${describe(err)}`);
    return rejectLogin(deps, request, 'oidc', rejection);
  }
  deps.oidcDiscovery.keepKeys(idp, config);
  const claims = tokens.claims()!;
  let released = claims[idp.oidc.affiliationClaim];
  if (released === undefined && tokens.access_token && config.serverMetadata().userinfo_endpoint) {
    try {
      released = (await client.fetchUserInfo(config, tokens.access_token, claims.sub))[idp.oidc.affiliationClaim];
    } catch (err) {
      const rejection = rejectionOf(err);
      if (!rejection) throw new LoginRefused('issuer_unreachable', `the userinfo endpoint failed: ${describe(err)}`);
      return rejectLogin(deps, request, 'oidc', rejection);
    }
  }
  return completeLogin(deps, {
    request,
    idp,
    protocol: 'oidc',
    format: 'oidc-id-token',
    evidenceId: `id_token:${createHash('sha256').update(tokens.id_token!).digest('base64url')}`,
    evidenceExpiresAt: new Date((claims.exp + CLOCK_TOLERANCE_SECONDS) * 1000).toISOString(),
    affiliation: affiliationOf(released),
  });
}

/** The claim's values: an array of strings, or one string (space-separated, as some providers send). */
export function affiliationOf(value: unknown): ReleasedAffiliation {
  const values = Array.isArray(value) ? value : typeof value === 'string' ? value.split(/\s+/) : [];
  return { scoped: values.filter((v): v is string => typeof v === 'string' && v !== '').slice(0, 50), unscoped: [] };
}

/**
 * What a failure of openid-client means for the session: a rejection (the answer is not good),
 * or undefined for a fault on the way (network, the provider down), which is not the student's.
 * Only our own words reach the message: the library's may quote the token's claims.
 */
function rejectionOf(err: unknown): { reason: RejectionReason; message: string } | undefined {
  const e = err as { code?: string; message?: string; cause?: { claim?: string; message?: string; cause?: unknown } };
  // openid-client wraps oauth4webapi's error (code kept): its cause tells which claim or check failed.
  const inner = e.cause instanceof Error ? (e.cause as { message: string; cause?: { claim?: string } }) : undefined;
  const claim = inner?.cause?.claim ?? e.cause?.claim;
  const text = `${e.message ?? ''} ${inner?.message ?? ''}`;
  switch (e.code) {
    case 'OAUTH_JWT_CLAIM_COMPARISON_FAILED':
      if (claim === 'nonce') return { reason: 'nonce_mismatch', message: 'the ID token is for another login (nonce)' };
      if (claim === 'aud' || claim === 'azp')
        return { reason: 'audience_mismatch', message: `the ID token is for another client (${claim})` };
      if (claim === 'iss') return { reason: 'untrusted_issuer', message: 'the ID token names another issuer' };
      return { reason: 'invalid_proof', message: `the ID token's ${String(claim).slice(0, 20)} does not match` };
    case 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED':
      return {
        reason: 'stale_presentation',
        message: `the ID token is expired or not yet valid (${String(claim).slice(0, 10)})`,
      };
    case 'OAUTH_KEY_SELECTION_FAILED':
      return { reason: 'invalid_signature', message: "the ID token is signed by no key of the provider's JWKS" };
    case 'OAUTH_INVALID_RESPONSE':
      if (/signature verification failed/.test(text))
        return { reason: 'invalid_signature', message: "the ID token's signature is not by the provider's key" };
      if (/"alg"/.test(text))
        return { reason: 'algorithm_not_allowed', message: 'the ID token is signed with an algorithm not allowed' };
      return { reason: 'malformed_presentation', message: 'the token response is not valid' };
    case 'OAUTH_RESPONSE_BODY_ERROR':
      return {
        reason: 'nonce_mismatch',
        message: 'the identity provider did not redeem the code for this login (PKCE verifier, or a spent code)',
      };
    case 'OAUTH_PARSE_ERROR':
    case 'OAUTH_RESPONSE_IS_NOT_JSON':
    case 'OAUTH_RESPONSE_IS_NOT_CONFORM':
    case 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED':
    case 'OAUTH_INVALID_REQUEST':
    case 'OAUTH_AUTHORIZATION_RESPONSE_ERROR':
    case 'OAUTH_JWT_USERINFO_EXPECTED':
      return { reason: 'malformed_presentation', message: 'the provider answered what OpenID Connect does not allow' };
    default:
      return undefined;
  }
}

/** A fault's short description for the page, without what the library may quote of a token. */
function describe(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { message?: string } };
  return (e.code ?? e.cause?.message ?? e.message ?? 'error').slice(0, 200);
}
