import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DeliveryStatus } from '../../src/domain/delivery-state.ts';
import { newId } from '../../src/domain/ids.ts';
import { purgeExpiredSpentNonces } from '../../src/services/direct-verify.ts';
import { applyEventRetention } from '../../src/services/event-retention.ts';
import { purgeExpiredIdempotencyKeys } from '../../src/services/idempotency.ts';
import { applyResultRetention } from '../../src/services/redaction.ts';
import { deleteEndpointFor } from '../../src/services/webhooks.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createSession } from '../support/sessions.ts';
import { markTurns } from '../support/event-loop.ts';

/**
 * Issue 30: what keeps the tables from growing forever, and does it in bounded batches:
 * EVENT_RETENTION_DAYS (events with their deliveries and attempts, never one still due), the
 * purges, the attempt bodies of result retention, an endpoint's deletion. Time moves on the
 * harness's TestClock; batch sizes are the functions' options, small here so that a run spans
 * several batches.
 */
const DAY_MS = 24 * 60 * 60 * 1000;

forEachDialect('data retention in batches', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite), { EVENT_RETENTION_DAYS: '30', RESULT_RETENTION_DAYS: '30' });

  const count = async (table: 'events' | 'webhook_deliveries' | 'webhook_attempts' | 'webhook_endpoints') =>
    Number(
      (
        await h.store.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  async function endpoint(): Promise<string> {
    const id = newId('webhookEndpoint', h.clock);
    const at = h.clock.now().toISOString();
    await h.store.db
      .insertInto('webhook_endpoints')
      .values({
        id,
        app_id: tenant.appId,
        org_id: tenant.orgId,
        environment: 'sandbox',
        url: 'http://127.0.0.1:9/hook',
        description: null,
        events: '["verification.expired"]',
        enabled: 1,
        disabled_reason: null,
        secret: 'whsec_test',
        previous_secret: null,
        previous_secret_expires_at: null,
        created_at: at,
        updated_at: at,
      })
      .execute();
    return id;
  }

  /** An event now, with one delivery (and one attempt, its body kept) per status given. */
  async function eventWith(endpointId: string, statuses: DeliveryStatus[]): Promise<string> {
    // Ids of one millisecond sort by their random part: one event per millisecond keeps their order.
    h.clock.advance(1);
    const id = newId('event', h.clock);
    const at = h.clock.now().toISOString();
    await h.store.db
      .insertInto('events')
      .values({
        id,
        app_id: tenant.appId,
        org_id: tenant.orgId,
        environment: 'sandbox',
        type: 'verification.expired',
        data: '{"sessionId":"sess_x"}',
        created_at: at,
        session_id: 'sess_x',
      })
      .execute();
    for (const status of statuses) {
      const delivery = newId('delivery', h.clock);
      const due = status === 'pending' || status === 'sending';
      await h.store.db
        .insertInto('webhook_deliveries')
        .values({
          id: delivery,
          endpoint_id: endpointId,
          event_id: id,
          event_type: 'verification.expired',
          status,
          due_at: due ? at : null,
          lease_token: null,
          attempt_count: 1,
          created_at: at,
          updated_at: at,
          delivered_at: null,
        })
        .execute();
      await h.store.db
        .insertInto('webhook_attempts')
        .values({
          id: newId('attempt', h.clock),
          delivery_id: delivery,
          attempt: 1,
          worker_id: 'test',
          started_at: at,
          duration_ms: 1,
          status_code: 200,
          outcome: 'succeeded',
          error_message: null,
          response_body: 'ok',
          response_body_truncated: 0,
        })
        .execute();
    }
    return id;
  }

  test('result retention empties old attempt bodies in batches, at most maxBatches a run', async () => {
    const target = await endpoint();
    for (let i = 0; i < 3; i++) await eventWith(target, ['succeeded']);
    h.clock.advance(31 * DAY_MS);
    const bodies = { batchSize: 2, maxBatches: 1 };
    assert.equal((await applyResultRetention(h.services, { attemptBodies: bodies })).attemptBodies, 2);
    assert.equal((await applyResultRetention(h.services, { attemptBodies: bodies })).attemptBodies, 1);
    assert.equal((await applyResultRetention(h.services)).attemptBodies, 0);
  });

  test('result retention lets the event loop turn before each redaction', async () => {
    // On SQLite every statement completes at once: without a turn between two redactions, a
    // request that arrived during a run waited for the whole run. A chain of setImmediate
    // callbacks marks each turn; the redactions are counted as they happen.
    for (let i = 0; i < 3; i++) await createSession(h, tenant);
    h.clock.advance(31 * DAY_MS);
    const timeline: string[] = [];
    const metrics = Object.create(h.services.metrics) as typeof h.services.metrics;
    metrics.sessionRedacted = () => void timeline.push('redacted');
    const stopMarking = markTurns(timeline);
    const outcome = await applyResultRetention({ ...h.services, metrics });
    stopMarking();
    assert.equal(outcome.sessions, 3);
    assert.doesNotMatch(timeline.join(','), /redacted,redacted/, timeline.join(','));
    // Its verification.redacted events leave the window before the next test.
    h.clock.advance(31 * DAY_MS);
  });

  test('result retention paces its redactions as batches: after each, nine times its length; a stopped run ends', async () => {
    // Unpaced, a run's redactions took a quarter of its time and the API's p99 during it read
    // 2.1–2.5 times idle (bench/scale.ts). The pacing's clock says each redaction took 1 ms.
    for (let i = 0; i < 3; i++) await createSession(h, tenant);
    h.clock.advance(31 * DAY_MS);
    let at = 0;
    const pauses: number[] = [];
    const stop = new AbortController();
    const pacing = {
      targetMs: 4,
      now: () => (at += 1),
      pause: async (ms: number) => {
        pauses.push(ms);
        if (pauses.length === 2) stop.abort();
      },
    };
    const first = await applyResultRetention(h.services, { pacing, signal: stop.signal });
    assert.equal(first.sessions, 1, 'stopped in the pause after the first redaction');
    assert.deepEqual(pauses.slice(0, 2), [0, 9]);
    pauses.length = 0;
    const rest = await applyResultRetention(h.services, { pacing });
    assert.equal(rest.sessions, 2, 'the next run carries on');
    assert.deepEqual(pauses.slice(0, 2), [0, 9], 'a pause of nine times the redaction before');
    h.clock.advance(31 * DAY_MS);
  });

  test('EVENT_RETENTION_DAYS deletes old events with their deliveries and attempts, never one still due', async () => {
    const target = await endpoint();
    // The previous test's events are past the window already.
    await applyEventRetention(h.services);
    assert.equal(await count('events'), 0);
    const old = [await eventWith(target, ['succeeded'])];
    const first = h.clock.now().getTime();
    old.push(await eventWith(target, ['failed', 'succeeded']));
    const pending = await eventWith(target, ['succeeded', 'pending']);
    const sending = await eventWith(target, ['sending']);
    for (let i = 0; i < 5; i++) old.push(await eventWith(target, ['succeeded']));
    const last = h.clock.now().getTime();
    h.clock.set(new Date(first + 30 * DAY_MS));
    assert.equal(await applyEventRetention(h.services), 0, 'exactly 30 days old is kept');

    h.clock.set(new Date(last + 30 * DAY_MS));
    const young = await eventWith(target, ['succeeded']);
    // Two batches of two: the first deletes two events, the second looks at the two still due.
    assert.equal(await applyEventRetention(h.services, { batchSize: 2, maxBatches: 2 }), 2);
    // The next run carries on past those two, two at a time, to the end.
    assert.equal(await applyEventRetention(h.services, { batchSize: 2 }), old.length - 2);
    const left = (await h.store.db.selectFrom('events').select('id').orderBy('id').execute()).map((r) => r.id);
    assert.deepEqual(left, [pending, sending, young]);
    assert.equal(await count('webhook_deliveries'), 4, "the kept events' deliveries, done or not, stay");
    assert.equal(await count('webhook_attempts'), 4);

    // Once its last delivery is done, the event goes at the next run.
    await h.store.db
      .updateTable('webhook_deliveries')
      .set({ status: 'succeeded', due_at: null })
      .where('event_id', '=', pending)
      .execute();
    assert.equal(await applyEventRetention(h.services), 1);
    assert.deepEqual(
      (await h.store.db.selectFrom('events').select('id').orderBy('id').execute()).map((r) => r.id),
      [sending, young],
    );
    assert.equal(await count('webhook_deliveries'), 2);
    assert.equal(await count('webhook_attempts'), 2);
  });

  test('purges delete in batches, at most maxBatches a run', async () => {
    const now = h.clock.now().getTime();
    const iso = (ms: number) => new Date(ms).toISOString();
    await h.store.db
      .insertInto('spent_nonces')
      .values(
        Array.from({ length: 28 }, (_, i) => ({
          org_id: tenant.orgId,
          nonce_hash: `n${i}`,
          spent_at: iso(now - DAY_MS),
          expires_at: iso(i < 25 ? now - 1 : now + DAY_MS),
        })),
      )
      .execute();
    await h.store.db
      .insertInto('idempotency_keys')
      .values(
        Array.from({ length: 13 }, (_, i) => ({
          scope: 'test',
          idempotency_key: `k${i}`,
          fingerprint: 'f',
          status_code: 200,
          response_body: '{}',
          created_at: iso(i < 11 ? now - 2 * DAY_MS : now),
        })),
      )
      .execute();
    assert.equal(await purgeExpiredSpentNonces(h.services, { batchSize: 10, maxBatches: 2 }), 20);
    assert.equal(await purgeExpiredSpentNonces(h.services, { batchSize: 10 }), 5);
    assert.equal((await h.store.db.selectFrom('spent_nonces').select('nonce_hash').execute()).length, 3);
    assert.equal(await purgeExpiredIdempotencyKeys(h.services, { batchSize: 4, maxBatches: 2 }), 8);
    assert.equal(await purgeExpiredIdempotencyKeys(h.services, { batchSize: 4 }), 3);
    assert.equal((await h.store.db.selectFrom('idempotency_keys').select('scope').execute()).length, 2);
  });

  test('deleting an endpoint deletes its deliveries and their attempts in batches, and keeps the events', async () => {
    const target = await endpoint();
    const other = await endpoint();
    for (let i = 0; i < 7; i++) await eventWith(target, ['succeeded']);
    await eventWith(other, ['succeeded']);
    const before = {
      events: await count('events'),
      deliveries: await count('webhook_deliveries'),
      attempts: await count('webhook_attempts'),
    };
    const principal = {
      orgId: tenant.orgId,
      environment: 'sandbox' as const,
      appId: tenant.appId,
      keyId: tenant.keyId,
    };
    // Each batch "takes" 1 ms on this pacing's clock; the caller waits, so each pause is as long.
    let clock = 0;
    const pauses: number[] = [];
    const pacing = {
      now: () => clock++,
      pause: async (ms: number) => {
        pauses.push(ms);
      },
      targetMs: 4,
    };
    await deleteEndpointFor(h.services, principal, target, { batchSize: 3, pacing });
    assert.deepEqual(pauses, [0, 1, 1], 'three batches (3, 3, 1), each followed by a pause as long as it took');
    assert.equal(
      await h.store.db.selectFrom('webhook_endpoints').select('id').where('id', '=', target).executeTakeFirst(),
      undefined,
    );
    assert.equal(await count('events'), before.events);
    assert.equal(await count('webhook_deliveries'), before.deliveries - 7);
    assert.equal(await count('webhook_attempts'), before.attempts - 7);
    const left = await h.store.db.selectFrom('webhook_deliveries').select('endpoint_id').execute();
    assert.ok(left.every((d) => d.endpoint_id !== target));
  });
});
