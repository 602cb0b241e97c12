import { readFileSync } from 'node:fs';
import { GROTH16_ARTIFACTS } from './artifacts.ts';
import { PUBLIC_SIGNAL_COUNT } from './signals.ts';
import { decodeVerificationKey, type Groth16VerificationKey } from './verifier.ts';

/**
 * Loading the verification keys the service trusts: the committed sandbox key, and for live the
 * key of the operator's multi-party ceremony (docs/zk-groth16.md). Throws on any problem: a bad
 * key is a configuration fault the service must refuse to start with.
 */

/** Reads and validates a snarkjs verification_key.json for the student credential circuit. */
export function loadVerificationKey(path: string): Groth16VerificationKey {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`groth16 verification key ${path}: cannot read (${(error as Error).message})`);
  }
  const vk = decodeVerificationKey(json);
  if (vk.nPublic !== PUBLIC_SIGNAL_COUNT) {
    throw new Error(
      `groth16 verification key ${path}: ${vk.nPublic} public signals, the circuit has ${PUBLIC_SIGNAL_COUNT}`,
    );
  }
  return vk;
}

/** The committed sandbox key (single-party setup from public beacons: anyone can forge against it). */
export function loadSandboxVerificationKey(): Groth16VerificationKey {
  return loadVerificationKey(GROTH16_ARTIFACTS.verificationKey);
}

/** True when both keys are the same key (same points). */
export function sameVerificationKey(a: Groth16VerificationKey, b: Groth16VerificationKey): boolean {
  return (
    a.alpha.equals(b.alpha) &&
    a.beta.equals(b.beta) &&
    a.gamma.equals(b.gamma) &&
    a.delta.equals(b.delta) &&
    a.ic.length === b.ic.length &&
    a.ic.every((p, i) => p.equals(b.ic[i]))
  );
}
