import { STUDENT_CREDENTIAL_PROFILE } from '../../domain/built-in-profiles.ts';
import { profileAllowsIssuer } from '../../domain/credential-profiles.ts';
import { deriveClaims } from '../profile-claims.ts';
import type {
  PresentationCheck,
  PresentationContext,
  PresentationVerifier,
  RejectionReason,
  TrustRegistry,
  TrustedIssuer,
} from '../types.ts';
import { parseCompactSdJwt } from './compact.ts';
import { resolveDisclosures } from './disclosures.ts';
import { isAllowedAlgorithm } from './jose.ts';
import { findSigner, methodsFor, verifyByMethod, type TrustMethod } from './issuer-trust.ts';
import { checkKeyBinding, MAX_KEY_BINDING_FUTURE_SECONDS } from './key-binding.ts';
import { credentialStatus, statusFacts, type StatusFacts } from './status-list.ts';

/**
 * Service side of `sd-jwt-vc`. Every check is explicit rather than delegated to the library's
 * verify(), which would judge `exp` (the shared qualify step does that), accept disclosures no
 * digest refers to, and check neither `aud` nor the age of the KB-JWT.
 */

/** `typ` values of an SD-JWT VC: the current one and the one of earlier drafts. */
const SD_JWT_VC_TYPES = ['dc+sd-jwt', 'vc+sd-jwt'];

function reject(reason: RejectionReason, message: string, detail?: string): PresentationCheck {
  return { ok: false, reason, message, ...(detail !== undefined ? { detail } : {}) };
}

/** The domain of an `iss` of the form `https://<domain>`, nothing more; undefined otherwise. */
export function issuerDomain(iss: unknown): string | undefined {
  if (typeof iss !== 'string') return undefined;
  try {
    const url = new URL(iss);
    if (url.protocol !== 'https:' || iss !== `https://${url.hostname}`) return undefined;
    return url.hostname;
  } catch {
    return undefined;
  }
}

/**
 * `nbf` and the issuer's `iat`: a credential is not valid before either. The holder's device and
 * the issuer may run a little ahead of us, by the same allowance as the KB-JWT's `iat`.
 */
function notYetValid(payload: Record<string, unknown>, now: Date): PresentationCheck | undefined {
  const latest = now.getTime() / 1000 + MAX_KEY_BINDING_FUTURE_SECONDS;
  for (const name of ['nbf', 'iat'] as const) {
    const value = payload[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value))
      return reject('malformed_presentation', `${name} is not a NumericDate`);
    if (value > latest) {
      const ahead = Math.round(value - now.getTime() / 1000);
      return reject('invalid_claim', `the credential is not valid yet: ${name} is ${ahead} s after the service clock`);
    }
  }
  return undefined;
}

/** `exp` as ISO 8601, undefined when absent, or an error message when it is not a usable time. */
function expiry(exp: unknown): { expiresAt?: string } | string {
  if (exp === undefined) return {};
  const date = typeof exp === 'number' ? new Date(exp * 1000) : undefined;
  if (!date || Number.isNaN(date.getTime())) return 'exp is not a NumericDate';
  return { expiresAt: date.toISOString() };
}

