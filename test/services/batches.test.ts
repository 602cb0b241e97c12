import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inBatches, nextBatchSize, purgeInBatches, type Pacing } from '../../src/services/batches.ts';
import { markTurns } from '../support/event-loop.ts';

/**
 * services/batches.ts: background work in batches paced by time (issue 30). A batch's cost is not
 * its row count (scattered deletes rewrite a page per row; a checkpoint can land in any commit),
 * so a slow batch makes the next smaller, quick ones let it grow back to the nominal size, and
 * the service pauses as long as a batch took. The clock here is the test's: each batch says how
 * long it "took".
 */
function fakePacing(targetMs = 4): Pacing & { at: number; pauses: number[] } {
  const pacing = {
    at: 0,
    pauses: [] as number[],
    targetMs,
    now: () => pacing.at,
    pause: async (ms: number) => {
      pacing.pauses.push(ms);
    },
  };
  return pacing;
}

describe('batches paced by time', () => {
  test('the next size: towards the target, never above the nominal size nor below 10 rows', () => {
    assert.equal(nextBatchSize(500, 20, 500, 4), 100, 'five times too slow: a fifth');
    assert.equal(nextBatchSize(500, 400, 500, 4), 10, 'never below 10 rows');
    assert.equal(nextBatchSize(4, 400, 4, 4), 4, 'nor below a nominal size smaller than that');
    assert.equal(nextBatchSize(100, 1, 500, 4), 200, 'quick: doubles');
    assert.equal(nextBatchSize(400, 1, 500, 4), 500, 'up to the nominal size');
    assert.equal(nextBatchSize(100, 3, 500, 4), 100, 'near the target: stays');
  });

  test('a run starts at 10 rows and doubles while batches are quick; a slow one shrinks the next; each pause is as long as the batch took', async () => {
    const pacing = fakePacing();
    const asked: number[] = [];
    const took = [1, 1, 1, 40, 1, 1, 1, 1, 1, 1];
    let left = 1_750;
    const changed = await inBatches(
      async (size) => {
        asked.push(size);
        const n = Math.min(size, left);
        left -= n;
        pacing.at += took.shift() ?? 1;
        return { seen: n, changed: n };
      },
      { batchSize: 500, maxBatches: 10, db: null, pacing },
    );
    assert.equal(changed, 1_750);
    assert.deepEqual(
      asked,
      [10, 20, 40, 80, 10, 20, 40, 80, 160, 320, 500, 500],
      'the last finds fewer than it asked for: the run ends',
    );
    assert.deepEqual(
      pacing.pauses,
      [0, 1, 1, 1, 40, 1, 1, 1, 1, 1, 1, 1],
      'a turn of the event loop first, then as long as each took',
    );
  });

  test('a pause lasts at most 50 ms, whatever held the batch up', async () => {
    const pacing = fakePacing();
    let calls = 0;
    await inBatches(
      async (size) => {
        pacing.at += 1_000;
        return { seen: ++calls < 3 ? size : 0, changed: 0 };
      },
      { batchSize: 10, maxBatches: 10, db: null, pacing },
    );
    assert.deepEqual(pacing.pauses, [0, 50, 50]);
  });

  test('a run handles at most maxBatches × batchSize rows, in however many smaller batches', async () => {
    const pacing = fakePacing();
    const asked: number[] = [];
    const changed = await purgeInBatches(
      async (limit) => {
        asked.push(limit);
        pacing.at += 8;
        return limit;
      },
      { batchSize: 100, maxBatches: 3, db: null, pacing },
    );
    assert.equal(changed, 300);
    assert.deepEqual(asked, Array<number>(30).fill(10), 'each batch slow: the smallest, until the budget is spent');
  });

  test('a batch that finds fewer rows than it asked for ends the run', async () => {
    const pacing = fakePacing();
    const asked: number[] = [];
    const changed = await purgeInBatches(
      async (limit) => {
        asked.push(limit);
        return asked.length === 2 ? 7 : limit;
      },
      { batchSize: 20, db: null, pacing },
    );
    assert.equal(changed, 17);
    assert.deepEqual(asked, [10, 20]);
    assert.deepEqual(pacing.pauses, [0, 0]);
  });

  test('runs back to back: the event loop turns before each run, not only between its batches', async () => {
    // Statements that complete at once (SQLite's) resolve every await in the same turn: a request
    // gets in only where a run lets the event loop turn. A chain of setImmediate callbacks marks
    // each turn; two batches with no turn between them held every request meanwhile.
    const timeline: string[] = [];
    const stopMarking = markTurns(timeline);
    const purge = () =>
      purgeInBatches(
        async (limit) => {
          timeline.push('batch');
          return Math.min(limit, 3);
        },
        { batchSize: 10, db: null },
      );
    // A job's steps: a purge of one table, then of another, each done in one batch.
    await purge();
    await purge();
    stopMarking();
    assert.equal(timeline.filter((step) => step === 'batch').length, 2);
    assert.doesNotMatch(timeline.join(','), /batch,batch/, timeline.join(','));
    assert.equal(timeline[0], 'turn', 'a request waiting when the job starts goes first');
  });
});
