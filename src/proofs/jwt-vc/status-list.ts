import { gunzipSync } from 'node:zlib';
import type { TrustRegistry } from '../types.ts';
import { decodeJwt } from '../sd-jwt-vc/compact.ts';
import { isJsonObject } from '../sd-jwt-vc/jose.ts';
import { MAX_STATUS_LIST_BYTES, type StatusOutcome, type TokenSignatureCheck } from '../sd-jwt-vc/status-list.ts';

/**
 * Revocation of W3C credentials: a `credentialStatus` entry of type `BitstringStatusListEntry`
 * (W3C Bitstring Status List v1.0) or `StatusList2021Entry` (its predecessor, which EBSI uses)
 * names a status list credential (`statusListCredential`) and an index (`statusListIndex`). The
 * list credential must be a JWT signed with the same trust as the credential (a list secured
 * otherwise, by a Data Integrity proof or not at all, cannot be trusted here: fail-closed), its
 * `encodedList` a GZIP-compressed bitstring, index 0 the first bit (most significant) of the first
 * byte. Purposes `revocation` and `suspension` are read; other purposes (`message`, `refresh`) say
 * nothing about validity and are skipped. Same outcomes as the Token Status List (status-list.ts).
 */

const ENTRY_TYPES: Record<string, { list: string; subject: string }> = {
  BitstringStatusListEntry: { list: 'BitstringStatusListCredential', subject: 'BitstringStatusList' },
  StatusList2021Entry: { list: 'StatusList2021Credential', subject: 'StatusList2021' },
};

const PURPOSES: Record<string, 'revoked' | 'suspended'> = { revocation: 'revoked', suspension: 'suspended' };

type Entry = { type: string; purpose: 'revocation' | 'suspension'; uri: string; index: number };

function unknown(message: string, unreachable = false, detail?: string): StatusOutcome {
  return { state: 'unknown', unreachable, message, ...(detail !== undefined ? { detail } : {}) };
}

