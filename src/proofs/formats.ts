import { createBbsVerifier } from './bbs/index.ts';
import { createGroth16Verifier } from './groth16/presentation-verifier.ts';
import { jwtVcJsonVerifier, looksLikeJwtPresentation } from './jwt-vc/index.ts';
import { sdJwtVcVerifier } from './sd-jwt-vc/index.ts';
import type { CredentialFormat, PresentationVerifier } from './types.ts';
import type { ProofRunner } from './worker/tasks.ts';

export type Verifiers = Readonly<Record<CredentialFormat, PresentationVerifier>>;

/**
 * The format names the shape (issue 29): `sd-jwt-vc` is a compact SD-JWT VC (`dc+sd-jwt`
 * profiles), `jwt-vc` a W3C Verifiable Presentation JWT holding a VC JWT (`jwt_vc_json`
 * profiles). One sent under the other's name is refused as `unsupported_format`, with a message
 * naming the right one, before anything is verified: a result's `format` states what was checked.
 * The credential profile of the type decides the rest (ARCHITECTURE.md, "Where a format plugs in").
 */
export const sdJwtVcSubmissionVerifier: PresentationVerifier = {
  format: 'sd-jwt-vc',
  verify: async (presentation, context, registry) =>
    looksLikeJwtPresentation(presentation)
      ? {
          ok: false,
          reason: 'unsupported_format',
          message:
            'this is a JWT without disclosures, not an SD-JWT VC: a W3C Verifiable Presentation JWT is format jwt-vc',
        }
      : sdJwtVcVerifier.verify(presentation, context, registry),
};

/** `jwt-vc`: a W3C VP JWT. An SD-JWT VC (it has `~` separators) sent under this name is refused. */
export const jwtVcSubmissionVerifier: PresentationVerifier = {
  format: 'jwt-vc',
  verify: async (presentation, context, registry) =>
    typeof presentation === 'string' && presentation.includes('~')
      ? {
          ok: false,
          reason: 'unsupported_format',
          message:
            'this is an SD-JWT (it has ~ separators), not a W3C Verifiable Presentation JWT: it is format sd-jwt-vc',
        }
      : jwtVcJsonVerifier.verify(presentation, context, registry),
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
    'sd-jwt-vc': sdJwtVcSubmissionVerifier,
    'jwt-vc': jwtVcSubmissionVerifier,
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
