/**
 * Validation of issuer public keys, for every format: the one check behind `issuers add` (CLI)
 * and the trust registry as it is read (services/trust-registry.ts). A key is accepted only if it
 * is a real public key of its kind (a point on its curve, in the prime-order subgroup, not the
 * identity), and, for a live issuer, not one of the published sandbox keys: anyone can sign with
 * those. Pure: no I/O beyond the committed sandbox key file.
 */
import { createPublicKey, type JsonWebKey as NodeJwk } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519';
import { bls12_381 } from '@noble/curves/bls12-381';
import { inCurve, mulPointEscalar, subOrder } from '@zk-kit/baby-jubjub';
import { decodeBbsPublicKey, sandboxIssuerPublicKeys as bbsSandboxKeys } from './bbs/keys.ts';
import { parseFieldElement } from './groth16/fields.ts';
import { sandboxIssuerPublicKeys as babyJubJubSandboxKeys } from './groth16/sandbox-issuers.ts';
import { base64urlDecode, isJsonObject } from './sd-jwt-vc/jose.ts';
import { sandboxIssuerPublicKeys as sdJwtSandboxKeys } from './sd-jwt-vc/keys.ts';
import type { IssuerKeys } from '../domain/credentials.ts';
import type { Environment } from '../domain/environment.ts';

/** JWK members that only a private key has. */
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth'];

/** A base64url member of exactly `length` bytes, canonical (one string per value). */
function fixedBytes(value: unknown, length: number): Buffer | undefined {
  if (typeof value !== 'string') return undefined;
  const bytes = base64urlDecode(value);
  return bytes !== undefined && bytes.length === length ? bytes : undefined;
}

/**
 * Why `jwk` is not a usable `sd-jwt-vc` issuer key, or undefined. P-256: x and y of 32 bytes
 * that node:crypto accepts as a point on the curve. Ed25519: 32 bytes that decode (strictly) to
 * a point of the prime-order subgroup other than the identity; node:crypto alone would take any
 * 32 bytes.
 */
export function sdJwtVcKeyProblem(jwk: unknown): string | undefined {
  if (!isJsonObject(jwk)) return 'a public JWK is required';
  if (PRIVATE_JWK_MEMBERS.some((member) => member in jwk))
    return 'this JWK holds a private key; give the public key only';
  const { kty, crv, x, y } = jwk;
  if (kty === 'EC' && crv === 'P-256') {
    if (!fixedBytes(x, 32) || !fixedBytes(y, 32)) return 'x and y must be canonical base64url of 32 bytes each';
    try {
      createPublicKey({ key: { kty, crv, x, y } as NodeJwk, format: 'jwk' });
    } catch {
      return '(x, y) is not a point on P-256';
    }
    return undefined;
  }
  if (kty === 'OKP' && crv === 'Ed25519') {
    if (y !== undefined) return 'an Ed25519 JWK has no y';
    const bytes = fixedBytes(x, 32);
    if (!bytes) return 'x must be canonical base64url of 32 bytes';
    try {
      const point = ed25519.ExtendedPoint.fromHex(bytes); // strict: canonical y, on the curve
      if (point.isSmallOrder()) return 'x is a point of small order (the identity or a torsion point)';
      if (!point.isTorsionFree()) return 'x is not in the prime-order subgroup';
    } catch {
      return 'x is not an Ed25519 point';
    }
    return undefined;
  }
  return 'an EC P-256 (ES256) or OKP Ed25519 (EdDSA) public JWK is required';
}

/** Why `key` is not a usable `bbs` issuer key (96-byte BLS12-381 G2 point, subgroup, not identity), or undefined. */
export function bbsKeyProblem(key: unknown): string | undefined {
  if (typeof key !== 'string' || decodeBbsPublicKey(key) === undefined)
    return 'canonical base64url of a 96-byte compressed BLS12-381 G2 point, in the subgroup and not the identity, is required';
  return undefined;
}

/**
 * Why `point` is not a usable BabyJubJub issuer key, or undefined: coordinates are canonical
 * decimal field elements, the point is on the curve (`@zk-kit/baby-jubjub` inCurve), not the
 * identity (0, 1), and in the prime-order subgroup: l·P is the identity for the subgroup order l
 * (the curve's order is 8·l; the other points have a small-order component).
 */
export function babyJubJubKeyProblem(point: unknown): string | undefined {
  if (!isJsonObject(point)) return '{x, y} as decimal strings is required';
  const x = parseFieldElement(point.x);
  const y = parseFieldElement(point.y);
  if (x === undefined || y === undefined) return 'x and y must be canonical decimal strings of BN254 field elements';
  if (Object.keys(point).some((k) => k !== 'x' && k !== 'y')) return 'only x and y are allowed';
  if (!inCurve([x, y])) return '(x, y) is not on the BabyJubJub curve';
  if (x === 0n && y === 1n) return '(x, y) is the identity';
  const [lx, ly] = mulPointEscalar([x, y], subOrder);
  if (lx !== 0n || ly !== 1n) return '(x, y) is not in the prime-order subgroup';
  return undefined;
}

const KEY_CHECKS: Record<keyof IssuerKeys, (key: unknown) => string | undefined> = {
  sdJwtVc: sdJwtVcKeyProblem,
  bbs: bbsKeyProblem,
  babyJubJub: babyJubJubKeyProblem,
};

/** One canonical string per key, to compare a key with the sandbox keys whatever its spelling. */
function fingerprint(field: keyof IssuerKeys, key: unknown): string {
  if (field === 'sdJwtVc') {
    const { kty, crv, x, y } = key as Record<string, unknown>;
    return JSON.stringify([kty, crv, x, y ?? null]);
  }
  if (field === 'bbs') {
    const bytes = decodeBbsPublicKey(key as string)!;
    return Buffer.from(bls12_381.G2.ProjectivePoint.fromHex(bytes).toRawBytes(true)).toString('hex');
  }
  const { x, y } = key as Record<string, unknown>;
  return `${parseFieldElement(x)},${parseFieldElement(y)}`;
}

let sandboxFingerprints: Record<keyof IssuerKeys, Set<string>> | undefined;

/** Whether `key` (already valid) is the published sandbox key of some sandbox university. */
function isSandboxKey(field: keyof IssuerKeys, key: unknown): boolean {
  if (!sandboxFingerprints) {
    // Every sandbox university's key in every format (the same keys sandboxIssuers() seeds).
    const of = (field: keyof IssuerKeys, keys: Record<string, unknown>) =>
      new Set(Object.values(keys).map((key) => fingerprint(field, key)));
    sandboxFingerprints = {
      sdJwtVc: of('sdJwtVc', sdJwtSandboxKeys()),
      bbs: of('bbs', bbsSandboxKeys()),
      babyJubJub: of('babyJubJub', babyJubJubSandboxKeys()),
    };
  }
  return sandboxFingerprints[field].has(fingerprint(field, key));
}

/**
 * Why the key of `field` is not acceptable for an issuer of `environment`, or undefined. Live
 * issuers may not use a sandbox key: its private key is derived from a published seed.
 */
export function issuerKeyProblem(field: keyof IssuerKeys, key: unknown, environment: Environment): string | undefined {
  const check = KEY_CHECKS[field] as ((key: unknown) => string | undefined) | undefined;
  if (!check) return 'not a key of a known format';
  const problem = check(key);
  if (problem) return problem;
  if (environment === 'live' && isSandboxKey(field, key))
    return 'this is a published sandbox key (anyone can sign with it); a live issuer needs its own key';
  return undefined;
}
