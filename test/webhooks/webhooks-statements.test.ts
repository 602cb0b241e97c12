import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { after, before, test } from 'node:test';
import { claimDueDeliveries, type ClaimedDelivery } from '../../src/store/webhook-deliveries/claim.ts';
import { recordAttemptsAndClaim } from '../../src/store/webhook-deliveries/record-and-claim.ts';
import { recordAttempts, type PendingRecord } from '../../src/store/webhook-deliveries/recording.ts';
import type { AttemptOutcome } from '../../src/domain/delivery-state.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { installStatementCounter } from '../support/statements.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { answeredRecord, createEndpoint, emitEvent, within, workerFor } from '../support/webhooks.ts';

/**
 * Issue 30, "PostgreSQL delivery path": the statements (on PostgreSQL, each a round trip) the
 * producer spends per event and the worker per batch of deliveries, counted at the driver. The
 * counts are exact and the same on every run, so they are asserted; time is bench/webhooks.ts's,
 * never a test's. Before this work, on PostgreSQL: an event with subscribers took 4 statements
 * (BEGIN, the subscribers' SELECT, the event with its deliveries, COMMIT), and a batch of attempts
 * with a retry or a 410 among them 5 and one more per retry. Then a running worker claimed again in
 * a statement of its own whenever recorded attempts freed enough slots; on PostgreSQL that claim
 * now rides in the statement that records them (record-and-claim.ts).
 */
const counter = installStatementCounter();

