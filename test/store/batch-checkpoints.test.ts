import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildPeriodicJobs } from '../../src/jobs/schedule.ts';
import { inBatches, type Pacing } from '../../src/services/batches.ts';
import { BATCH_WAL_CHECKPOINT_PAGES } from '../../src/store/batch-checkpoints.ts';
import {
  BACKSTOP_WAL_PAGES,
  checkpointerOf,
  restingCheckpointPages,
  WAL_CHECKPOINT_PAGES,
} from '../../src/store/sqlite-checkpointer.ts';
import { spendNonce } from '../../src/store/spent-nonces.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { installStatementCounter } from '../support/statements.ts';
import { createEndpoint } from '../support/webhooks.ts';

/**
 * Issue 30: while background batches run, no request's commit copies a purge's writes into the
 * database file (store/batch-checkpoints.ts). Before the store's checkpoint thread starts, SQLite
 * checkpoints its write-ahead log every 100 pages instead of every 1,000 meanwhile; once it runs,
 * the thread is asked for a checkpoint after every commit of the run and commits keep the backstop
 * (store/sqlite-checkpointer.ts). Outside a run the store's resting setting stays. On PostgreSQL a
 * run changes nothing of the connection.
 */
const counter = installStatementCounter();

/** Batches one after another, no pauses: this file is about the store's setting, not the pacing. */
const noPauses: Pacing = { now: () => 0, pause: async () => {}, targetMs: 4 };

