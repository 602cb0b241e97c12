import type { HolderBuilder, HolderBuilders } from '../builders.ts';
import type { CredentialFormat } from '../types.ts';
import type { ProofRunner } from './tasks.ts';

/**
 * The formats whose presentations are built by the pool: BBS (about 100 ms of CPU per proof) and
 * Groth16 (the witness and snarkjs' prover; snarkjs is loaded in the thread by
 * snarkjs-in-thread.ts).
 */
const POOLED_FORMATS: readonly CredentialFormat[] = ['bbs', 'groth16'];

/**
 * The same builders, with BBS and Groth16 presentations built by `runner` (the proof pool's worker threads,
 * which load the builder themselves). An SD-JWT VC presentation costs about a millisecond and is
 * built here: a round trip to a thread would cost as much.
 */
export function offloadedBuilders(holder: HolderBuilders, runner: ProofRunner): HolderBuilders {
  const wrap = (format: CredentialFormat): HolderBuilder => {
    const entry = holder[format];
    if (!entry.available || !POOLED_FORMATS.includes(format)) return entry;
    const { builder } = entry;
    return {
      available: true,
      builder: {
        format: builder.format,
        present: (student, request) => runner.run({ kind: 'build', format, student, request }),
        tamper: (presentation) => builder.tamper(presentation),
      },
    };
  };
  return { 'sd-jwt-vc': wrap('sd-jwt-vc'), 'jwt-vc': wrap('jwt-vc'), bbs: wrap('bbs'), groth16: wrap('groth16') };
}
