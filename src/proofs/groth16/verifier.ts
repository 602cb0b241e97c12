import { bn254 } from '@noble/curves/bn254';
import { BN254_R } from './fields.ts';
import {
  decodeProofWith,
  g1Coordinates,
  g2Coordinates,
  type PointDecoders,
  type ProofDecodeError,
} from './proof-json.ts';

export type { ProofDecodeError } from './proof-json.ts';

/**
 * The Groth16 verification equation on BN254, on `@noble/curves` (MIT), in pure JavaScript: the
 * reference the WebAssembly verifier the service runs (mcl-verifier.ts) is checked against in
 * tests, and the decoder of verification keys at start. Neither needs snarkjs, circomlib or
 * ffjavascript (GPL), which stay in dev tooling.
 *
 * Points arrive in snarkjs JSON form (decimal strings, projective with z = 1). Every point is
 * checked to be canonical, on its curve, in the prime-order subgroup and not the identity
 * before it reaches a pairing: an unchecked G2 point from a small subgroup is the classic way
 * to forge a pairing-based proof.
 */

type G1 = InstanceType<typeof bn254.G1.ProjectivePoint>;
type G2 = InstanceType<typeof bn254.G2.ProjectivePoint>;

const { Fp2, Fp12 } = bn254.fields;

/** A verification key with its points decoded and validated. */
export interface Groth16VerificationKey {
  alpha: G1;
  beta: G2;
  gamma: G2;
  delta: G2;
  /** IC[0] + Σ signal_i · IC[i+1] is the public-input point; IC has nPublic + 1 entries. */
  ic: G1[];
  nPublic: number;
}

/** A proof (A, B, C) with its points decoded and validated. */
export interface Groth16Proof {
  a: G1;
  b: G2;
  c: G1;
}

const NOBLE_POINTS: PointDecoders<G1, G2> = {
  g1: ([x, y]) => {
    try {
      const point = bn254.G1.ProjectivePoint.fromAffine({ x, y });
      point.assertValidity();
      return point.is0() ? 'invalid_point' : point;
    } catch {
      return 'invalid_point';
    }
  },
  g2: ([x0, x1, y0, y1]) => {
    try {
      const point = bn254.G2.ProjectivePoint.fromAffine({
        x: Fp2.fromBigTuple([x0, x1]),
        y: Fp2.fromBigTuple([y0, y1]),
      });
      point.assertValidity(); // on the twist and in the r-torsion subgroup
      return point.is0() ? 'invalid_point' : point;
    } catch {
      return 'invalid_point';
    }
  },
};

/** Decodes `[x, y, "1"]`. `malformed` for a bad shape, `invalid_point` for a non-point. */
function decodeG1(value: unknown): G1 | ProofDecodeError {
  const coordinates = g1Coordinates(value);
  return coordinates ? NOBLE_POINTS.g1(coordinates) : 'malformed';
}

/** Decodes `[[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]` (snarkjs puts the real part first). */
function decodeG2(value: unknown): G2 | ProofDecodeError {
  const coordinates = g2Coordinates(value);
  return coordinates ? NOBLE_POINTS.g2(coordinates) : 'malformed';
}

/** Decodes a proof `{pi_a, pi_b, pi_c}` in snarkjs JSON form. */
export function decodeProof(json: unknown): Groth16Proof | ProofDecodeError {
  return decodeProofWith(json, NOBLE_POINTS);
}

const INVALID_POINT = 'is not a valid (canonical, on the curve, in the prime-order subgroup, not the identity)';

/**
 * Decodes a snarkjs `verification_key.json`. Throws: a bad verification key is an operator
 * fault, found when the service starts, not an outcome of one presentation.
 */
export function decodeVerificationKey(json: unknown): Groth16VerificationKey {
  if (typeof json !== 'object' || json === null) throw new Error('verification key: not an object');
  const vk = json as Record<string, unknown>;
  if (vk.protocol !== 'groth16' || vk.curve !== 'bn128') throw new Error('verification key: not groth16 on bn128');
  const nPublic = vk.nPublic;
  if (typeof nPublic !== 'number' || !Array.isArray(vk.IC) || vk.IC.length !== nPublic + 1) {
    throw new Error('verification key: IC must have nPublic + 1 points');
  }
  const g1 = (v: unknown, name: string): G1 => {
    const p = decodeG1(v);
    if (typeof p === 'string') throw new Error(`verification key: ${name} ${INVALID_POINT} G1 point`);
    return p;
  };
  const g2 = (v: unknown, name: string): G2 => {
    const p = decodeG2(v);
    if (typeof p === 'string') throw new Error(`verification key: ${name} ${INVALID_POINT} G2 point`);
    return p;
  };
  return {
    alpha: g1(vk.vk_alpha_1, 'vk_alpha_1'),
    beta: g2(vk.vk_beta_2, 'vk_beta_2'),
    gamma: g2(vk.vk_gamma_2, 'vk_gamma_2'),
    delta: g2(vk.vk_delta_2, 'vk_delta_2'),
    ic: vk.IC.map((p, i) => g1(p, `IC[${i}]`)),
    nPublic,
  };
}

/** IC[0] + Σ s_i · IC[i+1]. May be the identity (e.g. all-zero signals against a crafted key). */
function publicInputPoint(vk: Groth16VerificationKey, signals: readonly bigint[]): G1 {
  let acc = vk.ic[0];
  signals.forEach((s, i) => {
    // multiplyUnsafe is not constant-time, which is fine: public signals are public.
    if (s !== 0n) acc = acc.add(vk.ic[i + 1].multiplyUnsafe(s));
  });
  return acc;
}

/**
 * The Groth16 check e(A, B) = e(alpha, beta) · e(vk_x, gamma) · e(C, delta), computed as one
 * product of pairings equal to 1. Signals must be field elements (< r): a signal s + r would
 * verify exactly like s, so accepting it would let a client alias a public value.
 */
export function verifyGroth16(vk: Groth16VerificationKey, proof: Groth16Proof, signals: readonly bigint[]): boolean {
  if (signals.length !== vk.nPublic) return false;
  if (signals.some((s) => s < 0n || s >= BN254_R)) return false;
  const vkX = publicInputPoint(vk, signals);
  const pairs = [
    { g1: proof.a.negate(), g2: proof.b },
    { g1: vk.alpha, g2: vk.beta },
    { g1: proof.c, g2: vk.delta },
  ];
  // e(O, gamma) = 1: the identity contributes nothing (and noble refuses to pair it).
  if (!vkX.is0()) pairs.push({ g1: vkX, g2: vk.gamma });
  return Fp12.eql(bn254.pairingBatch(pairs), Fp12.ONE);
}
