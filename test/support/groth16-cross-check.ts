import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  GROTH16_ARTIFACTS,
  createGroth16Verifier,
  decodeProof,
  domainHash,
  mclPairing,
  noblePairing,
  nonceField,
  parseFieldElement,
  parsePresentation,
  publicSignals,
  withSnarkjsCurve,
  type Groth16VerifierOptions,
} from '../../src/proofs/groth16/index.ts';
import type { PresentationContext, PresentationVerifier, TrustRegistry } from '../../src/proofs/types.ts';

/** How often the cross-check compared: a test can assert it really ran. */
export interface CrossCheckCounts {
  /** Presentations verified by both pairing back ends. */
  compared: number;
  /** Of those, presentations whose pairing equation snarkjs evaluated too. */
  snarkjs: number;
}

/** The message of a rejection decided by the pairing equation (presentation-verifier.ts). */
const EQUATION_FAILED = 'the proof does not verify for this issuer, session and time';

/**
 * A `groth16` verifier for tests: every presentation goes through the service's verifier twice,
 * on mcl-wasm (what the service runs) and on @noble/curves (the reference), which must return
 * exactly the same result. Whenever the pairing equation decided (accepted, or refused a proof
 * of valid points), snarkjs `groth16.verify` must decide the same on the same public signals.
 * It returns the mcl result.
 */
export function crossCheckedGroth16Verifier(
  options: Omit<Groth16VerifierOptions, 'pairing'> = {},
): PresentationVerifier & { counts: CrossCheckCounts } {
  const mcl = createGroth16Verifier({ ...options, pairing: mclPairing });
  const noble = createGroth16Verifier({ ...options, pairing: noblePairing });
  const keyPaths = {
    sandbox: options.sandboxVerificationKeyPath ?? GROTH16_ARTIFACTS.verificationKey,
    live: options.liveVerificationKeyPath,
  };
  const counts: CrossCheckCounts = { compared: 0, snarkjs: 0 };
  return {
    format: 'groth16',
    counts,
    async verify(presentation, context, registry) {
      const ours = await mcl.verify(presentation, context, registry);
      const reference = await noble.verify(presentation, context, registry);
      assert.deepEqual(ours, reference, 'mcl-wasm and @noble/curves disagree');
      counts.compared++;
      const decided = ours.ok || (ours.reason === 'invalid_proof' && ours.message === EQUATION_FAILED);
      const keyPath = keyPaths[context.environment];
      if (decided && keyPath) {
        const signals = await signalsOf(presentation, context, registry);
        assert.ok(signals, 'the pairing decided, so the presentation has an issuer and outputs');
        const snarkjs = await import('snarkjs');
        const vk: unknown = JSON.parse(readFileSync(keyPath, 'utf8'));
        const proof = (presentation as { proof: Parameters<typeof snarkjs.groth16.verify>[2] }).proof;
        const theirs = await withSnarkjsCurve(() => snarkjs.groth16.verify(vk, signals.map(String), proof));
        assert.equal(theirs, ours.ok, `snarkjs says ${theirs}, mcl-wasm and @noble/curves say ${ours.ok}`);
        counts.snarkjs++;
      }
      return ours;
    },
  };
}

/** The public signals the service assembles for `value`, as presentation-verifier.ts does. */
async function signalsOf(
  value: unknown,
  context: PresentationContext,
  registry: TrustRegistry,
): Promise<bigint[] | undefined> {
  const presentation = parsePresentation(value);
  if (!presentation || typeof decodeProof(presentation.proof) === 'string') return undefined;
  for (const entry of await registry.issuers(context.environment, 'groth16')) {
    const x = parseFieldElement(entry.keys.babyJubJub?.x);
    const y = parseFieldElement(entry.keys.babyJubJub?.y);
    if (entry.domain !== presentation.issuer || x === undefined || y === undefined) continue;
    return publicSignals(presentation.outputs, {
      issuerAx: x,
      issuerAy: y,
      domainHash: domainHash(entry.domain),
      nonceField: nonceField(context.nonce, context.audience),
      now: BigInt(presentation.now),
      // As the verifier does: the proof was made with the level disclosed iff it outputs one.
      discloseLevel: presentation.outputs.level !== 0n ? 1n : 0n,
    });
  }
  return undefined;
}
