import { isAcademicLevel, type DisclosedClaims } from '../domain/claims.ts';
import {
  esiHomeOrganisation,
  type ClaimPath,
  type CredentialProfile,
  type PinnedValue,
} from '../domain/credential-profiles.ts';
import type { RejectionReason, TrustedIssuer } from './types.ts';

/**
 * A profile applied to a verified credential: its claims mapped onto the catalogue, and nothing
 * else. What the issuer vouches for must be possible: it speaks for its own university only, and
 * an academic level is one of the catalogue (`invalid_claim` otherwise).
 */

export type DerivedClaims =
  { ok: true; claims: DisclosedClaims } | { ok: false; reason: RejectionReason; message: string };

/** What the credential says besides its claims: who verified it and when it expires. */
export interface CredentialFacts {
  issuer: TrustedIssuer;
  /** `exp`, ISO 8601, when present. */
  expiresAt?: string;
  /** A W3C VC's `expirationDate` / `validUntil`, ISO 8601, when present. */
  expirationDate?: string;
}

const fail = (reason: RejectionReason, message: string): DerivedClaims => ({ ok: false, reason, message });

/** The value at `path` in `claims`; undefined when any step is missing (not disclosed). */
export function valueAt(claims: Record<string, unknown>, path: ClaimPath): unknown {
  let value: unknown = claims;
  for (const name of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

const shown = (path: ClaimPath) => path.join('.');

function activeStudent(values: readonly PinnedValue[], value: unknown, path: ClaimPath): boolean | string {
  const candidates = Array.isArray(value) ? value : [value];
  const types = new Set(values.map((v) => typeof v));
  if (!candidates.every((v) => types.has(typeof v))) return `${shown(path)} is not a ${[...types].join(' or ')}`;
  return candidates.some((v) => values.includes(v as PinnedValue));
}

/** An ISO 8601 date or date-time as a string, unchanged; undefined when it is not one. */
function dateText(value: unknown): string | undefined {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value)) ? value : undefined;
}

/** Applies `profile` to `claims` (the disclosed payload, or `credentialSubject`). */
export function deriveClaims(
  profile: CredentialProfile,
  claims: Record<string, unknown>,
  facts: CredentialFacts,
): DerivedClaims {
  const derived: DisclosedClaims = {};
  const {
    is_active_student: active,
    university_domain: domain,
    academic_level: level,
    valid_until: until,
  } = profile.claims;

  if (active.from === 'validity') derived.is_active_student = true;
  else {
    const value = valueAt(claims, active.path);
    if (value !== undefined) {
      const outcome = activeStudent(active.values, value, active.path);
      if (typeof outcome === 'string') return fail('malformed_presentation', outcome);
      derived.is_active_student = outcome;
    }
  }

  if (domain?.from === 'issuer') derived.university_domain = facts.issuer.domain;
  else if (domain) {
    const value = valueAt(claims, domain.path);
    if (value !== undefined) {
      let found: string | undefined;
      if (domain.from === 'claim') {
        if (typeof value !== 'string') return fail('malformed_presentation', `${shown(domain.path)} is not a string`);
        found = value;
      } else {
        const organisations = (Array.isArray(value) ? value : [value]).map(esiHomeOrganisation);
        if (organisations.some((o) => o === undefined))
          return fail('invalid_claim', `${shown(domain.path)} is not a European Student Identifier`);
        found = organisations.find((o) => o === facts.issuer.domain.toLowerCase()) ?? organisations[0];
      }
      if (found !== facts.issuer.domain)
        return fail('untrusted_issuer', `${facts.issuer.domain} cannot vouch for students of ${found}`);
      derived.university_domain = found;
    }
  }

  if (level) {
    const value = valueAt(claims, level.path);
    if (value !== undefined) {
      if (typeof value !== 'string' && typeof value !== 'number')
        return fail('malformed_presentation', `${shown(level.path)} is not a string`);
      const mapped = level.map ? level.map[String(value)] : value;
      if (typeof mapped !== 'string' || !isAcademicLevel(mapped))
        return fail(
          'invalid_claim',
          `academic_level ${JSON.stringify(value)} is not in the catalogue${level.map ? ` nor in the ${profile.id} profile's map` : ''}`,
        );
      derived.academic_level = mapped;
    }
  }

  if (until?.from === 'exp') {
    if (facts.expiresAt !== undefined) derived.valid_until = facts.expiresAt;
  } else if (until?.from === 'expirationDate') {
    if (facts.expirationDate !== undefined) derived.valid_until = facts.expirationDate;
  } else if (until) {
    const value = valueAt(claims, until.path);
    if (value !== undefined) {
      if (typeof value !== 'string') return fail('malformed_presentation', `${shown(until.path)} is not a string`);
      if (dateText(value) === undefined) return fail('invalid_claim', `${shown(until.path)} is not a date`);
      derived.valid_until = value;
    }
  }
  return { ok: true, claims: derived };
}
