import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PeriodicJob } from '../../src/jobs/periodic.ts';

test('runOnce runs one step; concurrent calls share the step in flight', async () => {
  let runs = 0;
  let release!: () => void;
  const job = new PeriodicJob(
    't',
    () =>
      new Promise<void>((resolve) => {
        runs++;
        release = resolve;
      }),
    60_000,
    () => {},
  );
  const a = job.runOnce();
  const b = job.runOnce();
  assert.equal(runs, 1);
  release();
  await Promise.all([a, b]);
  const next = job.runOnce();
  assert.equal(runs, 2, 'a new step starts once the previous one is done');
  release();
  await next;
});

test('stop waits for the step in flight and prevents further steps', async () => {
  let finished = false;
  let release!: () => void;
  const job = new PeriodicJob(
    't',
    () =>
      new Promise<void>((resolve) => {
        release = () => {
          finished = true;
          resolve();
        };
      }),
    60_000,
    () => {},
  );
  job.start();
  const step = job.runOnce();
  const stopped = job.stop();
  let stopResolved = false;
  void stopped.then(() => {
    stopResolved = true;
  });
  await Promise.resolve();
  assert.equal(stopResolved, false, 'stop must wait for the running step');
  release();
  await step;
  await stopped;
  assert.equal(finished, true);
});

test(
  'stop aborts the signal of the step in flight, so that a run of paced batches ends early',
  { timeout: 10_000 },
  async () => {
    const signals: AbortSignal[] = [];
    const job = new PeriodicJob(
      't',
      (signal) => {
        signals.push(signal);
        // A step that only ends when it is told to (as inBatches does between two batches).
        return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      },
      60_000,
      () => {},
    );
    job.start();
    const step = job.runOnce();
    assert.equal(signals[0]?.aborted, false, 'a step starts with a live signal');
    await job.stop();
    await step;
    assert.equal(signals[0]?.aborted, true);
    assert.equal(signals.length, 1);
  },
);

test('each step has a signal of its own: a stop with no step in flight aborts nothing', async () => {
  const signals: AbortSignal[] = [];
  const job = new PeriodicJob(
    't',
    async (signal) => {
      signals.push(signal);
    },
    60_000,
    () => {},
  );
  await job.runOnce();
  await job.stop();
  await job.runOnce();
  assert.equal(signals.length, 2);
  assert.notEqual(signals[0], signals[1]);
  assert.deepEqual(
    signals.map((s) => s.aborted),
    [false, false],
  );
});

test('a failing step rejects runOnce and leaves the job usable', async () => {
  let fail = true;
  const job = new PeriodicJob(
    't',
    async () => {
      if (fail) throw new Error('boom');
      return 'ok';
    },
    60_000,
    () => {},
  );
  await assert.rejects(job.runOnce(), /boom/);
  fail = false;
  assert.equal(await job.runOnce(), 'ok');
});
