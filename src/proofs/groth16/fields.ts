import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes, bytesToHex } from '@noble/hashes/utils.js';
import { lengthPrefixed } from '../length-prefixed.ts';

/**
 * Field elements of the circuit: the BN254 scalar field and the mappings from service values
 * (nonce, audience, university domain) to field elements. Documented in docs/zk-groth16.md.
 */

/** The BN254 (alt_bn128) scalar field order r: every circuit signal is an integer in [0, r). */
export const BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;

/** Largest `now` / `valid_until` the circuit accepts: both are range-checked to 64 bits. */
export const MAX_TIMESTAMP = (1n << 64n) - 1n;

/** SHA-256 of the UTF-8 text (or of the bytes), read as a big-endian integer, reduced mod r. */
export function hashToField(text: string | Uint8Array): bigint {
  return BigInt(`0x${bytesToHex(sha256(typeof text === 'string' ? utf8ToBytes(text) : text))}`) % BN254_R;
}

/** First field of the nonceField encoding; v1 was the ambiguous `matricula-groth16-v1|<audience>|<nonce>`. */
export const NONCE_FIELD_TYPE = 'matricula-groth16-nonce-v2';

/**
 * The field element a session's nonce becomes: SHA-256 of the length-prefixed fields type,
 * audience and nonce, mod r. It binds the audience too, so that a proof made for one service
 * cannot be replayed at another that happened to issue the same nonce, and the length prefixes
 * keep a caller who picks both from moving bytes between them (issue 10, finding 2).
 */
export function nonceField(nonce: string, audience: string): bigint {
  return hashToField(lengthPrefixed([NONCE_FIELD_TYPE, audience, nonce]));
}

/** The field element that stands for a university domain in the signed credential. */
export function domainHash(domain: string): bigint {
  return hashToField(`matricula-domain-v1|${domain}`);
}

/**
 * Parses a canonical decimal field element (no sign, no leading zeros, < r). Returns undefined
 * for anything else: a value >= r would alias another signal and must never reach the pairing.
 */
export function parseFieldElement(value: unknown): bigint | undefined {
  if (typeof value !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(value)) return undefined;
  const n = BigInt(value);
  return n < BN254_R ? n : undefined;
}
