import { p256 } from '@noble/curves/p256';
import hkdf from 'futoin-hkdf';
import { BoundedCache } from '../../domain/bounded-cache.ts';

/**
 * Everything OpenID4VP needs per session is derived from the session's challengeNonce (256
 * random bits, stored with the session) with HKDF-SHA-256, one `info` per purpose: nothing more
 * to store, the same values in every API process, and none of them reveals the challengeNonce
 * (which authorizes Matricula's own wallet endpoints) or another of them.
 */

// Derived values per session and purpose, as the text they are used as (base64url, or hex for
// the encryption key's scalar), most recent last: a wallet's every call checks its request token,
// and its response is checked against the same nonce and key. The cache is bounded, least
// recently used out first. Text rather than a Buffer: one object kept instead of three and
// memory outside the heap, and no conversion on each use.
const DERIVED_CACHE_SIZE = 10_000;
const derived = new BoundedCache<string, string>(DERIVED_CACHE_SIZE);

// RFC 5869 over node:crypto's HMAC (futoin-hkdf), the same bytes as node:crypto's own hkdfSync
// (test/routes/hot-path-values.test.ts), at a fraction of its cost: hkdfSync makes a KeyObject and
// a crypto job for every call, and a create derives its request token afresh. A session create on
// PostgreSQL costs 7 to 14 % less CPU in the service (medians, bench/README.md, 22nd sitting).
function derive(
  challengeNonce: string,
  purpose: string,
  length = 32,
  encoding: 'base64url' | 'hex' = 'base64url',
): string {
  const key = `${purpose}:${length}:${challengeNonce}`;
  const cached = derived.get(key);
  if (cached !== undefined) return cached;
  const value = hkdf(challengeNonce, length, { info: `matricula/openid4vp/${purpose}`, hash: 'SHA-256' }).toString(
    encoding,
  );
  derived.set(key, value);
  return value;
}

/** Authorizes fetching the request object and posting the response (query `token`): in `openid4vpUri`. */
export function requestToken(challengeNonce: string): string {
  return derive(challengeNonce, 'request-token');
}

/** The request's `nonce`: the KB-JWT must carry it. */
export function requestNonce(challengeNonce: string): string {
  return derive(challengeNonce, 'nonce');
}

/** The request's `state`: the wallet returns it in every response, error responses too. */
export function requestState(challengeNonce: string): string {
  return derive(challengeNonce, 'state');
}

/** The `response_code` of the same-device redirect back to the portal. */
export function responseCode(challengeNonce: string): string {
  return derive(challengeNonce, 'response-code');
}

/**
 * The value of the same-device binding cookie the portal page sets: a redirect back from the
 * wallet completes a session only in a browser that carries it (services/openid4vp/same-device.ts).
 */
export function sameDeviceBinding(challengeNonce: string): string {
  return derive(challengeNonce, 'same-device-binding');
}

type EcJwk = {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid: string;
};

export interface EncryptionKeyPair {
  publicJwk: EcJwk & { use: 'enc'; alg: 'ECDH-ES' };
  privateJwk: EcJwk & { d: string };
}

/**
 * The session's response-encryption key (ECDH-ES on P-256), in `client_metadata.jwks`. 48 bytes
 * reduced modulo n − 1, plus 1: a scalar in [1, n − 1] with negligible bias.
 */
export function encryptionKeyPair(challengeNonce: string, sessionId: string): EncryptionKeyPair {
  const wide = BigInt(`0x${derive(challengeNonce, 'response-encryption-key', 48, 'hex')}`);
  const scalar = (wide % (p256.CURVE.n - 1n)) + 1n;
  const d = Buffer.from(scalar.toString(16).padStart(64, '0'), 'hex');
  const point = p256.getPublicKey(d, false);
  const kid = `${sessionId}-enc`;
  const publicJwk = {
    kty: 'EC' as const,
    crv: 'P-256' as const,
    x: Buffer.from(point.slice(1, 33)).toString('base64url'),
    y: Buffer.from(point.slice(33, 65)).toString('base64url'),
  };
  return {
    publicJwk: { ...publicJwk, kid, use: 'enc', alg: 'ECDH-ES' },
    privateJwk: { ...publicJwk, d: d.toString('base64url'), kid },
  };
}
