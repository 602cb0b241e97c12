/**
 * Work on many rows done in bounded batches (issue 30): each batch is one short transaction, and
 * between two batches the event loop turns, so requests that arrived meanwhile run before the
 * next batch (on SQLite, whose one connection and write lock a long statement would hold for
 * seconds, and on PostgreSQL, where a long DELETE holds its row locks to the end). The sizes are
 * chosen so that a batch's transaction stays well under 50 ms on SQLite.
 */

/** Rows per batch of a purge of small rows (spent nonces, idempotent responses, attempt bodies). */
export const PURGE_BATCH_ROWS = 500;
/** Events per batch of event retention: each takes its deliveries and their attempts with it. */
export const EVENT_BATCH = 100;
/** Deliveries per batch when an endpoint is deleted, each with its attempts. */
export const ENDPOINT_DELIVERY_BATCH = 250;
/** Batches per run of a periodic job, so that a run (and a stop waiting for it) has an end; the next run carries on. */
export const MAX_BATCHES_PER_RUN = 200;

export interface BatchOptions {
  batchSize?: number;
  maxBatches?: number;
}

/** Lets every callback that is ready run (I/O included) before the next batch. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Calls `batch(size)` until one handles fewer rows than `size`, or `maxBatches` have run, turning
 * the event loop between calls. `batch` returns how many rows it looked at (which decides whether
 * another batch may find more) and how many it changed; the total changed is returned.
 */
export async function inBatches(
  batch: (size: number) => Promise<{ seen: number; changed: number }>,
  options: { batchSize: number; maxBatches: number },
): Promise<number> {
  let changed = 0;
  for (let n = 0; n < options.maxBatches; n++) {
    if (n > 0) await yieldToEventLoop();
    const result = await batch(options.batchSize);
    changed += result.changed;
    if (result.seen < options.batchSize) break;
  }
  return changed;
}

/** A purge: `deleteBatch(limit)` deletes at most `limit` rows and says how many, until none are left. */
export function purgeInBatches(
  deleteBatch: (limit: number) => Promise<number>,
  options: BatchOptions = {},
): Promise<number> {
  return inBatches(
    async (size) => {
      const deleted = await deleteBatch(size);
      return { seen: deleted, changed: deleted };
    },
    { batchSize: options.batchSize ?? PURGE_BATCH_ROWS, maxBatches: options.maxBatches ?? MAX_BATCHES_PER_RUN },
  );
}