forEachDialect('background batches and checkpoints', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  /** SQLite's `wal_autocheckpoint` of the store's connection (null on PostgreSQL). */
  async function checkpointPages(): Promise<number | null> {
    if (dialect === 'postgres') return null;
    const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(h.store.db);
    return Number(rows[0].wal_autocheckpoint);
  }
  const during = dialect === 'sqlite' ? BATCH_WAL_CHECKPOINT_PAGES : null;
  /** The store's setting outside a run. */
  const outside = () => (dialect === 'sqlite' ? restingCheckpointPages(h.store.db) : null);

  /** A run of `batches` batches of one row, each noting the setting it ran under. */
  function run(batches: number, seen: Array<number | null>, between?: () => Promise<void>) {
    let left = batches;
    return inBatches(
      async () => {
        seen.push(await checkpointPages());
        left--;
        if (between && left > 0) await between();
        return { seen: left > 0 ? 1 : 0, changed: 1 };
      },
      { batchSize: 1, maxBatches: 10, db: h.store.db, pacing: noPauses },
    );
  }

  test('a run checkpoints in small steps; the default is back after it', async () => {
    assert.equal(await checkpointPages(), outside(), 'the store opens with its resting setting');
    const seen: Array<number | null> = [];
    assert.equal(await run(3, seen), 3);
    assert.deepEqual(seen, [during, during, during]);
    assert.equal(await checkpointPages(), outside());
  });

  test('overlapping runs: the setting stays small until the last one ends', async () => {
    const first: Array<number | null> = [];
    const second: Array<number | null> = [];
    let secondRun: Promise<number> | undefined;
    // The first run's first batch starts the second run, which ends before the first's next batch.
    await run(3, first, async () => {
      if (secondRun) return;
      secondRun = run(1, second);
      await secondRun;
    });
    assert.deepEqual(second, [during]);
    assert.deepEqual(first, [during, during, during], 'the second run ending did not restore it under the first');
    assert.equal(await checkpointPages(), outside());
  });

  test('a run that fails still restores the default, and its error is the caller’s', async () => {
    await assert.rejects(
      inBatches(
        async () => {
          throw new Error('batch failed');
        },
        { batchSize: 1, maxBatches: 10, db: h.store.db, pacing: noPauses },
      ),
      /batch failed/,
    );
    assert.equal(await checkpointPages(), outside());
  });

  test('every batched periodic job runs its batches so', async () => {
    // Before the store's thread starts (the test after these starts it).
    assert.equal(checkpointerOf(h.store.db)?.started ?? false, false);
    const jobs = buildPeriodicJobs({
      services: h.services,
      clock: h.clock,
      config: h.config,
      log: { error: ({ err }) => assert.fail(String(err)) },
    });
    const lowered = /^pragma wal_autocheckpoint = 100$/;
    // The purge job's two batched purges (idempotent responses, spent nonces), retention's
    // redactions and attempt bodies (one run), events.
    const runs = { 'expired-rows-purge': 2, 'result-retention': 1, 'event-retention': 1 };
    for (const [name, count] of Object.entries(runs)) {
      const statements = await counter.during(() => jobs.find((job) => job.name === name)!.runOnce());
      const lowers = statements.filter((s) => lowered.test(s)).length;
      assert.equal(lowers, dialect === 'sqlite' ? count : 0, `${name}: ${statements.join('; ')}`);
      assert.equal(await checkpointPages(), outside(), name);
    }
  });

  test('deleting an endpoint deletes its deliveries so', async () => {
    const { id } = await createEndpoint(h, tenant, 'https://hooks.example.com/a');
    let deleted = 0;
    const statements = await counter.during(async () => {
      deleted = (await h.app.inject({ method: 'DELETE', url: `/org/v1/webhooks/${id}`, headers: tenant.auth }))
        .statusCode;
    });
    assert.equal(deleted, 200);
    const lowers = statements.filter((s) => /^pragma wal_autocheckpoint = 100$/.test(s)).length;
    assert.equal(lowers, dialect === 'sqlite' ? 1 : 0, statements.join('; '));
    assert.equal(await checkpointPages(), outside());
  });

  test('the resting setting: SQLite’s default, the backstop once the thread checkpoints', async () => {
    if (dialect === 'postgres') return assert.equal(checkpointerOf(h.store.db), undefined);
    // The tests above did not commit enough to start the store's thread: SQLite's default.
    assert.equal(checkpointerOf(h.store.db)?.started, false);
    assert.equal(await checkpointPages(), WAL_CHECKPOINT_PAGES);
    // Started (as THREAD_START_COMMITS commits would), the backstop; the test below runs so.
    await checkpointerOf(h.store.db)!.checkpoint();
    assert.equal(restingCheckpointPages(h.store.db), BACKSTOP_WAL_PAGES);
    assert.equal(await checkpointPages(), BACKSTOP_WAL_PAGES);
  });

  test('with the thread running, a run keeps the backstop and the thread copies after each batch', async () => {
    if (dialect === 'postgres') return;
    const checkpointer = checkpointerOf(h.store.db)!;
    assert.equal(checkpointer.started, true);
    await checkpointer.settled();
    const before = checkpointer.counts.checkpoints;
    const seen: Array<number | null> = [];
    const ISO = new Date().toISOString();
    let left = 3;
    await inBatches(
      async () => {
        seen.push(await checkpointPages());
        // One commit per batch (fewer than CHECKPOINT_EVERY_COMMITS in all), then its checkpoint.
        await spendNonce(h.store.db, { orgId: tenant.orgId, nonceHash: `batch-${left}`, spentAt: ISO, expiresAt: ISO });
        await checkpointer.settled();
        left--;
        return { seen: left > 0 ? 1 : 0, changed: 1 };
      },
      { batchSize: 1, maxBatches: 10, db: h.store.db, pacing: noPauses },
    );
    assert.deepEqual(seen, [BACKSTOP_WAL_PAGES, BACKSTOP_WAL_PAGES, BACKSTOP_WAL_PAGES]);
    assert.equal(checkpointer.counts.checkpoints, before + 3, 'one checkpoint of the thread per batch’s commit');
    // Outside the run, commits ask for one every CHECKPOINT_EVERY_COMMITS again.
    await spendNonce(h.store.db, { orgId: tenant.orgId, nonceHash: 'after', spentAt: ISO, expiresAt: ISO });
    await checkpointer.settled();
    assert.equal(checkpointer.counts.checkpoints, before + 3);
    assert.equal(await checkpointPages(), BACKSTOP_WAL_PAGES);
  });
});