forEachDialect('webhook statements per event and per batch', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  const endpoints: string[] = [];

  before(async () => {
    h = await startHarness(dialect, { WEBHOOK_RETRY_SCHEDULE: '10' });
    tenant = await h.bootstrap('sandbox');
    receiver = await startWebhookReceiver();
    endpoints.push((await createEndpoint(h, tenant, receiver.url)).id);
    endpoints.push((await createEndpoint(h, tenant, receiver.url)).id);
    endpoints.push((await createEndpoint(h, tenant, receiver.url, ['consent.approved'])).id);
  });
  after(async () => {
    await receiver.close();
    await h.close();
  });

  const deliveriesOf = (eventId: string) =>
    h.store.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'endpoint_id', 'status', 'event_type'])
      .where('event_id', '=', eventId)
      .orderBy('endpoint_id')
      .execute();

  test('an event and its deliveries: one statement inside the transaction on PostgreSQL', async () => {
    let event: Awaited<ReturnType<typeof emitEvent>> | undefined;
    const statements = await counter.during(async () => {
      event = await emitEvent(h, tenant);
    });
    // PostgreSQL: BEGIN, the subscribers read, the event and its deliveries written and the wake-up
    // queued in one statement, COMMIT. SQLite: the subscribers, the event, the deliveries.
    assert.equal(statements.length, dialect === 'postgres' ? 3 : 5, statements.join('\n---\n'));
    const rows = await deliveriesOf(event!.id);
    assert.deepEqual(
      rows.map((r) => [r.endpoint_id, r.status, r.event_type]),
      endpoints
        .slice(0, 2)
        .sort()
        .map((id) => [id, 'pending', 'verification.completed']),
    );
    for (const row of rows) assert.match(row.id, /^del_[0-9a-z]{26}$/);
    assert.notEqual(rows[0]!.id, rows[1]!.id);
    assert.ok(rows[0]!.id.slice(4, 14) === event!.id.slice(4, 14), 'the delivery ids carry the event time');
  });

  test('an event nobody subscribes to is written with no delivery', async () => {
    const event = await emitEvent(h, tenant, 'verification.expired', { sessionId: 'sess_none' });
    assert.ok(await h.store.db.selectFrom('events').select('id').where('id', '=', event.id).executeTakeFirst());
    assert.deepEqual(await deliveriesOf(event.id), []);
    const other = await emitEvent(h, tenant, 'consent.approved', { sessionId: 'sess_other' });
    assert.deepEqual(
      (await deliveriesOf(other.id)).map((r) => r.endpoint_id),
      [endpoints[2]],
    );
  });

  test('a batch with successes, retries, a failure and a 410 is recorded in one statement on PostgreSQL', async () => {
    // Clear what the earlier tests enqueued, then five events: ten deliveries.
    await h.store.db.updateTable('webhook_deliveries').set({ status: 'succeeded', due_at: null }).execute();
    for (let i = 0; i < 5; i++) await emitEvent(h, tenant);
    const now = h.clock.now();
    const claimed = await claimDueDeliveries(h.store.db, {
      now: now.toISOString(),
      leaseUntil: new Date(now.getTime() + 60_000).toISOString(),
      token: 'claim',
      limit: 64,
    });
    assert.equal(claimed.length, 10);
    const retryAt = new Date(now.getTime() + 10_000).toISOString();
    const plan: Array<{ next: AttemptOutcome; status: number; gone?: boolean }> = [
      { next: { status: 'succeeded' }, status: 200 },
      { next: { status: 'pending', dueAt: retryAt }, status: 500 },
      { next: { status: 'failed' }, status: 500 },
      { next: { status: 'failed' }, status: 410, gone: true },
    ];
    const records: PendingRecord[] = claimed.map((d, i) => {
      const p = plan[i % plan.length]!;
      return {
        deliveryId: d.id,
        token: i === 9 ? 'another claim' : 'claim',
        record: {
          id: `att_statements${String(i).padStart(2, '0')}`,
          workerId: 'test',
          attempt: {
            attempt: 1,
            startedAt: now.toISOString(),
            durationMs: 3,
            statusCode: p.status,
            outcome: p.status === 200 ? 'succeeded' : 'http_error',
            errorMessage: null,
            responseBody: 'body',
            responseBodyTruncated: false,
          },
          next: p.next,
          ...(p.gone ? { disableEndpoint: { endpointId: d.endpoint.id } } : {}),
        },
      };
    });
    let recorded = new Set<string>();
    const statements = await counter.during(async () => {
      recorded = await recordAttempts(h.store.db, records, now.toISOString());
    });
    if (dialect === 'postgres') assert.equal(statements.length, 1, statements.join('\n---\n'));
    // SQLite: one transaction, the moves in one UPDATE, the attempts in one INSERT, the 410s' endpoints.
    else
      assert.deepEqual(
        statements.map((s) => s.trim().split(/\s+/)[0]!.toLowerCase()),
        ['begin', 'update', 'insert', 'update', 'commit'],
        statements.join('\n---\n'),
      );
    // The last one's lease is not its own: nothing of it is written.
    assert.deepEqual(
      [...recorded].sort(),
      records
        .slice(0, 9)
        .map((r) => r.deliveryId)
        .sort(),
    );
    const rows = await h.store.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'status', 'due_at', 'lease_token', 'delivered_at'])
      .where(
        'id',
        'in',
        records.map((r) => r.deliveryId),
      )
      .execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const [i, r] of records.entries()) {
      const row = byId.get(r.deliveryId)!;
      if (i === 9) {
        assert.equal(row.status, 'sending');
        continue;
      }
      const next = r.record.next;
      assert.equal(row.status, next.status, `delivery ${i}`);
      assert.equal(row.due_at, next.status === 'pending' ? retryAt : null);
      assert.equal(row.lease_token, null);
      assert.equal(row.delivered_at !== null, next.status === 'succeeded');
    }
    const attempts = await h.store.db
      .selectFrom('webhook_attempts')
      .select(['id', 'delivery_id', 'status_code'])
      .where('id', 'like', 'att_statements%')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      attempts.map((a) => a.delivery_id),
      records.slice(0, 9).map((r) => r.deliveryId),
    );
    const gone = new Set(records.slice(0, 9).flatMap((r) => r.record.disableEndpoint?.endpointId ?? []));
    assert.ok(gone.size > 0);
    const disabled = await h.store.db
      .selectFrom('webhook_endpoints')
      .select(['id', 'enabled', 'disabled_reason'])
      .where('enabled', '=', 0)
      .execute();
    assert.deepEqual(
      disabled.map((e) => [e.id, e.disabled_reason]).sort(),
      [...gone].sort().map((id) => [id, 'endpoint_gone']),
    );
  });

  if (dialect === 'postgres')
    test('on PostgreSQL a recording runs as a named prepared statement of its connection', async () => {
      // Parsed and planned on every call, a recording of one or two deliveries (a burst's worker)
      // cost the server twice what running it does.
      const now = h.clock.now().toISOString();
      const names = await h.store.db.connection().execute(async (db) => {
        const record = answeredRecord({
          deliveryId: 'dlv_nobody',
          token: 'claim',
          id: 'att_nobody',
          startedAt: now,
          durationMs: 3,
        });
        assert.deepEqual(await recordAttempts(db, [record], now), new Set());
        const { rows } = await sql<{ name: string }>`select name from pg_prepared_statements`.execute(db);
        return rows.map((r) => r.name);
      });
      assert.ok(names.includes('matricula_record_deliveries'), names.join(', '));
    });

  test('a drain: on PostgreSQL one claim and every batch of attempts one statement; on SQLite one text per part', async () => {
    await h.store.db.updateTable('webhook_endpoints').set({ enabled: 1, disabled_reason: null }).execute();
    await h.store.db.updateTable('webhook_deliveries').set({ status: 'succeeded', due_at: null }).execute();
    for (let i = 0; i < 10; i++) await emitEvent(h, tenant);
    receiver.respondWith({ status: 500 }, { status: 500 }, { status: 500 });
    const worker = workerFor(h);
    const statements = await counter.during(async () => {
      const summary = await worker.runOnce(64);
      assert.equal(summary.claimed, 20);
      assert.equal(summary.succeeded + summary.retrying, 20);
      assert.equal(summary.retrying, 3);
    });
    await worker.stop();
    if (dialect !== 'postgres') {
      // SQLite: a recording's two statements have one text each whatever its batch (compiled
      // once; SQLite's prepared statement reused), across batches of differing outcomes and sizes.
      const moves = statements.filter((s) => s.includes('x.token'));
      const logs = statements.filter((s) => /^\s*insert into "webhook_attempts"/i.test(s));
      assert.ok(moves.length >= 2 && moves.length === logs.length, statements.join('\n---\n'));
      assert.equal(new Set(moves).size, 1);
      assert.equal(new Set(logs).size, 1);
      return;
    }
    const claims = statements.filter((s) => s.includes('row_number'));
    assert.equal(claims.length, 1);
    assert.ok(
      statements.every((s) => /^\s*with\b/i.test(s)),
      `only single statements, no BEGIN/COMMIT: ${statements.map((s) => s.slice(0, 40)).join(' | ')}`,
    );
    // At most one statement per attempt recorded, whatever the turns the answers arrived in.
    assert.ok(statements.length - claims.length <= 20);
  });

  /** An attempt of `delivery` under `token` that moves it to `next`. */
  const attemptOf = (
    delivery: ClaimedDelivery,
    token: string,
    next: AttemptOutcome,
    status: number,
    id: string,
  ): PendingRecord => ({
    deliveryId: delivery.id,
    token,
    record: {
      id,
      workerId: 'test',
      attempt: {
        attempt: delivery.attempt,
        startedAt: h.clock.now().toISOString(),
        durationMs: 3,
        statusCode: status,
        outcome: status === 200 ? 'succeeded' : 'http_error',
        errorMessage: null,
        responseBody: '',
        responseBodyTruncated: false,
      },
      next,
      ...(status === 410 ? { disableEndpoint: { endpointId: delivery.endpoint.id } } : {}),
    },
  });

  test('a recording with a claim in it (PostgreSQL): one statement, which claims neither what it records nor for an endpoint it disables', async (t) => {
    if (dialect !== 'postgres') return t.skip('the claim-with-recording refill is PostgreSQL only');
    await h.store.db.updateTable('webhook_endpoints').set({ enabled: 1, disabled_reason: null }).execute();
    await h.store.db.updateTable('webhook_deliveries').set({ status: 'succeeded', due_at: null }).execute();
    for (let i = 0; i < 4; i++) await emitEvent(h, tenant);
    const [gone, kept] = endpoints.slice(0, 2).sort();
    const now = h.clock.now().toISOString();
    // The first claim's lease runs out at once: what it holds looks claimable again to a claim made now.
    const first = await claimDueDeliveries(h.store.db, { now, leaseUntil: now, token: 'first', limit: 2 });
    assert.equal(first.length, 2);
    const records = first.map((d, i) =>
      attemptOf(d, 'first', { status: 'failed' }, d.endpoint.id === gone ? 410 : 200, `att_withclaim${i}`),
    );
    assert.ok(
      records.some((r) => r.record.disableEndpoint),
      'a 410 among them',
    );
    let result: Awaited<ReturnType<typeof recordAttemptsAndClaim>> | undefined;
    const statements = await counter.during(async () => {
      result = await recordAttemptsAndClaim(h.store.db, records, {
        now,
        leaseUntil: new Date(h.clock.now().getTime() + 60_000).toISOString(),
        token: 'second',
        limit: 64,
      });
    });
    assert.equal(statements.length, 1, statements.join('\n---\n'));
    assert.deepEqual([...result!.recorded].sort(), first.map((d) => d.id).sort());
    // What was due to the endpoint kept, and nothing of what was recorded or to the one disabled.
    const due = await h.store.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('endpoint_id', '=', kept!)
      .where(
        'id',
        'not in',
        first.map((d) => d.id),
      )
      .where('status', 'in', ['pending', 'sending'])
      .execute();
    assert.deepEqual(result!.claimed.map((d) => d.id).sort(), due.map((d) => d.id).sort());
    for (const d of result!.claimed) {
      assert.equal(d.leaseToken, 'second');
      assert.equal(d.endpoint.id, kept);
      assert.equal(d.event.event, 'verification.completed');
    }
    const rows = await h.store.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'status', 'lease_token'])
      .where(
        'id',
        'in',
        first.map((d) => d.id),
      )
      .execute();
    assert.deepEqual(
      rows.map((r) => [r.status, r.lease_token]),
      [
        ['failed', null],
        ['failed', null],
      ],
    );
    const disabled = await h.store.db.selectFrom('webhook_endpoints').select('id').where('enabled', '=', 0).execute();
    assert.deepEqual(
      disabled.map((e) => e.id),
      [gone],
    );
    // A recording with nothing left to claim still answers what it recorded.
    const again = await recordAttemptsAndClaim(
      h.store.db,
      result!.claimed.map((d, i) => attemptOf(d, 'second', { status: 'succeeded' }, 200, `att_withclaim_${i}`)),
      { now, leaseUntil: now, token: 'third', limit: 64 },
    );
    assert.equal(again.recorded.size, result!.claimed.length);
    assert.deepEqual(again.claimed, []);
  });

  test('a running worker refills in the statement that records: on PostgreSQL no claim of its own after the first', async (t) => {
    await h.store.db.updateTable('webhook_endpoints').set({ enabled: 1, disabled_reason: null }).execute();
    await h.store.db.updateTable('webhook_deliveries').set({ status: 'succeeded', due_at: null }).execute();
    for (let i = 0; i < 12; i++) await emitEvent(h, tenant);
    const deliveries = 24; // to the two endpoints subscribed to verification.completed
    receiver.requests.length = 0;
    // Four slots, none kept back: every recording frees slots that call for a claim while the backlog lasts.
    const worker = workerFor(h, { maxInFlight: 4, maxPerEndpoint: 4 });
    const statements = await counter.during(async () => {
      await worker.start();
      try {
        await within(10_000, receiver.waitForRequests(deliveries), 'the backlog');
      } finally {
        await worker.stop();
      }
    });
    // Each delivery sent once, and recorded once.
    const sent = receiver.requests.map((r) => r.headers['x-service-delivery']);
    assert.equal(new Set(sent).size, deliveries);
    assert.equal(sent.length, deliveries);
    const rows = await h.store.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'status'])
      .where('status', '!=', 'succeeded')
      .execute();
    assert.deepEqual(rows, []);
    const attempts = await h.store.db
      .selectFrom('webhook_attempts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('worker_id', '=', worker.workerId)
      .executeTakeFirstOrThrow();
    assert.equal(Number(attempts.n), deliveries);
    if (dialect !== 'postgres') return;
    // The worker's statements on the deliveries: claims (they rank: row_number) and recordings.
    const work = statements.filter((s) => s.includes('webhook_deliveries'));
    const claimsAlone = work.filter((s) => s.includes('row_number') && !s.includes('webhook_attempts'));
    const claimsWithRecording = work.filter((s) => s.includes('row_number') && s.includes('webhook_attempts'));
    const recordings = work.filter((s) => s.includes('webhook_attempts'));
    const perDelivery = (work.length / deliveries).toFixed(2);
    assert.equal(work.length, claimsAlone.length + recordings.length, 'nothing else on the deliveries');
    assert.ok(!statements.some((s) => /^\s*(begin|commit)\b/i.test(s)), 'no transaction');
    // The first claim is its own statement; every other rides in a recording. At most 4 a claim:
    // 24 deliveries take at least 6 claims, which took 6 statements of their own before.
    assert.equal(claimsAlone.length, 1, `claims of their own (statements per delivery: ${perDelivery})`);
    assert.ok(claimsWithRecording.length >= 5, `claims in recordings: ${claimsWithRecording.length}`);
    t.diagnostic(
      `statements per delivery: ${perDelivery} (${claimsWithRecording.length} claims in ${recordings.length} recordings)`,
    );
  });
});
