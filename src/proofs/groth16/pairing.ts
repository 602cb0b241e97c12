import { decodeProofMcl, prepareVerificationKeyMcl, verifyGroth16Mcl } from './mcl-verifier.ts';
import type { ProofDecodeError } from './proof-json.ts';
import { decodeProof, verifyGroth16, type Groth16VerificationKey } from './verifier.ts';

/**
 * The pairing back ends a `groth16` verifier can check proofs with: mcl-wasm (WebAssembly, the
 * default) and @noble/curves (pure JavaScript, the reference). Both refuse the same malformed
 * JSON, the same invalid points and the same failed equations; the tests hold them to it.
 */

/**
 * Checks a proof in snarkjs JSON form against one verification key and the public signals: the
 * equation's outcome, or why the proof could not be decoded.
 */
export type Groth16ProofCheck = (proof: unknown, signals: readonly bigint[]) => boolean | ProofDecodeError;

/** A pairing back end: prepares a key once (the constant parts of the equation), then checks proofs. */
export interface Groth16Pairing {
  readonly name: string;
  prepare(vk: Groth16VerificationKey): Promise<Groth16ProofCheck>;
}

/** mcl-wasm (BSD-3-Clause): e(α, β) and the lines of γ and δ computed once per key, one final exponentiation per proof. */
export const mclPairing: Groth16Pairing = {
  name: 'mcl-wasm',
  async prepare(vk) {
    const key = await prepareVerificationKeyMcl(vk);
    return (json, signals) => {
      const proof = decodeProofMcl(json);
      return typeof proof === 'string' ? proof : verifyGroth16Mcl(key, proof, signals);
    };
  },
};

/** @noble/curves (MIT), pure JavaScript: the reference implementation. */
export const noblePairing: Groth16Pairing = {
  name: '@noble/curves',
  async prepare(vk) {
    return (json, signals) => {
      const proof = decodeProof(json);
      return typeof proof === 'string' ? proof : verifyGroth16(vk, proof, signals);
    };
  },
};
