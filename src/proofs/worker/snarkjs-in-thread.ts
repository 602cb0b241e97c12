import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * Loads snarkjs inside a proof-pool worker thread. Its dependency `web-worker` 1.2 decides at load
 * time, from `worker_threads.isMainThread`, whether it is the page that starts workers or one of
 * its own workers; in any other worker thread (ours) it takes the second path and throws while
 * reading a `workerData` it never sent. For the moment web-worker is loaded, the thread reads as
 * a main thread, so that snarkjs can start its curve threads from here as it does from the main
 * thread; the flag is restored before anything else runs. Later imports of snarkjs get this
 * instance from the module cache. snarkjs is a development dependency (the sandbox prover): where
 * it is not installed there is nothing to load and Groth16 building reports itself unavailable.
 */
export async function loadSnarkjsInWorkerThread(): Promise<void> {
  const threads = require('node:worker_threads') as { isMainThread: boolean };
  if (threads.isMainThread) return;
  let snarkjsPath: string;
  try {
    snarkjsPath = require.resolve('snarkjs');
  } catch {
    return;
  }
  threads.isMainThread = true;
  try {
    // web-worker as snarkjs' curve library (ffjavascript) resolves it.
    const ffjavascript = createRequire(snarkjsPath).resolve('ffjavascript');
    require(createRequire(ffjavascript).resolve('web-worker'));
  } finally {
    threads.isMainThread = false;
  }
  await import('snarkjs');
}
