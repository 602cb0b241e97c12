// The SQLite checkpointer's thread (store/sqlite-checkpointer.ts starts it): a connection of its
// own to the database file that copies the write-ahead log into the file when asked, so that the
// copy and its fsyncs happen beside the event loop instead of inside a request's commit. Plain
// JavaScript, so that the same file runs from the sources (tsx) and from dist/ without a loader.
//
// It is asked through shared memory, not messages: the store asks from inside a run of commits
// that may never give the event loop a turn (better-sqlite3 is synchronous), so a reply by message
// would wait for the run to end. The slots are described in sqlite-checkpointer.ts.
import { parentPort, workerData } from 'node:worker_threads';
import SqliteDatabase from 'better-sqlite3';

const { path, shared, slots, states } = workerData;
const cells = new Int32Array(shared);

// better-sqlite3's busy timeout (5 s) stays: reading the schema to prepare the statement may meet
// a lock for a moment, and waiting here holds up no one. The checkpoint itself never waits: a
// PASSIVE one copies what it can and reports busy when another connection is checkpointing.
const database = new SqliteDatabase(path);
const checkpoint = database.prepare('pragma wal_checkpoint(PASSIVE)');

for (;;) {
  Atomics.wait(cells, slots.state, states.idle);
  if (Atomics.load(cells, slots.state) === states.closing) break;
  try {
    const { busy, log, checkpointed } = checkpoint.get();
    if (busy === 1) Atomics.add(cells, slots.busy, 1);
    // A checkpoint that could not run reports -1 for both: the last real figures stay.
    if (log >= 0 && checkpointed >= 0) {
      Atomics.store(cells, slots.log, log);
      Atomics.store(cells, slots.checkpointed, checkpointed);
    }
  } catch (err) {
    parentPort.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
  Atomics.add(cells, slots.checkpoints, 1);
  Atomics.store(cells, slots.state, states.idle);
  Atomics.notify(cells, slots.state);
}
database.close();
