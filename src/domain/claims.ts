/** The claim catalogue: what a session may ask for, and what a credential may disclose. */
export const CLAIM_CATALOGUE = ['is_active_student', 'university_domain', 'academic_level', 'valid_until'] as const;
export type ClaimName = (typeof CLAIM_CATALOGUE)[number];

export function isClaimName(value: string): value is ClaimName {
  return (CLAIM_CATALOGUE as readonly string[]).includes(value);
}

/**
 * Academic levels a credential can state, with the numeric code used where a claim must be a
 * field element (the Groth16 circuit) or a fixed-width message (BBS). Codes are stable: never
 * renumber, only append.
 */
export const ACADEMIC_LEVELS = {
  undergraduate: 1,
  postgraduate: 2,
  doctoral: 3,
  vocational: 4,
} as const;
export type AcademicLevel = keyof typeof ACADEMIC_LEVELS;

export function isAcademicLevel(value: string): value is AcademicLevel {
  return Object.hasOwn(ACADEMIC_LEVELS, value);
}

export function academicLevelFromCode(code: number): AcademicLevel | undefined {
  return (Object.keys(ACADEMIC_LEVELS) as AcademicLevel[]).find((level) => ACADEMIC_LEVELS[level] === code);
}

/** Claims as disclosed by a verified presentation. Absent means "not disclosed". */
export interface DisclosedClaims {
  is_active_student?: boolean;
  university_domain?: string;
  academic_level?: string;
  valid_until?: string;
}
