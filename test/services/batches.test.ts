import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  BACKGROUND_SHARE,
  inBatches,
  nextBatchSize,
  pauseAfter,
  pauseFor,
  purgeInBatches,
  WAITED_SHARE,
  type Pacing,
} from '../../src/services/batches.ts';
import { markTurns } from '../support/event-loop.ts';

/**
 * services/batches.ts: background work in batches paced by time (issue 30). A batch's cost is not
 * its row count (scattered deletes rewrite a page per row; a checkpoint can land in any commit),
 * so a slow batch makes the next smaller, quick ones let it grow back to the nominal size, and
 * the service pauses after each so that a periodic job's batches take a tenth of the time (work a
 * caller waits for: half), and a stopped job's run ends early. The clock here is the test's: each batch says how
 * long it "took".
 */
function fakePacing(targetMs = 4): Pacing & { at: number; pauses: number[]; signals: Array<AbortSignal | undefined> } {
  const pacing = {
    at: 0,
    pauses: [] as number[],
    targetMs,
    now: () => pacing.at,
    pause: async (ms: number, signal?: AbortSignal) => {
      pacing.pauses.push(ms);
      pacing.signals.push(signal);
    },
    signals: [] as Array<AbortSignal | undefined>,
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

  test('a run starts at 10 rows and doubles while batches are quick; a slow one shrinks the next; each pause is nine times the batch', async () => {
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
      [0, 9, 9, 9, 50, 9, 9, 9, 9, 9, 9, 9],
      'a turn of the event loop first, then nine times as long as each took (at most 50 ms)',
    );
  });

  test('the pause after a batch: its share of the time, at most 50 ms', () => {
    assert.equal(BACKGROUND_SHARE, 0.1);
    assert.equal(pauseAfter(4, BACKGROUND_SHARE), 36, 'a periodic job: a tenth of the time');
    assert.equal(pauseAfter(4, WAITED_SHARE), 4, 'work a caller waits for: half');
    assert.equal(pauseAfter(0.5, 0.25), 1.5);
    assert.equal(pauseAfter(30, BACKGROUND_SHARE), 50, 'at most 50 ms');
  });

  test('work a caller waits for pauses as long as each batch took', async () => {
    const pacing = fakePacing();
    const took = [1, 3, 2];
    await purgeInBatches(
      async (limit) => {
        pacing.at += took.shift() ?? 1;
        return took.length > 0 ? limit : 0;
      },
      { batchSize: 10, db: null, pacing, share: WAITED_SHARE },
    );
    assert.deepEqual(pacing.pauses, [0, 1, 3]);
  });

  test('an aborted signal ends the run after the batch in flight, and is handed to every pause', async () => {
    const pacing = fakePacing();
    const abort = new AbortController();
    const asked: number[] = [];
    const changed = await purgeInBatches(
      async (limit) => {
        asked.push(limit);
        pacing.at += 1;
        if (asked.length === 3) abort.abort();
        return limit;
      },
      { batchSize: 500, db: null, pacing, signal: abort.signal },
    );
    assert.deepEqual(asked, [10, 20, 40], 'no batch after the abort');
    assert.equal(changed, 70, 'what the batches before it did is counted');
    assert.equal(pacing.signals.length, 4, 'the pause after the third batch, cut short, and no batch after it');
    assert.ok(
      pacing.signals.every((signal) => signal === abort.signal),
      'every pause is handed the signal',
    );
  });

  test('a run whose signal is aborted before it starts does nothing', async () => {
    const abort = new AbortController();
    abort.abort();
    let calls = 0;
    const changed = await purgeInBatches(
      async (limit) => {
        calls++;
        return limit;
      },
      { batchSize: 10, db: null, pacing: fakePacing(), signal: abort.signal },
    );
    assert.equal(calls, 0);
    assert.equal(changed, 0);
  });

  test('the real pause ends when its signal is aborted', async () => {
    // A pause of 5 s that must end within one turn of the event loop of its abort (were it not cut
    // short, the assertion fails at once, and the file's process ends when the timer does).
    const settledWithinATurn = async (pause: Promise<void>) => {
      let settled = false;
      void pause.then(() => (settled = true));
      await new Promise((resolve) => setImmediate(resolve));
      return settled;
    };
    const abort = new AbortController();
    const paused = pauseFor(5_000, abort.signal);
    assert.equal(await settledWithinATurn(paused), false, 'a pause with a live signal waits');
    abort.abort();
    assert.equal(await settledWithinATurn(paused), true, 'the abort ends it');
    assert.equal(await settledWithinATurn(pauseFor(5_000, abort.signal)), true, 'already aborted: no wait');
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
