import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { afterRedactionBatch } from '../../src/store/erasure.ts';
import { openStore, type Store } from '../../src/store/db.ts';
import {
  BACKSTOP_WAL_PAGES,
  CHECKPOINT_EVERY_COMMITS,
  checkpointerOf,
  SqliteCheckpointer,
  THREAD_START_COMMITS,
  WAL_CHECKPOINT_PAGES,
} from '../../src/store/sqlite-checkpointer.ts';
import { createTestStore, type TestStore } from '../support/harness.ts';

/**
 * Issue 30: a SQLite store copies its write-ahead log into the database file from a thread of its
 * own (store/sqlite-checkpointer.ts) instead of inside whichever request's commit passes 1,000
 * pages. SQLite only: PostgreSQL checkpoints in its own server process, and has no such thread
 * (the last test says so).
 */
describe('the SQLite checkpoint thread', () => {
  let t: TestStore;
  before(async () => {
    t = await createTestStore('sqlite');
    await sql`create table notes (body text not null)`.execute(t.store.db);
  });
  after(() => t.drop());

  const path = () => t.url.replace(/^sqlite:/, '');
  const autocheckpoint = async (store: Store) =>
    Number(
      (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(store.db)).rows[0]
        .wal_autocheckpoint,
    );
  /** `count` commits, one after another, none of which gives the event loop a turn. */
  async function commits(store: Store, count: number): Promise<void> {
    for (let i = 0; i < count; i++) await sql`insert into notes (body) values (${'n'.repeat(300)})`.execute(store.db);
  }

  test('a store that commits a little starts no thread and keeps SQLite’s checkpoints', async () => {
    const store = await openStore(t.url);
    try {
      await commits(store, THREAD_START_COMMITS - 1);
      assert.equal(checkpointerOf(store.db)?.started, false);
      assert.equal(await autocheckpoint(store), WAL_CHECKPOINT_PAGES);
    } finally {
      await store.close();
    }
  });

  test('a run of commits that never yields is checkpointed by the thread, not by a commit', async () => {
    const store = await openStore(t.url);
    try {
      const checkpointer = checkpointerOf(store.db)!;
      // The first checkpoint is asked after THREAD_START_COMMITS. A few pages per commit: the log
      // stays below 1,000 pages before the thread starts and below 4,000 after, where commits
      // would checkpoint, so what is copied the thread copied.
      await commits(store, THREAD_START_COMMITS + CHECKPOINT_EVERY_COMMITS);
      assert.equal(checkpointer.started, true, 'the thread was asked during the run');
      assert.equal(await autocheckpoint(store), BACKSTOP_WAL_PAGES, 'commits only checkpoint as a backstop');
      await checkpointer.settled();
      const counts = checkpointer.counts;
      assert.ok(counts.checkpoints >= 1, JSON.stringify(counts));
      assert.ok(counts.checkpointed > 0, `the thread copied frames into the file: ${JSON.stringify(counts)}`);
      assert.ok(counts.log < BACKSTOP_WAL_PAGES, JSON.stringify(counts));
    } finally {
      await store.close();
    }
    assert.equal(checkpointerOf(store.db), undefined, 'closing the store ends its thread');
  });

  test('while a run of background batches lasts, every commit asks the thread for a checkpoint', async () => {
    const store = await openStore(t.url);
    try {
      const checkpointer = checkpointerOf(store.db)!;
      await checkpointer.checkpoint();
      const before = checkpointer.counts.checkpoints;
      // A batch of scattered deletes writes hundreds of pages in one commit: the thread copies
      // them after it, not after CHECKPOINT_EVERY_COMMITS such commits (or a commit at the backstop).
      await checkpointer.eagerly(async () => {
        for (let i = 0; i < 3; i++) {
          await commits(store, 1);
          await checkpointer.settled();
        }
      });
      assert.equal(checkpointer.counts.checkpoints, before + 3, JSON.stringify(checkpointer.counts));
      // After the run, fewer than CHECKPOINT_EVERY_COMMITS commits ask for none.
      for (let i = 0; i < 3; i++) {
        await commits(store, 1);
        await checkpointer.settled();
      }
      assert.equal(checkpointer.counts.checkpoints, before + 3, JSON.stringify(checkpointer.counts));
    } finally {
      await store.close();
    }
  });

  test('an erasure’s TRUNCATE waits for the thread’s checkpoint and empties the log', async () => {
    const store = await openStore(t.url);
    try {
      const checkpointer = checkpointerOf(store.db)!;
      await checkpointer.checkpoint();
      // About 1,500 pages the thread is not asked to copy while they are written…
      await checkpointer.hold(async () => {
        for (let i = 0; i < 150; i++)
          await sql`insert into notes (body) values (${'e'.repeat(40_000)})`.execute(store.db);
      });
      // …then it is, and copies them while the erasure's TRUNCATE comes, which SQLite would answer
      // busy at once if it met the thread's checkpoint.
      for (let i = 0; i < CHECKPOINT_EVERY_COMMITS; i++) checkpointer.committed();
      const before = checkpointer.counts.checkpoints;
      await afterRedactionBatch(store.db);
      assert.equal(checkpointer.counts.checkpoints, before + 1, 'the thread’s checkpoint ran first');
      assert.equal(statSync(`${path()}-wal`).size, 0, 'the write-ahead log is empty');
    } finally {
      await store.close();
    }
  });

  test('a thread that fails hands checkpoints back to commits and says so', async () => {
    const database = new SqliteDatabase(path());
    const errors: Error[] = [];
    const checkpointer = new SqliteCheckpointer(database, `${path()}.missing/none.sqlite`, (err) => errors.push(err));
    try {
      await assert.rejects(checkpointer.checkpoint(), /unable to open|directory does not exist|SQLITE_CANTOPEN/i);
      assert.equal(errors.length, 1, 'told once');
      assert.equal(checkpointer.active, false);
      assert.equal(database.pragma('wal_autocheckpoint', { simple: true }), WAL_CHECKPOINT_PAGES);
      await assert.rejects(checkpointer.checkpoint(), /unable to open|directory does not exist|SQLITE_CANTOPEN/i);
      // Commits go on without asking a thread that is gone.
      for (let i = 0; i < 2 * CHECKPOINT_EVERY_COMMITS; i++) checkpointer.committed();
      assert.equal(errors.length, 1);
      await checkpointer.close();
    } finally {
      database.close();
    }
  });

  test('a database in memory has no thread (nor has PostgreSQL: its server checkpoints)', async () => {
    const store = await openStore('sqlite::memory:');
    try {
      assert.equal(checkpointerOf(store.db), undefined);
    } finally {
      await store.close();
    }
  });
});
