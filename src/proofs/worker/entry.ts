/**
 * The module each worker thread of the proof pool loads (proof-pool.ts): piscina calls its
 * default export with every task. Under tsx, tsx-entry.mjs registers the loader and imports this;
 * compiled, this is dist/proofs/worker/entry.js. snarkjs is loaded first, before any task could
 * import it the ordinary way (snarkjs-in-thread.ts).
 */
import { loadSnarkjsInWorkerThread } from './snarkjs-in-thread.ts';

await loadSnarkjsInWorkerThread();
const { runProofTask } = await import('./tasks.ts');
export default runProofTask;
