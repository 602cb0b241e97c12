import mcl from 'mcl-wasm';
import type { G1, G2, GT, PrecomputedG2 } from 'mcl-wasm';
import { BN254_R } from './fields.ts';
import { decodeProofWith, type PointDecoders, type ProofDecodeError } from './proof-json.ts';
import type { Groth16VerificationKey } from './verifier.ts';

/**
 * The Groth16 verification equation on BN254 in WebAssembly: mcl-wasm (BSD-3-Clause), curve
 * BN_SNARK1, which is the alt_bn128 curve of snarkjs/circom. This is the verifier the service
 * runs; the @noble/curves one (verifier.ts) is the reference it is tested against.
 *
 * One check is one product of four Miller loops and ONE final exponentiation:
 *
 *   finalExp( ml(-A, B) · ml(C, δ) · ml(vk_x, γ) · ml(α, β) ) = 1
 *
 * ml(α, β) depends on the key only and is computed once per key, as are the line coefficients of
 * γ and δ (mcl's PrecomputedG2); only B, a point of the proof, is fresh each time.
 *
 * Points are validated as on the noble path: coordinates canonical and < p (proof-json.ts), on
 * the curve (mcl refuses others when parsing, and isValid), G2 points in the prime-order
 * subgroup (isValidOrder; G1 of BN254 has cofactor 1), no identity.
 */

let initialized: Promise<void> | undefined;

/**
 * Loads mcl's WebAssembly for BN_SNARK1, once per process; every other function here needs it
 * done. mcl-wasm is one instance per process: code that initializes it again (for another curve)
 * breaks the keys prepared here, which {@link verifyGroth16Mcl} then refuses to use.
 */
export function initMcl(): Promise<void> {
  initialized ??= mcl.init(mcl.BN_SNARK1).then(
    () => {
      // mcl's setStr would also check the G2 subgroup; the decoder below checks it explicitly
      // (isValidOrder), which holds whatever this flag says, so it need not be done twice.
      mcl.verifyOrderG2(false);
    },
    (error: unknown) => {
      initialized = undefined;
      throw error;
    },
  );
  return initialized;
}

function assertInitialized(): void {
  if (mcl.curveType !== mcl.BN_SNARK1) throw new Error('groth16: mcl-wasm is not initialized for BN_SNARK1');
}

/**
 * mcl's text form, base 10: `1 x y` for G1, `1 x.a x.b y.a y.b` for G2, where an Fp2 element
 * a + b·u is written `a b`: the same order as snarkjs' `[c0, c1]` (real part first).
 */
const MCL_POINTS: PointDecoders<G1, G2> = {
  g1: ([x, y]) => {
    const point = new mcl.G1();
    try {
      point.setStr(`1 ${x} ${y}`, 10);
    } catch {
      return 'invalid_point'; // not on the curve
    }
    return point.isValid() && !point.isZero() ? point : 'invalid_point';
  },
  g2: ([x0, x1, y0, y1]) => {
    const point = new mcl.G2();
    try {
      point.setStr(`1 ${x0} ${x1} ${y0} ${y1}`, 10);
    } catch {
      return 'invalid_point'; // not on the twist
    }
    // An unchecked G2 point from a small subgroup is the classic way to forge a pairing proof.
    return point.isValid() && point.isValidOrder() && !point.isZero() ? point : 'invalid_point';
  },
};

/** A proof (A, B, C) decoded into mcl points and validated. */
export interface MclProof {
  a: G1;
  b: G2;
  c: G1;
}

/** Decodes a proof `{pi_a, pi_b, pi_c}` in snarkjs JSON form, after {@link initMcl}. */
export function decodeProofMcl(json: unknown): MclProof | ProofDecodeError {
  assertInitialized();
  return decodeProofWith(json, MCL_POINTS);
}

