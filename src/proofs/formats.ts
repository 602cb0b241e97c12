import { bbsVerifier } from './bbs/index.ts';
import { createGroth16Verifier } from './groth16/presentation-verifier.ts';
import { sdJwtVcVerifier } from './sd-jwt-vc/index.ts';
import type { CredentialFormat, PresentationVerifier } from './types.ts';

export type Verifiers = Readonly<Record<CredentialFormat, PresentationVerifier>>;

/**
 * The verifier of every format the service accepts. Groth16 needs its verification keys: the
 * committed sandbox key, and for live sessions the key of the operator's ceremony, if installed.
 */
export function createVerifiers(options: { groth16LiveVerificationKeyPath?: string } = {}): Verifiers {
  return {
    'sd-jwt-vc': sdJwtVcVerifier,
    bbs: bbsVerifier,
    groth16: createGroth16Verifier({ liveVerificationKeyPath: options.groth16LiveVerificationKeyPath }),
  };
}

// The holder side of the formats (presentation builders) is builders.ts, loaded on first use.

export function acceptedFormats(verifiers: Verifiers): CredentialFormat[] {
  return Object.keys(verifiers) as CredentialFormat[];
}
