import { Worker } from 'node:worker_threads';
import type SqliteDatabase from 'better-sqlite3';
import type { Kysely } from 'kysely';

/** SQLite's own default `wal_autocheckpoint`, which the store keeps when no thread checkpoints (store/db.ts). */
export const WAL_CHECKPOINT_PAGES = 1000;

/** Commits between two checkpoints asked of the thread (a session's completion writes about 27 pages). */
export const CHECKPOINT_EVERY_COMMITS = 32;
/**
 * Commits before the first checkpoint asked, which starts the thread: starting one costs about
 * 45 ms of CPU, more than a store that writes a little (a CLI command, a migration) saves by it.
 * Until then commits checkpoint as SQLite does by default.
 */
export const THREAD_START_COMMITS = 256;

/**
 * `wal_autocheckpoint` while the thread runs. The thread copies the log into the file while the
 * writer goes on, so the log is rarely all copied at the moment a write begins, which is when
 * SQLite starts it over from its first frame; a checkpoint in a commit, by then with little left
 * to copy, does that every so many pages, and stands in for the thread if it falls behind.
 */
export const BACKSTOP_WAL_PAGES = 4 * WAL_CHECKPOINT_PAGES;

/** What the thread's last checkpoint reported (SQLite's `wal_checkpoint`), and its counts. */
export interface CheckpointCounts {
  /** Checkpoints the thread has run. */
  checkpoints: number;
  /** Of them, found the checkpoint lock taken by another connection, and copied nothing. */
  busy: number;
  /** Frames in the log, and copied into the file so far, at the end of the last one. */
  log: number;
  checkpointed: number;
}

/** Node has it since 16; TypeScript's library declares it from ES2024 on, beyond this project's target. */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(cells: Int32Array, index: number, value: number): { async: boolean; value: unknown };
  }
).waitAsync.bind(Atomics);

/** The cells of the memory the store shares with its thread (Int32Array indexes). */
const SLOTS = { state: 0, checkpoints: 1, busy: 2, log: 3, checkpointed: 4 } as const;
/** The thread's state: idle (waiting), busy (asked for a checkpoint, or running it), closing. */
const STATES = { idle: 0, busy: 1, closing: 2 } as const;

/**
 * Copies a SQLite database's write-ahead log into its file from a worker thread, on a connection of
 * its own. SQLite otherwise checkpoints inside whichever commit takes the log past
 * `wal_autocheckpoint` pages, on the event loop's thread: over 6,000 completions a commit took
 * 476 µs on average, p99 10 ms, and the 166 commits that checkpointed took 1.7 s of the 2.8 s
 * (bench/README.md, eleventh sitting). A PASSIVE checkpoint waits for no one, and the writer is not
 * held up by it (SQLite's WAL lets one checkpointer run beside readers and the writer).
 *
 * The store counts commits ({@link committed}) and asks for a checkpoint every
 * {@link CHECKPOINT_EVERY_COMMITS}, unless one is under way. The thread starts with the first,
 * after {@link THREAD_START_COMMITS}, so a CLI command that writes a little never starts one. If the thread fails, checkpoints go back
 * into commits (SQLite's default) and `onError` is told.
 */
export class SqliteCheckpointer {
  readonly #database: SqliteDatabase.Database;
  readonly #path: string;
  readonly #onError: (err: Error) => void;
  readonly #cells = new Int32Array(new SharedArrayBuffer(Object.keys(SLOTS).length * 4));
  #worker: Worker | undefined;
  #commits = 0;
  #holds = 0;
  /** Runs of background batches under way ({@link eagerly}). */
  #eager = 0;
  /** Callers waiting for the thread to be idle. */
  #waiters = 0;
  #stopped = false;
  #failure: Error | undefined;
  #closing: Promise<void> | undefined;

  constructor(database: SqliteDatabase.Database, path: string, onError: (err: Error) => void) {
    this.#database = database;
    this.#path = path;
    this.#onError = onError;
  }

  /** The thread has started (with the first checkpoint asked of it) and not failed or been closed. */
  get started(): boolean {
    return this.#worker !== undefined && !this.#stopped;
  }

  /** False once the thread failed or was closed. */
  get active(): boolean {
    return !this.#stopped;
  }

