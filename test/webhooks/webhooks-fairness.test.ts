import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { claimPolicy } from '../../src/domain/claim-plan.ts';
import { claimDueDeliveries } from '../../src/store/webhook-deliveries/claim.ts';
import { DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_PER_ENDPOINT, type DeliveryWorker } from '../../src/webhooks/worker.ts';
import { DEFAULT_TIMEOUT_MS } from '../../src/webhooks/sender.ts';
import { forEachDialect, startHarness, type Harness } from '../support/harness.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { createEndpoint, emitEvent, waitUntil, within, workerAttempts, workerFor } from '../support/webhooks.ts';

/**
 * Endpoints that accept the connection and never answer ("black holes"), with long queues, must
 * not hold back another tenant's deliveries: the claim ranks each endpoint's oldest due rows, the
 * last slots of a worker are kept for endpoints with little in flight, and an endpoint whose
 * attempts time out gets one send at a time until it answers. The sender's timeout runs on the
 * harness's TestClock: nothing sleeps, and the clock moves only where the test says.
 */

forEachDialect('fair claims beside endpoints that never answer', (dialect) => {
  let h: Harness;
  const receivers: WebhookReceiver[] = [];
  let w: DeliveryWorker | undefined;
  const newReceiver = async () => {
    const r = await startWebhookReceiver();
    receivers.push(r);
    return r;
  };
  const sendingTo = async (endpointId: string) =>
    (
      await h.store.db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('endpoint_id', '=', endpointId)
        .where('status', '=', 'sending')
        .execute()
    ).length;

  before(async () => {
    h = await startHarness(dialect);
  });
  afterEach(async () => {
    // Closing the black holes ends their hanging answers, so the worker's stop does not wait for them.
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    await w?.stop();
    w = undefined;
    await h.store.db.deleteFrom('webhook_attempts').execute();
    await h.store.db.deleteFrom('webhook_deliveries').execute();
  });
  after(() => h.close());

  test("four black holes with 150 queued each: another tenant's deliveries go at once, then one send per hole", async () => {
    const queuedPerHole = 150;
    const holes: { receiver: WebhookReceiver; endpointId: string }[] = [];
    for (let i = 0; i < 4; i++) {
      const receiver = await newReceiver();
      receiver.setDefaultResponse({ kind: 'hang' });
      const tenant = await h.bootstrap('sandbox');
      const endpoint = await createEndpoint(h, tenant, receiver.url);
      for (let j = 0; j < queuedPerHole; j++) await emitEvent(h, tenant);
      holes.push({ receiver, endpointId: endpoint.id });
    }
    // The fast tenant's deliveries are the newest: 600 older ones are due ahead of them.
    const fastTenant = await h.bootstrap('sandbox');
    const fast = await newReceiver();
    const fastEndpoint = await createEndpoint(h, fastTenant, fast.url);
    for (let i = 0; i < 20; i++) await emitEvent(h, fastTenant);
    const holeRequests = () => holes.reduce((n, hole) => n + hole.receiver.requests.length, 0);

    w = workerFor(h, { pollIntervalMs: 3_600_000 });
    await w.start();
    // Before anything has timed out: the black holes fill what they may, the fast endpoint's queue
    // is delivered beside them without the clock moving.
    await within(10_000, fast.waitForRequests(20), "the fast tenant's 20 deliveries beside the black holes");
    // They hold no more than all but the reserve, however long their queues.
    const { reserve } = claimPolicy({ maxInFlight: DEFAULT_MAX_IN_FLIGHT, maxPerEndpoint: DEFAULT_MAX_PER_ENDPOINT });
    assert.ok(holeRequests() <= DEFAULT_MAX_IN_FLIGHT - reserve, `${holeRequests()} sends to the black holes`);
    for (const hole of holes) assert.ok(hole.receiver.requests.length <= DEFAULT_MAX_PER_ENDPOINT);
    // Beside them, new deliveries still go one by one, the clock standing still.
    for (let i = 0; i < 5; i++) {
      await emitEvent(h, fastTenant);
      await within(5_000, fast.waitForRequests(21 + i), `fast delivery ${i + 1} beside the full black holes`);
    }
    assert.ok(holeRequests() <= DEFAULT_MAX_IN_FLIGHT - reserve, 'the reserve stayed with the fast endpoint');

    const fastStatuses = async () =>
      (
        await h.store.db
          .selectFrom('webhook_deliveries')
          .select('status')
          .where('endpoint_id', '=', fastEndpoint.id)
          .execute()
      ).map((r) => r.status);
    // Answered and recorded before the clock moves: an answer still being read would time out too.
    const recorded = { on: [[workerAttempts, 'attempt']] as Array<[typeof workerAttempts, string]> };
    await waitUntil(
      async () => (await fastStatuses()).every((s) => s === 'succeeded'),
      'the fast deliveries recorded',
      recorded,
    );
    // The black holes' sends time out: from then on each has one send at a time.
    const before = holes.map((hole) => hole.receiver.requests.length);
    h.clock.advance(DEFAULT_TIMEOUT_MS);
    await waitUntil(
      () => holes.every((hole, i) => hole.receiver.requests.length === before[i] + 1),
      'one new send to each black hole',
    );
    await waitUntil(async () => {
      for (const hole of holes) if ((await sendingTo(hole.endpointId)) !== 1) return false;
      return true;
    }, 'the timed-out sends recorded');
    await w.settled();
    assert.deepEqual(
      holes.map((hole, i) => hole.receiver.requests.length - before[i]),
      [1, 1, 1, 1],
      'one send in flight to each black hole after its timeouts',
    );
    // Everything else is open again: a burst to the fast endpoint is sent 16 at a time, at once.
    for (let i = 0; i < 40; i++) await emitEvent(h, fastTenant);
    await within(10_000, fast.waitForRequests(65), 'a burst of 40 beside black holes that time out');
    await waitUntil(async () => (await fastStatuses()).every((s) => s === 'succeeded'), 'the burst recorded', recorded);
    assert.deepEqual(await fastStatuses(), Array(65).fill('succeeded'));
    for (const hole of holes) assert.equal(await sendingTo(hole.endpointId), 1);
  });
  test("a claim ranks each endpoint's oldest due, round-robin across organizations, whatever is older elsewhere", async () => {
    const receiver = await newReceiver();
    // Each event a millisecond after the one before: each delivery is due after the one before.
    const emitLater = async (tenant: Parameters<typeof emitEvent>[1]) => {
      h.clock.advance(1);
      await emitEvent(h, tenant);
    };
    // Organization X: one endpoint with 100 due, the oldest of all, and a second with 3.
    const x = await h.bootstrap('sandbox');
    const x1 = await createEndpoint(h, x, receiver.url);
    for (let i = 0; i < 100; i++) await emitLater(x);
    const xApp2 = await h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: x.auth,
      payload: { name: 'Second' },
    });
    assert.equal(xApp2.statusCode, 201, xApp2.body);
    const x2 = await createEndpoint(h, { ...x, appId: xApp2.json().data.id }, receiver.url);
    for (let i = 0; i < 3; i++) await emitLater({ ...x, appId: xApp2.json().data.id });
    // Organization Y: one endpoint with 3, the newest of all.
    const y = await h.bootstrap('sandbox');
    const y1 = await createEndpoint(h, y, receiver.url);
    for (let i = 0; i < 3; i++) await emitLater(y);
    const now = h.clock.now();
    const claim = (token: string, limit: number) =>
      claimDueDeliveries(h.store.db, {
        now: now.toISOString(),
        leaseUntil: new Date(now.getTime() + 10_000).toISOString(),
        token,
        limit,
        perEndpoint: 16,
      });
    // Two slots: one per organization, though X's 103 are all older than Y's first.
    const first = await claim('one', 2);
    assert.deepEqual(first.map((d) => d.endpoint.id).sort(), [x1.id, y1.id].sort());
    // Four more, turn by turn: each organization's next, X's alternating between its two endpoints.
    const second = await claim('two', 4);
    const count = (id: string) => second.filter((d) => d.endpoint.id === id).length;
    assert.deepEqual([count(x1.id), count(x2.id), count(y1.id)], [1, 1, 2]);
  });
});
