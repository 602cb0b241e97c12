import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import type { Db } from '../../src/store/db.ts';
import { claimDueDeliveries } from '../../src/store/webhook-deliveries/claim.ts';
import { createUnitOfWork } from '../../src/services/unit-of-work.ts';
import { AttemptRecorder } from '../../src/webhooks/attempt-recorder.ts';
import { DeliveryWakeups } from '../../src/webhooks/wake.ts';
import { DEFAULT_MAX_PER_ENDPOINT, type DeliveryWorker } from '../../src/webhooks/worker.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { installStatementCounter } from '../support/statements.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import {
  completedData,
  createEndpoint,
  emitEvent,
  waitUntil,
  within,
  workerAttempts,
  workerFor,
} from '../support/webhooks.ts';

/**
 * The delivery worker under load: short leases kept alive by a heartbeat, fair batched claims
 * (round-robin across endpoints, a cap per endpoint), keep-alive connections, batched recording.
 * Time is the harness's TestClock; nothing sleeps.
 */
const counter = installStatementCounter();

forEachDialect('webhook delivery in batches', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  const receivers: WebhookReceiver[] = [];
  const workers: DeliveryWorker[] = [];
  const worker = (options: Parameters<typeof workerFor>[1] = {}) => {
    const w = workerFor(h, options);
    workers.push(w);
    return w;
  };
  const newReceiver = async () => {
    const r = await startWebhookReceiver();
    receivers.push(r);
    return r;
  };
  const rows = (endpointId: string) =>
    h.store.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'status', 'attempt_count', 'due_at'])
      .where('endpoint_id', '=', endpointId)
      .execute();

  /** The harness's database, counting the statements of each kind run through it. */
  const counting = () => {
    const counts = { attemptInserts: 0, dueReads: 0, claims: 0, queries: 0 };
    const db: Db = h.store.db.withPlugin({
      transformQuery: ({ node }) => {
        if (node.kind === 'InsertQueryNode' && node.into?.table.identifier.name === 'webhook_attempts')
          counts.attemptInserts++;
        // A claim, counted as it starts: the statement that holds the ranking of its candidates
        // (only a claim numbers rows: row_number, in its SQL). On PostgreSQL that is a SELECT with the UPDATE in its WITH;
        // the parts of a statement pass here too as they are built, each without a WITH.
        const claimStatement =
          dialect === 'postgres'
            ? node.kind === 'SelectQueryNode' && node.with !== undefined
            : node.kind === 'UpdateQueryNode';
        if (claimStatement && JSON.stringify(node).includes('row_number')) counts.claims++;
        // The claim's read of whether anything is due: one row of deliveries whose endpoint is not
        // disabled, in no order (the claim's own candidates are ordered).
        if (
          node.kind === 'SelectQueryNode' &&
          node.limit !== undefined &&
          node.orderBy === undefined &&
          JSON.stringify(node.from).includes('webhook_deliveries') &&
          JSON.stringify(node.where ?? null).includes('webhook_endpoints')
        )
          counts.dueReads++;
        return node;
      },
      // Once per statement run (transformQuery also sees every subquery as it is built).
      transformResult: async ({ result }) => {
        counts.queries++;
        return result;
      },
    });
    return { db, counts };
  };
  /** A worker on the counting database, polling only when woken. */
  const countingWorker = (options: Parameters<typeof workerFor>[1] = {}) => {
    const { db, counts } = counting();
    return { w: worker({ store: { ...h.store, db }, pollIntervalMs: 3_600_000, ...options }), counts };
  };

  before(async () => {
    h = await startHarness(dialect, { WEBHOOK_RETRY_SCHEDULE: '10,60' });
  });
  beforeEach(async () => {
    tenant = await h.bootstrap('sandbox');
    receiver = await newReceiver();
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await h.store.db.deleteFrom('webhook_attempts').execute();
    await h.store.db.deleteFrom('webhook_deliveries').execute();
  });
  after(() => h.close());

  test('a live worker keeps the lease of a slow send past the lease length: no second worker sends it', async () => {
    assert.equal(h.config.webhookLeaseSeconds, 10, 'the default lease');
    let release!: () => void;
    receiver.respondWith({ status: 200, after: new Promise<void>((resolve) => (release = resolve)) });
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    await emitEvent(h, tenant);
    // The attempt may take a minute; the lease is 10 s and lives on heartbeats alone.
    const slow = worker({ timeoutMs: 60_000 });
    const running = slow.runOnce();
    await within(5_000, receiver.waitForRequests(1), 'the slow send to start');
    const other = worker();
    const beat = Math.floor((h.config.webhookLeaseSeconds * 1000) / 3);
    const leaseAtClaim = (await rows(endpoint.id))[0].due_at!;
    for (let elapsed = 0; elapsed < 3 * h.config.webhookLeaseSeconds * 1000; elapsed += beat) {
      h.clock.advance(beat);
      await slow.settled();
      assert.equal((await other.runOnce()).claimed, 0, `still leased after ${elapsed + beat} ms`);
    }
    const [leased] = await rows(endpoint.id);
    assert.equal(leased.status, 'sending');
    assert.ok(leased.due_at! > leaseAtClaim, 'the heartbeat moved the lease on');
    assert.ok(
      new Date(leased.due_at!).getTime() - h.clock.now().getTime() <= h.config.webhookLeaseSeconds * 1000,
      'never more than one lease ahead',
    );

    release();
    assert.equal((await running).succeeded, 1);
    assert.equal(receiver.requests.length, 1, 'sent once');
    assert.deepEqual(
      (await rows(endpoint.id)).map((r) => [r.status, r.attempt_count]),
      [['succeeded', 1]],
    );
    // Nothing in flight: the heartbeat stops, the lease of the recorded delivery is gone.
    h.clock.advance(beat);
    await slow.settled();
    assert.equal((await rows(endpoint.id))[0].due_at, null);
  });

  test("a dead worker's deliveries are claimed again one lease after its last heartbeat", async () => {
    let release!: () => void;
    receiver.respondWith({ status: 200, after: new Promise<void>((resolve) => (release = resolve)) });
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    await emitEvent(h, tenant);
    const dying = worker({ timeoutMs: 60_000 });
    const running = dying.runOnce();
    await within(5_000, receiver.waitForRequests(1), 'the first send');
    const beat = Math.floor((h.config.webhookLeaseSeconds * 1000) / 3);
    h.clock.advance(beat);
    await dying.settled();
    const lastBeat = h.clock.now().getTime();
    // The worker "dies" here: the clock is not moved again, so its heartbeat never runs again, and
    // a second process looks at the outbox at later times of its own.
    const lease = h.config.webhookLeaseSeconds * 1000;
    const takeOver = async (ms: number) => {
      const now = new Date(lastBeat + ms);
      return claimDueDeliveries(h.store.db, {
        now: now.toISOString(),
        leaseUntil: new Date(now.getTime() + lease).toISOString(),
        token: 'survivor',
        limit: 10,
      });
    };
    assert.equal((await takeOver(lease - 1)).length, 0, 'leased until one lease after the last heartbeat');
    const [taken] = await takeOver(lease);
    assert.equal(taken.attempt, 2);
    release();
    assert.equal((await running).lost, 1, 'the old claim cannot record');
    assert.equal((await rows(endpoint.id))[0].status, 'sending');
  });

  test("claims are fair: a slow endpoint's long queue takes its cap of slots, another organization's go at once", async () => {
    const slowReceiver = receiver;
    let releaseSlow!: () => void;
    const slowAnswer = new Promise<void>((resolve) => (releaseSlow = resolve));
    slowReceiver.setDefaultResponse({ status: 200, after: slowAnswer });
    const slowEndpoint = await createEndpoint(h, tenant, slowReceiver.url);
    // A long queue, all older than the other organization's (the claim once ranked only the 4 oldest per slot).
    const queued = 300;
    for (let i = 0; i < queued; i++) await emitEvent(h, tenant);
    const other = await h.bootstrap('sandbox');
    const fastReceiver = await newReceiver();
    const fastEndpoint = await createEndpoint(h, other, fastReceiver.url);
    for (let i = 0; i < 3; i++) await emitEvent(h, other);

    const w = worker();
    const run = w.runOnce();
    await within(5_000, fastReceiver.waitForRequests(3), "the other organization's deliveries");
    await within(5_000, slowReceiver.waitForRequests(DEFAULT_MAX_PER_ENDPOINT), 'the slow endpoint to get its cap');
    await w.settled();
    assert.deepEqual(
      (await rows(fastEndpoint.id)).map((r) => r.status),
      ['succeeded', 'succeeded', 'succeeded'],
      'delivered and recorded while the slow endpoint still holds its sends',
    );
    releaseSlow();
    const summary = await run;
    assert.equal(summary.claimed, DEFAULT_MAX_PER_ENDPOINT + 3);
    assert.equal(slowReceiver.requests.length, DEFAULT_MAX_PER_ENDPOINT, 'no more than the cap to one endpoint');
    const slowRows = await rows(slowEndpoint.id);
    assert.equal(slowRows.filter((r) => r.status === 'succeeded').length, DEFAULT_MAX_PER_ENDPOINT);
    assert.equal(slowRows.filter((r) => r.status === 'pending').length, queued - DEFAULT_MAX_PER_ENDPOINT);
  });

  test("one claim goes round-robin across endpoints, and counts the worker's sends in flight toward each cap", async () => {
    const a = await createEndpoint(h, tenant, receiver.url);
    for (let i = 0; i < 5; i++) await emitEvent(h, tenant);
    const other = await h.bootstrap('sandbox');
    const b = await createEndpoint(h, other, receiver.url);
    await emitEvent(h, other);
    const now = h.clock.now();
    const claim = (token: string, limit: number, busy?: Map<string, number>) =>
      claimDueDeliveries(h.store.db, {
        now: now.toISOString(),
        leaseUntil: new Date(now.getTime() + 10_000).toISOString(),
        token,
        limit,
        perEndpoint: 3,
        busy,
      });
    // A's five are older, yet a batch of two takes the oldest of each endpoint.
    const first = await claim('one', 2);
    assert.deepEqual(first.map((d) => d.endpoint.id).sort(), [a.id, b.id].sort());
    // The worker now has one in flight to A: with a cap of 3, two more of A's, never a third.
    const second = await claim('two', 10, new Map([[a.id, 1]]));
    assert.deepEqual(
      second.map((d) => d.endpoint.id),
      [a.id, a.id],
    );
    let third: unknown[] = [];
    const statements = await counter.during(async () => {
      third = await claim('three', 10, new Map([[a.id, 3]]));
    });
    assert.equal(third.length, 0, 'A is at its cap');
    // SQLite: the cheap read before the write lock leaves A out, finds nothing, and nothing is written.
    if (dialect === 'sqlite')
      assert.deepEqual(
        statements.map((s) => s.trim().split(/\s+/)[0]),
        ['select'],
      );
  });

  test('a started worker drains a backlog on kept-alive connections and records every attempt once', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    const N = 120;
    for (let i = 0; i < N; i++) await emitEvent(h, tenant);
    const w = worker({ pollIntervalMs: 3_600_000 });
    await w.start();
    await within(20_000, receiver.waitForRequests(N), `all ${N} deliveries`);
    await w.stop();
    assert.equal(new Set(receiver.requests.map((r) => r.headers['x-service-delivery'])).size, N, 'each once');
    // A socket goes back to the pool only once its answer is read, so a few more than the sends
    // in flight may open; without keep-alive there would be one per request.
    assert.ok(
      receiver.connections <= 2 * DEFAULT_MAX_PER_ENDPOINT,
      `${receiver.connections} connections for ${N} requests: connections are reused`,
    );
    assert.deepEqual(
      (await rows(endpoint.id)).map((r) => r.status),
      Array(N).fill('succeeded'),
    );
    const attempts = await h.store.db.selectFrom('webhook_attempts').select('delivery_id').execute();
    assert.equal(attempts.length, N);
  });

  test("settled() waits for the loop's claim under way: a step of the clock after it counts from the claim", async () => {
    // The loop's claims held until released, as a slow database holds them.
    let holding = true;
    const held: Array<() => void> = [];
    const claims = new Set<unknown>();
    const db: Db = h.store.db.withPlugin({
      transformQuery: ({ node, queryId }) => {
        if (JSON.stringify(node).includes('row_number')) claims.add(queryId);
        return node;
      },
      transformResult: async ({ result, queryId }) => {
        if (holding && claims.has(queryId)) await new Promise<void>((resolve) => held.push(resolve));
        return result;
      },
    });
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    const w = worker({ store: { ...h.store, db }, pollIntervalMs: 3_600_000 });
    await w.start();
    await emitEvent(h, tenant);
    await waitUntil(() => held.length > 0, 'the claim to be held');
    let settled = false;
    const settling = w.settled().then(() => (settled = true));
    // Everything else is settled: nothing in flight, nothing to record.
    await new Promise((resolve) => setImmediate(resolve));
    const early = settled;
    holding = false;
    for (const release of held.splice(0)) release();
    assert.equal(early, false, 'settled while the claim was under way');
    await settling;
    await within(5_000, receiver.waitForRequests(1), 'the claimed delivery');
    await w.stop();
    assert.deepEqual(await statusesOf(endpoint.id), ['succeeded']);
  });

  test('attempts that finish in separate callbacks of one turn are recorded in one transaction', async () => {
    await createEndpoint(h, tenant, receiver.url);
    for (let i = 0; i < 3; i++) await emitEvent(h, tenant);
    const now = h.clock.now();
    const claimed = await claimDueDeliveries(h.store.db, {
      now: now.toISOString(),
      leaseUntil: new Date(now.getTime() + 10_000).toISOString(),
      token: 'claim',
      limit: 10,
    });
    assert.equal(claimed.length, 3);
    const { db, counts } = counting();
    const recorder = new AttemptRecorder({ db, clock: h.clock });
    // As answers read in one turn arrive: each in a callback of its own.
    const recorded = await new Promise<Array<Promise<boolean>>>((resolve) => {
      const pending: Array<Promise<boolean>> = [];
      for (const [i, d] of claimed.entries())
        setImmediate(() => {
          pending.push(
            recorder.record({
              deliveryId: d.id,
              token: 'claim',
              record: {
                id: `att_batch${i}`,
                workerId: 'test',
                attempt: {
                  attempt: 1,
                  startedAt: now.toISOString(),
                  durationMs: 1,
                  statusCode: 200,
                  outcome: 'succeeded',
                  errorMessage: null,
                  responseBody: 'ok',
                  responseBodyTruncated: false,
                },
                next: { status: 'succeeded' },
              },
            }),
          );
          if (pending.length === claimed.length) resolve(pending);
        });
    });
    assert.deepEqual(await Promise.all(recorded), [true, true, true]);
    // PostgreSQL records a batch in one statement whose INSERT is SQL of its own (recording.ts).
    if (dialect === 'postgres') assert.equal(counts.queries, 1, 'one statement records the three attempts');
    else assert.equal(counts.attemptInserts, 1, 'one INSERT of the three attempts');
    const statuses = await h.store.db.selectFrom('webhook_deliveries').select('status').execute();
    assert.deepEqual(
      statuses.map((r) => r.status),
      ['succeeded', 'succeeded', 'succeeded'],
    );
  });

  test('a commit of deliveries only for endpoints at their cap does not make the worker read the queue', async () => {
    let release!: () => void;
    receiver.setDefaultResponse({ status: 200, after: new Promise<void>((resolve) => (release = resolve)) });
    const capped = await createEndpoint(h, tenant, receiver.url);
    for (let i = 0; i < 4; i++) await emitEvent(h, tenant);
    const { w, counts } = countingWorker({ maxPerEndpoint: 2 });
    await w.start();
    await within(5_000, receiver.waitForRequests(2), 'the capped endpoint to get its two sends');
    // Twenty more commits for the capped endpoint: each woke the worker to read the queue before.
    const readsBefore = counts.dueReads + counts.claims;
    for (let i = 0; i < 20; i++) await emitEvent(h, tenant);
    assert.equal(
      counts.dueReads + counts.claims - readsBefore,
      0,
      'no read of the queue for commits to a capped endpoint',
    );
    // A commit for another endpoint still wakes it, and its delivery goes at once.
    const other = await h.bootstrap('sandbox');
    const otherReceiver = await newReceiver();
    await createEndpoint(h, other, otherReceiver.url);
    await emitEvent(h, other);
    await within(5_000, otherReceiver.waitForRequests(1), "the other endpoint's delivery");
    // Once its sends are answered, the capped endpoint's queue drains: nothing was lost by sleeping.
    release();
    await within(10_000, receiver.waitForRequests(24), 'every delivery of the capped endpoint');
    await w.stop();
    assert.equal((await rows(capped.id)).filter((r) => r.status === 'succeeded').length, 24);
  });

  test('the claim that refills an endpoint back at half its cap does not first read whether anything is due', async () => {
    let releaseFirst!: () => void;
    let releaseRest!: () => void;
    const rest = new Promise<void>((resolve) => (releaseRest = resolve));
    receiver.respondWith({ status: 200, after: new Promise<void>((resolve) => (releaseFirst = resolve)) });
    receiver.setDefaultResponse({ status: 200, after: rest });
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    for (let i = 0; i < 6; i++) await emitEvent(h, tenant);
    const { w, counts } = countingWorker({ maxPerEndpoint: 2 });
    await w.start();
    await within(5_000, receiver.waitForRequests(2), 'the endpoint to get its cap of two');
    await w.settled();
    const readsBefore = counts.dueReads;
    const claimsBefore = counts.claims;
    // One answer in: the endpoint is at half its cap, and the worker claims one more for it.
    releaseFirst();
    await within(5_000, receiver.waitForRequests(3), 'the refill');
    // That claim took the endpoint to its cap again, but the look past it for other endpoints'
    // deliveries (the fairness of the claims) found nothing when the worker started, and nothing
    // woke it since: no read first, and no second claim. (PostgreSQL never reads first: a claim
    // there locks only rows.)
    assert.equal(counts.dueReads - readsBefore, 0);
    assert.equal(counts.claims - claimsBefore, 1, 'the refill alone');
    releaseRest();
    await within(10_000, receiver.waitForRequests(6), 'the rest of the queue');
    await w.stop();
    assert.deepEqual(
      (await rows(endpoint.id)).map((r) => r.status),
      Array(6).fill('succeeded'),
    );
  });

  /** Responses held until released one by one: `gates[i].resolve()` answers the i-th request. */
  const heldResponses = (count: number) =>
    Array.from({ length: count }, () => {
      let resolve!: () => void;
      return { promise: new Promise<void>((r) => (resolve = r)), resolve: () => resolve() };
    });
  const statusesOf = async (endpointId: string) => (await rows(endpointId)).map((r) => r.status);

  test("an answering endpoint's next deliveries are claimed ahead: each goes as a send ends, no claim between; a stop gives them back", async () => {
    const gates = heldResponses(8);
    receiver.respondWith(...gates.map((g) => ({ status: 200, after: g.promise })));
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    for (let i = 0; i < 8; i++) await emitEvent(h, tenant);
    const { w, counts } = countingWorker({ maxPerEndpoint: 2, claimAheadPerEndpoint: 2, maxInFlight: 8 });
    const sending = async () => (await statusesOf(endpoint.id)).filter((s) => s === 'sending').length;
    await w.start();
    await within(5_000, receiver.waitForRequests(2), 'the endpoint to get its cap of two');
    await w.settled();
    // Not heard from yet: two claimed, both sent.
    assert.equal(await sending(), 2);
    // An answer: the refill claims up to the cap and two ahead, and sends one (two at once, no more).
    gates[0].resolve();
    await within(5_000, receiver.waitForRequests(3), 'the refill');
    await w.settled();
    assert.equal(await sending(), 4, 'one in flight, one more sent, two claimed ahead');
    assert.equal(receiver.requests.length, 3, 'two sends at once');
    // The next answer starts a delivery claimed ahead: no claim before it goes.
    const claims = counts.claims;
    gates[1].resolve();
    await within(5_000, receiver.waitForRequests(4), 'a delivery claimed ahead');
    await w.settled();
    assert.equal(counts.claims, claims);
    assert.equal(receiver.requests.length, 4, 'two sends at once');
    // Stopping, it claims nothing more, and gives back the one it claimed ahead without sending
    // it: due at once, unleased, its attempt not counted. The two in flight are answered and recorded.
    const stopping = w.stop();
    for (const g of gates) g.resolve();
    await stopping;
    assert.equal(receiver.requests.length, 4);
    const after = await rows(endpoint.id);
    assert.deepEqual(after.map((r) => r.status).sort(), [...Array(4).fill('pending'), ...Array(4).fill('succeeded')]);
    const givenBack = await h.store.db
      .selectFrom('webhook_deliveries')
      .select(['attempt_count', 'lease_token', 'due_at'])
      .where('endpoint_id', '=', endpoint.id)
      .where('status', '=', 'pending')
      .where('attempt_count', '>', 0)
      .execute();
    assert.deepEqual(givenBack, [], 'no pending delivery counts an attempt');
    const pendingDue = after.filter((r) => r.status === 'pending').map((r) => Date.parse(r.due_at!));
    assert.ok(
      pendingDue.every((t) => t <= h.clock.now().getTime()),
      'every pending delivery is due now',
    );
    // The next worker sends the four left, the one given back among them.
    const { w: next } = countingWorker({ maxPerEndpoint: 2, claimAheadPerEndpoint: 2, maxInFlight: 8 });
    await next.start();
    await within(5_000, receiver.waitForRequests(8), 'the next worker to send the rest');
    await next.stop();
    assert.deepEqual(await statusesOf(endpoint.id), Array(8).fill('succeeded'));
    assert.deepEqual(
      (await rows(endpoint.id)).map((r) => r.attempt_count),
      Array(8).fill(1),
    );
  });

  test('a backlog to one capped endpoint is looked past once, not after every refill', async () => {
    const gates = heldResponses(10);
    receiver.respondWith(...gates.map((g) => ({ status: 200, after: g.promise })));
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    for (let i = 0; i < 10; i++) await emitEvent(h, tenant);
    // Nothing claimed ahead: each answer is a refill of its own, the claims this counts.
    const { w, counts } = countingWorker({ maxPerEndpoint: 2, claimAheadPerEndpoint: 0 });
    const looks = () => counts.claims + counts.dueReads;
    await w.start();
    await within(5_000, receiver.waitForRequests(2), 'the endpoint to get its cap of two');
    await w.settled();
    // Started: it claimed two, then looked past the capped endpoint once and found nothing.
    const started = looks();
    // Each answer brings the endpoint to half its cap, and one claim refills it. A claim past the
    // capped endpoint reads its whole backlog (the due index is in due order), and it followed
    // every refill: two reads per refill where one does.
    for (let i = 0; i < 4; i++) {
      gates[i].resolve();
      await within(5_000, receiver.waitForRequests(3 + i), `refill ${i + 1}`);
    }
    await w.settled();
    assert.equal(looks() - started, 4, 'one claim per refill');
    for (const g of gates) g.resolve();
    await within(10_000, receiver.waitForRequests(10), 'the rest of the backlog');
    await w.stop();
    assert.deepEqual(await statusesOf(endpoint.id), Array(10).fill('succeeded'));
  });

  test('a retry that comes due beside a capped endpoint goes within a poll interval of the last look', async () => {
    const pollIntervalMs = 1_000;
    const gates = heldResponses(6);
    receiver.respondWith(...gates.map((g) => ({ status: 200, after: g.promise })));
    const capped = await createEndpoint(h, tenant, receiver.url);
    const other = await h.bootstrap('sandbox');
    const retryReceiver = await newReceiver();
    retryReceiver.respondWith({ status: 500 });
    const retried = await createEndpoint(h, other, retryReceiver.url);
    await emitEvent(h, other);
    // Nothing claimed ahead: the refill after an answer is the claim that skips the look.
    const { w } = countingWorker({
      maxPerEndpoint: 2,
      maxInFlight: 3,
      pollIntervalMs,
      timeoutMs: 60_000,
      claimAheadPerEndpoint: 0,
    });
    await w.start();
    await within(5_000, retryReceiver.waitForRequests(1), 'the first attempt, answered 500');
    await waitUntil(async () => !(await statusesOf(retried.id)).includes('sending'), 'the first attempt recorded', {
      on: [[workerAttempts, 'attempt']],
    });
    await w.settled();
    const dueAt = Date.parse((await rows(retried.id))[0].due_at!);
    // The look past the capped endpoint, 950 ms before the retry comes due (no wake-up announces it).
    h.clock.advance(dueAt - 950 - h.clock.now().getTime());
    for (let i = 0; i < 6; i++) await emitEvent(h, tenant);
    await within(5_000, receiver.waitForRequests(2), 'the capped endpoint to get its cap of two');
    await w.settled();
    // 900 ms on, an answer: the refill takes the endpoint to its cap again and skips the look.
    h.clock.advance(900);
    gates[0].resolve();
    await within(5_000, receiver.waitForRequests(3), 'the refill');
    await w.settled();
    // 150 ms on the retry is due, and the look owed since the end of the last one's interval runs:
    // waiting a full poll interval from the refill would leave the retry until 1,900 ms.
    h.clock.advance(150);
    await within(5_000, retryReceiver.waitForRequests(2), 'the retry, within the interval of the last look');
    for (const g of gates) g.resolve();
    await within(10_000, receiver.waitForRequests(6), "the capped endpoint's backlog");
    await w.stop();
    assert.deepEqual(await statusesOf(retried.id), ['succeeded']);
    assert.deepEqual(await statusesOf(capped.id), Array(6).fill('succeeded'));
  });

  test('a commit for another endpoint makes the next claim that caps an endpoint look past it again', async () => {
    const gates = heldResponses(12);
    receiver.respondWith(...gates.map((g) => ({ status: 200, after: g.promise })));
    const capped = await createEndpoint(h, tenant, receiver.url);
    for (let i = 0; i < 12; i++) await emitEvent(h, tenant);
    // A cap of 4 of 5 slots: one answer leaves the endpoint at 3, not back at half, so nothing
    // refills it until a wake-up; the claim that wake-up makes takes it to its cap again. (When
    // the claim ranked only the 8 oldest due deliveries, 4 per free slot, all the capped
    // endpoint's, only a look past it found the other's; it now ranks each endpoint's own.)
    const { w } = countingWorker({ maxPerEndpoint: 4, maxInFlight: 5 });
    await w.start();
    await within(5_000, receiver.waitForRequests(4), 'the endpoint to get its cap of four');
    gates[0].resolve();
    await waitUntil(async () => (await statusesOf(capped.id)).includes('succeeded'), 'the first answer recorded', {
      on: [[workerAttempts, 'attempt']],
    });
    await w.settled();
    // The new delivery is the newest, behind the capped endpoint's 8 still due. The look at the
    // start found nothing; this commit is news since.
    const other = await h.bootstrap('sandbox');
    const otherReceiver = await newReceiver();
    const fresh = await createEndpoint(h, other, otherReceiver.url);
    await emitEvent(h, other);
    await within(5_000, otherReceiver.waitForRequests(1), "the other endpoint's delivery");
    for (const g of gates) g.resolve();
    await within(10_000, receiver.waitForRequests(12), "the capped endpoint's backlog");
    await w.stop();
    assert.deepEqual(await statusesOf(fresh.id), ['succeeded']);
    assert.deepEqual(await statusesOf(capped.id), Array(12).fill('succeeded'));
  });

  test('a commit of this process wakes the worker to claim at once, without first reading what is due', async () => {
    await createEndpoint(h, tenant, receiver.url);
    const { w, counts } = countingWorker();
    await w.start();
    // Started, it looked once and found nothing due.
    await w.settled();
    const readsBefore = counts.dueReads;
    await emitEvent(h, tenant);
    await within(5_000, receiver.waitForRequests(1), 'the delivery');
    await w.stop();
    assert.equal(counts.dueReads - readsBefore, 0, 'reads of what is due');
  });

  test('a claim is one statement where the dialect can write and read in one (PostgreSQL), else two', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    for (let i = 0; i < 3; i++) await emitEvent(h, tenant);
    const { db, counts } = counting();
    const now = h.clock.now();
    const claimed = await claimDueDeliveries(db, {
      now: now.toISOString(),
      leaseUntil: new Date(now.getTime() + 10_000).toISOString(),
      token: 'one-statement',
      limit: 10,
      knownDue: true,
    });
    // PostgreSQL: WITH claimed AS (UPDATE … RETURNING) SELECT … JOIN, with no transaction around
    // it. SQLite: the UPDATE in its BEGIN IMMEDIATE, then the read of what sending needs.
    assert.equal(counts.queries, dialect === 'postgres' ? 1 : 2);
    assert.equal(claimed.length, 3);
    for (const d of claimed) {
      assert.equal(d.leaseToken, 'one-statement');
      assert.equal(d.attempt, 1);
      assert.equal(d.endpoint.id, endpoint.id);
      assert.equal(d.endpoint.url, receiver.url);
      assert.equal(d.event.appId, tenant.appId);
    }
    const stored = await rows(endpoint.id);
    assert.deepEqual(
      stored.map((r) => [r.status, r.attempt_count]),
      Array(3).fill(['sending', 1]),
    );
  });

  // LISTEN/NOTIFY exists on PostgreSQL only.
  if (dialect === 'postgres') {
    test("the NOTIFY of this process's own commit does not wake its worker a second time", async () => {
      await createEndpoint(h, tenant, receiver.url);
      const { w, counts } = countingWorker();
      await w.start();
      await w.settled();
      const claimsBefore = counts.claims;
      // Woken in process; the NOTIFY of the same commit comes back to its listener as an echo.
      await emitEvent(h, tenant);
      await within(5_000, receiver.waitForRequests(1), 'the first delivery');
      // A commit of another process (wake-ups of their own): only its NOTIFY can wake the worker.
      // It reaches the listener after the echo of the first, on the same connection, so once its
      // delivery arrives the echo has been heard too.
      const elsewhere = createUnitOfWork({ db: h.store.db, clock: h.clock, wakeups: new DeliveryWakeups() });
      const source = { appId: tenant.appId, orgId: tenant.orgId, environment: 'sandbox' as const };
      await elsewhere((work) => work.record(source, 'verification.completed', completedData('sess_elsewhere')));
      await within(5_000, receiver.waitForRequests(2), 'the delivery of the other process');
      await w.stop();
      // One claim per commit: the echo of the first claimed nothing more.
      assert.equal(counts.claims - claimsBefore, 2);
    });
  }
});
