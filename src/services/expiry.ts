import { deleteHeldResult } from '../store/openid4vp-held-results.ts';
import { dueForExpiry, transitionSession } from '../store/sessions.ts';
import type { ServiceDeps } from './deps.ts';

/**
 * Persists the expiry of open sessions past `expiresAt` and emits `verification.expired` for each,
 * up to `batchSize` sessions in one transaction: a commit is the expensive part of a write (on
 * PostgreSQL a WAL flush), and one per session made a run of 10 sessions take 50–100 ms
 * (bench/scale.ts). A session another process moved first is skipped (the conditional update
 * does not match), so any number of sweepers may run.
 */
export async function expireDueSessions(deps: ServiceDeps, batchSize = 100): Promise<number> {
  const now = deps.clock.now();
  const due = await dueForExpiry(deps.db, now, batchSize);
  if (due.length === 0) return 0;
  const expired = await deps.unitOfWork(async (work) => {
    let moved = 0;
    for (const session of due) {
      const expiry = { to: 'expired' as const, at: now.toISOString(), requireUnexpired: false };
      if (!(await transitionSession(work.db, session.id, expiry))) continue;
      await work.record(session, 'verification.expired', { sessionId: session.id });
      // A same-device answer whose redirect never came back: it completes nothing now.
      await deleteHeldResult(work.db, session.id);
      moved++;
    }
    return moved;
  });
  for (let i = 0; i < expired; i++) deps.metrics.sessionCompleted({ outcome: 'expired', format: 'none' });
  return expired;
}
