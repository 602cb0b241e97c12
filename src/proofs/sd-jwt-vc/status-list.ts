import { inflateSync } from 'node:zlib';
import { StatusList, type BitsPerStatus } from '@sd-jwt/jwt-status-list';
import { BoundedCache } from '../../domain/bounded-cache.ts';
import type { PresentationCheck, TrustRegistry, VerifiedPresentation } from '../types.ts';
import { decodeJwt, type DecodedJwt } from './compact.ts';
import { base64urlDecode, isJsonObject } from './jose.ts';

/**
 * Revocation through the IETF Token Status List (draft-ietf-oauth-status-list): a credential's
 * `status.status_list` names a list (`uri`) and its index (`idx`); the list is a JWT
 * (`typ: statuslist+jwt`) signed with the same trust as the credential, whose `sub` is the `uri`,
 * holding a zlib-compressed bit array. Decoding is @sd-jwt/jwt-status-list's; the checks around it
 * (signature, `sub`, `exp`, sizes) are ours, since the library verifies nothing.
 */

/** Largest decompressed list accepted: 4 MiB is 32 million one-bit entries. A bigger one is refused, not inflated. */
export const MAX_STATUS_LIST_BYTES = 4 * 1024 * 1024;

/** Status values of the draft: 0x00 VALID, 0x01 INVALID, 0x02 SUSPENDED; anything else is not valid either. */
const STATUS_WORDS: Record<number, 'revoked' | 'suspended'> = { 1: 'revoked', 2: 'suspended' };

export type StatusOutcome =
  | { state: 'none' }
  | { state: 'valid' }
  | { state: 'revoked' | 'suspended'; message: string }
  /** The status could not be determined: unreachable, or a list that cannot be trusted or read. */
  /** `message` is shown to callers; `detail` (addresses, error codes) is for the operator only. */
  /** `refused`: a URI this issuer may not use (a sandbox credential's foreign list): rejected whatever the policy. */
  | { state: 'unknown'; unreachable: boolean; message: string; detail?: string; refused?: boolean };

/** Verifies a status list token with the credential's issuer trust; a message when it does not verify. */
export type TokenSignatureCheck = (jwt: DecodedJwt) => Promise<string | undefined>;

function unknown(message: string, unreachable = false, detail?: string): StatusOutcome {
  return { state: 'unknown', unreachable, message, ...(detail !== undefined ? { detail } : {}) };
}

