import {
  createPrivateKey,
  createPublicKey,
  sign,
  verify,
  type JsonWebKey as NodeJwk,
  type KeyObject,
} from 'node:crypto';

/**
 * The little JOSE this format needs, on node:crypto: strict base64url, and JWS signatures for the
 * two algorithms we allow. Kept apart from the SD-JWT logic so that every key and signature
 * failure ends in one place as a boolean, never an exception.
 */

/** Signature algorithms accepted for issuer JWTs and key binding JWTs. Anything else, `none` first, is refused. */
export const ALLOWED_ALGORITHMS = ['ES256', 'EdDSA'] as const;
export type SdJwtAlgorithm = (typeof ALLOWED_ALGORITHMS)[number];

export function isAllowedAlgorithm(value: unknown): value is SdJwtAlgorithm {
  return typeof value === 'string' && (ALLOWED_ALGORITHMS as readonly string[]).includes(value);
}

// Node's base64url decoder skips characters outside the alphabet and ignores the unused low bits
// of the last character (`…Q` and `…R` can decode alike); we refuse both, so that two different
// strings never decode to the same bytes: a signature or segment has exactly one accepted form.
const BASE64URL = /^[A-Za-z0-9_-]*$/;

export function base64urlEncode(bytes: Uint8Array | string): string {
  return Buffer.from(bytes).toString('base64url');
}

/**
 * Decodes unpadded base64url, or returns undefined for anything but the canonical encoding of
 * the bytes (RFC 4648 §3.5: pad bits zero): characters outside the alphabet, padding, a
 * dangling character, re-encoded trailing bits. Every JWS segment goes through here.
 */
export function base64urlDecode(text: string): Buffer | undefined {
  if (!BASE64URL.test(text) || text.length % 4 === 1) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

/** Parses a base64url segment holding JSON; undefined when it is not valid base64url or JSON. */
export function decodeJsonSegment(segment: string): unknown {
  const bytes = base64urlDecode(segment);
  if (bytes === undefined) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}

export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The key type a JWK must have for an algorithm: P-256 for ES256, Ed25519 for EdDSA. */
function keyMatchesAlgorithm(jwk: Record<string, unknown>, alg: SdJwtAlgorithm): boolean {
  if (alg === 'ES256') return jwk.kty === 'EC' && jwk.crv === 'P-256';
  return jwk.kty === 'OKP' && jwk.crv === 'Ed25519';
}

/** Imports a public JWK for `alg`; undefined when it is unusable or of another key type. */
export function importPublicKey(jwk: unknown, alg: SdJwtAlgorithm): KeyObject | undefined {
  if (!isJsonObject(jwk) || !keyMatchesAlgorithm(jwk, alg)) return undefined;
  // Only the public members: a JWK that also carries `d` must not turn into a private key here.
  const { kty, crv, x, y } = jwk;
  try {
    return createPublicKey({ key: { kty, crv, x, y } as NodeJwk, format: 'jwk' });
  } catch {
    return undefined;
  }
}

/** Signs a JWS signing input (`header.payload`), returning the base64url signature. */
export function signJws(signingInput: string, privateJwk: JsonWebKey, alg: SdJwtAlgorithm): string {
  const key = createPrivateKey({ key: privateJwk as NodeJwk, format: 'jwk' });
  const data = Buffer.from(signingInput, 'ascii');
  // JWS ES256 signatures are r||s (IEEE P1363), not DER.
  const signature = alg === 'ES256' ? sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' }) : sign(null, data, key);
  return base64urlEncode(signature);
}

/** Checks a JWS signature over `signingInput` with a public key; false for any failure. */
export function verifyJws(signingInput: string, signature: string, key: KeyObject, alg: SdJwtAlgorithm): boolean {
  const bytes = base64urlDecode(signature);
  if (bytes === undefined) return false;
  const data = Buffer.from(signingInput, 'ascii');
  try {
    return alg === 'ES256'
      ? verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, bytes)
      : verify(null, data, key, bytes);
  } catch {
    return false;
  }
}
