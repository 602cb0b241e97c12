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

/**
 * Claims as a result reports them (docs/sessions.md): `is_active_student`, `academic_level` and
 * `valid_until` are always present, and `university_domain` when the business asked for it. A
 * claim the business did not ask for, or that the format proves without revealing (Groth16 proves
 * `valid_until > now` and shows no date), is null.
 */
export interface ReportedClaims {
  is_active_student: boolean | null;
  university_domain?: string | null;
  academic_level: AcademicLevel | null;
  valid_until: string | null;
}

/** The claims of a result that has none (no presentation qualified, or too many attempts). */
export function noReportedClaims(): ReportedClaims {
  return { is_active_student: null, academic_level: null, valid_until: null };
}

/**
 * The reported shape of `claims`, in catalogue order: of what was disclosed, only what is in
 * `asked`; every always-reported key present. Also completes results stored before the shape was fixed.
 */
export function toReportedClaims(
  claims: { [K in ClaimName]?: DisclosedClaims[K] | null },
  asked?: ReadonlySet<ClaimName>,
): ReportedClaims {
  const value = <K extends ClaimName>(name: K): NonNullable<DisclosedClaims[K]> | null =>
    !asked || asked.has(name) ? (claims[name] ?? null) : null;
  const domainReported = asked ? asked.has('university_domain') : 'university_domain' in claims;
  return {
    is_active_student: value('is_active_student'),
    ...(domainReported ? { university_domain: value('university_domain') } : {}),
    // Verifiers refuse a level outside the catalogue (invalid_claim); the guard keeps the type exact.
    academic_level: academicLevel(value('academic_level')),
    valid_until: value('valid_until'),
  };
}

function academicLevel(value: string | null): AcademicLevel | null {
  return value !== null && isAcademicLevel(value) ? value : null;
}
