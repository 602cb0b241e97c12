import { ACADEMIC_LEVELS, isAcademicLevel, type AcademicLevel } from './claims.ts';
import type { CredentialFormat } from './credentials.ts';

/**
 * Credential profiles (docs/credential-profiles.md): what a credential type means, as data. A
 * profile names a format, the type identifiers it accepts, how each catalogue claim is derived from
 * the credential, and which registry entries may issue it. A profile can only map a credential onto
 * the claim catalogue: nothing else of the credential ever leaves the verifier.
 */

/** Formats a profile can describe, by their OpenID4VP identifiers. */
export const PROFILE_FORMATS = ['dc+sd-jwt', 'jwt_vc_json'] as const;
export type ProfileFormat = (typeof PROFILE_FORMATS)[number];

/**
 * The credential format (results, `/verify`, our wallet protocol) of each profile format (DCQL
 * `format`): a result names the shape that was verified, never `sd-jwt-vc` for a W3C credential.
 */
export const CREDENTIAL_FORMAT_OF_PROFILE: Readonly<Record<ProfileFormat, CredentialFormat>> = {
  'dc+sd-jwt': 'sd-jwt-vc',
  jwt_vc_json: 'jwt-vc',
};

/** A path into the credential's claims (the disclosed payload, or a W3C VC's `credentialSubject`). */
export type ClaimPath = string[];
export type PinnedValue = string | number | boolean;

export type ActiveStudentSource =
  /** True when the claim's value (or, for an array, one of its elements) is one of `values`. */
  | {
      from: 'claim';
      path: ClaimPath;
      values: PinnedValue[];
      /** Ask wallets for these values only (DCQL `values`): a credential with another value is not offered. */
      pinned?: boolean;
    }
  /** True for any credential of this type: being within its validity is the statement. */
  | { from: 'validity' };

export type UniversityDomainSource =
  | { from: 'claim'; path: ClaimPath }
  /** The home organisation of a European Student Identifier in the claim (a string or an array of them). */
  | { from: 'esi'; path: ClaimPath }
  /** The domain of the registry entry that verified the credential. */
  | { from: 'issuer' };

export type AcademicLevelSource = { from: 'claim'; path: ClaimPath; map?: Record<string, AcademicLevel> };

export type ValidUntilSource =
  /** The JWT's `exp`. */
  | { from: 'exp' }
  /** A W3C VC's `expirationDate` (VCDM 1.1) or `validUntil` (VCDM 2.0). */
  | { from: 'expirationDate' }
  /** A date or date-time claim (`date_of_expiry`, `valid_until`, …). */
  | { from: 'claim'; path: ClaimPath };

export interface ClaimDerivations {
  is_active_student: ActiveStudentSource;
  university_domain?: UniversityDomainSource;
  academic_level?: AcademicLevelSource;
  valid_until?: ValidUntilSource;
}

export interface CredentialProfile {
  /** `[a-z0-9][a-z0-9_-]*`, at most 64: also the DCQL credential query id. */
  id: string;
  name?: string;
  format: ProfileFormat;
  /** dc+sd-jwt: the accepted `vct` values. */
  vct?: string[];
  /** jwt_vc_json: `type` values the credential must all carry. */
  types?: string[];
  /** jwt_vc_json: `credentialSchema` ids, one of which the credential must carry. */
  schemas?: string[];
  claims: ClaimDerivations;
  /** Registry entries (ids or domains) that may issue it; absent: any trusted entry. */
  issuers?: string[];
}

export type ProfileValidation =
  { ok: true; profile: CredentialProfile } | { ok: false; field: string; problem: string };

/** The one-line form of a validation failure: `<field>: <problem>`. */
export function profileProblem(failure: { field: string; problem: string }): string {
  return `${failure.field}: ${failure.problem}`;
}

class Invalid extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

const ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const MAX_TEXT = 512;
const MAX_ITEMS = 32;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function object(value: unknown, field: string, allowed: readonly string[]): Record<string, unknown> {
  if (!isObject(value)) throw new Invalid(field, 'must be an object');
  const unknownKey = Object.keys(value).find((key) => !allowed.includes(key));
  if (unknownKey !== undefined) throw new Invalid(`${field}.${unknownKey}`.replace(/^\./, ''), 'is not a known field');
  return value;
}

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f]/;

function text(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_TEXT || CONTROL.test(value))
    throw new Invalid(
      field,
      `must be a non-empty string of at most ${MAX_TEXT} characters, without control characters`,
    );
  return value;
}

function texts(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_ITEMS)
    throw new Invalid(field, `must be a list of 1 to ${MAX_ITEMS} strings`);
  return value.map((item, i) => text(item, `${field}[${i}]`));
}

function path(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > 8)
    throw new Invalid(field, 'must be a claim path: a list of 1 to 8 claim names');
  return value.map((item, i) => text(item, `${field}[${i}]`));
}

function from<T extends string>(source: Record<string, unknown>, field: string, kinds: readonly T[]): T {
  if (typeof source.from !== 'string' || !(kinds as readonly string[]).includes(source.from))
    throw new Invalid(`${field}.from`, `must be one of ${kinds.join(', ')}`);
  return source.from as T;
}

function activeStudent(value: unknown, field: string): ActiveStudentSource {
  const source = object(value, field, ['from', 'path', 'values', 'pinned']);
  if (from(source, field, ['claim', 'validity'] as const) === 'validity') {
    object(value, field, ['from']);
    return { from: 'validity' };
  }
  const values = source.values;
  if (!Array.isArray(values) || values.length === 0 || values.length > MAX_ITEMS)
    throw new Invalid(`${field}.values`, 'must list the values that mean an active student');
  values.forEach((v, i) => {
    if (!['string', 'number', 'boolean'].includes(typeof v))
      throw new Invalid(`${field}.values[${i}]`, 'must be a string, number or boolean');
  });
  if (source.pinned !== undefined && typeof source.pinned !== 'boolean')
    throw new Invalid(`${field}.pinned`, 'must be true or false');
  return {
    from: 'claim',
    path: path(source.path, `${field}.path`),
    values: values as PinnedValue[],
    ...(source.pinned ? { pinned: true } : {}),
  };
}

