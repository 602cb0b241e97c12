import { idBoundaryAt } from '../domain/ids.ts';
import { deleteEventsBefore } from '../store/webhook-deliveries/retention.ts';
import { EVENT_BATCH, inBatches, MAX_BATCHES_PER_RUN, type BatchOptions } from './batches.ts';
import type { ServiceDeps } from './deps.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Event retention (`EVENT_RETENTION_DAYS`, 30 by default, as Stripe keeps its event log): events
 * created longer ago are deleted, each with its webhook deliveries and their attempts, in batches
 * of one short transaction each (services/batches.ts). An event with a delivery still pending or
 * being sent is kept until it is done. Without it the three tables grew by the history of every
 * session forever. Each run looks at every old event once (a batch starts after the last one the
 * previous looked at), at most `maxBatches` batches; the next run carries on. Any number of
 * processes may run it. Returns how many events went.
 */
export async function applyEventRetention(
  deps: Pick<ServiceDeps, 'db' | 'clock' | 'config'>,
  options: BatchOptions = {},
): Promise<number> {
  const cutoff = new Date(deps.clock.now().getTime() - deps.config.eventRetentionDays * DAY_MS);
  const before = idBoundaryAt('event', cutoff);
  let after: string | null = null;
  return inBatches(
    async (size) => {
      const batch = await deleteEventsBefore(deps.db, { before, after }, size);
      after = batch.lastId;
      return { seen: batch.seen, changed: batch.deleted };
    },
    {
      batchSize: options.batchSize ?? EVENT_BATCH,
      maxBatches: options.maxBatches ?? MAX_BATCHES_PER_RUN,
      db: deps.db,
      signal: options.signal,
    },
  );
}
