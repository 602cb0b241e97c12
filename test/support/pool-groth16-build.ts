/**
 * Run as its own process (`node --import tsx test/support/pool-groth16-build.ts`) by
 * test/proofs/proof-pool.test.ts: a service with a one-thread proof pool builds a Groth16 presentation
 * for the sandbox wallet in that thread, verifies the answer, closes, and prints one JSON line of
 * what it saw. Why a process of its own: see the test.
 */
import { ProofPool } from '../../src/proofs/worker/pool.ts';
import { startHarness } from './harness.ts';
import { consent, createSession, submit } from './sessions.ts';

const STUDENT = { university: 'sandbox-state.example', active: true, academicLevel: 'postgraduate', expired: false };

const h = await startHarness('sqlite', { PROOF_WORKERS: '1' });
try {
  const pool = h.services.proofs;
  if (!(pool instanceof ProofPool)) throw new Error('PROOF_WORKERS=1 gives the service no pool');
  const sandbox = await h.bootstrap('sandbox');
  const s = await createSession(h, sandbox);
  const before = pool.completed;
  const built = await h.app.inject({
    method: 'POST',
    url: '/wallet/sandbox/presentation',
    payload: { sessionId: s.sessionId, nonce: s.challengeNonce, format: 'groth16', student: STUDENT },
  });
  const builtByPool = pool.completed - before;
  const consented = (await consent(h, s)).statusCode;
  const answered = await submit(
    h,
    s,
    'groth16',
    (built.json() as { data: { presentation: unknown } }).data.presentation,
  );
  console.log(
    JSON.stringify({
      built: built.statusCode,
      builtByPool,
      consented,
      answered: answered.statusCode,
      verified: (answered.json() as { data: { verified: boolean } }).data.verified,
    }),
  );
} finally {
  await h.close();
}