/** The `status.status_list` reference of a payload: none, a usable one, or a malformed one (a message). */
export function statusReference(
  payload: Record<string, unknown>,
): { kind: 'none' } | { kind: 'malformed'; message: string } | { kind: 'entry'; uri: string; idx: number } {
  if (payload.status === undefined) return { kind: 'none' };
  if (!isJsonObject(payload.status)) return { kind: 'malformed', message: 'status is not an object' };
  const list = payload.status.status_list;
  if (list === undefined) return { kind: 'none' };
  if (!isJsonObject(list)) return { kind: 'malformed', message: 'status.status_list is not an object' };
  const { uri, idx } = list;
  if (typeof uri !== 'string' || !/^https?:\/\//.test(uri))
    return { kind: 'malformed', message: 'status.status_list.uri is not an http(s) URI' };
  if (typeof idx !== 'number' || !Number.isSafeInteger(idx) || idx < 0)
    return { kind: 'malformed', message: 'status.status_list.idx is not a non-negative integer' };
  return { kind: 'entry', uri, idx };
}

function isBits(value: unknown): value is BitsPerStatus {
  return value === 1 || value === 2 || value === 4 || value === 8;
}

/**
 * Decoded lists by `bits` and `lst`: a cached status list token comes back for every presentation,
 * and decoding a million-entry list takes the library half a second (bench/trust.ts). Decoding is a
 * pure function of its input, so the memo cannot go stale; it holds the last few lists only.
 */
const DECODED_LISTS_KEPT = 8;
const decoded = new BoundedCache<string, StatusList | string>(DECODED_LISTS_KEPT);

function decodeList(lst: string, bits: BitsPerStatus): StatusList | string {
  const compressed = base64urlDecode(lst);
  if (!compressed) return 'status_list.lst is not base64url';
  // A few KiB of zlib can inflate to gigabytes: inflate once within the limit before the library does.
  try {
    inflateSync(compressed, { maxOutputLength: MAX_STATUS_LIST_BYTES });
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE'
      ? `the status list inflates beyond ${MAX_STATUS_LIST_BYTES} bytes`
      : 'status_list.lst is not zlib-compressed';
  }
  try {
    return StatusList.decompressStatusList(lst, bits);
  } catch {
    return 'the status list cannot be decoded';
  }
}

/** The status at `idx` of a verified token's list, or why it cannot be read. */
function readStatus(payload: Record<string, unknown>, idx: number): number | string {
  const list = payload.status_list;
  if (!isJsonObject(list) || !isBits(list.bits) || typeof list.lst !== 'string')
    return 'the status list token has no status_list {bits: 1|2|4|8, lst}';
  const memoKey = `${list.bits}:${list.lst}`;
  let statuses = decoded.get(memoKey);
  if (statuses === undefined) {
    statuses = decodeList(list.lst, list.bits);
    decoded.set(memoKey, statuses);
  }
  if (typeof statuses === 'string') return statuses;
  const entries = statuses.statusList.length;
  if (idx >= entries) return `index ${idx} is outside the status list (${entries} entries)`;
  return statuses.getStatus(idx);
}

/**
 * The status of the credential whose signed payload is `payload`. The token is fetched through the
 * registry's publications, its signature checked by `checkSignature` (the credential's trust),
 * then `typ`, `sub` = `uri`, `iss` (if present) = the credential's, `exp` against `now`.
 */
export async function credentialStatus(
  payload: Record<string, unknown>,
  registry: TrustRegistry,
  checkSignature: TokenSignatureCheck,
  now: Date,
  options: { sandbox?: boolean } = {},
): Promise<StatusOutcome> {
  const reference = statusReference(payload);
  if (reference.kind === 'none') return { state: 'none' };
  if (reference.kind === 'malformed') return unknown(reference.message);
  if (!registry.publications) return unknown('this verifier cannot fetch status lists');
  const fetched = await registry.publications.statusListToken(reference.uri, { sandbox: options.sandbox });
  if (!fetched.ok && fetched.refused)
    return {
      state: 'unknown',
      unreachable: false,
      refused: true,
      message: 'the status list URI is not allowed for this issuer',
      detail: fetched.message,
    };
  if (!fetched.ok) return unknown("the issuer's status list could not be fetched", true, fetched.message);
  const token = decodeJwt(fetched.value.trim());
  if (!token) return unknown(`${reference.uri} did not return a status list JWT`);
  if (token.header.typ !== 'statuslist+jwt') return unknown('the status list token typ is not statuslist+jwt');
  const signatureProblem = await checkSignature(token);
  if (signatureProblem) return unknown(`the status list token is not signed by this issuer: ${signatureProblem}`);
  const claims = token.payload;
  if (claims.sub !== reference.uri) return unknown(`the status list token's sub is not ${reference.uri}`);
  if (claims.iss !== undefined && claims.iss !== payload.iss)
    return unknown("the status list token's iss is not the credential's");
  if (claims.exp !== undefined && !(typeof claims.exp === 'number' && claims.exp > now.getTime() / 1000))
    return unknown('the status list token has expired');
  registry.publications.statusListVerified?.(reference.uri, fetched.value.trim());
  const status = readStatus(claims, reference.idx);
  if (typeof status === 'string') return unknown(status);
  if (status === 0) return { state: 'valid' };
  const word = STATUS_WORDS[status] ?? 'revoked';
  return {
    state: word,
    message: `the issuer's status list marks the credential ${word} (status ${status} at index ${reference.idx})`,
  };
}

/** What a credential's status adds to the verified presentation: a revocation fact or a warning. */
export type StatusFacts = Pick<VerifiedPresentation, 'revocation' | 'warnings'>;

/**
 * A status outcome as the judgement takes it, the same for every credential format: revoked or
 * suspended is a fact (`credential_revoked`); a status that cannot be determined rejects the
 * presentation under `fail_closed` (the default) and is a warning in the result under `warn`.
 */
export function statusFacts(
  status: StatusOutcome,
  registry: TrustRegistry,
): { ok: true; facts: StatusFacts } | { ok: false; rejection: PresentationCheck } {
  if (status.state === 'none' || status.state === 'valid') return { ok: true, facts: {} };
  if (status.state !== 'unknown')
    return { ok: true, facts: { revocation: { state: status.state, message: status.message } } };
  if (!status.refused && (registry.publications?.statusListPolicy ?? 'fail_closed') === 'warn')
    return {
      ok: true,
      facts: {
        warnings: [{ code: 'credential_status_unknown', message: `Revocation not checked: ${status.message}.` }],
      },
    };
  return {
    ok: false,
    rejection: {
      ok: false,
      reason: status.unreachable ? 'issuer_unreachable' : 'invalid_status_list',
      message: `the revocation status cannot be determined: ${status.message}`,
      ...(status.detail !== undefined ? { detail: status.detail } : {}),
    },
  };
}