function universityDomain(value: unknown, field: string): UniversityDomainSource {
  const source = object(value, field, ['from', 'path']);
  const kind = from(source, field, ['claim', 'esi', 'issuer'] as const);
  if (kind === 'issuer') {
    object(value, field, ['from']);
    return { from: 'issuer' };
  }
  return { from: kind, path: path(source.path, `${field}.path`) };
}

function academicLevel(value: unknown, field: string): AcademicLevelSource {
  const source = object(value, field, ['from', 'path', 'map']);
  from(source, field, ['claim'] as const);
  const result: AcademicLevelSource = { from: 'claim', path: path(source.path, `${field}.path`) };
  if (source.map === undefined) return result;
  if (!isObject(source.map) || Object.keys(source.map).length === 0)
    throw new Invalid(`${field}.map`, 'must map credential values to catalogue levels');
  const levels = Object.keys(ACADEMIC_LEVELS).join(', ');
  for (const [key, level] of Object.entries(source.map))
    if (typeof level !== 'string' || !isAcademicLevel(level))
      throw new Invalid(`${field}.map.${key}`, `must be one of ${levels}`);
  return { ...result, map: { ...(source.map as Record<string, AcademicLevel>) } };
}

function validUntil(value: unknown, field: string): ValidUntilSource {
  const source = object(value, field, ['from', 'path']);
  const kind = from(source, field, ['exp', 'expirationDate', 'claim'] as const);
  if (kind !== 'claim') {
    object(value, field, ['from']);
    return { from: kind };
  }
  return { from: 'claim', path: path(source.path, `${field}.path`) };
}

function claims(value: unknown, format: ProfileFormat): ClaimDerivations {
  const source = object(value, 'claims', ['is_active_student', 'university_domain', 'academic_level', 'valid_until']);
  if (source.is_active_student === undefined)
    throw new Invalid('claims.is_active_student', 'is required: every verification establishes it');
  const derived: ClaimDerivations = {
    is_active_student: activeStudent(source.is_active_student, 'claims.is_active_student'),
  };
  if (source.university_domain !== undefined)
    derived.university_domain = universityDomain(source.university_domain, 'claims.university_domain');
  if (source.academic_level !== undefined)
    derived.academic_level = academicLevel(source.academic_level, 'claims.academic_level');
  if (source.valid_until !== undefined) {
    derived.valid_until = validUntil(source.valid_until, 'claims.valid_until');
    if (derived.valid_until.from === 'expirationDate' && format !== 'jwt_vc_json')
      throw new Invalid('claims.valid_until.from', 'expirationDate is a W3C VC field: use exp for dc+sd-jwt');
  }
  return derived;
}

function parse(input: unknown): CredentialProfile {
  const source = object(input, '', ['id', 'name', 'format', 'vct', 'types', 'schemas', 'claims', 'issuers']);
  if (typeof source.id !== 'string' || !ID.test(source.id))
    throw new Invalid('id', 'must be 1 to 64 characters of a-z, 0-9, _ and -, starting with a letter or digit');
  if (typeof source.format !== 'string' || !(PROFILE_FORMATS as readonly string[]).includes(source.format))
    throw new Invalid('format', `must be one of ${PROFILE_FORMATS.join(', ')}`);
  const format = source.format as ProfileFormat;
  const profile: CredentialProfile = { id: source.id, format, claims: claims(source.claims, format) };
  if (source.name !== undefined) profile.name = text(source.name, 'name');
  if (format === 'dc+sd-jwt') {
    if (source.types !== undefined || source.schemas !== undefined)
      throw new Invalid(source.types !== undefined ? 'types' : 'schemas', 'is for jwt_vc_json: use vct');
    profile.vct = texts(source.vct, 'vct');
  } else {
    if (source.vct !== undefined) throw new Invalid('vct', 'is for dc+sd-jwt: use types or schemas');
    if (source.types === undefined && source.schemas === undefined)
      throw new Invalid('types', 'or schemas is required: which W3C credentials this profile accepts');
    if (source.types !== undefined) profile.types = texts(source.types, 'types');
    if (source.schemas !== undefined) profile.schemas = texts(source.schemas, 'schemas');
  }
  if (source.issuers !== undefined) profile.issuers = texts(source.issuers, 'issuers');
  return profile;
}

/** Checks a profile definition; a failure names the field (`claims.academic_level.map.PhD`). */
export function validateProfile(input: unknown): ProfileValidation {
  try {
    return { ok: true, profile: parse(input) };
  } catch (err) {
    if (err instanceof Invalid) return { ok: false, field: err.field || 'profile', problem: err.problem };
    throw err;
  }
}

const ESI = /^urn:schac:personalUniqueCode:int:esi:([^:]+):(.+)$/i;

/** The home organisation of a European Student Identifier, lower-cased; undefined for anything else. */
export function esiHomeOrganisation(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const match = ESI.exec(value.trim());
  return match ? match[1]!.toLowerCase() : undefined;
}

/** Whether `issuer` (a registry entry's id and domain) may issue credentials of `profile`. */
export function profileAllowsIssuer(profile: CredentialProfile, issuer: { id: string; domain: string }): boolean {
  return (
    profile.issuers === undefined || profile.issuers.includes(issuer.id) || profile.issuers.includes(issuer.domain)
  );
}
