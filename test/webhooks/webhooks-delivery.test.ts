import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import { unixSeconds } from '../../src/webhooks/signature.ts';
import { verifyWebhookSignature } from '../../packages/sdk/src/webhooks.ts';
import { claimDueDeliveries } from '../../src/store/webhook-deliveries/claim.ts';
import { recordAttempt } from '../../src/store/webhook-deliveries/recording.ts';
import type { DeliveryWorker } from '../../src/webhooks/worker.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { buildPresentation, consent, createSession, submit } from '../support/sessions.ts';
import { completedData, createEndpoint, emitEvent, sentHeaders, within, workerFor } from '../support/webhooks.ts';

/** HMAC-SHA256 of `t.body`, computed here without the service's signing code. */
const hmac = (secret: string, t: string, body: Buffer) =>
  createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');

/** Standard Webhooks v1, computed here: base64 HMAC-SHA256 keyed with the base64 after whsec_. */
const standardHmac = (secret: string, id: string, t: string, body: Buffer) =>
  createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
    .update(`${id}.${t}.`)
    .update(body)
    .digest('base64');

function signatureParts(header: string) {
  const items = header.split(',').map((item) => item.split('='));
  return { t: items.find(([k]) => k === 't')![1], v1: items.filter(([k]) => k === 'v1').map(([, v]) => v) };
}