/** The entries to check; a message when one cannot be read (fail-closed, like a malformed Token Status List reference). */
function entriesOf(credentialStatus: unknown): Entry[] | string {
  if (credentialStatus === undefined) return [];
  const list = Array.isArray(credentialStatus) ? credentialStatus : [credentialStatus];
  const entries: Entry[] = [];
  for (const entry of list) {
    if (!isJsonObject(entry)) return 'credentialStatus is not an object';
    const type = typeof entry.type === 'string' ? entry.type : undefined;
    if (type === undefined || !(type in ENTRY_TYPES))
      return `credentialStatus type ${JSON.stringify(entry.type)} is not supported (BitstringStatusListEntry, StatusList2021Entry)`;
    const purpose = entry.statusPurpose;
    if (typeof purpose !== 'string') return 'credentialStatus.statusPurpose is missing';
    if (purpose !== 'revocation' && purpose !== 'suspension') continue;
    const uri = entry.statusListCredential;
    if (typeof uri !== 'string' || !/^https?:\/\//.test(uri))
      return 'credentialStatus.statusListCredential is not an http(s) URL';
    const index = typeof entry.statusListIndex === 'string' ? entry.statusListIndex : undefined;
    if (index === undefined || !/^\d{1,10}$/.test(index) || !Number.isSafeInteger(Number(index)))
      return 'credentialStatus.statusListIndex is not a non-negative integer string';
    entries.push({ type, purpose, uri, index: Number(index) });
  }
  return entries;
}

/** The bit at `index` of a base64url (Bitstring: multibase `u` prefix) GZIP-compressed list, or why not. */
function bitAt(encodedList: unknown, index: number, multibase: boolean): number | string {
  if (typeof encodedList !== 'string') return 'the status list has no encodedList';
  const text = multibase ? (encodedList.startsWith('u') ? encodedList.slice(1) : undefined) : encodedList;
  if (text === undefined || !/^[A-Za-z0-9_-]+={0,2}$/.test(text))
    return 'encodedList is not base64url (with the multibase prefix u)';
  let bits: Buffer;
  try {
    bits = gunzipSync(Buffer.from(text, 'base64url'), { maxOutputLength: MAX_STATUS_LIST_BYTES });
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE'
      ? `the status list inflates beyond ${MAX_STATUS_LIST_BYTES} bytes`
      : 'encodedList is not GZIP-compressed';
  }
  if (index >= bits.length * 8) return `index ${index} is outside the status list (${bits.length * 8} entries)`;
  return (bits[index >> 3]! >> (7 - (index & 7))) & 1;
}

async function checkEntry(
  entry: Entry,
  iss: string,
  registry: TrustRegistry,
  checkSignature: TokenSignatureCheck,
  now: Date,
  sandbox: boolean,
): Promise<StatusOutcome> {
  const publications = registry.publications!;
  const fetched = await publications.statusListToken(entry.uri, { sandbox, accept: 'application/vc+jwt' });
  if (!fetched.ok && fetched.refused)
    return {
      state: 'unknown',
      unreachable: false,
      refused: true,
      message: 'the status list URL is not allowed for this issuer',
      detail: fetched.message,
    };
  if (!fetched.ok) return unknown("the issuer's status list could not be fetched", true, fetched.message);
  const token = decodeJwt(fetched.value.trim());
  if (!token) return unknown(`${entry.uri} did not return a status list credential secured as a JWT`);
  const signatureProblem = await checkSignature(token);
  if (signatureProblem) return unknown(`the status list credential is not signed by this issuer: ${signatureProblem}`);
  const payload = token.payload;
  const credential = isJsonObject(payload.vc) ? payload.vc : payload;
  const issuer = isJsonObject(credential.issuer) ? credential.issuer.id : credential.issuer;
  if ((payload.iss ?? issuer) !== iss) return unknown("the status list credential's issuer is not the credential's");
  const { list, subject: subjectType } = ENTRY_TYPES[entry.type]!;
  const types = Array.isArray(credential.type) ? credential.type : [credential.type];
  if (!types.includes(list)) return unknown(`the status list credential is not a ${list}`);
  const id = credential.id ?? payload.jti;
  if (id !== undefined && id !== entry.uri) return unknown(`the status list credential's id is not ${entry.uri}`);
  const until = [
    typeof payload.exp === 'number' ? payload.exp * 1000 : undefined,
    ...[credential.validUntil, credential.expirationDate].map((d) =>
      typeof d === 'string' ? Date.parse(d) : undefined,
    ),
  ].filter((t): t is number => t !== undefined);
  if (until.some((t) => Number.isNaN(t) || t <= now.getTime()))
    return unknown('the status list credential has expired');
  const subject = credential.credentialSubject;
  if (!isJsonObject(subject) || subject.type !== subjectType)
    return unknown(`the status list credential's subject is not a ${subjectType}`);
  if (
    subject.statusPurpose !== entry.purpose &&
    !(Array.isArray(subject.statusPurpose) && subject.statusPurpose.includes(entry.purpose))
  )
    return unknown(`the status list's purpose is not ${entry.purpose}`);
  publications.statusListVerified?.(entry.uri, fetched.value.trim());
  const bit = bitAt(subject.encodedList, entry.index, entry.type === 'BitstringStatusListEntry');
  if (typeof bit === 'string') return unknown(bit);
  if (bit === 0) return { state: 'valid' };
  const word = PURPOSES[entry.purpose]!;
  return {
    state: word,
    message: `the issuer's ${subjectType} marks the credential ${word} (index ${entry.index})`,
  };
}

/**
 * The status of a W3C credential with `credentialStatus`: `none` without entries, the first
 * revoked/suspended or undeterminable entry otherwise, `valid` when every entry reads 0.
 */
export async function w3cCredentialStatus(
  credentialStatus: unknown,
  iss: string,
  registry: TrustRegistry,
  checkSignature: TokenSignatureCheck,
  now: Date,
  options: { sandbox?: boolean } = {},
): Promise<StatusOutcome> {
  const entries = entriesOf(credentialStatus);
  if (typeof entries === 'string') return unknown(entries);
  if (entries.length === 0) return { state: 'none' };
  if (!registry.publications) return unknown('this verifier cannot fetch status lists');
  for (const entry of entries) {
    const outcome = await checkEntry(entry, iss, registry, checkSignature, now, options.sandbox ?? false);
    if (outcome.state !== 'valid') return outcome;
  }
  return { state: 'valid' };
}
