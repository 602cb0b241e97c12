import { bbsBuilder, bbsVerifier } from './bbs/index.ts';
import { groth16Builder } from './groth16/builder.ts';
import { createGroth16Verifier } from './groth16/presentation-verifier.ts';
import { sdJwtVcBuilder, sdJwtVcVerifier } from './sd-jwt-vc/index.ts';
import type { CredentialFormat, PresentationBuilder, PresentationVerifier } from './types.ts';

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

/** Holder side of every format, for the wallet simulator and tests (sandbox credentials). */
export const BUILDERS: Readonly<Record<CredentialFormat, PresentationBuilder>> = {
  'sd-jwt-vc': sdJwtVcBuilder,
  bbs: bbsBuilder,
  groth16: groth16Builder,
};

export function acceptedFormats(verifiers: Verifiers): CredentialFormat[] {
  return Object.keys(verifiers) as CredentialFormat[];
}
