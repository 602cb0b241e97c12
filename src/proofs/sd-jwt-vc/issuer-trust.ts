import type { KeyObject } from 'node:crypto';
import type { RejectionReason, TrustedIssuer, TrustRegistry } from '../types.ts';
import { issuerKeyProblem } from '../issuer-keys.ts';
import { validateChain } from '../x509.ts';
import { didJwkKey, sameKey } from '../jwt-vc/dids.ts';
import type { DecodedJwt } from './compact.ts';
import { importPublicKey, isAllowedAlgorithm, isJsonObject, verifyJws, type SdJwtAlgorithm } from './jose.ts';

/**
 * Which registry entry signed a JWT that claims `iss`, by the three ways an entry can trust a
 * university (docs/trust.md):
 *
 * - raw keys: the entry's `keys.sdJwtVc`, for `iss` = `https://<entry domain>`, or for the
 *   `did:jwk` of that very key (a W3C credential, `jwt_vc_json`);
 * - X.509: the JWT's `x5c` chain validates to one of the entry's anchors (RFC 5280 path
 *   validation, x509.ts) and its leaf names `iss` (for an `iss` on the entry's domain);
 * - metadata: `iss` is the entry's issuer identifier, whose `/.well-known/jwt-vc-issuer` keys
 *   verify (by `kid` when the header names one; an unknown `kid` re-fetches once); an identifier
 *   `did:web:…` is the entry's DID, whose DID document's keys verify (`jwt_vc_json`).
 *
 * The same function, with the same entry and method, verifies the credential's status list token:
 * "the same trust as the credential".
 */

export type TrustMethod = 'keys' | 'x509' | 'metadata';

export type SignerOutcome =
  | { ok: true; issuer: TrustedIssuer; method: TrustMethod }
  | { ok: false; reason: RejectionReason; message: string; detail?: string };

type MethodOutcome =
  | { ok: true }
  /** `message` is shown to callers; `detail` (addresses, error codes) is for the operator only. */
  | { ok: false; unreachable?: boolean; untrusted?: boolean; message: string; detail?: string };

