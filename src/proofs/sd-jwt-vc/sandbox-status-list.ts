import { randomInt } from 'node:crypto';
import { createHeaderAndPayload, StatusList } from '@sd-jwt/jwt-status-list';
import { base64urlEncode, signJws } from './jose.ts';
import { sandboxUniversityKeyPair } from './keys.ts';

/**
 * The status lists of the sandbox universities, which Matricula publishes itself
 * (`GET /sandbox/status-lists/{domain}`), signed with the university's published sandbox key.
 * Like test card numbers, some indexes have a fixed meaning, so that anyone can make a revoked
 * credential without touching the service:
 *
 * - 0–15 are always revoked, 16–31 always suspended;
 * - 32–1023 are reserved (valid unless an operator sets them);
 * - the wallet simulator gives valid credentials a random index from 1024 on.
 *
 * An operator can set any index (`matricula sandbox revoke`); those statuses come from the database.
 */

/** Entries of a sandbox list: two bits each (valid, revoked, suspended). 4 KiB uncompressed. */
export const SANDBOX_STATUS_LIST_SIZE = 16_384;
export const SANDBOX_STATUS_BITS = 2;
export const STATUS_VALID = 0;
export const STATUS_REVOKED = 1;
export const STATUS_SUSPENDED = 2;
/** How long a relying party may cache a sandbox list (`ttl`): a minute, so revocations show quickly. */
export const SANDBOX_STATUS_LIST_TTL_SECONDS = 60;

const REVOKED = { from: 0, to: 16 };
const SUSPENDED = { from: 16, to: 32 };
const FIRST_FREE_INDEX = 1024;

/** The path under BASE_URL where a sandbox university's list is published. */
export function sandboxStatusListPath(domain: string): string {
  return `/sandbox/status-lists/${domain}`;
}

/** An index for a new simulator credential of the given status. */
export function sandboxStatusIndex(status: 'valid' | 'revoked' | 'suspended'): number {
  if (status === 'revoked') return randomInt(REVOKED.from, REVOKED.to);
  if (status === 'suspended') return randomInt(SUSPENDED.from, SUSPENDED.to);
  return randomInt(FIRST_FREE_INDEX, SANDBOX_STATUS_LIST_SIZE);
}

/** The fixed status of an index (before any operator change). */
function builtInStatus(idx: number): number {
  if (idx >= REVOKED.from && idx < REVOKED.to) return STATUS_REVOKED;
  if (idx >= SUSPENDED.from && idx < SUSPENDED.to) return STATUS_SUSPENDED;
  return STATUS_VALID;
}

/**
 * The signed status list token (`typ: statuslist+jwt`) of sandbox university `domain`, published at
 * `uri`, at `now`, with the operator's `overrides` (index → status). Undefined for a domain that is
 * not a sandbox university.
 */
export function sandboxStatusListToken(
  domain: string,
  uri: string,
  overrides: ReadonlyMap<number, number>,
  now: Date,
): string | undefined {
  const key = sandboxUniversityKeyPair(domain);
  if (!key) return undefined;
  const statuses = Array.from({ length: SANDBOX_STATUS_LIST_SIZE }, (_, idx) => builtInStatus(idx));
  const list = new StatusList(statuses, SANDBOX_STATUS_BITS);
  for (const [idx, status] of overrides) if (idx >= 0 && idx < SANDBOX_STATUS_LIST_SIZE) list.setStatus(idx, status);
  const iat = Math.floor(now.getTime() / 1000);
  const { header, payload } = createHeaderAndPayload(
    list,
    {
      iss: `https://${domain}`,
      sub: uri,
      iat,
      exp: iat + 24 * 60 * 60,
      ttl: SANDBOX_STATUS_LIST_TTL_SECONDS,
    },
    { alg: key.alg, typ: 'statuslist+jwt' },
  );
  const signingInput = `${base64urlEncode(JSON.stringify(header))}.${base64urlEncode(JSON.stringify(payload))}`;
  return `${signingInput}.${signJws(signingInput, key.privateJwk, key.alg)}`;
}

/** Whether `idx` is one of the indexes whose status is fixed (an operator cannot change those). */
export function isFixedSandboxIndex(idx: number): boolean {
  return idx < SUSPENDED.to;
}
