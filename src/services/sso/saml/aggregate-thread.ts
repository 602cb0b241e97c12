import { Worker } from 'node:worker_threads';
import type { AggregateOutcome } from './aggregate.ts';

/**
 * {@link verifyAggregate} in a worker thread of its own, so that a refresh of a large aggregate
 * (eduGAIN's: thousands of IdPs, tens of MB) does not stop the process answering requests. The
 * thread ends with the verification; its memory goes with it.
 */
export function verifyAggregateInThread(
  xml: string,
  input: { signingCertificate: string; now: Date; maxBytes: number },
): Promise<AggregateOutcome> {
  // Checked here too, so an oversized document is never copied into a thread.
  if (Buffer.byteLength(xml, 'utf8') > input.maxBytes)
    return Promise.resolve({ ok: false, problem: `the metadata is larger than ${input.maxBytes} bytes` });
  const compiled = import.meta.url.endsWith('.js');
  const entry = new URL(compiled ? './aggregate-worker.js' : './aggregate-worker-tsx.mjs', import.meta.url);
  return new Promise((resolve, reject) => {
    const worker = new Worker(entry, {
      workerData: {
        xml,
        signingCertificate: input.signingCertificate,
        now: input.now.toISOString(),
        maxBytes: input.maxBytes,
      },
    });
    let settled = false;
    worker.once('message', (outcome: AggregateOutcome) => {
      settled = true;
      resolve(outcome);
      void worker.terminate();
    });
    worker.once('error', (err) => {
      settled = true;
      reject(err);
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`the metadata verification thread exited with code ${code}`));
    });
  });
}
