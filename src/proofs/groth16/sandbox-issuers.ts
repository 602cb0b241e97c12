import { readFileSync } from 'node:fs';
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { formatSeed, type SandboxUniversity } from '../sandbox-universities.ts';
import { GROTH16_ARTIFACTS } from './artifacts.ts';
import { parseFieldElement } from './fields.ts';

/** A BabyJubJub public key point, coordinates as decimal strings (TrustedIssuer.keys.babyJubJub). */
export interface BabyJubJubPublicKey {
  x: string;
  y: string;
}

/**
 * The EdDSA-Poseidon private key of a sandbox university: SHA-256 of its published groth16 seed.
 * Published on purpose (like test card numbers): anyone may issue sandbox credentials.
 */
export function sandboxIssuerPrivateKey(university: SandboxUniversity): Uint8Array {
  return sha256(utf8ToBytes(formatSeed(university, 'groth16')));
}

let cached: Record<string, BabyJubJubPublicKey> | undefined;

/**
 * Public keys of the sandbox universities, by domain. Deriving them takes circomlibjs (GPL,
 * dev only), so `scripts/groth16-build.sh` derives them once and commits the result; the
 * service only reads that file.
 */
export function sandboxIssuerPublicKeys(): Record<string, BabyJubJubPublicKey> {
  if (cached) return cached;
  const parsed: unknown = JSON.parse(readFileSync(GROTH16_ARTIFACTS.sandboxIssuers, 'utf8'));
  if (typeof parsed !== 'object' || parsed === null) throw new Error('sandbox-issuers.json: not an object');
  const keys: Record<string, BabyJubJubPublicKey> = {};
  for (const [domain, key] of Object.entries(parsed)) {
    const { x, y } = (key ?? {}) as Record<string, unknown>;
    if (parseFieldElement(x) === undefined || parseFieldElement(y) === undefined) {
      throw new Error(`sandbox-issuers.json: bad key for ${domain}`);
    }
    keys[domain] = { x: x as string, y: y as string };
  }
  cached = keys;
  return keys;
}
