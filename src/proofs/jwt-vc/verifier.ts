import { compactVerify, importJWK } from 'jose';
import type { CredentialProfile } from '../../domain/credential-profiles.ts';
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
import { decodeJwt, MAX_PRESENTATION_LENGTH, type DecodedJwt } from '../sd-jwt-vc/compact.ts';
import { findSigner, methodsFor, verifyByMethod, type TrustMethod } from '../sd-jwt-vc/issuer-trust.ts';
import { ALLOWED_ALGORITHMS, isAllowedAlgorithm, isJsonObject } from '../sd-jwt-vc/jose.ts';
import { MAX_KEY_BINDING_AGE_SECONDS, MAX_KEY_BINDING_FUTURE_SECONDS } from '../sd-jwt-vc/key-binding.ts';
import { statusFacts } from '../sd-jwt-vc/status-list.ts';
import { didJwkKey } from './dids.ts';
import { w3cCredentialStatus } from './status-list.ts';

/**
 * Service side of `jwt_vc_json` (docs/credential-profiles.md): a W3C Verifiable Credential
 * (VCDM 1.1 in its JWT encoding with a `vc` claim, or VCDM 2.0, in a `vc` claim or secured as
 * `vc+jwt` per VC-JOSE-COSE) inside a Verifiable Presentation JWT that binds it to the session:
 *
 * 1. the VP JWT: an allowed algorithm (never `none`), `nonce` = the session nonce, `aud` = this
 *    service (or the OpenID4VP client identifier), `iat` fresh, exactly one credential;
 * 2. holder binding: the VP is signed by the credential's holder key, its `cnf.jwk` or the
 *    `did:jwk` of its subject (`sub` / `credentialSubject.id`, which must then be the VP's `iss`);
 * 3. the credential JWT: signed by a registry entry, by the registry's methods (raw key, also as
 *    its `did:jwk`; X.509 `x5c` to an anchor; issuer metadata or a `did:web` DID document, fetched
 *    through the SSRF guard), of a type an accepted profile names and an issuer it allows;
 * 4. claims mapped by the profile from `credentialSubject`; validity dates; the status list.
 *
 * JWS signatures are checked with jose (the VP) and the registry's trust code (the credential).
 */

/** `typ` values a credential JWT and a presentation JWT may carry (absent is allowed: VCDM 1.1 JWTs often have `JWT`). */
const CREDENTIAL_TYPS = [undefined, 'JWT', 'vc+jwt', 'vc+ld+json+jwt'];
const PRESENTATION_TYPS = [undefined, 'JWT', 'vp+jwt', 'vp+ld+json+jwt'];
const CONTEXTS = ['https://www.w3.org/2018/credentials/v1', 'https://www.w3.org/ns/credentials/v2'];
const ENVELOPED_PREFIX = 'data:application/vc+jwt,';

function reject(reason: RejectionReason, message: string, detail?: string): PresentationCheck {
  return { ok: false, reason, message, ...(detail !== undefined ? { detail } : {}) };
}

/** Whether `presentation` has the shape of a VP JWT (a compact JWS, no SD-JWT `~`). */
export function looksLikeJwtPresentation(presentation: unknown): boolean {
  return (
    typeof presentation === 'string' &&
    presentation.length <= MAX_PRESENTATION_LENGTH &&
    !presentation.includes('~') &&
    presentation.split('.').length === 3
  );
}

