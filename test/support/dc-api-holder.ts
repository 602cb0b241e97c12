import type { ResolvedOpenid4vpAuthorizationRequest } from '@openid4vc/openid4vp';
import { holderClient, presentFromExport, type ExportedCredential, type PresentOptions } from './openid4vp-holder.ts';

/**
 * The wallet's side of OpenID4VP over the Digital Credentials API (OpenID4VP 1.0 Appendix A),
 * built on the independent holder (openid4vp-holder.ts: Openid4vpClient, @sd-jwt, jose, nothing
 * of ours): it resolves a request as the browser hands it over, with the origin the browser saw
 * (checking the signed one's x5c chain and expected_origins), and answers `dc_api.jwt`.
 */

export interface DcApiRequest {
  protocol: string;
  data: Record<string, unknown>;
}

/** Resolves one of the page's requests as a wallet does, for a page of `origin`. */
export function resolveDcApi(request: DcApiRequest, origin: string, anchors: string[]) {
  return holderClient(anchors).resolveOpenId4vpAuthorizationRequest({
    authorizationRequestPayload: request.data as never,
    origin,
  });
}

/**
 * The `data` of the DigitalCredential a wallet returns: the vp_token, encrypted to the request's
 * key (`dc_api.jwt`), its KB-JWT bound to `origin:<origin>` and the request's nonce unless told otherwise.
 */
export async function dcApiAnswer(
  resolved: ResolvedOpenid4vpAuthorizationRequest,
  credential: ExportedCredential,
  origin: string,
  now: Date,
  options: PresentOptions & { encrypt?: boolean } = {},
): Promise<Record<string, unknown>> {
  const presentation = await presentFromExport(credential, resolved, {
    aud: `origin:${origin}`,
    iat: Math.floor(now.getTime() / 1000),
    ...options,
  });
  const vpToken = { student_credential: [presentation] };
  if (options.encrypt === false) return { vp_token: vpToken };
  const created = await holderClient([]).createOpenid4vpAuthorizationResponse({
    authorizationRequestPayload: resolved.authorizationRequestPayload,
    authorizationResponsePayload: { vp_token: vpToken },
    origin,
    jarm: {
      encryption: { nonce: 'holder-nonce' },
      serverMetadata: {
        authorization_signing_alg_values_supported: ['ES256'],
        authorization_encryption_alg_values_supported: ['ECDH-ES'],
        authorization_encryption_enc_values_supported: ['A256GCM', 'A128GCM'],
      },
    },
  });
  if (!created.jarm) throw new Error('the holder library did not encrypt the answer');
  return { response: created.jarm.responseJwt };
}
