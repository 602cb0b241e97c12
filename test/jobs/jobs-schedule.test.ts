import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PeriodicJob } from '../../src/jobs/periodic.ts';
import { buildPeriodicJobs } from '../../src/jobs/schedule.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createSession } from '../support/sessions.ts';

/**
 * src/jobs/schedule.ts: the periodic jobs the composition root starts, each on the interval its
 * JOB_*_SECONDS setting gives, each running its use case when the (test) clock reaches it.
 */
const HOUR_MS = 60 * 60 * 1000;

forEachDialect('periodic jobs', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite), {
    JOB_SESSION_EXPIRY_SECONDS: '7',
    JOB_EXPIRED_ROWS_PURGE_SECONDS: '20',
    JOB_RESULT_RETENTION_SECONDS: '30',
    JOB_EVENT_RETENTION_SECONDS: '40',
    JOB_FEDERATION_REFRESH_SECONDS: '50',
    RESULT_RETENTION_DAYS: '1',
  });

  const failures: unknown[] = [];
  const build = () =>
    buildPeriodicJobs({
      services: h.services,
      clock: h.clock,
      config: h.config,
      log: { error: (fields) => failures.push(fields) },
    });

  /** A session, and a response stored under `idempotencyKey` (an app created): the jobs' work. */
  async function sessionAndStoredResponse(idempotencyKey: string) {
    const session = await createSession(h, tenant);
    const created = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: { ...tenant.auth, 'idempotency-key': idempotencyKey },
      payload: { name: 'Jobs' },
    });
    assert.equal(created.statusCode, 201);
    const sessionRow = () =>
      h.store.db
        .selectFrom('sessions')
        .select(['status', 'redacted_at'])
        .where('id', '=', session.sessionId)
        .executeTakeFirstOrThrow();
    return { session, sessionRow };
  }

  test('the job list has the configured intervals', () => {
    assert.deepEqual(
      build().map((job) => [job.name, job.intervalMs]),
      [
        ['session-expiry', 7_000],
        ['expired-rows-purge', 20_000],
        ['result-retention', 30_000],
        ['event-retention', 40_000],
        ['federation-refresh', 50_000],
      ],
    );
  });

  test('each job runs its use case when the clock reaches its interval, not before', async () => {
    const jobs = build();
    const [expiry, purge, retention] = jobs;
    const allIdle = () => Promise.all(jobs.map((job) => job.whenIdle()));
    const { session, sessionRow } = await sessionAndStoredResponse('jobs-schedule');
    const keyStored = async () =>
      (await h.store.db
        .selectFrom('idempotency_keys')
        .select('idempotency_key')
        .where('idempotency_key', '=', 'jobs-schedule')
        .executeTakeFirst()) !== undefined;

    try {
      // The session is past its deadline; nothing has persisted that yet.
      h.clock.set(new Date(Date.parse(session.expiresAt) + 1));
      for (const job of jobs) job.start();
      h.clock.advance(6_999);
      await allIdle();
      assert.equal((await sessionRow()).status, session.status);
      h.clock.advance(1);
      await expiry.whenIdle();
      assert.equal((await sessionRow()).status, 'expired', 'session-expiry ran at 7 s');
      await Promise.all(jobs.map((job) => job.stop()));

      // A day later (no job running meanwhile) the stored response is past 24 h and the session
      // ended more than RESULT_RETENTION_DAYS ago: each waits for its own job.
      h.clock.advance(25 * HOUR_MS);
      for (const job of jobs) job.start();
      h.clock.advance(19_999);
      await allIdle();
      assert.equal(await keyStored(), true);
      h.clock.advance(1);
      await purge.whenIdle();
      assert.equal(await keyStored(), false, 'expired-rows-purge ran at 20 s');
      assert.equal((await sessionRow()).redacted_at, null);
      h.clock.advance(9_999);
      await allIdle();
      assert.equal((await sessionRow()).redacted_at, null);
      h.clock.advance(1);
      await retention.whenIdle();
      assert.equal((await sessionRow()).redacted_at, h.clock.now().toISOString(), 'result-retention ran at 30 s');
    } finally {
      await Promise.all(jobs.map((job) => job.stop()));
    }
    assert.deepEqual(failures, []);
  });

  test('a job stopped while its step runs ends that step early and leaves its work to the next', async () => {
    // Stopping a process must not wait for a paced run of many batches (services/batches.ts): the
    // step's signal ends each run before its next batch. Here each job is stopped as soon as its
    // step starts, before its first batch: the work is still there, and the next step does it.
    const [expiry, purge, retention, eventRetention] = build();
    const { session, sessionRow } = await sessionAndStoredResponse('jobs-stopped');
    const keys = async () =>
      (await h.store.db.selectFrom('idempotency_keys').select('idempotency_key').execute()).length;
    const events = async () => (await h.store.db.selectFrom('events').select('id').execute()).length;
    const stoppedAtOnce = async (job: PeriodicJob | undefined) => {
      const step = job!.runOnce();
      await job!.stop();
      await step;
    };

    h.clock.set(new Date(Date.parse(session.expiresAt) + 1));
    await stoppedAtOnce(expiry);
    assert.equal((await sessionRow()).status, session.status, 'a stopped expiry expires nothing');
    await expiry!.runOnce();
    assert.equal((await sessionRow()).status, 'expired');

    h.clock.advance(40 * 24 * HOUR_MS);
    const keysBefore = await keys();
    const eventsBefore = await events();
    assert.ok(keysBefore > 0 && eventsBefore > 0);
    await stoppedAtOnce(purge);
    assert.equal(await keys(), keysBefore, 'a stopped purge deletes nothing');
    await stoppedAtOnce(retention);
    assert.equal((await sessionRow()).redacted_at, null, 'a stopped retention redacts nothing');
    await stoppedAtOnce(eventRetention);
    assert.equal(await events(), eventsBefore, 'a stopped event retention deletes nothing');

    await purge!.runOnce();
    assert.equal(await keys(), 0);
    await eventRetention!.runOnce();
    assert.equal(await events(), 0);
    await retention!.runOnce();
    assert.notEqual((await sessionRow()).redacted_at, null);
    assert.deepEqual(failures, []);
  });
});
