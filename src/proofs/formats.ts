import { createBbsVerifier } from './bbs/index.ts';
import { createGroth16Verifier } from './groth16/presentation-verifier.ts';
import { jwtVcJsonVerifier, looksLikeJwtPresentation } from './jwt-vc/index.ts';
import { sdJwtVcVerifier } from './sd-jwt-vc/index.ts';
import type { CredentialFormat, PresentationVerifier } from './types.ts';
import type { ProofRunner } from './worker/tasks.ts';

export type Verifiers = Readonly<Record<CredentialFormat, PresentationVerifier>>;

/**
 * The `sd-jwt-vc` submission format carries every JWT-secured credential with holder binding:
 * a compact SD-JWT VC (`dc+sd-jwt` profiles), or, when a `jwt_vc_json` profile is accepted, a W3C
 * Verifiable Presentation JWT (no `~`). The credential profile of the type decides the rest
 * (ARCHITECTURE.md, "Where a format plugs in"); every channel (wallet protocol, OpenID4VP,
 * `/verify`) reaches both through this one verifier.
 */
export const jwtSecuredVerifier: PresentationVerifier = {
  format: 'sd-jwt-vc',
  verify: (presentation, context, registry) =>
    looksLikeJwtPresentation(presentation) && context.profiles?.some((p) => p.format === 'jwt_vc_json')
      ? jwtVcJsonVerifier.verify(presentation, context, registry)
      : sdJwtVcVerifier.verify(presentation, context, registry),
};

/**
 * The verifier of every format the service accepts. Groth16 needs its verification keys: the
 * committed sandbox key, and for live sessions the key of the operator's ceremony, if installed.
 */
export function createVerifiers(
  options: {
    groth16LiveVerificationKeyPath?: string;
    /**
     * Where BBS and Groth16 proofs are checked: the service's pool of worker threads, or the
     * calling thread (the default). SD-JWT VC (well under a millisecond) stays on the caller's.
     */
    runner?: ProofRunner;
  } = {},
): Verifiers {
  return {
    'sd-jwt-vc': jwtSecuredVerifier,
    bbs: createBbsVerifier(options.runner),
    groth16: createGroth16Verifier({
      liveVerificationKeyPath: options.groth16LiveVerificationKeyPath,
      runner: options.runner,
    }),
  };
}

// The holder side of the formats (presentation builders) is builders.ts, loaded on first use.

export function acceptedFormats(verifiers: Verifiers): CredentialFormat[] {
  return Object.keys(verifiers) as CredentialFormat[];
}
