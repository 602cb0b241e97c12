import { Worker } from 'node:worker_threads';
import { verifyAggregate, type AggregateOutcome } from './aggregate.ts';

/**
 * Aggregates of at most this many bytes are verified on the calling thread: about 20 IdPs, which
 * took 37 ms there against 456 ms for the same work in a thread of its own (its start under tsx:
 * about 400 ms of CPU; bench/README.md, thirteenth sitting).
 */
export const INLINE_MAX_BYTES = 32 * 1024;

/** How many verification threads this process has started: for tests and benchmarks. */
export const aggregateThreads = { started: 0 };

/**
 * {@link verifyAggregate} in a worker thread of its own, so that a refresh of a large aggregate
 * (eduGAIN's: thousands of IdPs, tens of MB) does not stop the process answering requests. The
 * thread ends with the verification; its memory goes with it. A small aggregate (at most
 * `inlineMaxBytes`, {@link INLINE_MAX_BYTES} by default) is verified at once on the calling thread:
 * starting a thread cost it ten times the verification.
 */
export function verifyAggregateInThread(
  xml: string,
  input: { signingCertificate: string; now: Date; maxBytes: number },
  inlineMaxBytes = INLINE_MAX_BYTES,
): Promise<AggregateOutcome> {
  // Checked here too, so an oversized document is never copied into a thread.
  const bytes = Buffer.byteLength(xml, 'utf8');
  if (bytes > input.maxBytes)
    return Promise.resolve({ ok: false, problem: `the metadata is larger than ${input.maxBytes} bytes` });
  if (bytes <= inlineMaxBytes) return Promise.resolve(verifyAggregate(xml, input));
  aggregateThreads.started++;
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
