import { bbsBuilder, bbsVerifier } from './bbs/index.ts';
import { sdJwtVcBuilder, sdJwtVcVerifier } from './sd-jwt-vc/index.ts';
import type { CredentialFormat, PresentationBuilder, PresentationVerifier } from './types.ts';

/** The verifier of every format the service accepts. */
export const VERIFIERS: Partial<Record<CredentialFormat, PresentationVerifier>> = {
  'sd-jwt-vc': sdJwtVcVerifier,
  bbs: bbsVerifier,
};

/** Holder side, for the wallet simulator and tests. */
export const BUILDERS: Partial<Record<CredentialFormat, PresentationBuilder>> = {
  'sd-jwt-vc': sdJwtVcBuilder,
  bbs: bbsBuilder,
};

export function acceptedFormats(): CredentialFormat[] {
  return Object.keys(VERIFIERS) as CredentialFormat[];
}
