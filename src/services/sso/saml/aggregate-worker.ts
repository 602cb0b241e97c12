import { parentPort, workerData } from 'node:worker_threads';
import { verifyAggregate } from './aggregate.ts';

/**
 * One aggregate verified in a worker thread (aggregate-thread.ts starts it): the parse, the
 * canonicalization and the digest of tens of megabytes take seconds of CPU that must not hold the
 * event loop answering requests.
 */
const input = workerData as { xml: string; signingCertificate: string; now: string; maxBytes: number };
parentPort!.postMessage(
  verifyAggregate(input.xml, {
    signingCertificate: input.signingCertificate,
    now: new Date(input.now),
    maxBytes: input.maxBytes,
  }),
);
