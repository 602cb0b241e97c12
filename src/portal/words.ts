import type { ClaimName } from '../domain/claims.ts';
import { withActiveStudent } from '../proofs/qualify.ts';

/** What each claim tells the business, in the words shown to a student. */
export const CLAIM_WORDS: Readonly<Record<ClaimName, string>> = {
  is_active_student: 'That you are currently enrolled as a student',
  university_domain: 'Which university you study at',
  academic_level: 'Your level of study (for example, undergraduate)',
  valid_until: 'The date your student status is valid until',
};

/** The claims a session asks for, in plain words; being an active student is always asked. */
export function claimsInWords(requiredClaims: readonly ClaimName[]): string[] {
  return withActiveStudent(requiredClaims).map((claim) => CLAIM_WORDS[claim]);
}
