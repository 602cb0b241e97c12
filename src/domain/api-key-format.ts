import { hash, randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';
import type { Environment } from './environment.ts';

/**
 * Secret API keys: `sk_test_` or `sk_live_`, 32 random base62 characters (~190 bits), then a
 * 6-character base62 CRC32 of everything before it. The checksum lets secret scanners and our
 * own edge reject a mistyped or made-up key without touching the database; it is not a secret.
 */
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;

export const KEY_PREFIX: Record<Environment, string> = { sandbox: 'sk_test_', live: 'sk_live_' };

function base62(value: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

export function checksumOf(body: string): string {
  return base62(crc32(body) >>> 0, CHECKSUM_LENGTH);
}

export function generateSecret(environment: Environment): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[randomInt(62)];
  const body = KEY_PREFIX[environment] + random;
  return body + checksumOf(body);
}

const SHAPE = /^sk_(test|live)_[0-9A-Za-z]{38}$/;

/** The environment of a well-formed key with a valid checksum, or undefined. */
export function parseSecret(secret: string): Environment | undefined {
  if (!SHAPE.test(secret)) return undefined;
  const body = secret.slice(0, -CHECKSUM_LENGTH);
  if (checksumOf(body) !== secret.slice(-CHECKSUM_LENGTH)) return undefined;
  return secret.startsWith(KEY_PREFIX.live) ? 'live' : 'sandbox';
}

/**
 * What is stored: SHA-256 of the secret. A fast hash suffices because the secret carries ~190
 * random bits (nothing to brute-force, unlike a password), and it keeps authentication one
 * indexed lookup; comparing hashes instead of secrets also keeps the lookup free of timing leaks.
 */
export function hashSecret(secret: string): string {
  // node:crypto's one-shot `hash`: every authenticated request hashes its key, and a Hash object
  // (createHash) costs twice the digest itself in JavaScript around it.
  return hash('sha256', secret, 'hex');
}

/** The prefix, one asterisk per hidden character, then the last four: as long as the key. */
export function hintOf(secret: string): string {
  const prefixLength = secret.startsWith('sk_') ? KEY_PREFIX.sandbox.length : 0;
  const hidden = secret.length - prefixLength - 4;
  return secret.slice(0, prefixLength) + '*'.repeat(hidden) + secret.slice(-4);
}
