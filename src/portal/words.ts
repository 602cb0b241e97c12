import type { ClaimName } from '../domain/claims.ts';
import { claimsToRequest } from '../proofs/qualify.ts';

/** What each claim tells the business, in the words shown to a student. */
export const CLAIM_WORDS: Readonly<Record<ClaimName, string>> = {
  is_active_student: 'That you are currently enrolled as a student',
  university_domain: 'Which university you study at',
  academic_level: 'Your level of study (for example, undergraduate)',
  valid_until: 'The date your student status is valid until',
};

/**
 * Exactly what the wallet will be asked to disclose, in plain words: the session's claims, and
 * always being an active student and the date the status is valid until ({@link claimsToRequest}).
 */
export function claimsInWords(requiredClaims: readonly ClaimName[]): string[] {
  return claimsToRequest(requiredClaims).map((claim) => CLAIM_WORDS[claim]);
}
