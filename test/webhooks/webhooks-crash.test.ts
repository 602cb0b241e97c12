import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import { systemClock } from '../../src/domain/clock.ts';
import { createUnitOfWork } from '../../src/services/unit-of-work.ts';
import { DeliveryWakeups } from '../../src/webhooks/wake.ts';
import { DEFAULT_MAX_PER_ENDPOINT } from '../../src/webhooks/worker.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { startWebhookReceiver, type RecordedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { completedData, createEndpoint, waitForReceiver, within } from '../support/webhooks.ts';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.ts';

/**
 * Crash safety with real worker processes (`src/main.ts --role worker`) on one database: a worker
 * killed mid-delivery loses nothing, and two workers never send one delivery both.
 */

const deliveryIdOf = (r: RecordedRequest) => String(r.headers['x-service-delivery']);

forEachDialect('webhook workers as processes', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  let processes: WorkerProcess[] = [];

  before(async () => {
    h = await startHarness(dialect);
  });
  beforeEach(async () => {
    tenant = await h.bootstrap('sandbox');
    receiver = await startWebhookReceiver();
  });
  afterEach(async () => {
    for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.exited));
    processes = [];
    await receiver.close();
  });
  after(() => h.close());

  const start = (env: Record<string, string> = {}) => {
    const worker = spawnWorker(h.testStore.url, env);
    processes.push(worker);
    return worker;
  };

  /** Events committed now (system time: the worker processes run on the real clock). */
  async function emit(count: number): Promise<string[]> {
    const source = { appId: tenant.appId, orgId: tenant.orgId, environment: 'sandbox' as const };
    const unitOfWork = createUnitOfWork({ db: h.store.db, clock: systemClock, wakeups: new DeliveryWakeups() });
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const event = await unitOfWork((work) =>
        work.record(source, 'verification.completed', completedData(`sess_${i}`)),
      );
      ids.push(event.id);
    }
    return ids;
  }

  async function deliveryRows(endpointId: string) {
    return h.store.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'status', 'attempt_count'])
      .where('endpoint_id', '=', endpointId)
      .execute();
  }

  test('SIGKILL a worker mid-delivery, start another: every event is delivered', { timeout: 90_000 }, async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    const N = 10;
    // The first three are acknowledged; the rest are held open, so the worker dies mid-delivery.
    receiver.respondWith({ status: 200 }, { status: 200 }, { status: 200 });
    receiver.setDefaultResponse({ kind: 'hang' });
    await emit(N);
    const first = start({ WEBHOOK_LEASE_SECONDS: '3' });
    // Its start (tsx loading the service) is not what is timed: on a slow 2-core machine under the
    // whole suite's load, start and sends together once outlasted the 30 s the sends are given.
    await within(120_000, first.ready, 'worker 1 to start').catch((err: Error) => {
      throw new Error(`${err.message}\nworker 1 output:\n${first.output()}`);
    });
    await within(30_000, receiver.waitForRequests(N), `worker 1 to send all ${N} deliveries`);
    first.child.kill('SIGKILL');
    assert.equal((await first.exited).signal, 'SIGKILL');
    const acknowledgedBeforeCrash = receiver.requests.slice(0, 3).map(deliveryIdOf);

    receiver.setDefaultResponse({ status: 200 });
    const second = start({ WEBHOOK_LEASE_SECONDS: '3' });
    const allIds = new Set((await deliveryRows(endpoint.id)).map((d) => d.id));
    assert.equal(allIds.size, N);
    // Worker 2 takes over once the dead worker's leases run out (3 s after its last heartbeat).
    const acknowledged = (requests: RecordedRequest[]) =>
      new Set([...acknowledgedBeforeCrash, ...requests.slice(N).map(deliveryIdOf)]);
    await waitForReceiver(
      receiver,
      (requests) => acknowledged(requests).size === N,
      60_000,
      'every delivery to be acknowledged',
    ).catch((err) => {
      throw new Error(`${err.message}\nworker 2 output:\n${second.output()}`);
    });
    assert.deepEqual(acknowledged(receiver.requests), allIds);
    // Redelivered attempts carry the next attempt number: the claim by the dead worker counted.
    for (const request of receiver.requests.slice(N)) assert.equal(request.headers['x-service-delivery-attempt'], '2');

    // A graceful stop waits for the sends in flight and records them.
    second.child.kill('SIGTERM');
    assert.equal((await second.exited).code, 0, second.output());
    const rows = await deliveryRows(endpoint.id);
    assert.deepEqual(
      rows.map((r) => r.status),
      Array(N).fill('succeeded'),
    );
  });

  test('two workers share the load and never send one delivery both', { timeout: 180_000 }, async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    // Claims must never overlap (SKIP LOCKED, one lease token per claim); that is what this test
    // is about. A lease that runs out while a starved process misses its heartbeats is the
    // at-least-once case docs/webhooks.md describes, so the lease here is long enough that a
    // loaded CI machine cannot produce it.
    const workers = [start({ WEBHOOK_LEASE_SECONDS: '120' }), start({ WEBHOOK_LEASE_SECONDS: '120' })];
    await within(120_000, Promise.all(workers.map((w) => w.ready)), 'both workers to start');

    // More requests held open at once than one worker may have in flight to one endpoint: the
    // gate opens only if both workers are sending.
    const held = DEFAULT_MAX_PER_ENDPOINT + 8;
    const gate = receiver.waitForRequests(held);
    receiver.respondWith(...Array.from({ length: held }, () => ({ status: 200, after: gate })));
    const N = 200;
    await emit(N);
    await waitForReceiver(
      receiver,
      (requests) => new Set(requests.map(deliveryIdOf)).size === N,
      60_000,
      `all ${N} deliveries`,
    );

    for (const w of workers) w.child.kill('SIGTERM');
    for (const w of workers) assert.equal((await w.exited).code, 0, w.output());
    const ids = receiver.requests.map(deliveryIdOf);
    assert.equal(ids.length, N, 'no delivery was sent twice');
    assert.equal(new Set(ids).size, N);
    assert.ok(receiver.requests.every((r) => r.headers['x-service-delivery-attempt'] === '1'));

    const rows = await deliveryRows(endpoint.id);
    assert.deepEqual(
      rows.map((r) => [r.status, r.attempt_count]),
      Array(N).fill(['succeeded', 1]),
    );
    const attempts = await h.store.db
      .selectFrom('webhook_attempts')
      .select(['delivery_id', 'worker_id'])
      .where(
        'delivery_id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
    assert.equal(attempts.length, N);
    assert.equal(new Set(attempts.map((a) => a.worker_id)).size, 2, 'both workers delivered');
  });
});