function hostOf(iss: string): string | undefined {
  try {
    const url = new URL(iss);
    return url.protocol === 'https:' ? url.hostname.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

/** The methods `issuer` can vouch for `iss` by; empty when the entry has nothing to say about it. */
export function methodsFor(issuer: TrustedIssuer, iss: string, jwt: DecodedJwt): TrustMethod[] {
  const methods: TrustMethod[] = [];
  const domain = issuer.domain.toLowerCase();
  if (jwt.header.x5c !== undefined && issuer.anchors?.length && hostOf(iss) === domain) methods.push('x509');
  if (
    issuer.keys.sdJwtVc !== undefined &&
    (iss === `https://${domain}` || sameKey(didJwkKey(iss), issuer.keys.sdJwtVc))
  )
    methods.push('keys');
  if (issuer.metadataIssuer !== undefined && issuer.metadataIssuer === iss) methods.push('metadata');
  return methods;
}

function verifyWithKey(jwt: DecodedJwt, alg: SdJwtAlgorithm, key: KeyObject | undefined): boolean {
  return key !== undefined && verifyJws(jwt.signingInput, jwt.signature, key, alg);
}

/** A key published for a live university must not be a published sandbox key (anyone can sign with those). */
function keyRefused(issuer: TrustedIssuer, key: KeyObject): string | undefined {
  let jwk: JsonWebKey;
  try {
    jwk = key.export({ format: 'jwk' });
  } catch {
    return 'the key cannot be read';
  }
  return issuerKeyProblem('sdJwtVc', jwk, issuer.environment);
}

async function verifyByMetadata(
  jwt: DecodedJwt,
  alg: SdJwtAlgorithm,
  issuer: TrustedIssuer,
  registry: TrustRegistry,
): Promise<MethodOutcome> {
  const publications = registry.publications;
  if (!publications) return { ok: false, unreachable: true, message: 'this verifier cannot fetch issuer metadata' };
  const kid = typeof jwt.header.kid === 'string' ? jwt.header.kid : undefined;
  let refreshed = false;
  for (;;) {
    const fetched = await publications.metadataKeys(issuer.metadataIssuer!, { refresh: refreshed });
    if (!fetched.ok)
      return {
        ok: false,
        unreachable: true,
        message: "the issuer's metadata could not be fetched",
        detail: fetched.message,
      };
    const keys = fetched.value.filter(
      (jwk) => isJsonObject(jwk) && (kid === undefined || (jwk as Record<string, unknown>).kid === kid),
    );
    if (keys.length === 0 && kid !== undefined && !refreshed) {
      refreshed = true; // an issuer that rotated its keys: fetch once more, then give up
      continue;
    }
    for (const jwk of keys) {
      const key = importPublicKey(jwk, alg);
      if (!key || !verifyWithKey(jwt, alg, key)) continue;
      const refused = keyRefused(issuer, key);
      return refused ? { ok: false, message: `the published key is refused: ${refused}` } : { ok: true };
    }
    return {
      ok: false,
      message:
        kid !== undefined && keys.length === 0
          ? `the issuer metadata publishes no key with kid ${JSON.stringify(kid)}`
          : "not signed by a key of the issuer's metadata",
    };
  }
}

async function verifyByX509(
  jwt: DecodedJwt,
  alg: SdJwtAlgorithm,
  issuer: TrustedIssuer,
  iss: string,
  registry: TrustRegistry,
  now: Date,
): Promise<MethodOutcome> {
  const chain = await validateChain(jwt.header.x5c, issuer.anchors ?? [], iss, now, registry.x509?.allowedEkus);
  if (!chain.ok) return { ok: false, untrusted: true, message: chain.message } as const;
  const key = chain.leaf.publicKey;
  if (!verifyWithKey(jwt, alg, key))
    return { ok: false, message: 'not signed by the key of the x5c leaf certificate' } as const;
  const refused = keyRefused(issuer, key);
  return refused
    ? ({ ok: false, message: `the x5c leaf key is refused: ${refused}` } as const)
    : ({ ok: true } as const);
}

/** Checks `jwt`'s signature by one method of one entry. */
export async function verifyByMethod(
  jwt: DecodedJwt,
  iss: string,
  issuer: TrustedIssuer,
  method: TrustMethod,
  registry: TrustRegistry,
  now: Date,
): Promise<MethodOutcome> {
  const alg = jwt.header.alg;
  if (!isAllowedAlgorithm(alg)) return { ok: false, message: `algorithm ${JSON.stringify(alg)} is not allowed` };
  if (method === 'keys')
    return verifyWithKey(jwt, alg, importPublicKey(issuer.keys.sdJwtVc, alg))
      ? { ok: true }
      : { ok: false, message: `not signed by the registered key of ${issuer.domain}` };
  if (method === 'x509') return verifyByX509(jwt, alg, issuer, iss, registry, now);
  return verifyByMetadata(jwt, alg, issuer, registry);
}

/**
 * The entry whose trust verifies `jwt` (an issuer-signed credential claiming `iss`) among
 * `candidates`. Several entries may share a domain (rotation); any may vouch. A rejection says
 * why: `issuer_unreachable` when only a fetch failed, `untrusted_issuer` when a chain leads to no
 * anchor of the issuer, `invalid_signature` otherwise.
 */
export async function findSigner(
  jwt: DecodedJwt,
  iss: string,
  candidates: readonly TrustedIssuer[],
  registry: TrustRegistry,
  now: Date,
): Promise<SignerOutcome> {
  const problems: MethodOutcome[] = [];
  for (const issuer of candidates) {
    for (const method of methodsFor(issuer, iss, jwt)) {
      const outcome = await verifyByMethod(jwt, iss, issuer, method, registry, now);
      if (outcome.ok) return { ok: true, issuer, method };
      problems.push(outcome);
    }
  }
  const failures = problems.filter((p): p is Exclude<MethodOutcome, { ok: true }> => !p.ok);
  const message = failures.map((f) => f.message).join('; ') || `no registry entry can verify ${iss}`;
  const details = failures.flatMap((f) => (f.detail !== undefined ? [f.detail] : []));
  const detail = details.length > 0 ? { detail: details.join('; ') } : {};
  if (failures.length > 0 && failures.every((f) => f.unreachable))
    return { ok: false, reason: 'issuer_unreachable', message, ...detail };
  if (failures.some((f) => f.untrusted) && !failures.some((f) => !f.untrusted && !f.unreachable))
    return { ok: false, reason: 'untrusted_issuer', message, ...detail };
  return { ok: false, reason: 'invalid_signature', message, ...detail };
}
