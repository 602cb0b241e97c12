import { deriveProof } from '@digitalbazaar/bbs-signatures';
import type { ClaimName } from '../../domain/claims.ts';
import type { PresentationBuilder, PresentationRequest, SandboxStudent } from '../types.ts';
import { BBS_CIPHERSUITE, claimAtIndex, claimIndex, credentialHeader, presentationHeader } from './credential.ts';
import { issueSandboxCredential, type BbsCredential } from './issue.ts';
import { parseBbsPresentation, type BbsPresentation } from './presentation.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The value a claim message states: the bytes after `name=`. */
function messageValue(message: Uint8Array, claim: ClaimName): string {
  return utf8.decode(message).slice(claim.length + 1);
}

/**
 * Derives a fresh proof from `credential` that discloses `disclose` and nothing else (never the
 * holder secret), bound to the request's audience, nonce and time. Each call uses new randomness,
 * so two presentations of one credential share no bytes a verifier could link.
 */
export async function presentBbsCredential(
  credential: BbsCredential,
  request: Pick<PresentationRequest, 'audience' | 'nonce' | 'disclose' | 'now'>,
): Promise<BbsPresentation> {
  const now = Math.floor(request.now.getTime() / 1000);
  const indexes = [...new Set(request.disclose.map(claimIndex))].sort((a, b) => a - b);
  const proof = await deriveProof({
    publicKey: credential.publicKey,
    signature: credential.signature,
    header: credentialHeader(credential.issuerDomain),
    messages: credential.messages,
    presentationHeader: presentationHeader(request.audience, request.nonce, now),
    disclosedMessageIndexes: indexes,
    ciphersuite: BBS_CIPHERSUITE,
  });
  const disclosed: Record<string, string> = {};
  for (const index of indexes) {
    disclosed[index] = messageValue(credential.messages[index], claimAtIndex(index) as ClaimName);
  }
  return { issuer: credential.issuerDomain, now, proof: Buffer.from(proof).toString('base64url'), disclosed };
}

/** A different value for a disclosed claim, one a tamperer would want (active, later, higher). */
function alteredValue(claim: ClaimName, value: string): string {
  switch (claim) {
    case 'is_active_student':
      return value === 'true' ? 'false' : 'true';
    case 'valid_until':
      return value === '2099-12-31T23:59:59.000Z' ? '2098-12-31T23:59:59.000Z' : '2099-12-31T23:59:59.000Z';
    case 'academic_level':
      return value === 'doctoral' ? 'postgraduate' : 'doctoral';
    case 'university_domain':
      return `x${value}`;
  }
}

/** Flips one bit of the proof's last scalar (the challenge), for presentations disclosing nothing. */
function alteredProof(proof: string): string {
  const bytes = Buffer.from(proof, 'base64url');
  bytes[bytes.length - 1] ^= 1;
  return bytes.toString('base64url');
}

/** Holder side of `bbs`: issues the sandbox credential from the published seed and presents it. */
export const bbsBuilder: PresentationBuilder = {
  format: 'bbs',

  async present(student: SandboxStudent, request: PresentationRequest): Promise<BbsPresentation> {
    const credential = await issueSandboxCredential(student);
    return presentBbsCredential(credential, request);
  },

  tamper(presentation: unknown): BbsPresentation {
    const parsed = parseBbsPresentation(presentation);
    if (!parsed.ok) throw new TypeError(`not a bbs presentation: ${parsed.message}`);
    const original = presentation as BbsPresentation;
    const first = parsed.presentation.disclosed[0];
    if (first === undefined) return { ...original, disclosed: {}, proof: alteredProof(original.proof) };
    return {
      ...original,
      disclosed: { ...original.disclosed, [first.index]: alteredValue(first.claim, first.value) },
    };
  },
};
