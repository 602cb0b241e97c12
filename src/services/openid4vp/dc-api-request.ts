import { createOpenid4vpAuthorizationRequest, type Openid4vpAuthorizationRequestDcApi } from '@openid4vc/openid4vp';
import type { Config } from '../../config.ts';
import type { CredentialProfile } from '../../domain/credential-profiles.ts';
import type { Session } from '../../domain/session.ts';
import { findApplicationById } from '../../store/applications.ts';
import type { ServiceDeps } from '../deps.ts';
import { dcqlQuery } from './dcql.ts';
import { openSession } from './open-request.ts';
import {
  authorizationRequestPayload,
  clientId,
  offeredProfiles,
  RESPONSE_ENCRYPTION_ENC,
  signsRequests,
} from './request.ts';
import { notUsed, signJwtWith } from './request-signing.ts';
import { encryptionKeyPair } from './session-secrets.ts';
import { trustedAuthorities } from './trusted-authorities.ts';

/**
 * OpenID4VP 1.0 Appendix A: a session's request through the browser's Digital Credentials API
 * (`navigator.credentials.get({digital: {requests}})`), which the portal page makes. The browser
 * hands the request to a wallet on the device together with the page's origin, and the wallet's
 * answer back to the page, which posts it to the service (dc-api-response.ts). Two requests, the
 * wallet answers the one it can: `openid4vp-v1-signed` (the JAR, signed like the request_uri's,
 * its `expected_origins` the portal's origin) and `openid4vp-v1-unsigned` (the same parameters,
 * no client identifier: the wallet knows the verifier by the origin alone). Both ask for
 * `dc_api.jwt`: the answer is encrypted to the session's key, as HAIP requires, and the page that
 * carries it reads nothing of it.
 */

export const DC_API_SIGNED = 'openid4vp-v1-signed';
export const DC_API_UNSIGNED = 'openid4vp-v1-unsigned';
export const DC_API_PROTOCOLS = [DC_API_SIGNED, DC_API_UNSIGNED] as const;
export type DcApiProtocol = (typeof DC_API_PROTOCOLS)[number];

/** The origin the browser tells the wallet: the portal's, which may differ from BASE_URL's. */
export const portalOrigin = (config: Config) => new URL(config.portalUrl).origin;

/**
 * The audience of a key-binding JWT made through the Digital Credentials API, signed request or
 * not (OpenID4VP 1.0 Appendix A.4 and B.3.6): `origin:` and the origin the browser saw.
 */
export const dcApiAudience = (config: Config) => `origin:${portalOrigin(config)}`;

/**
 * The authorization request parameters of a session over the DC API, a pure function of the
 * session and the configuration like the request_uri's (request.ts): the same nonce, DCQL query and
 * encryption key, no `response_uri` and no `state` (the answer returns through the page).
 */
export function dcApiRequestPayload(
  config: Config,
  session: Session,
  profiles: readonly CredentialProfile[],
  protocol: DcApiProtocol,
  extra: { clientName?: string; trustedAuthorities?: readonly string[] } = {},
): Openid4vpAuthorizationRequestDcApi {
  const base = authorizationRequestPayload(config, session, { sameDevice: false }, profiles, extra);
  return {
    response_type: 'vp_token',
    response_mode: 'dc_api.jwt',
    nonce: base.nonce,
    dcql_query: dcqlQuery(profiles, session.requiredClaims, extra.trustedAuthorities),
    client_metadata: {
      ...(extra.clientName ? { client_name: extra.clientName } : {}),
      vp_formats_supported: base.client_metadata!.vp_formats_supported,
      jwks: { keys: [encryptionKeyPair(session.challengeNonce, session.id).publicJwk] },
      encrypted_response_enc_values_supported: [...RESPONSE_ENCRYPTION_ENC],
    },
    ...(protocol === DC_API_SIGNED ? { client_id: base.client_id, expected_origins: [portalOrigin(config)] } : {}),
  };
}

/** What the portal page passes to `navigator.credentials.get({digital: {requests}})`. */
export interface DcApiRequests {
  requests: Array<{ protocol: DcApiProtocol; data: Record<string, unknown> }>;
}

/**
 * The requests of an open session for the Digital Credentials API: the signed one first (under an
 * X.509 client identifier prefix), then the unsigned one. The signed one expires with the session.
 */
export async function dcApiRequests(deps: ServiceDeps, sessionId: string, token: string): Promise<DcApiRequests> {
  const session = await openSession(deps, sessionId, token);
  const app = await findApplicationById(deps.db, session.appId);
  const profiles = await offeredProfiles(deps);
  const extra = { clientName: app?.name, trustedAuthorities: await trustedAuthorities(deps.db, session.environment) };
  const unsigned = dcApiRequestPayload(deps.config, session, profiles, DC_API_UNSIGNED, extra);
  const requests: DcApiRequests['requests'] = [];
  if (signsRequests(deps.config)) {
    const signer = await deps.requestSigner();
    const now = deps.clock.now();
    const created = await createOpenid4vpAuthorizationRequest({
      authorizationRequestPayload: dcApiRequestPayload(deps.config, session, profiles, DC_API_SIGNED, extra),
      jar: {
        jwtSigner: { method: 'x5c', x5c: signer.x5c, alg: signer.alg, kid: signer.kid },
        expiresInSeconds: Math.max(1, Math.floor((Date.parse(session.expiresAt) - now.getTime()) / 1000)),
        additionalJwtPayload: {
          // RFC 9101: the client identifier, the request_uri's (`x509_hash:…` or `x509_san_dns:…`).
          iss: clientId(deps.config, session, { sameDevice: false }),
          // No wallet metadata reaches a request over the DC API: the static audience of OpenID4VP 1.0 §5.8.
          aud: 'https://self-issued.me/v2',
          iat: Math.floor(now.getTime() / 1000),
          exp: Math.floor(Date.parse(session.expiresAt) / 1000),
        },
      },
      callbacks: { signJwt: signJwtWith(deps), encryptJwe: notUsed },
      now,
    });
    if (!created.jar) throw new Error('the library returned no request object');
    requests.push({ protocol: DC_API_SIGNED, data: { request: created.jar.authorizationRequestJwt } });
  }
  requests.push({ protocol: DC_API_UNSIGNED, data: unsigned as Record<string, unknown> });
  return { requests };
}
