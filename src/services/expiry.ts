import { deleteHeldResults } from '../store/openid4vp-held-results.ts';
import { expireSessions } from '../store/session-transitions.ts';
import { dueForExpiry } from '../store/sessions.ts';
import type { ServiceDeps } from './deps.ts';

/**
 * Persists the expiry of open sessions past `expiresAt` and emits `verification.expired` for each,
 * up to `batchSize` sessions in one transaction: a commit is the expensive part of a write (on
 * PostgreSQL a WAL flush), and one per session made a run of 10 sessions take 50–100 ms
 * (bench/scale.ts). Within it the sessions move in one statement and their held results go in
 * another, so that a run costs one statement (a round trip on PostgreSQL) per session, its event,
 * besides a fixed few. A session another process moved first is skipped (the conditional update
 * does not match it), so any number of sweepers may run.
 */
export async function expireDueSessions(deps: ServiceDeps, batchSize = 100): Promise<number> {
  const now = deps.clock.now();
  const due = await dueForExpiry(deps.db, now, batchSize);
  if (due.length === 0) return 0;
  const expired = await deps.unitOfWork(async (work) => {
    const moved = await expireSessions(
      work.db,
      due.map((session) => session.id),
      now.toISOString(),
    );
    for (const session of due) {
      if (moved.has(session.id)) await work.record(session, 'verification.expired', { sessionId: session.id });
    }
    // Same-device answers whose redirect never came back: they complete nothing now.
    await deleteHeldResults(work.db, [...moved]);
    return moved.size;
  });
  for (let i = 0; i < expired; i++) deps.metrics.sessionCompleted({ outcome: 'expired', format: 'none' });
  return expired;
}
