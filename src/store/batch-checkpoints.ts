import { sql, type Kysely } from 'kysely';
import { checkpointerOf, restingCheckpointPages } from './sqlite-checkpointer.ts';

/**
 * What each dialect does while a run of background batches lasts (`duringBatches` of
 * store/dialect.ts, called through services/batches.ts): SQLite checkpoints its write-ahead log in
 * small steps (from its thread once that runs), PostgreSQL needs nothing.
 */

/** `wal_autocheckpoint` while background batches run, before the checkpoint thread starts. */
export const BATCH_WAL_CHECKPOINT_PAGES = 100;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema
const batchRuns = new WeakMap<Kysely<any>, number>();

/**
 * SQLite copies the write-ahead log into the database file (a checkpoint) inside whichever commit
 * takes the log past `wal_autocheckpoint` pages, on the event loop's thread. Batches of scattered
 * deletes fill 1,000 pages every few batches, and that checkpoint (12–16 ms at 1M sessions) lands in
 * a request's commit as often as in a batch's: the API's p99 during a purge of 200,000 spent nonces
 * was 15–17 ms against 5–7 ms idle (bench/scale.ts). While batches run, the connection checkpoints
 * every 100 pages instead: p99 6.5–7.8 ms, the purge 550 → 700 ms. Outside them the default stays,
 * whose fewer, larger checkpoints cost creates less (always 250 pages cost SQLite's creates about
 * 10 % of their rate: bench/README.md). Overlapping runs share the setting; the last one to end
 * restores the default.
 *
 * Once the store's checkpoint thread runs (store/sqlite-checkpointer.ts), the thread is asked for a
 * checkpoint after every commit of the run instead, and commits keep its backstop: the batch's
 * pages are copied during the pause after it, beside the event loop. Lowered in-commit checkpoints
 * had the run's first commit past 100 pages copy all the log the requests had written since the
 * thread's last checkpoint: a session-expiry batch of 10 sessions held SQLite for 13–15 ms at 1M
 * sessions, the API's p99 meanwhile 15–18 ms, 9–12 ms with the thread; the purge burst ran in
 * 1.3–1.6 s instead of 3.1–3.5 (bench/README.md, nineteenth sitting).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema
export async function sqliteDuringBatches<T>(db: Kysely<any>, work: () => Promise<T>): Promise<T> {
  const checkpointer = checkpointerOf(db);
  if (checkpointer?.started) return checkpointer.eagerly(work);
  const runs = batchRuns.get(db) ?? 0;
  batchRuns.set(db, runs + 1);
  if (runs === 0) await sql`pragma wal_autocheckpoint = ${sql.lit(BATCH_WAL_CHECKPOINT_PAGES)}`.execute(db);
  try {
    return await work();
  } finally {
    const left = (batchRuns.get(db) ?? 1) - 1;
    batchRuns.set(db, left);
    if (left === 0) await sql`pragma wal_autocheckpoint = ${sql.lit(restingCheckpointPages(db))}`.execute(db);
  }
}

/** PostgreSQL's checkpoints run in its own checkpointer process, spread over time. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema
export const postgresDuringBatches = <T>(_db: Kysely<any>, work: () => Promise<T>): Promise<T> => work();
