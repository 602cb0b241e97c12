import { bbsBuilder } from '../../src/proofs/bbs/builder.ts';
import { groth16Builder } from '../../src/proofs/groth16/builder.ts';
import { sdJwtVcBuilder } from '../../src/proofs/sd-jwt-vc/builder.ts';
import type { CredentialFormat, PresentationBuilder } from '../../src/proofs/types.ts';

/** The formats the simulated wallets hold a credential in; `jwt-vc` credentials come from did-jwt-vc in its tests. */
export type BuiltFormat = Exclude<CredentialFormat, 'jwt-vc'>;
export const BUILT_FORMATS: readonly BuiltFormat[] = ['sd-jwt-vc', 'bbs', 'groth16'];

/**
 * Holder side of every format, imported at once: tests run with the devDependencies installed.
 * The service loads builders through src/proofs/builders.ts instead, on first use.
 */
export const BUILDERS: Readonly<Record<BuiltFormat, PresentationBuilder>> = {
  'sd-jwt-vc': sdJwtVcBuilder,
  bbs: bbsBuilder,
  groth16: groth16Builder,
};
