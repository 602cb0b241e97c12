import { createOpenid4vpAuthorizationRequest } from '@openid4vc/openid4vp';
import { findApplicationById } from '../../store/applications.ts';
import type { ServiceDeps } from '../deps.ts';
import { invalidRequest, Openid4vpError, openSession } from './open-request.ts';
import {
  authorizationRequestPayload,
  clientId,
  offeredProfiles,
  requestUri,
  signsRequests,
  type RequestFlow,
} from './request.ts';
import { notUsed, signJwtWith } from './request-signing.ts';
import { trustedAuthorities } from './trusted-authorities.ts';
import { useWalletMetadata } from './wallet-metadata.ts';

export { openid4vpUri } from './request.ts';
export { certificateChainPem } from './signer.ts';
export { Openid4vpError } from './open-request.ts';
export { receiveAuthorizationResponse, walletErrorLabel, type ResponseAcknowledgement } from './receive-response.ts';
export { SAME_DEVICE_COOKIE, visitPortal, type BindingCookie } from './same-device.ts';
export { DC_API_PROTOCOLS, dcApiRequests, type DcApiRequests } from './dc-api-request.ts';
export { receiveDcApiResponse, type DcApiAnswer, type DcApiReceipt } from './dc-api-response.ts';

/**
 * OpenID4VP 1.0 verifier endpoints as use cases: the signed request object a wallet fetches, and
 * the response it posts. Protocol work (JAR, JARM/JWE, DCQL, vp_token shape) is done by the
 * OpenWallet Foundation's @openid4vc libraries; the presentation itself is checked by the same
 * sd-jwt-vc verifier and the same session machinery as Matricula's own wallet protocol.
 */

export interface WalletRequestInput extends RequestFlow {
  /** `wallet_nonce` of a POST to the request_uri: echoed in the signed request. */
  walletNonce?: string;
  /** `wallet_metadata` of a POST (JSON): what the wallet can verify and answer, its issuer. */
  walletMetadata?: string;
}

/**
 * The signed request object (JAR, `typ: oauth-authz-req+jwt`) of a session, for the `x509_hash`
 * and `x509_san_dns` client identifier prefixes: `x5c` (without the trust anchor) and `kid` in its
 * header, `aud` the wallet's issuer when it sent its metadata. It expires with the session.
 */
export async function signedRequestObject(
  deps: ServiceDeps,
  sessionId: string,
  token: string,
  input: WalletRequestInput,
): Promise<string> {
  const session = await openSession(deps, sessionId, token);
  if (!signsRequests(deps.config))
    throw invalidRequest('With the redirect_uri client identifier prefix the request is passed by value, not fetched.');
  const { audience } = useWalletMetadata(deps.config, input.walletMetadata);
  const app = await findApplicationById(deps.db, session.appId);
  const signer = await deps.requestSigner();
  const now = deps.clock.now();
  const expiresInSeconds = Math.max(1, Math.floor((Date.parse(session.expiresAt) - now.getTime()) / 1000));
  const created = await createOpenid4vpAuthorizationRequest({
    ...(input.walletNonce ? { wallet: { expectedNonce: input.walletNonce } } : {}),
    authorizationRequestPayload: authorizationRequestPayload(deps.config, session, input, await offeredProfiles(deps), {
      clientName: app?.name,
      walletNonce: input.walletNonce,
      trustedAuthorities: await trustedAuthorities(deps.db, session.environment),
    }),
    jar: {
      requestUri: requestUri(deps.config, session, input),
      jwtSigner: { method: 'x5c', x5c: signer.x5c, alg: signer.alg, kid: signer.kid },
      expiresInSeconds,
      // On the service clock (the library would take the system's): the request expires with the session.
      additionalJwtPayload: {
        // RFC 9101: the client identifier; the IT-Wallet profile requires it.
        iss: clientId(deps.config, session, input),
        aud: audience,
        iat: Math.floor(now.getTime() / 1000),
        exp: Math.floor(Date.parse(session.expiresAt) / 1000),
      },
    },
    callbacks: { signJwt: signJwtWith(deps), encryptJwe: notUsed },
    now,
  }).catch((err: unknown) => {
    // The library refuses parameters it finds invalid (an over-long wallet_nonce, …): the wallet's fault.
    const response = (err as { errorResponse?: { error?: string; error_description?: string } }).errorResponse;
    if (response?.error) throw new Openid4vpError(400, response.error, response.error_description ?? response.error);
    throw err;
  });
  if (!created.jar) throw new Error('the library returned no request object');
  return created.jar.authorizationRequestJwt;
}
