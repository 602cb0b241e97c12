import { verifyProof } from '@digitalbazaar/bbs-signatures';
import { isAcademicLevel, type DisclosedClaims } from '../../domain/claims.ts';
import type {
  PresentationCheck,
  PresentationContext,
  PresentationVerifier,
  RejectionReason,
  TrustRegistry,
  TrustedIssuer,
} from '../types.ts';
import {
  BBS_CIPHERSUITE,
  credentialHeader,
  encodeClaimMessage,
  presentationHeader,
  typedClaimValue,
} from './credential.ts';
import { decodeBbsPublicKey } from './keys.ts';
import { parseBbsPresentation, proofScalarProblem, type ParsedBbsPresentation } from './presentation.ts';

function reject(reason: RejectionReason, message: string): PresentationCheck {
  return { ok: false, reason, message };
}

/** The issuer's registry key; a stored key that does not decode is a registry fault, not bad input. */
function registryKey(issuer: TrustedIssuer): Uint8Array {
  const key = issuer.keys.bbs === undefined ? undefined : decodeBbsPublicKey(issuer.keys.bbs);
  if (key === undefined) throw new Error(`trust registry entry ${issuer.id} has an invalid bbs public key`);
  return key;
}

/**
 * Whether the proof holds for `issuer`'s key. The library throws on proof bytes that do not decode
 * (a point off the curve, a scalar out of range): for us that is a proof that does not hold.
 */
async function proofHolds(
  presentation: ParsedBbsPresentation,
  issuer: TrustedIssuer,
  context: PresentationContext,
): Promise<boolean> {
  const publicKey = registryKey(issuer);
  try {
    return await verifyProof({
      publicKey,
      proof: presentation.proof,
      // Built from the registry entry, not the presentation: the signature must be this issuer's.
      header: credentialHeader(issuer.domain),
      presentationHeader: presentationHeader(context.audience, context.nonce),
      disclosedMessages: presentation.disclosed.map((m) => encodeClaimMessage(m.claim, m.value)),
      disclosedMessageIndexes: presentation.disclosed.map((m) => m.index),
      ciphersuite: BBS_CIPHERSUITE,
    });
  } catch {
    return false;
  }
}

function disclosedClaims(presentation: ParsedBbsPresentation): DisclosedClaims {
  const claims: Record<string, unknown> = {};
  for (const { claim, value } of presentation.disclosed) claims[claim] = typedClaimValue(claim, value);
  return claims as DisclosedClaims;
}

/**
 * Service side of `bbs`: checks the shape, finds the issuer in the trust registry by domain,
 * verifies the BBS proof against the registry key, the credential header of that issuer, the
 * session's audience and nonce, and the disclosed values. Whether the claims qualify (active,
 * unexpired, all required ones disclosed) is judged by the shared step that follows.
 */
export const bbsVerifier: PresentationVerifier = {
  format: 'bbs',

  async verify(value: unknown, context: PresentationContext, registry: TrustRegistry): Promise<PresentationCheck> {
    const parsed = parseBbsPresentation(value);
    if (!parsed.ok) return reject('malformed_presentation', parsed.message);
    const presentation = parsed.presentation;

    const trusted = await registry.issuers(context.environment, 'bbs');
    const candidates = trusted.filter((issuer) => issuer.domain === presentation.issuer);
    if (candidates.length === 0) {
      return reject(
        'untrusted_issuer',
        `${presentation.issuer} is not a trusted bbs issuer for ${context.environment}`,
      );
    }

    // The library would let a zero scalar through (its check compares a bigint with a number).
    const scalarProblem = proofScalarProblem(presentation.proof);
    if (scalarProblem) return reject('invalid_proof', scalarProblem);

    // More than one entry for a domain (a key being rotated) is accepted if any of them verifies.
    for (const issuer of candidates) {
      if (!(await proofHolds(presentation, issuer, context))) continue;
      const claims = disclosedClaims(presentation);
      // An issuer vouches for its own students only: a signed domain of another university is refused.
      if (claims.university_domain !== undefined && claims.university_domain !== issuer.domain) {
        return reject('untrusted_issuer', `${issuer.domain} cannot vouch for students of ${claims.university_domain}`);
      }
      if (claims.academic_level !== undefined && !isAcademicLevel(claims.academic_level)) {
        return reject(
          'invalid_claim',
          `academic_level ${JSON.stringify(claims.academic_level)} is not in the catalogue`,
        );
      }
      return { ok: true, presentation: { format: 'bbs', issuer, claims } };
    }
    return reject(
      'invalid_proof',
      'the BBS proof does not hold for this issuer, these disclosed values, this audience and this nonce',
    );
  },
};