/** A verification key in mcl form, with what depends on the key alone computed once. */
export interface MclVerificationKey {
  nPublic: number;
  /** IC[0] + Σ signal_i · IC[i+1] is the public-input point. */
  ic: G1[];
  /** ml(α, β): the constant factor of every product, before the final exponentiation. */
  alphaBeta: GT;
  gamma: PrecomputedG2;
  delta: PrecomputedG2;
  /** The mcl instance the precomputed coefficients live in (they are pointers into its memory). */
  memory: unknown;
}

// Precomputed coefficients live in mcl's heap: freed when their key is collected, if that heap is still in use.
const releaseCoefficients = new FinalizationRegistry<{ memory: unknown; coefficients: PrecomputedG2[] }>((held) => {
  if (mcl.getMemory() === held.memory) for (const c of held.coefficients) c.destroy();
});

/**
 * The mcl form of a key decoded (and validated) by {@link decodeVerificationKey}. Loads mcl's
 * WebAssembly if needed. Throws if a point does not convert: the key was checked by noble, so
 * that would be a fault of this code, never of the key's owner.
 */
export async function prepareVerificationKeyMcl(vk: Groth16VerificationKey): Promise<MclVerificationKey> {
  await initMcl();
  const g1 = (point: Groth16VerificationKey['alpha'], name: string): G1 => {
    const { x, y } = point.toAffine();
    const converted = MCL_POINTS.g1([x, y]);
    if (converted === 'invalid_point') throw new Error(`groth16: ${name} does not convert to an mcl G1 point`);
    return converted;
  };
  const g2 = (point: Groth16VerificationKey['beta'], name: string): G2 => {
    const { x, y } = point.toAffine();
    const converted = MCL_POINTS.g2([x.c0, x.c1, y.c0, y.c1]);
    if (converted === 'invalid_point') throw new Error(`groth16: ${name} does not convert to an mcl G2 point`);
    return converted;
  };
  const key: MclVerificationKey = {
    nPublic: vk.nPublic,
    ic: vk.ic.map((p, i) => g1(p, `IC[${i}]`)),
    alphaBeta: mcl.millerLoop(g1(vk.alpha, 'alpha'), g2(vk.beta, 'beta')),
    gamma: new mcl.PrecomputedG2(g2(vk.gamma, 'gamma')),
    delta: new mcl.PrecomputedG2(g2(vk.delta, 'delta')),
    memory: mcl.getMemory(),
  };
  releaseCoefficients.register(key, { memory: key.memory, coefficients: [key.gamma, key.delta] });
  return key;
}

/**
 * The Groth16 check e(A, B) = e(α, β) · e(vk_x, γ) · e(C, δ), as one product of pairings equal
 * to 1 with one final exponentiation. Signals must be field elements (< r): a signal s + r would
 * verify exactly like s, so accepting it would let a client alias a public value.
 */
export function verifyGroth16Mcl(vk: MclVerificationKey, proof: MclProof, signals: readonly bigint[]): boolean {
  if (mcl.getMemory() !== vk.memory || mcl.curveType !== mcl.BN_SNARK1) {
    throw new Error('groth16: mcl-wasm was initialized again after the verification key was prepared');
  }
  if (signals.length !== vk.nPublic) return false;
  if (signals.some((s) => s < 0n || s >= BN254_R)) return false;
  const scalars = signals.map((s) => {
    const scalar = new mcl.Fr();
    scalar.setStr(s.toString(), 10);
    return scalar;
  });
  // May be the identity; its Miller loop is then 1, as e(O, γ) = 1 requires.
  const vkX = scalars.length === 0 ? vk.ic[0] : mcl.add(vk.ic[0], mcl.mulVec(vk.ic.slice(1), scalars));
  const millerLoops = mcl.mul(
    mcl.mul(
      mcl.precomputedMillerLoop2mixed(mcl.neg(proof.a), proof.b, proof.c, vk.delta),
      mcl.precomputedMillerLoop(vkX, vk.gamma),
    ),
    vk.alphaBeta,
  );
  return mcl.finalExp(millerLoops).isOne();
}
