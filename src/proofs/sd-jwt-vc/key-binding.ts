import { createHash } from 'node:crypto';
import type { PresentationContext, RejectionReason } from '../types.ts';
import type { CompactSdJwt } from './compact.ts';
import { importPublicKey, isAllowedAlgorithm, isJsonObject, verifyJws } from './jose.ts';

/**
 * Holder binding: the KB-JWT proves that whoever presents holds the key the issuer put in
 * `cnf.jwk`, for this session (`nonce`), this service (`aud`) and now (`iat`). The @sd-jwt
 * library checks neither `aud` nor the age of `iat`, so all of it is checked here.
 */

export type BindingCheck = { ok: true } | { ok: false; reason: RejectionReason; message: string };

/** A KB-JWT older than this is a replay risk, not a fresh answer to the session. */
export const MAX_KEY_BINDING_AGE_SECONDS = 300;
/** Tolerated clock skew of the holder's device ahead of ours. */
export const MAX_KEY_BINDING_FUTURE_SECONDS = 60;

function fail(reason: RejectionReason, message: string): BindingCheck {
  return { ok: false, reason, message };
}

function freshness(iat: unknown, now: Date): BindingCheck {
  if (typeof iat !== 'number' || !Number.isFinite(iat))
    return fail('invalid_key_binding', 'key binding JWT has no numeric iat');
  const age = now.getTime() / 1000 - iat;
  if (age > MAX_KEY_BINDING_AGE_SECONDS)
    return fail(
      'stale_presentation',
      `key binding JWT was issued ${Math.round(age)} s ago (limit ${MAX_KEY_BINDING_AGE_SECONDS} s)`,
    );
  if (-age > MAX_KEY_BINDING_FUTURE_SECONDS)
    return fail('stale_presentation', `key binding JWT is dated ${Math.round(-age)} s in the future`);
  return { ok: true };
}

/** Checks the KB-JWT of `sdJwt` against the holder key in the signed payload and the session. */
export function checkKeyBinding(
  sdJwt: CompactSdJwt,
  signedPayload: Record<string, unknown>,
  context: PresentationContext,
): BindingCheck {
  const kb = sdJwt.kbJwt;
  if (!kb) return fail('missing_key_binding', 'the presentation has no key binding JWT');
  const holderJwk = isJsonObject(signedPayload.cnf) ? signedPayload.cnf.jwk : undefined;
  if (holderJwk === undefined) return fail('invalid_key_binding', 'the credential names no holder key (cnf.jwk)');
  const alg = kb.header.alg;
  if (!isAllowedAlgorithm(alg))
    return fail('algorithm_not_allowed', `key binding JWT algorithm ${JSON.stringify(alg)} is not allowed`);
  if (kb.header.typ !== 'kb+jwt') return fail('invalid_key_binding', 'key binding JWT typ is not kb+jwt');
  const holderKey = importPublicKey(holderJwk, alg);
  if (!holderKey) return fail('invalid_key_binding', `the holder key (cnf.jwk) is not a ${alg} public key`);
  if (!verifyJws(kb.signingInput, kb.signature, holderKey, alg))
    return fail('invalid_key_binding', 'key binding JWT is not signed by the holder key');
  const sdHash = createHash('sha256').update(sdJwt.sdHashInput, 'ascii').digest('base64url');
  if (kb.payload.sd_hash !== sdHash)
    return fail('invalid_key_binding', 'key binding JWT sd_hash does not match the presented SD-JWT');
  if (kb.payload.nonce !== context.nonce)
    return fail('nonce_mismatch', 'key binding JWT nonce is not the session nonce');
  if (kb.payload.aud !== context.audience) return fail('audience_mismatch', 'key binding JWT aud is not this service');
  return freshness(kb.payload.iat, context.now);
}
