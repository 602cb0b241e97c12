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
 * than `BATCH_TARGET_MS` makes the next one smaller, and after each batch the service pauses (before
 * the first, it lets the event loop turn), so that a request waits at most about one batch, and
 * only a few requests meet a batch at all: a periodic job's batches hold the database about a tenth
 * of the time (`BACKGROUND_SHARE`, as PostgreSQL's autovacuum sleeps between its chunks of work),
 * work a caller waits for (an endpoint's deletion) about half (`WAITED_SHARE`). A periodic job's
 * run ends early, after the batch in flight, when the job is stopped (`BatchOptions.signal`).
 * While a run lasts, the store does what its dialect needs to keep requests quick beside it
 * (SQLite checkpoints its write-ahead log in small steps: store/batch-checkpoints.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
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
/**
 * The share of a periodic job's run its batches may take: after a batch of 4 ms, a pause of 36.
 * Half (a pause as long as the batch) had the API's p99 during bench/scale.ts's purge burst of
 * 200,000 spent nonces on SQLite at 5.3–7.6 ms against 1.5–1.6 idle, every other request meeting a
 * batch; a tenth: 1.9–2.3 ms, the burst's 100,000 rows in 2.1 s instead of 0.3 (bench/README.md,
 * twenty-first sitting). A purge still deletes tens of thousands of rows a second.
 */
export const BACKGROUND_SHARE = 0.1;
/** The share of work a caller waits for (deleting an endpoint with its deliveries). */
export const WAITED_SHARE = 0.5;
/** The longest pause between two batches (a batch slowed by something else, a checkpoint, a lock). */
const MAX_PAUSE_MS = 50;
/** The smallest paced batch. */
const MIN_BATCH_ROWS = 10;

export interface BatchOptions {
  /** The nominal (and largest) batch; a run starts at 10 rows and grows towards it. */
  batchSize?: number;
  /** At most `maxBatches × batchSize` rows per run. */
  maxBatches?: number;
  /** Aborted: the run ends after the batch in flight (a periodic job being stopped). */
  signal?: AbortSignal;
}

/** How batches are timed and spaced; tests inject their own. */
export interface Pacing {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Waits `ms` (0: lets every callback that is ready run first), less if `signal` is aborted. */
  pause(ms: number, signal?: AbortSignal): Promise<void>;
  targetMs: number;
}

/** Waits `ms`, or until `signal` is aborted, whichever comes first; never rejects. */
export function pauseFor(ms: number, signal?: AbortSignal): Promise<void> {
  return sleep(ms, undefined, { signal }).catch(() => undefined);
}

/** Lets every callback that is ready run (I/O included) before the next batch. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The pacing of every run that is not handed one. Exported so that bench/scale.ts's hook can time
 * its pauses: a job's figure there is its work, not the idle time it leaves to requests.
 */
export const REAL_PACING: Pacing = {
  now: () => performance.now(),
  pause: (ms, signal) => (ms < 1 ? yieldToEventLoop() : pauseFor(ms, signal)),
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
  /** The share of the run's time its batches may take (default `BACKGROUND_SHARE`). */
  share?: number;
  signal?: AbortSignal;
  pacing?: Pacing;
}

/** The pause after a batch of `ms`, so that batches take `share` of the time, at most MAX_PAUSE_MS. */
export function pauseAfter(ms: number, share: number): number {
  return Math.min(ms * (1 / share - 1), MAX_PAUSE_MS);
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
  // Before the first batch too, the event loop turns: a job's steps are runs of their own (a purge
  // of each table), and on SQLite, whose statements complete at once, two runs back to back held
  // the event loop from the first statement of one to the last of the other, every request waiting
  // meanwhile.
  const steps = pacedSteps(options);
  let budget = options.batchSize * options.maxBatches;
  // Small first: a first batch of the nominal size, before any batch was timed, held SQLite for
  // 16-19 ms in bench/scale.ts's purge burst at 1M sessions, every request waiting meanwhile.
  let size = Math.min(options.batchSize, MIN_BATCH_ROWS);
  let changed = 0;
  while (budget > 0) {
    const asked = Math.min(size, budget);
    const result = await steps.step(() => batch(asked));
    if (result === undefined) break;
    changed += result.changed;
    budget -= result.seen;
    if (result.seen < asked) break;
    size = nextBatchSize(asked, steps.lastMs, options.batchSize, (options.pacing ?? REAL_PACING).targetMs);
  }
  return changed;
}

/** Steps run one after another, each paced as a batch is (see {@link pacedSteps}). */
export interface PacedSteps {
  /**
   * Pauses after the previous step (before the first, lets the event loop turn), then runs `work`
   * and times it; undefined, without running it, once the run is stopped.
   */
  step<T>(work: () => Promise<T>): Promise<T | undefined>;
  /** How long the last step took, in the pacing's milliseconds (-1 before the first). */
  readonly lastMs: number;
}

/**
 * A run of steps paced as batches are: after a step of `ms`, a pause of {@link pauseAfter}, so
 * that the steps take `share` of the run's time (default `BACKGROUND_SHARE`). A batch is a step;
 * so is one session's redaction, a transaction of its own (services/redaction.ts).
 */
export function pacedSteps(options: Pick<RunOptions, 'pacing' | 'share' | 'signal'>): PacedSteps {
  const pacing = options.pacing ?? REAL_PACING;
  const share = options.share ?? BACKGROUND_SHARE;
  let lastMs = -1;
  return {
    get lastMs() {
      return lastMs;
    },
    async step<T>(work: () => Promise<T>): Promise<T | undefined> {
      await pacing.pause(lastMs >= 0 ? pauseAfter(lastMs, share) : 0, options.signal);
      if (options.signal?.aborted) return undefined;
      const started = pacing.now();
      try {
        return await work();
      } finally {
        lastMs = pacing.now() - started;
      }
    },
  };
}

/** A purge: `deleteBatch(limit)` deletes at most `limit` rows and says how many, until none are left. */
export function purgeInBatches(
  deleteBatch: (limit: number) => Promise<number>,
  options: BatchOptions & Pick<RunOptions, 'db' | 'pacing' | 'share'>,
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
      share: options.share,
      signal: options.signal,
      pacing: options.pacing,
    },
  );
}
