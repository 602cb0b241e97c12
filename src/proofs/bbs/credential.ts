import { createHash } from 'node:crypto';
import type { ClaimName, DisclosedClaims } from '../../domain/claims.ts';
import { lengthPrefixed } from '../length-prefixed.ts';

/**
 * The `bbs` student credential: what the issuer signs, message by message, and how each message
 * is turned into bytes. Holder and verifier both build their bytes from here, so the two can never
 * drift apart. Documented in docs/credentials-bbs.md; changing anything here is a new credential
 * version (a new `type`), never an edit.
 */

/** The BBS ciphersuite of the IRTF CFRG draft that every `bbs` credential uses. */
export const BBS_CIPHERSUITE = 'BLS12-381-SHA-256';

/**
 * The ordered messages of a credential. The index of a message is its position here: proofs
 * disclose messages by index. The last one, `holder_secret`, is never disclosed.
 */
export const BBS_STUDENT_CREDENTIAL = {
  type: 'matricula:StudentCredential:v1',
  messages: ['is_active_student', 'university_domain', 'academic_level', 'valid_until', 'holder_secret'],
} as const;

export type BbsMessageName = (typeof BBS_STUDENT_CREDENTIAL.messages)[number];

export const BBS_MESSAGE_COUNT = BBS_STUDENT_CREDENTIAL.messages.length;
export const HOLDER_SECRET_INDEX = BBS_STUDENT_CREDENTIAL.messages.indexOf('holder_secret');

/** Longest disclosed value accepted: every real value (a domain, an ISO date) is far shorter. */
export const MAX_CLAIM_VALUE_LENGTH = 256;

const utf8 = new TextEncoder();

/** The values a credential states, each as the string that is signed. */
export interface BbsCredentialValues {
  is_active_student: 'true' | 'false';
  university_domain: string;
  academic_level: string;
  valid_until: string;
}

/** Message index of a catalogue claim. */
export function claimIndex(claim: ClaimName): number {
  return BBS_STUDENT_CREDENTIAL.messages.indexOf(claim);
}

/** Catalogue claim at `index`, or undefined for the holder secret and anything out of range. */
export function claimAtIndex(index: number): ClaimName | undefined {
  if (!Number.isInteger(index) || index < 0 || index === HOLDER_SECRET_INDEX) return undefined;
  return BBS_STUDENT_CREDENTIAL.messages[index] as ClaimName | undefined;
}

/** Bytes of a claim message: UTF-8 of `name=value`, so a value can never pass for another claim. */
export function encodeClaimMessage(claim: ClaimName, value: string): Uint8Array {
  return utf8.encode(`${claim}=${value}`);
}

/**
 * Bytes of the holder-secret message: UTF-8 of `holder_secret=` followed by the base64url of
 * SHA-256(UTF-8 of `matricula:bbs:holder-secret:v1|<holderSeed>`). It gives every holder's
 * credential a hidden value of its own; being undisclosed, the proof hides it.
 */
export function encodeHolderSecretMessage(holderSeed: string): Uint8Array {
  const secret = createHash('sha256')
    .update(`matricula:bbs:holder-secret:v1|${holderSeed}`, 'utf8')
    .digest('base64url');
  return utf8.encode(`holder_secret=${secret}`);
}

/** All messages of a credential, in signing order. */
export function encodeCredentialMessages(values: BbsCredentialValues, holderSeed: string): Uint8Array[] {
  return [
    encodeClaimMessage('is_active_student', values.is_active_student),
    encodeClaimMessage('university_domain', values.university_domain),
    encodeClaimMessage('academic_level', values.academic_level),
    encodeClaimMessage('valid_until', values.valid_until),
    encodeHolderSecretMessage(holderSeed),
  ];
}

/**
 * The BBS signature header: UTF-8 of `matricula:StudentCredential:v1|<issuer domain>`. It binds a
 * signature to its credential type and to the issuer that made it, so a key used for anything
 * else (or by another registry entry) cannot produce a valid credential.
 */
export function credentialHeader(issuerDomain: string): Uint8Array {
  return utf8.encode(`${BBS_STUDENT_CREDENTIAL.type}|${issuerDomain}`);
}

/** First field of every presentation header: names the encoding, so that a later one cannot be confused with it. */
export const PRESENTATION_HEADER_TYPE = 'matricula:bbs:presentation-header:v2';

/**
 * The BBS presentation header: the fields type, audience, nonce and now (decimal unix seconds),
 * each as a 4-byte big-endian byte length followed by its UTF-8 bytes. The proof's challenge
 * hashes it, so a proof holds only for the nonce, the service and the time it was made for.
 * Length prefixes make the encoding injective whatever the fields contain: the previous
 * `<audience>|<nonce>` let a caller who picks both move a `|` from one to the other (issue 10,
 * finding 2), and held no time, so a captured proof verified forever.
 */
export function presentationHeader(audience: string, nonce: string, now: number): Uint8Array {
  if (!Number.isSafeInteger(now) || now < 0) throw new RangeError('now must be unix seconds');
  return lengthPrefixed([PRESENTATION_HEADER_TYPE, audience, nonce, String(now)]);
}

/**
 * A disclosed value as the claim type of the catalogue, or undefined when the value cannot be
 * that claim (then no issuer could have signed it as such).
 */
export function typedClaimValue(claim: ClaimName, value: string): DisclosedClaims[ClaimName] | undefined {
  if (claim === 'is_active_student') {
    if (value === 'true') return true;
    if (value === 'false') return false;
    return undefined;
  }
  return value;
}
