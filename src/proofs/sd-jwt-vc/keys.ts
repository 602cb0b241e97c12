import { createECDH, createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import { SANDBOX_UNIVERSITIES, formatSeed, sandboxUniversity } from '../sandbox-universities.ts';
import { base64urlEncode, type SdJwtAlgorithm } from './jose.ts';

/**
 * Deterministic keys for the sandbox: issuer keys from the published university seeds, holder
 * keys from a student's holderSeed. Anyone can recompute them (like test card numbers), which is
 * why sandbox issuers are trusted for sandbox sessions only.
 */

export interface JwkKeyPair {
  alg: SdJwtAlgorithm;
  publicJwk: JsonWebKey;
  privateJwk: JsonWebKey;
}

function sha256(text: string): Uint8Array {
  return createHash('sha256').update(text, 'utf8').digest();
}

function bytesToBigInt(bytes: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(bytes).toString('hex')}`);
}

/** The order n of P-256's base point (SEC 2, secp256r1). */
const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
/** PKCS #8 wrapping of a raw 32-byte Ed25519 private key (RFC 8410). */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

function bigIntTo32Bytes(value: bigint): Uint8Array {
  return Buffer.from(value.toString(16).padStart(64, '0'), 'hex');
}

/**
 * Derives a key pair from a seed string.
 * - `ES256` (P-256): h = SHA-256(UTF-8 seed) read big-endian; private scalar d = (h mod (n − 1)) + 1,
 *   which always lies in [1, n − 1]; public point = d·G.
 * - `EdDSA` (Ed25519): the 32-byte RFC 8032 private key (seed) is SHA-256(UTF-8 seed).
 */
export function sandboxIssuerKeyPair(seed: string, alg: SdJwtAlgorithm): JwkKeyPair {
  const digest = sha256(seed);
  if (alg === 'ES256') {
    const d = bigIntTo32Bytes((bytesToBigInt(digest) % (P256_ORDER - 1n)) + 1n);
    // node:crypto (OpenSSL) derives the point in microseconds; a JavaScript curve library first
    // builds its base-point table, about 0.1 s of every process start.
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(d);
    const point = ecdh.getPublicKey(); // 0x04 || x || y
    const publicJwk = {
      kty: 'EC',
      crv: 'P-256',
      x: base64urlEncode(point.slice(1, 33)),
      y: base64urlEncode(point.slice(33, 65)),
    };
    return { alg, publicJwk, privateJwk: { ...publicJwk, d: base64urlEncode(d) } };
  }
  const privateKey = createPrivateKey({
    key: Buffer.concat([ED25519_PKCS8_PREFIX, digest]),
    format: 'der',
    type: 'pkcs8',
  });
  const { x } = createPublicKey(privateKey).export({ format: 'jwk' });
  const publicJwk = { kty: 'OKP', crv: 'Ed25519', x: x! };
  return { alg, publicJwk, privateJwk: { ...publicJwk, d: base64urlEncode(digest) } };
}

/** Which algorithm each sandbox university signs with; universities added later default to ES256. */
const SANDBOX_ALGORITHMS: Readonly<Record<string, SdJwtAlgorithm>> = {
  'sandbox-state.example': 'ES256',
  'pruebas.example': 'EdDSA',
};

/** The issuer key pair of a sandbox university, or undefined for a domain that is not one. */
export function sandboxUniversityKeyPair(domain: string): JwkKeyPair | undefined {
  const university = sandboxUniversity(domain);
  if (!university) return undefined;
  return sandboxIssuerKeyPair(formatSeed(university, 'sd-jwt-vc'), SANDBOX_ALGORITHMS[domain] ?? 'ES256');
}

/** Public `sd-jwt-vc` keys of every sandbox university by domain, to seed the trust registry. */
export function sandboxIssuerPublicKeys(): Record<string, JsonWebKey> {
  const keys: Record<string, JsonWebKey> = {};
  for (const university of SANDBOX_UNIVERSITIES) {
    keys[university.domain] = sandboxUniversityKeyPair(university.domain)!.publicJwk;
  }
  return keys;
}

/**
 * The holder's key binding key: ES256 from `${holderSeed}:sd-jwt-vc:holder`. The suffix keeps it
 * apart from anything other formats derive from the same holderSeed.
 */
export function holderKeyPair(holderSeed: string): JwkKeyPair {
  return sandboxIssuerKeyPair(`${holderSeed}:sd-jwt-vc:holder`, 'ES256');
}
