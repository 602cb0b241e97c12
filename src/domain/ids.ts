import { randomFillSync } from 'node:crypto';
import type { Clock } from './clock.ts';

/**
 * Resource ids: a type prefix, 10 characters of time and 16 of randomness in lowercase Crockford
 * base32 (ULID layout). Ids of one type sort by creation time, so cursor pagination orders by id
 * alone; lowercase digits and letters sort the same under byte and locale collations.
 */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export const ID_PREFIXES = {
  organization: 'org_',
  application: 'app_',
  apiKey: 'key_',
  session: 'sess_',
  issuer: 'iss_',
  identityProvider: 'idp_',
  identityFederation: 'fed_',
  event: 'evt_',
  webhookEndpoint: 'whk_',
  delivery: 'del_',
  attempt: 'att_',
  request: 'req_',
  member: 'mem_',
  invitation: 'inv_',
  audit: 'aud_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

// Random bytes for ids and per-request secrets come from a pool filled 4 KiB at a time, each byte
// used once: one call to the CSPRNG per 4 KiB instead of one per value (every request gets an id,
// every new session a nonce). The bytes are the CSPRNG's either way; only the calls are fewer.
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let poolOffset = POOL_SIZE;

/** The offset in `pool` of `length` fresh bytes, taken: never handed out again. */
function take(length: number): number {
  if (length > POOL_SIZE) throw new RangeError(`at most ${POOL_SIZE} pooled random bytes at a time`);
  if (poolOffset + length > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const offset = poolOffset;
  poolOffset += length;
  return offset;
}

/** `length` bytes from the CSPRNG, through the pool: a copy, the pool's bytes are not reused. */
export function pooledRandomBytes(length: number): Buffer {
  const offset = take(length);
  return Buffer.from(pool.subarray(offset, offset + length));
}

/** The alphabet's character codes. */
const ALPHABET_CODES = Array.from(ALPHABET, (c) => c.charCodeAt(0));

/**
 * Per kind, the character codes of an id: the prefix's, then the 26 of the body, written over by
 * each {@link newId} (synchronous: one id at a time).
 */
const idCodes = new Map<IdKind, number[]>();

/**
 * A new id of `kind`, made as one string from its character codes. Adding the characters one at
 * a time made a string for each, 26 for an id, and every request gets one (its request id): under
 * callgrind's cache model those strings were the service's largest source of memory written.
 */
export function newId(kind: IdKind, clock?: Clock): string {
  let ms = (clock ? clock.now() : new Date()).getTime();
  let codes = idCodes.get(kind);
  if (!codes)
    idCodes.set(kind, (codes = Array.from(ID_PREFIXES[kind] + ALPHABET.slice(0, 26), (c) => c.charCodeAt(0))));
  const start = ID_PREFIXES[kind].length;
  for (let i = start + 9; i >= start; i--) {
    codes[i] = ALPHABET_CODES[ms % 32];
    ms = Math.floor(ms / 32);
  }
  const offset = take(16);
  for (let i = 0; i < 16; i++) codes[start + 10 + i] = ALPHABET_CODES[pool[offset + i]! & 31];
  return String.fromCharCode(...codes);
}

/**
 * The boundary between the ids of `kind` made before `at` and those made at or after it: every id
 * made earlier sorts below it, every later one above (how event retention finds old events by
 * their primary key, without an index on their time).
 */
export function idBoundaryAt(kind: IdKind, at: Date): string {
  return ID_PREFIXES[kind] + encodeTime(at.getTime());
}

const ID_BODY = /^[0-9a-hjkmnp-tv-z]{26}$/;

/** True when `value` has the shape of an id of `kind` (cheap check before any lookup). */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = ID_PREFIXES[kind];
  return value.startsWith(prefix) && ID_BODY.test(value.slice(prefix.length));
}
