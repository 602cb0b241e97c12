import { createPublicKey } from 'node:crypto';
import { CompactSign } from 'jose';
import type { CallbackContext, Jwk } from '@openid4vc/oauth2';
import type { ServiceDeps } from '../deps.ts';

/**
 * How request objects are signed, whichever channel carries them (the request_uri, or the
 * Digital Credentials API): with the configured key or the sandbox certificate (`x5c` header).
 */
export function signJwtWith(deps: ServiceDeps): CallbackContext['signJwt'] {
  return async (signer, jwt) => {
    const key = (await deps.requestSigner()).privateKey;
    // The library's x5c header leaves the kid out; HAIP wallets (the IT-Wallet SDK) want it.
    const kid = signer.method === 'x5c' ? signer.kid : undefined;
    const compact = await new CompactSign(new TextEncoder().encode(JSON.stringify(jwt.payload)))
      .setProtectedHeader({ ...jwt.header, ...(kid ? { kid } : {}) })
      .sign(key);
    return { jwt: compact, signerJwk: createPublicKey(key).export({ format: 'jwk' }) as Jwk };
  };
}

/** The verifier encrypts nothing with the library. */
export const notUsed = () => {
  throw new Error('not used by the verifier');
};
