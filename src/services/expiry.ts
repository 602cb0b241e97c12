import { deleteHeldResult } from '../store/openid4vp-held-results.ts';
import { dueForExpiry, transitionSession } from '../store/sessions.ts';
import type { ServiceDeps } from './deps.ts';

/**
 * Persists the expiry of open sessions past `expiresAt` and emits `verification.expired`, one
 * transaction per session. A session another process moved first is skipped (the conditional
 * update does not match), so any number of sweepers may run.
 */
export async function expireDueSessions(deps: ServiceDeps, batchSize = 100): Promise<number> {
  const now = deps.clock.now();
  const due = await dueForExpiry(deps.db, now, batchSize);
  let expired = 0;
  for (const session of due) {
    const moved = await deps.unitOfWork(async (work) => {
      if (
        !(await transitionSession(work.db, session.id, {
          to: 'expired',
          at: now.toISOString(),
          requireUnexpired: false,
        }))
      )
        return false;
      await work.record(session, 'verification.expired', { sessionId: session.id });
      // A same-device answer whose redirect never came back: it completes nothing now.
      await deleteHeldResult(work.db, session.id);
      return true;
    });
    if (moved) {
      expired++;
      deps.metrics.sessionCompleted({ outcome: 'expired', format: 'none' });
    }
  }
  return expired;
}
