import { toReportedClaims, type DisclosedClaims } from '../../domain/claims.ts';
import type { AffiliationVerdict, IdentityProvider, LoginEvidenceFormat } from '../../domain/identity-providers.ts';
import type { Session, SessionResult } from '../../domain/session.ts';
import { claimsToRequest } from '../../proofs/qualify.ts';

/** Claims a university login can never release: the IdP vouches for an affiliation, not for these. */
const NOT_RELEASED = ['academic_level', 'valid_until'] as const;

/**
 * The result of a university login whose cryptography held, judged like a presentation: an active
 * student (a `student` affiliation scoped to a domain the IdP's metadata lets it vouch for) is
 * verified; affiliated otherwise, `student_inactive`; nothing released, or a required claim a
 * login cannot release, `claim_not_disclosed`. The `university` is the registry entry's.
 */
export function loginResult(
  session: Pick<Session, 'requiredClaims'>,
  idp: IdentityProvider,
  verdict: Exclude<AffiliationVerdict, { kind: 'untrusted_scope' }>,
  evidence: { protocol: 'saml' | 'oidc'; format: LoginEvidenceFormat },
): SessionResult {
  const disclosed: DisclosedClaims =
    verdict.kind === 'none' ? {} : { is_active_student: verdict.kind === 'student', university_domain: idp.domain };
  const base = {
    protocol: evidence.protocol,
    format: evidence.format,
    university: { name: idp.name, domain: idp.domain, country: idp.country },
    claims: toReportedClaims(disclosed, new Set(claimsToRequest(session.requiredClaims))),
  };
  const fail = (failureReason: 'student_inactive' | 'claim_not_disclosed', failureMessage: string): SessionResult => ({
    ...base,
    verified: false,
    failureReason,
    failureMessage,
  });
  if (verdict.kind === 'none') return fail('claim_not_disclosed', 'The university login released no affiliation.');
  if (verdict.kind === 'not_student')
    return fail('student_inactive', 'The university login shows an affiliation, but not as a student.');
  const unreleasable = NOT_RELEASED.find((claim) => session.requiredClaims.includes(claim));
  if (unreleasable)
    return fail('claim_not_disclosed', `The required claim ${unreleasable} is not released by a university login.`);
  return { ...base, verified: true, failureReason: null, failureMessage: null };
}
