/**
 * Work on many rows done in bounded batches (issue 30): each batch is one short transaction, and
 * between two batches the service pauses, so requests that arrived meanwhile run before the next
 * batch (on SQLite, whose one connection and write lock a long statement would hold, and on
 * PostgreSQL, where a long DELETE holds its row locks to the end).
 *
 * A batch's cost is not its row count: deleting rows spread over an index (spent nonces purged in
 * expiry order sit at random places of their primary key) rewrites about one page per row, and a
 * 500-row batch held SQLite for 25–50 ms in a year-sized database where the same batch of
 * neighbouring rows took 1 ms. So batches are paced by time: a run's first batch is small (10
 * rows), a quick one lets the next grow, doubling up to the nominal size, a batch that took longer
 * than `BATCH_TARGET_MS` makes the next one smaller, and after each batch the service pauses as
 * long as the batch took (before the first, it lets the event loop turn), so that background work
 * holds the database at most about half of the time and a request waits at most about one batch.
 * While a run lasts, the store does what its dialect needs to keep requests quick beside it
 * (SQLite checkpoints its write-ahead log in small steps: store/batch-checkpoints.ts).
 */
import { duringBatches, type Db } from '../store/db.ts';

/** Rows per batch of a purge of small rows (spent nonces, idempotent responses, attempt bodies). */
export const PURGE_BATCH_ROWS = 500;
/** Events per batch of event retention: each takes its deliveries and their attempts with it. */
export const EVENT_BATCH = 100;
/** Deliveries per batch when an endpoint is deleted, each with its attempts. */
export const ENDPOINT_DELIVERY_BATCH = 250;
/**
 * Batches of the nominal size per run of a periodic job, so that a run (and a stop waiting for
 * it) has an end; the next run carries on. Smaller paced batches share the same row budget.
 */
export const MAX_BATCHES_PER_RUN = 200;
/** How long one batch should hold the database: about an idle request's p99 on SQLite. */
export const BATCH_TARGET_MS = 4;
/** The longest pause between two batches (a batch slowed by something else, a checkpoint, a lock). */
const MAX_PAUSE_MS = 50;
/** The smallest paced batch. */
const MIN_BATCH_ROWS = 10;

export interface BatchOptions {
  /** The nominal (and largest) batch; a run starts at 10 rows and grows towards it. */
  batchSize?: number;
  /** At most `maxBatches × batchSize` rows per run. */
  maxBatches?: number;
}

/** How batches are timed and spaced; tests inject their own. */
export interface Pacing {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Waits `ms` (0: lets every callback that is ready run first). */
  pause(ms: number): Promise<void>;
  targetMs: number;
}

/** Lets every callback that is ready run (I/O included) before the next batch. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

const REAL_PACING: Pacing = {
  now: () => performance.now(),
  pause: (ms) => (ms < 1 ? yieldToEventLoop() : new Promise((resolve) => setTimeout(resolve, ms))),
  targetMs: BATCH_TARGET_MS,
};

/** The next batch's size after one of `size` rows took `ms`: towards `targetMs`, within [MIN_BATCH_ROWS, nominal]. */
export function nextBatchSize(size: number, ms: number, nominal: number, targetMs: number): number {
  const floor = Math.min(MIN_BATCH_ROWS, nominal);
  if (ms > targetMs) return Math.max(floor, Math.floor((size * targetMs) / ms));
  if (ms < targetMs / 2) return Math.min(nominal, size * 2);
  return size;
}

/** A run of batches: its sizes, and the store the batches write (null: one they do not). */
export interface RunOptions {
  batchSize: number;
  maxBatches: number;
  db: Db | null;
  pacing?: Pacing;
}

/**
 * Calls `batch(size)` until one handles fewer rows than `size`, or the run's row budget
 * (`maxBatches × batchSize`) is spent, pausing between calls (see above). `batch` returns how
 * many rows it looked at (which decides whether another batch may find more) and how many it
 * changed; the total changed is returned.
 */
export function inBatches(
  batch: (size: number) => Promise<{ seen: number; changed: number }>,
  options: RunOptions,
): Promise<number> {
  const run = () => batchesOf(batch, options);
  return options.db ? duringBatches(options.db, run) : run();
}

async function batchesOf(
  batch: (size: number) => Promise<{ seen: number; changed: number }>,
  options: RunOptions,
): Promise<number> {
  const pacing = options.pacing ?? REAL_PACING;
  let budget = options.batchSize * options.maxBatches;
  // Small first: a first batch of the nominal size, before any batch was timed, held SQLite for
  // 16-19 ms in bench/scale.ts's purge burst at 1M sessions, every request waiting meanwhile.
  let size = Math.min(options.batchSize, MIN_BATCH_ROWS);
  let changed = 0;
  let lastMs = -1;
  while (budget > 0) {
    // Before the first batch too: a job's steps are runs of their own (a purge of each table), and
    // on SQLite, whose statements complete at once, two runs back to back held the event loop from
    // the first statement of one to the last of the other, every request waiting meanwhile.
    await pacing.pause(lastMs >= 0 ? Math.min(lastMs, MAX_PAUSE_MS) : 0);
    const asked = Math.min(size, budget);
    const started = pacing.now();
    const result = await batch(asked);
    lastMs = pacing.now() - started;
    changed += result.changed;
    budget -= result.seen;
    if (result.seen < asked) break;
    size = nextBatchSize(asked, lastMs, options.batchSize, pacing.targetMs);
  }
  return changed;
}

/** A purge: `deleteBatch(limit)` deletes at most `limit` rows and says how many, until none are left. */
export function purgeInBatches(
  deleteBatch: (limit: number) => Promise<number>,
  options: BatchOptions & Pick<RunOptions, 'db' | 'pacing'>,
): Promise<number> {
  return inBatches(
    async (size) => {
      const deleted = await deleteBatch(size);
      return { seen: deleted, changed: deleted };
    },
    {
      batchSize: options.batchSize ?? PURGE_BATCH_ROWS,
      maxBatches: options.maxBatches ?? MAX_BATCHES_PER_RUN,
      db: options.db,
      pacing: options.pacing,
    },
  );
}
