import { createHash } from 'node:crypto';
import { generateKeyPair } from '@digitalbazaar/bbs-signatures';
import { bls12_381 } from '@noble/curves/bls12-381';
import { SANDBOX_UNIVERSITIES, formatSeed, type SandboxUniversity } from '../sandbox-universities.ts';
import { BBS_CIPHERSUITE } from './credential.ts';

/** A BBS issuer key pair: 32-byte big-endian secret scalar, 96-byte compressed G2 public key. */
export interface BbsKeyPair {
  secretKey: Uint8Array;
  publicKey: Uint8Array;
}

export const BBS_PUBLIC_KEY_LENGTH = 96;

/**
 * The sandbox issuer key pair of a seed: the draft's KeyGen (as implemented by the library's
 * `generateKeyPair({seed})`) with key_material = SHA-256(UTF-8 of `seed`), an empty key_info and
 * the suite's default key_dst. Anyone holding the published seed gets the same key: that is the
 * point of sandbox issuers, and why they are trusted only for sandbox sessions.
 */
export async function sandboxIssuerKeyPair(seed: string): Promise<BbsKeyPair> {
  const keyMaterial = createHash('sha256').update(seed, 'utf8').digest();
  return generateKeyPair({ seed: new Uint8Array(keyMaterial), ciphersuite: BBS_CIPHERSUITE });
}

/** The sandbox `bbs` key pair of a sandbox university (seed `formatSeed(university, 'bbs')`). */
export function sandboxUniversityKeyPair(university: SandboxUniversity): Promise<BbsKeyPair> {
  return sandboxIssuerKeyPair(formatSeed(university, 'bbs'));
}

/** Base64url public key of every sandbox university by domain, to seed the trust registry. */
export async function sandboxIssuerPublicKeys(): Promise<Record<string, string>> {
  const entries = await Promise.all(
    SANDBOX_UNIVERSITIES.map(async (u) => {
      const { publicKey } = await sandboxUniversityKeyPair(u);
      return [u.domain, encodeBbsPublicKey(publicKey)] as const;
    }),
  );
  return Object.fromEntries(entries);
}

export function encodeBbsPublicKey(publicKey: Uint8Array): string {
  return Buffer.from(publicKey).toString('base64url');
}

/**
 * The public key bytes of a base64url `bbs` key, or undefined unless it is a canonical encoding
 * of a valid key: 96 bytes, a G2 point on the curve, in the prime-order subgroup, not the identity.
 * The CLI and the registry call this before storing a key.
 */
export function decodeBbsPublicKey(encoded: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) return undefined;
  const bytes = Buffer.from(encoded, 'base64url');
  if (bytes.length !== BBS_PUBLIC_KEY_LENGTH || bytes.toString('base64url') !== encoded) return undefined;
  try {
    // fromHex checks that the point is on the curve and torsion-free.
    const point = bls12_381.G2.ProjectivePoint.fromHex(bytes);
    if (point.equals(bls12_381.G2.ProjectivePoint.ZERO)) return undefined;
  } catch {
    return undefined;
  }
  return new Uint8Array(bytes);
}
