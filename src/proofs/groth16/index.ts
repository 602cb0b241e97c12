/**
 * The `groth16` credential format: a circom circuit proving an issuer's EdDSA-Poseidon signature
 * over the student credential, validUntil > now, bound to the session's nonce (docs/zk-groth16.md).
 * The service side (verifier) checks the pairing on mcl-wasm (BSD-3-Clause, WebAssembly), with
 * the @noble/curves (MIT) check as the reference in tests; the holder side (builder) loads
 * snarkjs/circomlibjs, devDependencies, only when it proves.
 */
import type { PresentationVerifier } from '../types.ts';
import { createGroth16Verifier } from './presentation-verifier.ts';

let sandboxOnly: PresentationVerifier | undefined;

/**
 * The verifier with the default keys: the committed sandbox key, and no live key (live
 * presentations get `unsupported_format`). Keys are read on first use, not on import. A service
 * with a ceremony key uses `createGroth16Verifier({liveVerificationKeyPath})` instead.
 */
export const groth16Verifier: PresentationVerifier = {
  format: 'groth16',
  verify: (presentation, context, registry) =>
    (sandboxOnly ??= createGroth16Verifier()).verify(presentation, context, registry),
};

export { createGroth16Verifier, type Groth16VerifierOptions } from './presentation-verifier.ts';
export { MAX_NOW_AHEAD_SECONDS, MAX_NOW_BEHIND_SECONDS } from '../freshness.ts';
export {
  groth16Builder,
  proveCredential,
  circuitInputs,
  releaseSnarkjsCurve,
  withSnarkjsCurve,
  type Groth16PresentationJson,
  type ProvingArtifacts,
} from './builder.ts';
export { issueSandboxCredential, studentSecret, type Groth16Credential } from './sandbox-credential.ts';
export { sandboxIssuerPrivateKey, sandboxIssuerPublicKeys, type BabyJubJubPublicKey } from './sandbox-issuers.ts';
export { BN254_R, MAX_TIMESTAMP, domainHash, hashToField, nonceField, parseFieldElement } from './fields.ts';
export {
  decodeProof,
  decodeVerificationKey,
  verifyGroth16,
  type Groth16Proof,
  type Groth16VerificationKey,
} from './verifier.ts';
export {
  decodeProofMcl,
  initMcl,
  prepareVerificationKeyMcl,
  verifyGroth16Mcl,
  type MclProof,
  type MclVerificationKey,
} from './mcl-verifier.ts';
export { mclPairing, noblePairing, type Groth16Pairing, type Groth16ProofCheck } from './pairing.ts';
export { BN254_P, type ProofDecodeError } from './proof-json.ts';
export {
  loadVerificationKey,
  loadLiveVerificationKey,
  loadSandboxVerificationKey,
  VerificationKeyError,
} from './verification-key.ts';
export {
  publicSignals,
  OUTPUT_ORDER,
  PUBLIC_INPUT_ORDER,
  type CircuitOutputs,
  type CircuitPublicInputs,
} from './signals.ts';
export { parsePresentation, type Groth16Presentation } from './presentation.ts';
export { GROTH16_ARTIFACTS } from './artifacts.ts';