forEachDialect('webhook delivery', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  const workers: DeliveryWorker[] = [];
  const worker = (options: Parameters<typeof workerFor>[1] = {}) => {
    const w = workerFor(h, options);
    workers.push(w);
    return w;
  };
  const deliveriesOf = async (endpointId: string) =>
    (
      await h.app.inject({ method: 'GET', url: `/org/v1/webhooks/${endpointId}/deliveries`, headers: tenant.auth })
    ).json().data;

  before(async () => {
    h = await startHarness(dialect, { WEBHOOK_RETRY_SCHEDULE: '10,60' });
  });
  beforeEach(async () => {
    tenant = await h.bootstrap('sandbox');
    receiver = await startWebhookReceiver();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await receiver.close();
    // Each test starts with an empty outbox: nothing left due for the next one's worker.
    await h.store.db.deleteFrom('webhook_attempts').execute();
    await h.store.db.deleteFrom('webhook_deliveries').execute();
  });
  after(() => h.close());

  test('sends exactly the contract: POST, the event envelope, the six headers, a signature that verifies', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    const event = await emitEvent(h, tenant, 'verification.completed');
    const summary = await worker().runOnce();
    assert.deepEqual(summary, { claimed: 1, succeeded: 1, retrying: 0, failed: 0, lost: 0 });

    assert.equal(receiver.requests.length, 1);
    const request = receiver.requests[0];
    assert.equal(request.method, 'POST');
    assert.equal(request.path, '/hooks');
    const body = request.body.toString('utf8');
    assert.equal(
      body,
      JSON.stringify({
        id: event.id,
        event: event.event,
        createdAt: event.createdAt,
        appId: tenant.appId,
        environment: 'sandbox',
        data: event.data,
      }),
    );
    assert.deepEqual(Object.keys(JSON.parse(body)), ['id', 'event', 'createdAt', 'appId', 'environment', 'data']);

    const [delivery] = await deliveriesOf(endpoint.id);
    const t = String(unixSeconds(h.clock.now()));
    assert.deepEqual(sentHeaders(request), {
      host: `127.0.0.1:${receiver.port}`,
      connection: 'keep-alive',
      'content-length': String(request.body.length),
      'Content-Type': 'application/json',
      'User-Agent': 'Service-Webhooks/1.0',
      'X-Service-Signature': `t=${t},v1=${hmac(endpoint.secret, t, request.body)}`,
      'X-Service-Event': 'verification.completed',
      'X-Service-Delivery': delivery.id,
      'X-Service-Delivery-Attempt': '1',
      'webhook-id': event.id,
      'webhook-timestamp': t,
      'webhook-signature': `v1,${standardHmac(endpoint.secret, event.id, t, request.body)}`,
    });
    assert.match(delivery.id, /^del_[0-9a-z]{26}$/);
    const verified = verifyWebhookSignature(request.body, request.headers['x-service-signature'], endpoint.secret, {
      now: h.clock.now(),
    });
    assert.deepEqual(verified, { ok: true, timestamp: Number(t) });
    const forged = verifyWebhookSignature(
      request.body,
      request.headers['x-service-signature'],
      'whsec_not-the-secret',
      { now: h.clock.now() },
    );
    assert.equal(forged.ok, false);

    assert.equal(delivery.status, 'succeeded');
    assert.equal(delivery.deliveredAt, h.clock.now().toISOString());
    assert.equal(delivery.nextAttemptAt, null);
    assert.equal(delivery.attempts.length, 1);
    const [attempt] = delivery.attempts;
    assert.deepEqual(
      {
        attempt: attempt.attempt,
        statusCode: attempt.statusCode,
        outcome: attempt.outcome,
        responseBody: attempt.responseBody,
        startedAt: attempt.startedAt,
      },
      { attempt: 1, statusCode: 200, outcome: 'succeeded', responseBody: 'ok', startedAt: h.clock.now().toISOString() },
    );
    assert.equal(typeof attempt.durationMs, 'number');
    assert.deepEqual(await worker().runOnce(), { claimed: 0, succeeded: 0, retrying: 0, failed: 0, lost: 0 });
  });

  test('the real flow: consent and a verified presentation are delivered as consent.approved and verification.completed (6.3)', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url, ['consent.approved', 'verification.completed']);
    const session = await createSession(h, tenant);
    assert.equal((await consent(h, session)).statusCode, 200);
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce: session.challengeNonce });
    assert.equal((await submit(h, session, 'sd-jwt-vc', presentation)).statusCode, 200);
    assert.equal((await worker().runOnce()).succeeded, 2);

    const byEvent = new Map(
      receiver.requests.map((r) => [r.headers['x-service-event'], JSON.parse(r.body.toString())]),
    );
    assert.deepEqual(byEvent.get('consent.approved').data, { sessionId: session.sessionId });
    const completed = byEvent.get('verification.completed');
    assert.deepEqual(completed.data, {
      sessionId: session.sessionId,
      verified: true,
      university: { name: 'Sandbox State University', domain: 'sandbox-state.example', country: 'US' },
      claims: {
        is_active_student: true,
        university_domain: 'sandbox-state.example',
        academic_level: null,
        // Always asked of the wallet, and the SD-JWT reveals it: reported (6.3 types it a timestamp).
        valid_until: '2027-09-30T00:00:00.000Z',
      },
      // An addition to 6.3: which wallet protocol answered.
      protocol: 'matricula',
    });
    assert.equal(completed.appId, tenant.appId);
    for (const request of receiver.requests) {
      assert.equal(
        verifyWebhookSignature(request.body, request.headers['x-service-signature'], endpoint.secret, {
          now: h.clock.now(),
        }).ok,
        true,
      );
    }
  });

  test("only enabled endpoints of the event's application that subscribe to it get a delivery; a rollback leaves none", async () => {
    const subscribed = await createEndpoint(h, tenant, receiver.url, ['verification.completed']);
    const otherEvent = await createEndpoint(h, tenant, receiver.url, ['consent.approved']);
    const disabled = await createEndpoint(h, tenant, receiver.url, ['verification.completed']);
    await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/webhooks/${disabled.id}`,
      headers: tenant.auth,
      payload: { enabled: false },
    });
    const stranger = await h.bootstrap('sandbox');
    const strangers = await createEndpoint(h, stranger, receiver.url, ['verification.completed']);

    const event = await emitEvent(h, tenant, 'verification.completed');
    const rows = await h.store.db
      .selectFrom('webhook_deliveries')
      .select(['endpoint_id', 'event_id', 'status'])
      .execute();
    assert.deepEqual(rows, [{ endpoint_id: subscribed.id, event_id: event.id, status: 'pending' }]);
    assert.ok(![otherEvent.id, disabled.id, strangers.id].includes(rows[0].endpoint_id));

    // A rollback leaves no event, no delivery, and wakes no worker.
    let wakeups = 0;
    const unsubscribe = h.services.wakeups.subscribe(() => wakeups++);
    try {
      await assert.rejects(
        h.services.unitOfWork(async (work) => {
          await work.record(
            { appId: tenant.appId, orgId: tenant.orgId, environment: 'sandbox' },
            'verification.completed',
            completedData('sess_x'),
          );
          throw new Error('the state change failed');
        }),
        /state change failed/,
      );
    } finally {
      unsubscribe();
    }
    assert.equal(wakeups, 0);
    assert.equal((await h.store.db.selectFrom('webhook_deliveries').select('id').execute()).length, 1);
    assert.equal(
      (await h.store.db.selectFrom('events').select('id').where('app_id', '=', tenant.appId).execute()).length,
      1,
    );
  });

  test('retries follow the schedule on the injected clock, then the delivery fails; a manual retry is one more attempt', async () => {
    receiver.setDefaultResponse({ status: 500, body: 'boom' });
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    await emitEvent(h, tenant);
    const w = worker();
    const t0 = h.clock.now().getTime();

    assert.equal((await w.runOnce()).retrying, 1);
    let [delivery] = await deliveriesOf(endpoint.id);
    assert.equal(delivery.status, 'pending');
    assert.equal(delivery.nextAttemptAt, new Date(t0 + 10_000).toISOString());

    h.clock.advance(9_999);
    assert.equal((await w.runOnce()).claimed, 0, 'not before 10 s');
    h.clock.advance(1);
    assert.equal((await w.runOnce()).retrying, 1);
    [delivery] = await deliveriesOf(endpoint.id);
    assert.equal(delivery.nextAttemptAt, new Date(t0 + 70_000).toISOString());

    h.clock.advance(59_999);
    assert.equal((await w.runOnce()).claimed, 0, 'not before 60 s more');
    h.clock.advance(1);
    assert.equal((await w.runOnce()).failed, 1, 'the third attempt was the last of "10,60"');
    h.clock.advance(7 * 24 * 3600 * 1000);
    assert.equal((await w.runOnce()).claimed, 0);

    [delivery] = await deliveriesOf(endpoint.id);
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.nextAttemptAt, null);
    assert.deepEqual(
      delivery.attempts.map((a: { attempt: number; statusCode: number; outcome: string; responseBody: string }) => [
        a.attempt,
        a.statusCode,
        a.outcome,
        a.responseBody,
      ]),
      [
        [1, 500, 'http_error', 'boom'],
        [2, 500, 'http_error', 'boom'],
        [3, 500, 'http_error', 'boom'],
      ],
    );
    assert.deepEqual(
      receiver.requests.map((r) => r.headers['x-service-delivery-attempt']),
      ['1', '2', '3'],
    );
    assert.deepEqual(new Set(receiver.requests.map((r) => r.headers['x-service-delivery'])), new Set([delivery.id]));
    assert.equal(new Set(receiver.requests.map((r) => r.body.toString())).size, 1, 'every retry carries the same body');

    receiver.setDefaultResponse({ status: 204 });
    const retry = await h.app.inject({
      method: 'POST',
      url: `/org/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/retry`,
      headers: tenant.auth,
    });
    assert.equal(retry.statusCode, 200);
    assert.equal(retry.json().data.status, 'pending');
    assert.equal(retry.json().data.nextAttemptAt, h.clock.now().toISOString());
    assert.equal((await w.runOnce()).succeeded, 1);
    assert.equal(receiver.requests.at(-1)!.headers['x-service-delivery-attempt'], '4');
    [delivery] = await deliveriesOf(endpoint.id);
    assert.equal(delivery.status, 'succeeded');
  });

  test('retry delays carry ±20 % jitter from the injected random source', async () => {
    receiver.setDefaultResponse({ status: 503 });
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    await emitEvent(h, tenant);
    const low = worker({ random: () => 0 });
    await low.runOnce();
    const [delivery] = await deliveriesOf(endpoint.id);
    assert.equal(delivery.nextAttemptAt, new Date(h.clock.now().getTime() + 8_000).toISOString());
  });

  test('a 410 fails the delivery and disables the endpoint; a disabled endpoint gets nothing new until enabled', async () => {
    receiver.respondWith({ status: 410, body: 'gone' });
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    await emitEvent(h, tenant);
    const w = worker();
    assert.equal((await w.runOnce()).failed, 1);
    const read = (
      await h.app.inject({ method: 'GET', url: `/org/v1/webhooks/${endpoint.id}`, headers: tenant.auth })
    ).json().data;
    assert.deepEqual([read.enabled, read.disabledReason], [false, 'endpoint_gone']);

    await emitEvent(h, tenant);
    h.clock.advance(3600_000);
    assert.equal((await w.runOnce()).claimed, 0);
    assert.equal((await deliveriesOf(endpoint.id)).length, 1, 'no delivery was created while disabled');

    await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/webhooks/${endpoint.id}`,
      headers: tenant.auth,
      payload: { enabled: true },
    });
    await emitEvent(h, tenant);
    assert.equal((await w.runOnce()).succeeded, 1);
    assert.equal(receiver.requests.length, 2);
  });

  test('deliveries pending when an endpoint is disabled are held, and resume when it is enabled again', async () => {
    receiver.respondWith({ status: 500 });
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    await emitEvent(h, tenant);
    const w = worker();
    assert.equal((await w.runOnce()).retrying, 1);
    await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/webhooks/${endpoint.id}`,
      headers: tenant.auth,
      payload: { enabled: false },
    });
    h.clock.advance(60_000);
    assert.equal((await w.runOnce()).claimed, 0);
    await h.app.inject({
      method: 'PATCH',
      url: `/org/v1/webhooks/${endpoint.id}`,
      headers: tenant.auth,
      payload: { enabled: true },
    });
    assert.equal((await w.runOnce()).succeeded, 1);
  });

  test('no complete answer within the timeout is a failed attempt, retried', async () => {
    receiver.respondWith({ kind: 'hang' });
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    await emitEvent(h, tenant);
    // The timeout runs on the injected clock: the attempt ends when the clock passes it, not before.
    let settled = false;
    const run = worker({ timeoutMs: 300 })
      .runOnce()
      .finally(() => (settled = true));
    await within(5_000, receiver.waitForRequests(receiver.requests.length + 1), 'the attempt');
    h.clock.advance(299);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false, 'still waiting 1 ms before the timeout');
    h.clock.advance(1);
    assert.equal((await run).retrying, 1);
    const [delivery] = await deliveriesOf(endpoint.id);
    const [attempt] = delivery.attempts;
    assert.deepEqual([attempt.outcome, attempt.statusCode], ['timeout', null]);
    assert.match(attempt.errorMessage, /300 ms/);
  });

  test('a redirect is not followed: a failed attempt, and its target never called', async () => {
    const target = await startWebhookReceiver();
    try {
      receiver.respondWith({ kind: 'redirect', location: target.url, status: 307 });
      const endpoint = await createEndpoint(h, tenant, receiver.url);
      await emitEvent(h, tenant);
      assert.equal((await worker().runOnce()).retrying, 1);
      assert.equal(target.requests.length, 0);
      const [attempt] = (await deliveriesOf(endpoint.id))[0].attempts;
      assert.deepEqual([attempt.outcome, attempt.statusCode], ['redirect_not_followed', 307]);
    } finally {
      await target.close();
    }
  });

  test('after a rotation both secrets sign for 24 h, then only the new one', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    const rotated = (
      await h.app.inject({ method: 'POST', url: `/org/v1/webhooks/${endpoint.id}/rotate-secret`, headers: tenant.auth })
    ).json().data;
    const w = worker();
    await emitEvent(h, tenant);
    await w.runOnce();
    const during = receiver.requests[0];
    const { t, v1 } = signatureParts(String(during.headers['x-service-signature']));
    assert.deepEqual(v1, [hmac(rotated.secret, t, during.body), hmac(endpoint.secret, t, during.body)]);
    for (const secret of [endpoint.secret, rotated.secret]) {
      assert.equal(
        verifyWebhookSignature(during.body, during.headers['x-service-signature'], secret, { now: h.clock.now() }).ok,
        true,
      );
    }

    h.clock.advance(24 * 3600 * 1000);
    await emitEvent(h, tenant);
    await w.runOnce();
    const afterExpiry = receiver.requests[1];
    const later = signatureParts(String(afterExpiry.headers['x-service-signature']));
    assert.deepEqual(later.v1, [hmac(rotated.secret, later.t, afterExpiry.body)]);
    const old = verifyWebhookSignature(afterExpiry.body, afterExpiry.headers['x-service-signature'], endpoint.secret, {
      now: h.clock.now(),
    });
    assert.deepEqual(old.ok ? 'accepted' : old.reason, 'signature_mismatch');
  });

  test('the SSRF guard holds at delivery: a host resolving to loopback is not called when private targets are refused', async () => {
    // Registered while private targets were allowed; the worker runs under the production policy.
    const endpoint = await createEndpoint(h, tenant, `https://localhost:${receiver.port}/hooks`);
    await emitEvent(h, tenant);
    const strict = worker({ config: { ...h.config, outboundAllowPrivateTargets: false } });
    assert.equal((await strict.runOnce()).retrying, 1);
    assert.equal(receiver.requests.length, 0);
    const [attempt] = (await deliveriesOf(endpoint.id))[0].attempts;
    assert.equal(attempt.outcome, 'ssrf_refused');
    assert.match(attempt.errorMessage, /localhost resolves to .*loopback/);
  });

  test("a URL the worker's policy refuses is refused at every attempt; another worker's policy is its own", async () => {
    // http:// to loopback, registered while private targets were allowed.
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    await emitEvent(h, tenant);
    const strict = worker({ config: { ...h.config, outboundAllowPrivateTargets: false } });
    assert.equal((await strict.runOnce()).retrying, 1);
    h.clock.advance(11_000);
    assert.equal((await strict.runOnce()).retrying, 1);
    assert.equal(receiver.requests.length, 0);
    const refused = ['ssrf_refused', 'The URL must use https://.'];
    const attemptsOf = async () =>
      ((await deliveriesOf(endpoint.id))[0].attempts as Array<{ outcome: string; errorMessage: string }>).map((a) => [
        a.outcome,
        a.errorMessage,
      ]);
    assert.deepEqual(await attemptsOf(), [refused, refused]);
    // A worker under the development policy sends the same URL.
    h.clock.advance(61_000);
    assert.equal((await worker().runOnce()).succeeded, 1);
    assert.equal(receiver.requests.length, 1);
  });

  test('a deleted endpoint gets nothing; a send in flight while it is deleted records nothing', async () => {
    let release!: () => void;
    receiver.respondWith({ after: new Promise<void>((resolve) => (release = resolve)) });
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    await emitEvent(h, tenant);
    const w = worker();
    const running = w.runOnce();
    await within(5_000, receiver.waitForRequests(1), 'the delivery to arrive');
    const del = await h.app.inject({ method: 'DELETE', url: `/org/v1/webhooks/${endpoint.id}`, headers: tenant.auth });
    assert.equal(del.statusCode, 200);
    release();
    assert.deepEqual(await running, { claimed: 1, succeeded: 0, retrying: 0, failed: 0, lost: 1 });
    await emitEvent(h, tenant);
    assert.equal((await w.runOnce()).claimed, 0);
    assert.equal((await h.store.db.selectFrom('webhook_attempts').select('id').execute()).length, 0);
  });

  test('a delivery whose worker died is claimed again once its lease runs out; the stale claim cannot record', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    await emitEvent(h, tenant);
    // A worker claims, then dies before sending.
    const now = h.clock.now();
    const [dead] = await claimDueDeliveries(h.store.db, {
      now: now.toISOString(),
      leaseUntil: new Date(now.getTime() + h.config.webhookLeaseSeconds * 1000).toISOString(),
      token: 'dead-worker',
      limit: 10,
    });
    assert.equal(dead.attempt, 1);
    const w = worker();
    assert.equal((await w.runOnce()).claimed, 0, 'leased');
    h.clock.advance(h.config.webhookLeaseSeconds * 1000 - 1);
    assert.equal((await w.runOnce()).claimed, 0, 'still leased');
    h.clock.advance(1);
    assert.equal((await w.runOnce()).succeeded, 1);
    assert.equal(receiver.requests[0].headers['x-service-delivery-attempt'], '2');

    const stale = await recordAttempt(
      h.store.db,
      dead.id,
      'dead-worker',
      {
        id: 'att_stale',
        workerId: 'dead',
        attempt: {
          attempt: 1,
          startedAt: now.toISOString(),
          durationMs: 1,
          statusCode: 500,
          outcome: 'http_error',
          errorMessage: null,
          responseBody: '',
          responseBodyTruncated: false,
        },
        next: { status: 'failed' },
      },
      now.toISOString(),
    );
    assert.equal(stale, false);
    const [delivery] = await deliveriesOf(endpoint.id);
    assert.equal(delivery.status, 'succeeded');
    assert.equal(delivery.attempts.length, 1);
  });

  test('a started worker is woken by a commit at once, not by its poll', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url, ['webhook.test']);
    const w = worker({ pollIntervalMs: 3_600_000 });
    const app = h.app;
    try {
      await w.start();
      assert.equal(w.state, 'running');
      const res = await app.inject({
        method: 'POST',
        url: `/org/v1/webhooks/${endpoint.id}/test`,
        headers: tenant.auth,
      });
      assert.equal(res.statusCode, 201);
      const [request] = await within(5_000, receiver.waitForRequests(1), 'the test event');
      assert.equal(request.headers['x-service-event'], 'webhook.test');
      assert.equal(request.headers['x-service-delivery'], res.json().data.id);
      const body = JSON.parse(request.body.toString());
      assert.deepEqual(body.data, {
        endpointId: endpoint.id,
        message: 'This is a test event sent from the Matricula API.',
      });
    } finally {
      await w.stop();
    }
    assert.equal(w.state, 'stopped');
  });

  test('stop() waits for the sends in flight and records them', async () => {
    let release!: () => void;
    receiver.respondWith({ after: new Promise<void>((resolve) => (release = resolve)) });
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    await emitEvent(h, tenant);
    const w = worker({ pollIntervalMs: 3_600_000 });
    await w.start();
    await within(5_000, receiver.waitForRequests(1), 'the delivery');
    const stopping = w.stop();
    assert.equal(w.state, 'stopping');
    release();
    await stopping;
    assert.equal(w.state, 'stopped');
    assert.equal((await deliveriesOf(endpoint.id))[0].status, 'succeeded');
  });

  // LISTEN/NOTIFY exists on PostgreSQL only; SQLite has a single process to wake.
  if (dialect === 'postgres') {
    test('PostgreSQL: a commit through another connection pool wakes the worker by NOTIFY', async () => {
      await createEndpoint(h, tenant, receiver.url);
      const other = await h.testStore.openAnother();
      // Not subscribed to this process's wake-ups: only the NOTIFY can wake it.
      const w = worker({ store: other, pollIntervalMs: 3_600_000, wakeups: undefined });
      try {
        // A first event, due before the start, is taken by the loop's first claim; once it arrives the
        // loop is waiting on a one-hour poll, and only a wake-up can make it claim the second.
        const first = await emitEvent(h, tenant);
        await w.start();
        await within(5_000, receiver.waitForRequests(1), 'the first delivery');
        const second = await emitEvent(h, tenant);
        const requests = await within(5_000, receiver.waitForRequests(2), 'the NOTIFY-woken delivery');
        assert.deepEqual(
          requests.map((r) => JSON.parse(r.body.toString()).id),
          [first.id, second.id],
        );
      } finally {
        await w.stop();
        await other.close();
      }
    });
  }
});