  get counts(): CheckpointCounts {
    const cell = (slot: number) => Atomics.load(this.#cells, slot);
    return {
      checkpoints: cell(SLOTS.checkpoints),
      busy: cell(SLOTS.busy),
      log: cell(SLOTS.log),
      checkpointed: cell(SLOTS.checkpointed),
    };
  }

  /** A write committed on the store's connection: every so many, the thread is asked to checkpoint. */
  committed(): void {
    const every = this.#worker ? (this.#eager > 0 ? 1 : CHECKPOINT_EVERY_COMMITS) : THREAD_START_COMMITS;
    if (++this.#commits < every || this.#holds > 0 || this.#stopped) return;
    if (this.#ask()) this.#commits = 0;
  }

  /** Asks the thread for a checkpoint and waits for it (after the one under way, if any). */
  async checkpoint(): Promise<CheckpointCounts> {
    await this.#idle();
    if (this.#stopped) throw this.#failure ?? new Error('the checkpoint thread is closed');
    this.#ask();
    await this.#idle();
    if (this.#failure) throw this.#failure;
    return this.counts;
  }

  /** Resolves once no checkpoint of the thread is under way. */
  settled(): Promise<void> {
    return this.#idle();
  }

  /**
   * Runs `work` with no checkpoint of the thread under way or asked for meanwhile: a checkpoint of
   * the store's own that must not find the lock taken (erasure's TRUNCATE).
   */
  async hold<T>(work: () => Promise<T>): Promise<T> {
    this.#holds++;
    try {
      await this.#idle();
      return await work();
    } finally {
      this.#holds--;
    }
  }

  /**
   * Runs `work` (a run of background batches) with a checkpoint asked after every commit while it
   * lasts, not every {@link CHECKPOINT_EVERY_COMMITS}: a batch of scattered deletes writes hundreds
   * of pages, and the thread copies them while the run pauses after the batch.
   */
  async eagerly<T>(work: () => Promise<T>): Promise<T> {
    this.#eager++;
    try {
      return await work();
    } finally {
      this.#eager--;
    }
  }

  /** Ends the thread after the checkpoint under way, if any. */
  close(): Promise<void> {
    return (this.#closing ??= this.#close());
  }

  async #close(): Promise<void> {
    if (this.#stopped) return;
    const worker = this.#worker;
    await this.#idle();
    this.#stopped = true;
    this.#worker = undefined;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.ref();
    Atomics.store(this.#cells, SLOTS.state, STATES.closing);
    Atomics.notify(this.#cells, SLOTS.state);
    await exited;
  }

  /** True if the thread was idle and is now asked for a checkpoint. */
  #ask(): boolean {
    const asked = Atomics.compareExchange(this.#cells, SLOTS.state, STATES.idle, STATES.busy) === STATES.idle;
    if (!asked) return false;
    if (this.#worker) Atomics.notify(this.#cells, SLOTS.state);
    else this.#start();
    return true;
  }

  /** Resolves when the thread is idle (or gone); the thread keeps the process alive meanwhile. */
  async #idle(): Promise<void> {
    if (Atomics.load(this.#cells, SLOTS.state) !== STATES.busy) return;
    const worker = this.#worker;
    this.#waiters++;
    worker?.ref();
    try {
      for (;;) {
        const state = Atomics.load(this.#cells, SLOTS.state);
        if (state !== STATES.busy) return;
        const wait = waitAsync(this.#cells, SLOTS.state, state);
        if (wait.async) await wait.value;
      }
    } finally {
      if (--this.#waiters === 0) worker?.unref();
    }
  }

  #start(): void {
    const worker = new Worker(new URL('./sqlite-checkpoint-thread.mjs', import.meta.url), {
      workerData: { path: this.#path, shared: this.#cells.buffer, slots: SLOTS, states: STATES },
      // Plain JavaScript: without the process's flags (`--import tsx` from sources, a loader that
      // cost the thread's start about 100 ms of CPU), and with little memory of its own.
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: 16 },
    });
    // A thread waiting for work does not keep the process alive; close() ends it with the store.
    worker.unref();
    // A checkpoint that failed (an I/O error) fails the thread: the store checkpoints as SQLite does.
    worker.on('message', (reply: { error: string }) => this.#fail(new Error(reply.error)));
    worker.on('error', (err) => this.#fail(err));
    worker.on('exit', (code) => this.#fail(new Error(`the checkpoint thread exited with code ${code}`)));
    this.#database.pragma(`wal_autocheckpoint = ${BACKSTOP_WAL_PAGES}`);
    this.#worker = worker;
  }

  #fail(err: Error): void {
    // Whoever waits for the thread to be idle waits no more (close() included: its exit lands here).
    Atomics.store(this.#cells, SLOTS.state, STATES.idle);
    Atomics.notify(this.#cells, SLOTS.state);
    if (this.#stopped) return;
    this.#stopped = true;
    this.#failure = err;
    void this.#worker?.terminate();
    this.#worker = undefined;
    this.#database.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
    this.#onError(err);
  }
}

/** Keyed by the store's adapter, which its transactions and other instances derived from it share. */
const checkpointers = new WeakMap<object, SqliteCheckpointer>();

/** Marks `db` (a SQLite store's root instance) and everything derived from it as checkpointed by `checkpointer`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema
export function checkpointInThread(db: Kysely<any>, checkpointer: SqliteCheckpointer): void {
  checkpointers.set(db.getExecutor().adapter, checkpointer);
}

/** The checkpoint thread of `db`'s store, while it runs: none for a database in memory, PostgreSQL, or after a failure. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema
export function checkpointerOf(db: Kysely<any>): SqliteCheckpointer | undefined {
  const checkpointer = checkpointers.get(db.getExecutor().adapter);
  return checkpointer?.active ? checkpointer : undefined;
}

/** `wal_autocheckpoint` of `db`'s store outside background batches (store/batch-checkpoints.ts). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema
export function restingCheckpointPages(db: Kysely<any>): number {
  return checkpointerOf(db)?.started ? BACKSTOP_WAL_PAGES : WAL_CHECKPOINT_PAGES;
}
