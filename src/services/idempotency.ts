import type { Clock } from '../domain/clock.ts';
import { IDEMPOTENCY_TTL_MS } from '../domain/idempotency.ts';
import type { Db } from '../store/db.ts';
import { purgeIdempotencyBefore } from '../store/idempotency.ts';
import { purgeInBatches, type BatchOptions } from './batches.ts';

/**
 * Deletes the stored idempotent responses older than the 24 h replay window and returns how many
 * went. A key past the window is already ignored by requests (they reclaim it), so this only keeps
 * the table from growing forever; any number of processes may run it at once. In batches
 * (services/batches.ts): a backlog of any size never holds the write lock for long.
 */
export async function purgeExpiredIdempotencyKeys(
  deps: { db: Db; clock: Clock },
  options: BatchOptions = {},
): Promise<number> {
  const cutoff = new Date(deps.clock.now().getTime() - IDEMPOTENCY_TTL_MS).toISOString();
  return purgeInBatches((limit) => purgeIdempotencyBefore(deps.db, cutoff, limit), { ...options, db: deps.db });
}

/**
 * The statements of the Idempotency-Key protocol the HTTP edge runs (http/idempotency.ts): claim a
 * key, read it, store the answer, give the key up when the request failed before answering.
 */
export { claimIdempotencyKey, completeIdempotency, findIdempotency, releaseIdempotency } from '../store/idempotency.ts';
