import { verifyProof } from '@digitalbazaar/bbs-signatures';
import { threadId } from 'node:worker_threads';
import { verifyBbsProofMcl, type BbsVerifyArgs } from '../bbs/mcl-verifier.ts';
import { loadHolderBuilder } from '../builders.ts';
import { mclPairing, type Groth16ProofCheck } from '../groth16/pairing.ts';
import type { ProofDecodeError } from '../groth16/proof-json.ts';
import { loadVerificationKey } from '../groth16/verification-key.ts';
import type { CredentialFormat, PresentationRequest, SandboxStudent } from '../types.ts';

/**
 * The CPU-heavy steps of the proof formats, as messages: plain data in, plain data out, so that
 * they can run in a worker thread (proof-pool.ts) as well as on the calling thread. Everything a
 * task needs travels in it (bytes, a key's path); nothing reaches back for the database or the
 * trust registry, which stay on the main thread.
 */

export type { BbsVerifyArgs };

export type ProofTask =
  /** A BBS proof against an issuer key: true if it holds. */
  | { kind: 'bbs-verify'; args: BbsVerifyArgs }
  /** A Groth16 proof (snarkjs JSON) against the verification key at `keyPath` and the public signals. */
  | { kind: 'groth16-check'; keyPath: string; proof: unknown; signals: bigint[] }
  /** A sandbox student's presentation, built by the format's holder-side builder. */
  | { kind: 'build'; format: CredentialFormat; student: SandboxStudent; request: PresentationRequest }
  /** Which thread runs tasks (tests and benchmarks observe where the work goes). */
  | { kind: 'thread-id' };

export interface ProofTaskResult {
  'bbs-verify': boolean;
  'groth16-check': boolean | ProofDecodeError;
  build: unknown;
  'thread-id': number;
}

export type ProofTaskOf<K extends ProofTask['kind']> = Extract<ProofTask, { kind: K }>;

/** Runs tasks: in a pool of worker threads, or on the calling thread. */
export interface ProofRunner {
  run<K extends ProofTask['kind']>(task: ProofTaskOf<K>): Promise<ProofTaskResult[K]>;
}

/**
 * The BBS check: for BLS12-381-SHA-256, the ciphersuite of every `bbs` credential, the
 * WebAssembly verifier (bbs/mcl-verifier.ts); for another ciphersuite, the library. The library
 * throws on proof bytes that do not decode (a point off the curve, a scalar out of range): for us
 * that is a proof that does not hold.
 */
async function bbsProofHolds(args: BbsVerifyArgs): Promise<boolean> {
  if (args.ciphersuite === 'BLS12-381-SHA-256') return verifyBbsProofMcl(args);
  try {
    return await verifyProof(args);
  } catch {
    return false;
  }
}

// One prepared check per key file and thread: preparing a key (its constant pairings) costs more
// than a verification. Keys are read when first used here; the composition root already read and
// checked them at start, so a bad key never gets this far.
const groth16Checks = new Map<string, Promise<Groth16ProofCheck>>();

function groth16Check(keyPath: string): Promise<Groth16ProofCheck> {
  let check = groth16Checks.get(keyPath);
  if (!check) {
    check = Promise.resolve()
      .then(() => mclPairing.prepare(loadVerificationKey(keyPath)))
      .catch((error: unknown) => {
        groth16Checks.delete(keyPath);
        throw error;
      });
    groth16Checks.set(keyPath, check);
  }
  return check;
}

async function build(task: ProofTaskOf<'build'>): Promise<unknown> {
  const holder = await loadHolderBuilder(task.format);
  if (!holder.available) throw new Error(holder.reason);
  return holder.builder.present(task.student, task.request);
}

/** Runs one task on this thread. */
export async function runProofTask(task: ProofTask): Promise<ProofTaskResult[ProofTask['kind']]> {
  switch (task.kind) {
    case 'bbs-verify':
      return bbsProofHolds(task.args);
    case 'groth16-check':
      return (await groth16Check(task.keyPath))(task.proof, task.signals);
    case 'build':
      return build(task);
    case 'thread-id':
      return threadId;
  }
}

/** Runs every task on the calling thread: the CLI, unit tests of a verifier, and PROOF_WORKERS=0. */
export const inProcessRunner: ProofRunner = {
  run: (task) => runProofTask(task) as never,
};
