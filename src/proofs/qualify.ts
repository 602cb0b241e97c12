import type { ClaimName, DisclosedClaims } from '../domain/claims.ts';
import type { VerifiedPresentation } from './types.ts';

/** Why a cryptographically valid presentation does not qualify; stable codes. */
export type QualificationFailure = 'student_inactive' | 'credential_expired' | 'claim_not_disclosed';

export type Qualification = { verified: true } | { verified: false; failureReason: QualificationFailure; message: string };

/**
 * The one judgement shared by every format: is this an active student whose credential is
 * current, and did they disclose what was asked? A required `valid_until` is satisfied either by
 * the disclosed date or by a proof that it lies after now (Groth16), which reveals no date.
 */
export function qualify(presentation: VerifiedPresentation, requiredClaims: readonly ClaimName[], now: Date): Qualification {
  const { claims, predicates, expiresAt } = presentation;
  for (const claim of withActiveStudent(requiredClaims)) {
    const provenWithoutDisclosure = claim === 'valid_until' && predicates?.validUntilAfterNow !== undefined;
    if (claims[claim] === undefined && !provenWithoutDisclosure) {
      return { verified: false, failureReason: 'claim_not_disclosed', message: `The required claim ${claim} was not disclosed.` };
    }
  }
  if (claims.is_active_student !== true) {
    return { verified: false, failureReason: 'student_inactive', message: 'The credential does not show an active student.' };
  }
  const nowMs = now.getTime();
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

/** The claims a result reports: what was disclosed, in catalogue order. */
export function reportedClaims(claims: DisclosedClaims): DisclosedClaims {
  const out: DisclosedClaims = {};
  if (claims.is_active_student !== undefined) out.is_active_student = claims.is_active_student;
  if (claims.university_domain !== undefined) out.university_domain = claims.university_domain;
  if (claims.academic_level !== undefined) out.academic_level = claims.academic_level;
  if (claims.valid_until !== undefined) out.valid_until = claims.valid_until;
  return out;
}