function asArray(value: unknown): unknown[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** A signed JWT whose header is acceptable: an allowed algorithm, no `crit`, a `typ` of the kind. */
function headerProblem(jwt: DecodedJwt, what: string, typs: unknown[]): PresentationCheck | undefined {
  const { alg, typ, crit } = jwt.header;
  if (alg === undefined || alg === 'none' || jwt.signature === '')
    return reject('algorithm_not_allowed', `the ${what} is not signed (alg ${JSON.stringify(alg ?? null)})`);
  if (!isAllowedAlgorithm(alg))
    return reject(
      'algorithm_not_allowed',
      `${what} algorithm ${JSON.stringify(alg)} is not allowed (${ALLOWED_ALGORITHMS.join(', ')})`,
    );
  if (crit !== undefined)
    return reject('malformed_presentation', `the ${what} has critical header parameters we do not understand`);
  if (!typs.includes(typ))
    return reject('malformed_presentation', `the ${what}'s typ ${JSON.stringify(typ)} is not one`);
  return undefined;
}

/** The presented credential: the payload's `vc` (VCDM 1.1 JWT encoding) or the payload itself (VC-JOSE-COSE). */
function credentialOf(payload: Record<string, unknown>): Record<string, unknown> {
  return isJsonObject(payload.vc) ? payload.vc : payload;
}

function idOf(value: unknown): unknown {
  return isJsonObject(value) ? value.id : value;
}

/** The credential JWT inside a VP payload; a message unless there is exactly one. */
function credentialJwtOf(vpPayload: Record<string, unknown>): string | { problem: string } {
  const vp = isJsonObject(vpPayload.vp) ? vpPayload.vp : vpPayload;
  if (!asArray(vp.type).includes('VerifiablePresentation'))
    return { problem: 'the presentation JWT holds no VerifiablePresentation (vp)' };
  const credentials = asArray(vp.verifiableCredential);
  if (credentials.length !== 1)
    return { problem: `the presentation must hold exactly one credential (it holds ${credentials.length})` };
  const [only] = credentials;
  if (typeof only === 'string') return only;
  // VCDM 2.0: an EnvelopedVerifiableCredential whose id is a data: URL of the vc+jwt.
  if (isJsonObject(only) && typeof only.id === 'string' && only.id.startsWith(ENVELOPED_PREFIX))
    return only.id.slice(ENVELOPED_PREFIX.length);
  return { problem: 'the credential is not secured as a JWT (jwt_vc_json)' };
}

/** Seconds since the epoch of a NumericDate or an XML Schema date-time; undefined when absent, NaN when unusable. */
function instant(value: unknown, numeric: boolean): number | undefined {
  if (value === undefined) return undefined;
  if (numeric) return typeof value === 'number' && Number.isFinite(value) ? value : NaN;
  return typeof value === 'string' ? Date.parse(value) / 1000 : NaN;
}

interface Validity {
  /** `exp`, ISO 8601. */
  expiresAt?: string;
  /** `expirationDate` (VCDM 1.1) or `validUntil` (VCDM 2.0), ISO 8601. */
  expirationDate?: string;
}

/** The credential's validity period: not before `nbf`/`issuanceDate`/`validFrom` (with the skew allowance). */
function validityOf(
  payload: Record<string, unknown>,
  credential: Record<string, unknown>,
  now: Date,
): Validity | PresentationCheck {
  const latest = now.getTime() / 1000 + MAX_KEY_BINDING_FUTURE_SECONDS;
  const starts: Array<[string, unknown, boolean]> = [
    ['nbf', payload.nbf, true],
    ['issuanceDate', credential.issuanceDate, false],
    ['validFrom', credential.validFrom, false],
  ];
  for (const [name, value, numeric] of starts) {
    const at = instant(value, numeric);
    if (at === undefined) continue;
    if (Number.isNaN(at)) return reject('malformed_presentation', `${name} is not a date`);
    if (at > latest)
      return reject(
        'invalid_claim',
        `the credential is not valid yet: ${name} is ${Math.round(at - now.getTime() / 1000)} s after the service clock`,
      );
  }
  const validity: Validity = {};
  const exp = instant(payload.exp, true);
  if (exp !== undefined) {
    if (Number.isNaN(exp)) return reject('malformed_presentation', 'exp is not a NumericDate');
    validity.expiresAt = new Date(exp * 1000).toISOString();
  }
  const until = credential.validUntil ?? credential.expirationDate;
  if (until !== undefined) {
    if (typeof until !== 'string' || Number.isNaN(Date.parse(until)))
      return reject('malformed_presentation', 'expirationDate / validUntil is not a date');
    validity.expirationDate = until;
  }
  return validity;
}

/** The accepted profile for the credential's `type` and `credentialSchema`; undefined when none names it. */
function profileFor(
  profiles: readonly CredentialProfile[],
  credential: Record<string, unknown>,
): CredentialProfile | undefined {
  const types = asArray(credential.type);
  const schemas = asArray(credential.credentialSchema).map(idOf);
  return profiles.find(
    (p) =>
      (p.types === undefined || p.types.every((t) => types.includes(t))) &&
      (p.schemas === undefined || p.schemas.some((s) => schemas.includes(s))),
  );
}

/** Checks the VP JWT: signed by `holderJwk`, for this session, now. */
async function checkBinding(
  vp: DecodedJwt,
  compact: string,
  holderJwk: Record<string, unknown>,
  context: PresentationContext,
): Promise<PresentationCheck | undefined> {
  const alg = vp.header.alg as string;
  try {
    const { kty, crv, x, y } = holderJwk;
    const key = await importJWK({ kty, crv, x, y } as Parameters<typeof importJWK>[0], alg);
    await compactVerify(compact, key, { algorithms: [...ALLOWED_ALGORITHMS] });
  } catch {
    return reject('invalid_key_binding', "the presentation is not signed by the credential's holder key");
  }
  const { nonce, aud, iat, nbf, exp } = vp.payload;
  if (nonce !== context.nonce) return reject('nonce_mismatch', 'the presentation nonce is not the session nonce');
  if (!asArray(aud).includes(context.audience) || asArray(aud).length === 0)
    return reject('audience_mismatch', 'the presentation aud is not this service');
  const issued = iat ?? nbf;
  if (typeof issued !== 'number' || !Number.isFinite(issued))
    return reject('invalid_key_binding', 'the presentation JWT has no numeric iat');
  const age = context.now.getTime() / 1000 - issued;
  if (age > MAX_KEY_BINDING_AGE_SECONDS)
    return reject(
      'stale_presentation',
      `the presentation was made ${Math.round(age)} s ago (limit ${MAX_KEY_BINDING_AGE_SECONDS} s)`,
    );
  if (-age > MAX_KEY_BINDING_FUTURE_SECONDS)
    return reject('stale_presentation', `the presentation is dated ${Math.round(-age)} s in the future`);
  if (exp !== undefined && !(typeof exp === 'number' && exp > context.now.getTime() / 1000))
    return reject('stale_presentation', 'the presentation JWT has expired');
  return undefined;
}

/** The issuer identifier of the credential JWT: `iss`, which `issuer` must repeat when both are present. */
function issuerOf(payload: Record<string, unknown>, credential: Record<string, unknown>): string | undefined {
  const named = idOf(credential.issuer);
  const iss = payload.iss ?? named;
  if (typeof iss !== 'string' || (named !== undefined && named !== iss)) return undefined;
  return iss;
}

async function verifyPresentation(
  presentation: unknown,
  context: PresentationContext,
  registry: TrustRegistry,
): Promise<PresentationCheck> {
  if (!looksLikeJwtPresentation(presentation))
    return reject('malformed_presentation', 'a jwt_vc_json presentation is a Verifiable Presentation JWT');
  const compactVp = presentation as string;
  const vp = decodeJwt(compactVp);
  if (!vp) return reject('malformed_presentation', 'the presentation is not a JWT');
  const vpHeader = headerProblem(vp, 'presentation', PRESENTATION_TYPS);
  if (vpHeader) return vpHeader;
  const found = credentialJwtOf(vp.payload);
  if (typeof found !== 'string') return reject('malformed_presentation', found.problem);
  const vc = found.length <= MAX_PRESENTATION_LENGTH ? decodeJwt(found) : undefined;
  if (!vc) return reject('malformed_presentation', 'the credential is not a JWT');
  const vcHeader = headerProblem(vc, 'credential', CREDENTIAL_TYPS);
  if (vcHeader) return vcHeader;
  const credential = credentialOf(vc.payload);
  const context0 = asArray(credential['@context'])[0];
  if (typeof context0 !== 'string' || !CONTEXTS.includes(context0))
    return reject('malformed_presentation', `the credential's first @context is not one of ${CONTEXTS.join(', ')}`);
  if (!asArray(credential.type).includes('VerifiableCredential'))
    return reject('malformed_presentation', 'the credential type does not include VerifiableCredential');

  // Issuer: a registry entry must vouch for the credential's iss, by one of its methods.
  const iss = issuerOf(vc.payload, credential);
  if (iss === undefined) return reject('untrusted_issuer', 'the credential names no issuer, or two different ones');
  const trusted = await registry.issuers(context.environment, 'jwt-vc');
  const candidates = trusted.filter((issuer) => methodsFor(issuer, iss, vc).length > 0);
  if (candidates.length === 0)
    return reject('untrusted_issuer', `${iss} is not a trusted ${context.environment} issuer`);
  const signer = await findSigner(vc, iss, candidates, registry, context.now);
  if (!signer.ok)
    return reject(
      signer.reason,
      signer.reason === 'issuer_unreachable' ? signer.message : `the credential: ${signer.message}`,
      signer.detail,
    );
  const issuer: TrustedIssuer = signer.issuer;

  // The type decides what the claims mean.
  const profiles = (context.profiles ?? []).filter((p) => p.format === 'jwt_vc_json');
  const profile = profileFor(profiles, credential);
  if (!profile)
    return reject(
      'malformed_presentation',
      `type ${JSON.stringify(asArray(credential.type))} is not accepted: no jwt_vc_json credential profile names it (accepted: ${profiles.map((p) => p.id).join(', ') || 'none'})`,
    );
  if (!profileAllowsIssuer(profile, issuer))
    return reject('untrusted_issuer', `${issuer.domain} is not among the issuers of ${profile.id} credentials`);
  const subjects = asArray(credential.credentialSubject);
  if (subjects.length !== 1 || !isJsonObject(subjects[0]))
    return reject('malformed_presentation', 'the credential must have exactly one credentialSubject object');
  const subject = subjects[0];

  // Holder binding: the credential's cnf.jwk, or the did:jwk it was issued to, signed the VP.
  const cnf = isJsonObject(vc.payload.cnf) ? vc.payload.cnf.jwk : undefined;
  const holderDid = vc.payload.sub ?? subject.id;
  if (vc.payload.sub !== undefined && subject.id !== undefined && vc.payload.sub !== subject.id)
    return reject('malformed_presentation', 'sub and credentialSubject.id differ');
  let holderJwk: Record<string, unknown> | undefined;
  if (isJsonObject(cnf)) holderJwk = cnf;
  else {
    holderJwk = didJwkKey(holderDid);
    if (!holderJwk)
      return reject(
        'missing_key_binding',
        'the credential is bound to no holder key this verifier resolves (cnf.jwk, or a did:jwk subject)',
      );
    const presenter = vp.payload.iss ?? (isJsonObject(vp.payload.vp) ? idOf(vp.payload.vp.holder) : undefined);
    if (presenter !== holderDid)
      return reject('invalid_key_binding', "the presentation's iss is not the credential's subject");
  }
  const binding = await checkBinding(vp, compactVp, holderJwk, context);
  if (binding) return binding;

  const validity = validityOf(vc.payload, credential, context.now);
  if ('ok' in validity) return validity;
  const derived = deriveClaims(profile, subject, { issuer, ...validity });
  if (!derived.ok) return reject(derived.reason, derived.message);
  const ends = [validity.expiresAt, validity.expirationDate].filter((d): d is string => d !== undefined);
  const expiresAt = ends.sort((a, b) => Date.parse(a) - Date.parse(b))[0];

  const method: TrustMethod = signer.method;
  const status = statusFacts(
    await w3cCredentialStatus(
      credential.credentialStatus,
      iss,
      registry,
      async (token) => {
        const outcome = await verifyByMethod(token, iss, issuer, method, registry, context.now);
        return outcome.ok ? undefined : outcome.message;
      },
      context.now,
      { sandbox: issuer.environment === 'sandbox' },
    ),
    registry,
  );
  if (!status.ok) return status.rejection;
  return {
    ok: true,
    presentation: {
      format: 'jwt-vc',
      issuer,
      claims: derived.claims,
      ...(expiresAt !== undefined ? { expiresAt: new Date(Date.parse(expiresAt)).toISOString() } : {}),
      ...status.facts,
    },
  };
}

/**
 * Verifies a `jwt_vc_json` presentation (a VP JWT holding one W3C VC JWT) of a type an accepted
 * credential profile names. Never throws for bad input; registry failures propagate.
 */
export const jwtVcJsonVerifier: PresentationVerifier = {
  format: 'jwt-vc',
  verify: verifyPresentation,
};
