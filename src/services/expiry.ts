import { deleteHeldResults } from '../store/openid4vp-held-results.ts';
import { expireSessions } from '../store/session-transitions.ts';
import { dueForExpiry } from '../store/sessions.ts';
import { inBatches, type BatchOptions } from './batches.ts';
import type { ServiceDeps } from './deps.ts';

/** Sessions expired in one transaction; a run expires at most EXPIRY_BATCHES such batches. */
const EXPIRY_BATCH = 25;
const EXPIRY_BATCHES = 4;

/**
 * Persists the expiry of open sessions past `expiresAt` and emits `verification.expired` for each,
 * in batches of up to `batchSize` sessions (EXPIRY_BATCH), each one transaction: a commit is the
 * expensive part of a write (on PostgreSQL a WAL flush), and one per session made a run of 10
 * sessions take 50–100 ms (bench/scale.ts). Within a batch the sessions move in one statement and
 * their held results go in another, so that a run costs one statement (a round trip on PostgreSQL)
 * per session, its event, besides a fixed few. The batches are paced as other background work
 * (services/batches.ts), the event loop turning between two: on SQLite a transaction of 100
 * sessions, each with its event's deliveries, held every request for its whole length. At most
 * `maxBatches` (EXPIRY_BATCHES) batches a run; the next run carries on. A session another process
 * moved first is skipped (the conditional update does not match it), so any number of sweepers
 * may run.
 */
export async function expireDueSessions(deps: ServiceDeps, options: BatchOptions = {}): Promise<number> {
  const now = deps.clock.now();
  return inBatches(
    async (size) => {
      const due = await dueForExpiry(deps.db, now, size);
      if (due.length === 0) return { seen: 0, changed: 0 };
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
      return { seen: due.length, changed: expired };
    },
    {
      batchSize: options.batchSize ?? EXPIRY_BATCH,
      maxBatches: options.maxBatches ?? EXPIRY_BATCHES,
      db: deps.db,
      signal: options.signal,
    },
  );
}
