import { DcqlQuery } from 'dcql';
import type { ClaimName } from '../../domain/claims.ts';
import type { CredentialProfile } from '../../domain/credential-profiles.ts';
import { claimsToRequest } from '../../proofs/qualify.ts';

/**
 * The DCQL query of a session (OpenID4VP 1.0 §6): one credential query per accepted profile, its
 * id the profile's, asking for the claims the profile reads to derive what the business asked for
 * (a claim derived from the issuer or the validity is not asked for at all), with `values` where
 * the profile pins them. With more than one profile, `credential_sets` says any one suffices.
 */

type CredentialQuery = {
  id: string;
  format: CredentialProfile['format'];
  meta: { vct_values: string[] } | { type_values: string[][] };
  claims?: Array<{ path: string[]; values?: Array<string | number | boolean> }>;
  trusted_authorities?: Array<{ type: 'aki'; values: [string, ...string[]] }>;
};

function credentialQuery(profile: CredentialProfile, asked: readonly ClaimName[]): CredentialQuery {
  // A W3C VC's claims are its credentialSubject's (OpenID4VP 1.0 Appendix B.1).
  const prefix = profile.format === 'jwt_vc_json' ? ['credentialSubject'] : [];
  const claims = new Map<string, { path: string[]; values?: Array<string | number | boolean> }>();
  for (const claim of asked) {
    const source = profile.claims[claim];
    if (!source || !('path' in source)) continue;
    const path = [...prefix, ...source.path];
    const values = 'values' in source && source.pinned ? { values: [...source.values] } : {};
    claims.set(JSON.stringify(path), { path, ...values });
  }
  return {
    id: profile.id,
    format: profile.format,
    meta:
      profile.format === 'dc+sd-jwt'
        ? { vct_values: [...(profile.vct ?? [])] }
        : { type_values: [[...(profile.types ?? ['VerifiableCredential'])]] },
    ...(claims.size > 0 ? { claims: [...claims.values()] } : {}),
  };
}

/**
 * The query for `profiles` (at least one) and the business's claims; with `trustedAuthorities`,
 * each credential query names the `aki` of the trust anchors its credential must chain to (HAIP).
 */
export function dcqlQuery(
  profiles: readonly CredentialProfile[],
  requiredClaims: readonly ClaimName[],
  trustedAuthorities?: readonly string[],
): DcqlQuery.Output {
  const asked = claimsToRequest(requiredClaims);
  const authorities = trustedAuthorities?.length
    ? { trusted_authorities: [{ type: 'aki' as const, values: [...trustedAuthorities] as [string, ...string[]] }] }
    : {};
  const credentials = profiles.map((profile) => ({ ...credentialQuery(profile, asked), ...authorities }));
  const query = DcqlQuery.parse({
    credentials,
    ...(credentials.length > 1 ? { credential_sets: [{ options: credentials.map((c) => [c.id]) }] } : {}),
  } as DcqlQuery.Input);
  DcqlQuery.validate(query);
  return query;
}
