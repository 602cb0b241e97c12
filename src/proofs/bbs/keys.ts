import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expand_message_xmd } from '@noble/curves/abstract/hash-to-curve';
import { bls12_381 } from '@noble/curves/bls12-381';
import { sha256 } from '@noble/hashes/sha2';
import { SANDBOX_UNIVERSITIES, formatSeed, type SandboxUniversity } from '../sandbox-universities.ts';

/** A BBS issuer key pair: 32-byte big-endian secret scalar, 96-byte compressed G2 public key. */
export interface BbsKeyPair {
  secretKey: Uint8Array;
  publicKey: Uint8Array;
}

export const BBS_PUBLIC_KEY_LENGTH = 96;

/** KeyGen's default key_dst for BLS12-381-SHA-256: ciphersuite_id || "KEYGEN_DST_". */
const KEYGEN_DST = 'BBS_BLS12381G1_XMD:SHA-256_SSWU_RO_KEYGEN_DST_';
const EXPAND_LEN = 48;
const SCALAR_LENGTH = 32;

/**
 * KeyGen of the draft (§3.4.1) with an empty key_info:
 * SK = OS2IP(expand_message_xmd(key_material || I2OSP(0, 2), KEYGEN_DST, 48)) mod r, PK = SK * BP2.
 * Done here rather than through the library's async `generateKeyPair({seed})` so that key
 * derivation is synchronous like the other formats'; a test checks both give the same keys.
 */
function keyGen(keyMaterial: Uint8Array): BbsKeyPair {
  const deriveInput = new Uint8Array(keyMaterial.length + 2);
  deriveInput.set(keyMaterial);
  const uniform = expand_message_xmd(deriveInput, new TextEncoder().encode(KEYGEN_DST), EXPAND_LEN, sha256);
  const sk = BigInt(`0x${Buffer.from(uniform).toString('hex')}`) % bls12_381.fields.Fr.ORDER;
  if (sk === 0n) throw new Error('KeyGen produced the zero scalar');
  const secretKey = new Uint8Array(Buffer.from(sk.toString(16).padStart(SCALAR_LENGTH * 2, '0'), 'hex'));
  const publicKey = bls12_381.G2.ProjectivePoint.BASE.multiply(sk).toRawBytes(true);
  return { secretKey, publicKey };
}

/**
 * The sandbox issuer key pair of a seed: KeyGen with key_material = SHA-256(UTF-8 of `seed`).
 * Anyone holding the published seed gets the same key: that is the point of sandbox issuers, and
 * why they are trusted only for sandbox sessions.
 */
export function sandboxIssuerKeyPair(seed: string): BbsKeyPair {
  return keyGen(new Uint8Array(createHash('sha256').update(seed, 'utf8').digest()));
}

/** The sandbox `bbs` key pair of a sandbox university (seed `formatSeed(university, 'bbs')`). */
export function sandboxUniversityKeyPair(university: SandboxUniversity): BbsKeyPair {
  return sandboxIssuerKeyPair(formatSeed(university, 'bbs'));
}

/** Base64url public key of every sandbox university by domain, derived (scripts/bbs-sandbox-keys.ts). */
export function deriveSandboxIssuerPublicKeys(): Record<string, string> {
  return Object.fromEntries(
    SANDBOX_UNIVERSITIES.map((u) => [u.domain, encodeBbsPublicKey(sandboxUniversityKeyPair(u).publicKey)]),
  );
}

/** The committed result of deriveSandboxIssuerPublicKeys (copied beside the compiled module by the build). */
export const SANDBOX_PUBLIC_KEYS_FILE = fileURLToPath(new URL('./artifacts/sandbox-public-keys.json', import.meta.url));

let committed: Record<string, string> | undefined;

/**
 * Base64url public key of every sandbox university by domain, to seed the trust registry: read
 * from the committed file, since deriving them costs every process start about 0.3 s of CPU.
 * A university without a committed key (the file not regenerated) is derived.
 */
export function sandboxIssuerPublicKeys(): Record<string, string> {
  if (!committed) {
    const parsed = JSON.parse(readFileSync(SANDBOX_PUBLIC_KEYS_FILE, 'utf8')) as Record<string, unknown>;
    committed = Object.fromEntries(
      SANDBOX_UNIVERSITIES.map((u) => {
        const key = parsed[u.domain];
        return [u.domain, typeof key === 'string' ? key : encodeBbsPublicKey(sandboxUniversityKeyPair(u).publicKey)];
      }),
    );
  }
  return committed;
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
