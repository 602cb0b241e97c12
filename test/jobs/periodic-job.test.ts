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
