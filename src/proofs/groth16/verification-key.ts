import { readFileSync } from 'node:fs';
import { bn254 } from '@noble/curves/bn254';
import { GROTH16_ARTIFACTS } from './artifacts.ts';
import { PUBLIC_SIGNAL_COUNT } from './signals.ts';
import { decodeVerificationKey, type Groth16VerificationKey } from './verifier.ts';

/**
 * Loading the verification keys the service trusts: the committed sandbox key, and for live the
 * key of the operator's multi-party ceremony (docs/zk-groth16.md). Throws on any problem: a bad
 * key is a configuration fault the service must refuse to start with.
 */

/** A verification key the service must not use; the message says why, in one line. */
export class VerificationKeyError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`groth16 verification key ${path}: ${reason}`);
    this.name = 'VerificationKeyError';
  }
}

/** Reads and validates a snarkjs verification_key.json for the student credential circuit. */
export function loadVerificationKey(path: string): Groth16VerificationKey {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new VerificationKeyError(path, `cannot read (${(error as Error).message})`);
  }
  let vk: Groth16VerificationKey;
  try {
    // Every point canonical, on its curve, in the prime-order subgroup and not the identity;
    // IC has nPublic + 1 entries.
    vk = decodeVerificationKey(json);
  } catch (error) {
    throw new VerificationKeyError(path, (error as Error).message.replace(/^verification key: /, ''));
  }
  if (vk.nPublic !== PUBLIC_SIGNAL_COUNT || vk.ic.length !== PUBLIC_SIGNAL_COUNT + 1) {
    throw new VerificationKeyError(path, `${vk.nPublic} public signals, the circuit has ${PUBLIC_SIGNAL_COUNT}`);
  }
  const degenerate = degeneracy(vk);
  if (degenerate) throw new VerificationKeyError(path, degenerate);
  return vk;
}

/**
 * Why a key is one anyone can forge proofs against, or undefined. The Groth16 check is
 * e(A, B) = e(α, β) · e(vk_x, γ) · e(C, δ). When δ = ±γ (which is what `snarkjs groth16 setup`
 * writes before any phase-2 contribution: γ = δ = the G2 generator), A = α, B = β, C = ∓vk_x
 * satisfies it for any public signals, with no witness at all.
 *
 * γ itself is the G2 generator in every snarkjs key (phase 2 randomises δ only; the committed
 * sandbox key has it too), so it is not refused: the secret phase 2 must add is δ. A δ that is
 * another known multiple of γ cannot be recognised from the key alone; `snarkjs zkey verify`
 * against the r1cs and the ceremony transcript is what proves that (docs/zk-groth16.md).
 */
export function degeneracy(vk: Groth16VerificationKey): string | undefined {
  const g1 = bn254.G1.ProjectivePoint.BASE;
  const g2 = bn254.G2.ProjectivePoint.BASE;
  if (vk.delta.equals(g2) || vk.delta.equals(g2.negate())) {
    return 'vk_delta_2 is the G2 generator: the key was exported before any phase-2 contribution, anyone can forge proofs against it';
  }
  if (vk.delta.equals(vk.gamma) || vk.delta.equals(vk.gamma.negate())) {
    return 'vk_delta_2 equals ±vk_gamma_2: anyone can forge proofs against this key';
  }
  // α and β are the generators only when phase 1 had no contribution at all (τ, α, β = 1).
  if (vk.alpha.equals(g1)) return 'vk_alpha_1 is the G1 generator: phase 1 had no contribution';
  if (vk.beta.equals(g2)) return 'vk_beta_2 is the G2 generator: phase 1 had no contribution';
  return undefined;
}

/** The committed sandbox key (single-party setup from public beacons: anyone can forge against it). */
export function loadSandboxVerificationKey(): Groth16VerificationKey {
  return loadVerificationKey(GROTH16_ARTIFACTS.verificationKey);
}

/**
 * The operator's key for live sessions: everything {@link loadVerificationKey} checks, and not
 * the committed sandbox key. Throws {@link VerificationKeyError}.
 */
export function loadLiveVerificationKey(path: string): Groth16VerificationKey {
  const live = loadVerificationKey(path);
  if (sameVerificationKey(live, loadSandboxVerificationKey())) {
    throw new VerificationKeyError(path, 'this is the public sandbox key; run a ceremony (docs/zk-groth16.md)');
  }
  return live;
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
