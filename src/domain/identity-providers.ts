import type { Environment } from './environment.ts';

/** How a university's login is spoken (docs/university-login.md). */
export const IDP_PROTOCOLS = ['saml', 'oidc'] as const;
export type IdpProtocol = (typeof IDP_PROTOCOLS)[number];

/**
 * The channels a session can be answered by: `wallet` (Matricula's wallet protocol and
 * OpenID4VP) and `university_login` (SAML 2.0 or OpenID Connect). A business may restrict them
 * per application and per session; without a restriction every channel is accepted.
 */
export const ANSWER_METHODS = ['wallet', 'university_login'] as const;
export type AnswerMethod = (typeof ANSWER_METHODS)[number];

/** What a university login result rests on: a signed SAML assertion or an OpenID Connect ID token. */
export const LOGIN_EVIDENCE_FORMATS = ['saml2-assertion', 'oidc-id-token'] as const;
export type LoginEvidenceFormat = (typeof LOGIN_EVIDENCE_FORMATS)[number];

/** An identity provider trusted in one environment: who it is (from its metadata) and how to reach it. */
export interface IdentityProvider {
  id: string;
  environment: Environment;
  protocol: IdpProtocol;
  /** SAML entityID, or OpenID Connect issuer identifier. */
  entityId: string;
  /** The `university` of a result: from metadata or the operator, never from an assertion. */
  name: string;
  domain: string;
  /** ISO 3166-1 alpha-2. */
  country: string;
  /** Scopes the provider may vouch for (`shibmd:Scope`); an affiliation scoped elsewhere is refused. */
  scopes: string[];
  saml?: { ssoUrl: string; certificates: string[] };
  oidc?: { clientId: string; affiliationClaim: string };
  /** The federation aggregate the entry was loaded from, if any. */
  federation: string | null;
  createdAt: string;
}

/** eduPerson and SCHAC attribute names (URI form, and the friendly names some IdPs use). */
export const SAML_ATTRIBUTES = {
  scopedAffiliation: ['urn:oid:1.3.6.1.4.1.5923.1.1.1.9', 'eduPersonScopedAffiliation'],
  affiliation: ['urn:oid:1.3.6.1.4.1.5923.1.1.1.1', 'eduPersonAffiliation'],
  homeOrganization: ['urn:oid:1.3.6.1.4.1.25178.1.2.9', 'schacHomeOrganization'],
} as const;

/** The affiliations released, as the IdP released them. */
export interface ReleasedAffiliation {
  /** `student@uni.example`… */
  scoped: string[];
  /** `student`… with `homeOrganization` as their scope, when that is what the IdP releases. */
  unscoped: string[];
  homeOrganization?: string;
}

/**
 * What the affiliation says, judged against the scopes the provider's metadata lets it vouch for:
 * an active student (of a scope it may vouch for), someone affiliated but not as a student, nothing
 * usable, or a scope outside its metadata (the whole assertion is then untrusted).
 */
export type AffiliationVerdict =
  | { kind: 'student'; scope: string }
  | { kind: 'not_student'; scope: string }
  | { kind: 'none' }
  | { kind: 'untrusted_scope'; scope: string };

const SCOPED = /^([a-z-]+)@([a-z0-9.-]+)$/;

export function judgeAffiliation(released: ReleasedAffiliation, trustedScopes: readonly string[]): AffiliationVerdict {
  const trusted = new Set(trustedScopes.map((s) => s.toLowerCase()));
  const values: Array<{ affiliation: string; scope: string }> = [];
  for (const raw of released.scoped) {
    const match = SCOPED.exec(raw.trim().toLowerCase());
    if (!match) return { kind: 'untrusted_scope', scope: raw.slice(0, 100) };
    values.push({ affiliation: match[1]!, scope: match[2]! });
  }
  if (values.length === 0 && released.homeOrganization)
    for (const affiliation of released.unscoped)
      values.push({
        affiliation: affiliation.trim().toLowerCase(),
        scope: released.homeOrganization.trim().toLowerCase(),
      });
  // One value scoped outside the metadata taints the assertion: the IdP asserts what it may not.
  const outside = values.find((v) => !trusted.has(v.scope));
  if (outside) return { kind: 'untrusted_scope', scope: outside.scope };
  const student = values.find((v) => v.affiliation === 'student');
  if (student) return { kind: 'student', scope: student.scope };
  const other = values[0];
  return other ? { kind: 'not_student', scope: other.scope } : { kind: 'none' };
}
