import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { claimDueDeliveries } from '../../src/store/webhook-deliveries/claim.ts';
import { recordAttempts, type PendingRecord } from '../../src/store/webhook-deliveries/recording.ts';
import type { AttemptOutcome } from '../../src/domain/delivery-state.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { installStatementCounter } from '../support/statements.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { createEndpoint, emitEvent, workerFor } from '../support/webhooks.ts';

/**
 * Issue 30, "PostgreSQL delivery path": the statements (on PostgreSQL, each a round trip) the
 * producer spends per event and the worker per batch of deliveries, counted at the driver. The
 * counts are exact and the same on every run, so they are asserted; time is bench/webhooks.ts's,
 * never a test's. Before this work, on PostgreSQL: an event with subscribers took 4 statements
 * (BEGIN, the subscribers' SELECT, the event with its deliveries, COMMIT), and a batch of attempts
 * with a retry or a 410 among them 5 and one more per retry.
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

  test('a drain on PostgreSQL: one claim, and every batch of attempts one statement, no transaction', async () => {
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
    if (dialect !== 'postgres') return;
    const claims = statements.filter((s) => s.includes('row_number'));
    assert.equal(claims.length, 1);
    assert.ok(
      statements.every((s) => /^\s*with\b/i.test(s)),
      `only single statements, no BEGIN/COMMIT: ${statements.map((s) => s.slice(0, 40)).join(' | ')}`,
    );
    // At most one statement per attempt recorded, whatever the turns the answers arrived in.
    assert.ok(statements.length - claims.length <= 20);
  });
});