/** The https host of an issuer identifier, or undefined when it is not one. */
function hostOfIssuer(iss: string): string | undefined {
  try {
    const url = new URL(iss);
    return (url.protocol === 'https:' || url.protocol === 'http:') && !url.search && !url.hash
      ? url.hostname
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The revocation status, checked with the trust that verified the credential. Revoked or suspended
 * is a fact for the judgement (`credential_revoked`); a status that cannot be determined rejects the
 * presentation under `fail_closed` (the default), and is a warning in the result under `warn`.
 */
async function statusOf(
  payload: Record<string, unknown>,
  iss: string,
  issuer: TrustedIssuer,
  method: TrustMethod,
  registry: TrustRegistry,
  now: Date,
): Promise<{ ok: true; facts: StatusFacts } | { ok: false; rejection: PresentationCheck }> {
  const status = await credentialStatus(
    payload,
    registry,
    async (token) => {
      const outcome = await verifyByMethod(token, iss, issuer, method, registry, now);
      return outcome.ok ? undefined : outcome.message;
    },
    now,
    { sandbox: issuer.environment === 'sandbox' },
  );
  return statusFacts(status, registry);
}

async function verifyPresentation(
  presentation: unknown,
  context: PresentationContext,
  registry: TrustRegistry,
): Promise<PresentationCheck> {
  if (typeof presentation !== 'string')
    return reject('malformed_presentation', 'an sd-jwt-vc presentation is a compact SD-JWT string');
  const sdJwt = parseCompactSdJwt(presentation);
  if (!sdJwt) return reject('malformed_presentation', 'not a compact SD-JWT (<jwt>~<disclosures>~<kb-jwt>)');
  const { header, payload } = sdJwt.issuerJwt;
  if (!isAllowedAlgorithm(header.alg))
    return reject('algorithm_not_allowed', `issuer JWT algorithm ${JSON.stringify(header.alg)} is not allowed`);
  if (header.crit !== undefined)
    return reject('malformed_presentation', 'issuer JWT has critical header parameters we do not understand');

  if (typeof payload.iss !== 'string' || hostOfIssuer(payload.iss) === undefined)
    return reject('untrusted_issuer', 'iss is not an https:// issuer identifier');
  const iss = payload.iss;
  const trusted = await registry.issuers(context.environment, 'sd-jwt-vc');
  const candidates = trusted.filter((issuer) => methodsFor(issuer, iss, sdJwt.issuerJwt).length > 0);
  if (candidates.length === 0)
    return reject('untrusted_issuer', `${iss} is not a trusted ${context.environment} issuer`);
  const signer = await findSigner(sdJwt.issuerJwt, iss, candidates, registry, context.now);
  if (!signer.ok)
    return reject(
      signer.reason,
      signer.reason === 'issuer_unreachable' ? signer.message : `the credential: ${signer.message}`,
      signer.detail,
    );
  const { issuer } = signer;

  if (typeof header.typ !== 'string' || !SD_JWT_VC_TYPES.includes(header.typ))
    return reject('malformed_presentation', 'issuer JWT typ is not dc+sd-jwt');
  // The credential type decides what its claims mean: the accepted profile that names its vct.
  const profiles = (context.profiles ?? [STUDENT_CREDENTIAL_PROFILE]).filter((p) => p.format === 'dc+sd-jwt');
  const vct = payload.vct;
  const profile = typeof vct === 'string' ? profiles.find((p) => p.vct?.includes(vct)) : undefined;
  if (!profile)
    return reject(
      'malformed_presentation',
      `vct ${JSON.stringify(vct)} is not accepted: no credential profile names it (accepted: ${profiles.flatMap((p) => p.vct ?? []).join(', ')})`,
    );
  if (!profileAllowsIssuer(profile, issuer))
    return reject('untrusted_issuer', `${issuer.domain} is not among the issuers of ${profile.id} credentials`);
  if (payload._sd_alg !== undefined && payload._sd_alg !== 'sha-256')
    return reject('algorithm_not_allowed', 'only sha-256 disclosure digests are accepted');
  const disclosed = resolveDisclosures(payload, sdJwt.disclosures);
  if (!disclosed.ok) return reject('invalid_disclosure', disclosed.message);
  const expires = expiry(payload.exp);
  if (typeof expires === 'string') return reject('malformed_presentation', expires);

  const binding = checkKeyBinding(sdJwt, payload, context);
  if (!binding.ok) return binding;
  const derived = deriveClaims(profile, disclosed.claims, { issuer, ...expires });
  if (!derived.ok) return reject(derived.reason, derived.message);
  const { claims } = derived;
  const problem = notYetValid(payload, context.now);
  if (problem) return problem;
  const status = await statusOf(payload, iss, issuer, signer.method, registry, context.now);
  if (!status.ok) return status.rejection;
  return { ok: true, presentation: { format: 'sd-jwt-vc', issuer, claims, ...expires, ...status.facts } };
}

/**
 * Verifies an IETF SD-JWT VC presentation (compact SD-JWT with KB-JWT) of a type an accepted
 * credential profile names (docs/credential-profiles.md). Returns the registry entry whose key
 * signed and the catalogue claims the profile derives from what was disclosed; does not judge
 * qualification (inactive, expired, missing claims). Never throws for bad input; registry
 * failures propagate, they are faults.
 */
export const sdJwtVcVerifier: PresentationVerifier = {
  format: 'sd-jwt-vc',
  verify: verifyPresentation,
};
