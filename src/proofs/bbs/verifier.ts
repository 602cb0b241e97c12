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
import { presentationTimeProblem } from '../freshness.ts';
import { decodeBbsPublicKey } from './keys.ts';
import { parseBbsPresentation, proofScalarProblem, type ParsedBbsPresentation } from './presentation.ts';
import { inProcessRunner, type ProofRunner } from '../worker/tasks.ts';

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
 * Whether the proof holds for `issuer`'s key. The pairings run wherever `runner` puts them (a
 * worker thread in the service); a proof whose bytes do not decode does not hold.
 */
async function proofHolds(
  runner: ProofRunner,
  presentation: ParsedBbsPresentation,
  issuer: TrustedIssuer,
  context: PresentationContext,
): Promise<boolean> {
  return runner.run({
    kind: 'bbs-verify',
    args: {
      publicKey: registryKey(issuer),
      proof: presentation.proof,
      // Built from the registry entry, not the presentation: the signature must be this issuer's.
      header: credentialHeader(issuer.domain),
      presentationHeader: presentationHeader(context.audience, context.nonce, presentation.now),
      disclosedMessages: presentation.disclosed.map((m) => encodeClaimMessage(m.claim, m.value)),
      disclosedMessageIndexes: presentation.disclosed.map((m) => m.index),
      ciphersuite: BBS_CIPHERSUITE,
    },
  });
}

function disclosedClaims(presentation: ParsedBbsPresentation): DisclosedClaims {
  const claims: Record<string, unknown> = {};
  for (const { claim, value } of presentation.disclosed) claims[claim] = typedClaimValue(claim, value);
  return claims as DisclosedClaims;
}

/**
 * Service side of `bbs`: checks the shape, finds the issuer in the trust registry by domain,
 * verifies the BBS proof against the registry key, the credential header of that issuer, the
 * session's audience and nonce, the presentation's time (fresh against the service clock), and
 * the disclosed values. Whether the claims qualify (active,
 * unexpired, all required ones disclosed) is judged by the shared step that follows.
 */
export function createBbsVerifier(runner: ProofRunner = inProcessRunner): PresentationVerifier {
  return { format: 'bbs', verify: (value, context, registry) => verifyBbs(runner, value, context, registry) };
}

/** The `bbs` verifier with its proofs checked on the calling thread (CLI, unit tests). */
export const bbsVerifier: PresentationVerifier = createBbsVerifier();

async function verifyBbs(
  runner: ProofRunner,
  value: unknown,
  context: PresentationContext,
  registry: TrustRegistry,
): Promise<PresentationCheck> {
  const parsed = parseBbsPresentation(value);
  if (!parsed.ok) return reject('malformed_presentation', parsed.message);
  const presentation = parsed.presentation;
  // The time is bound into the proof: a captured presentation stops verifying once it is stale.
  const timeProblem = presentationTimeProblem(presentation.now, context.now);
  if (timeProblem) return reject('stale_presentation', timeProblem);

  const trusted = await registry.issuers(context.environment, 'bbs');
  const candidates = trusted.filter((issuer) => issuer.domain === presentation.issuer);
  if (candidates.length === 0) {
    return reject('untrusted_issuer', `${presentation.issuer} is not a trusted bbs issuer for ${context.environment}`);
  }

  // The library would let a zero scalar through (its check compares a bigint with a number).
  const scalarProblem = proofScalarProblem(presentation.proof);
  if (scalarProblem) return reject('invalid_proof', scalarProblem);

  // More than one entry for a domain (a key being rotated) is accepted if any of them verifies.
  for (const issuer of candidates) {
    if (!(await proofHolds(runner, presentation, issuer, context))) continue;
    const claims = disclosedClaims(presentation);
    // An issuer vouches for its own students only: a signed domain of another university is refused.
    if (claims.university_domain !== undefined && claims.university_domain !== issuer.domain) {
      return reject('untrusted_issuer', `${issuer.domain} cannot vouch for students of ${claims.university_domain}`);
    }
    if (claims.academic_level !== undefined && !isAcademicLevel(claims.academic_level)) {
      return reject('invalid_claim', `academic_level ${JSON.stringify(claims.academic_level)} is not in the catalogue`);
    }
    return { ok: true, presentation: { format: 'bbs', issuer, claims } };
  }
  return reject(
    'invalid_proof',
    'the BBS proof does not hold for this issuer, these disclosed values, this audience, this nonce and this time',
  );
}
