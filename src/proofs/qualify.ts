import { toReportedClaims, type ClaimName, type DisclosedClaims, type ReportedClaims } from '../domain/claims.ts';
import type { FailureReason } from '../domain/session.ts';
import type { VerifiedPresentation } from './types.ts';

/** Why a cryptographically valid presentation does not qualify; stable codes. */
export type QualificationFailure = Exclude<FailureReason, 'too_many_attempts'>;

export type Qualification =
  { verified: true } | { verified: false; failureReason: QualificationFailure; message: string };

/**
 * The one judgement shared by every format: is this an active student whose credential is
 * current, and did they disclose what the business asked for (`requiredClaims`)? A required
 * `valid_until` is satisfied either by the disclosed date or by a proof that it lies after now
 * (Groth16), which reveals no date. Currency must always be established, whether or not the
 * business asked for the date: by the disclosed `valid_until`, the credential's `exp`, or the
 * Groth16 predicate. A format without an expiry of its own (BBS) must therefore disclose it.
 */
export function qualify(
  presentation: VerifiedPresentation,
  requiredClaims: readonly ClaimName[],
  now: Date,
): Qualification {
  const { claims, predicates, expiresAt, revocation } = presentation;
  // Checked first: a revoked credential says nothing reliable about the student any more.
  if (revocation)
    return {
      verified: false,
      failureReason: 'credential_revoked',
      message: `The credential is ${revocation.state}: ${revocation.message}.`,
    };
  for (const claim of withActiveStudent(requiredClaims)) {
    const provenWithoutDisclosure = claim === 'valid_until' && predicates?.validUntilAfterNow !== undefined;
    if (claims[claim] === undefined && !provenWithoutDisclosure) {
      return {
        verified: false,
        failureReason: 'claim_not_disclosed',
        message: `The required claim ${claim} was not disclosed.`,
      };
    }
  }
  if (claims.is_active_student !== true) {
    return {
      verified: false,
      failureReason: 'student_inactive',
      message: 'The credential does not show an active student.',
    };
  }
  const nowMs = now.getTime();
  const currencyKnown =
    claims.valid_until !== undefined || expiresAt !== undefined || predicates?.validUntilAfterNow !== undefined;
  if (!currencyKnown) {
    return {
      verified: false,
      failureReason: 'claim_not_disclosed',
      message: 'The credential does not show that it is still valid: disclose valid_until.',
    };
  }
  const expired =
    (claims.valid_until !== undefined && !(Date.parse(claims.valid_until) > nowMs)) ||
    predicates?.validUntilAfterNow === false ||
    (expiresAt !== undefined && !(Date.parse(expiresAt) > nowMs));
  if (expired) return { verified: false, failureReason: 'credential_expired', message: 'The credential has expired.' };
  return { verified: true };
}

/**
 * Being an active student is what every verification establishes, so `is_active_student` is
 * always requested, whatever else the session asks for.
 */
export function withActiveStudent(requiredClaims: readonly ClaimName[]): ClaimName[] {
  return requiredClaims.includes('is_active_student') ? [...requiredClaims] : ['is_active_student', ...requiredClaims];
}

/**
 * What a wallet is asked to disclose: the business's claims, `is_active_student`, and
 * `valid_until` so that currency can be checked (it is reported only if the business asked).
 */
export function claimsToRequest(requiredClaims: readonly ClaimName[]): ClaimName[] {
  const claims = withActiveStudent(requiredClaims);
  return claims.includes('valid_until') ? claims : [...claims, 'valid_until'];
}

/**
 * The claims a result reports (docs/sessions.md): what was disclosed of what the wallet was asked for
 * ({@link claimsToRequest}: the business's claims, `is_active_student` and `valid_until`), in
 * catalogue order, with null for the always-reported keys not asked for or not revealed. The student was told
 * the date goes to the business, so it is reported whenever the format reveals it (SD-JWT VC, BBS);
 * Groth16 proves it lies after now and it stays null. Anything else the wallet disclosed is dropped.
 */
export function reportedClaims(claims: DisclosedClaims, requiredClaims: readonly ClaimName[]): ReportedClaims {
  return toReportedClaims(claims, new Set(claimsToRequest(requiredClaims)));
}
