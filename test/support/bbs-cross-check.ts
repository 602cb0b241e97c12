import assert from 'node:assert/strict';
import { verifyProof } from '@digitalbazaar/bbs-signatures';
import { createBbsVerifier } from '../../src/proofs/bbs/index.ts';
import type { PresentationVerifier } from '../../src/proofs/types.ts';
import { inProcessRunner, type ProofRunner, type ProofTaskOf } from '../../src/proofs/worker/tasks.ts';

/** How often the cross-check compared: a test can assert it really ran. */
export interface BbsCrossCheckCounts {
  /** Proofs checked by both, and of those the ones that held. */
  compared: number;
  held: number;
}

/**
 * A `bbs` verifier for tests: every proof the service's verifier checks (on mcl-wasm,
 * bbs/mcl-verifier.ts) is checked by @digitalbazaar/bbs-signatures' verifyProof too, on the same
 * arguments, and the two must agree. It returns the service's result.
 */
export function crossCheckedBbsVerifier(): PresentationVerifier & { counts: BbsCrossCheckCounts } {
  const counts: BbsCrossCheckCounts = { compared: 0, held: 0 };
  const runner: ProofRunner = {
    run: async (task) => {
      const ours = await inProcessRunner.run(task);
      if (task.kind === 'bbs-verify') {
        const { args } = task as ProofTaskOf<'bbs-verify'>;
        const reference = await verifyProof(args).catch(() => false);
        assert.equal(ours, reference, 'mcl-wasm and @digitalbazaar/bbs-signatures disagree');
        counts.compared++;
        if (ours === true) counts.held++;
      }
      return ours as never;
    },
  };
  return { ...createBbsVerifier(runner), counts };
}
