import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { Webhook as SvixWebhook } from 'svix';
import { Matricula, WebhookVerificationError } from '../../packages/sdk/src/index.ts';
import { verifyWebhookSignature } from '../../packages/sdk/src/webhooks.ts';
import type { DeliveryWorker } from '../../src/webhooks/worker.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { startWebhookReceiver, type RecordedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { buildPresentation, consent, createSession, submit } from '../support/sessions.ts';
import { createEndpoint, emitEvent, workerFor } from '../support/webhooks.ts';

/**
 * Real deliveries (the real worker sending to a local receiver) verified with libraries we did not
 * write: `standardwebhooks` and `svix` read the webhook-* headers, Stripe's constructEvent reads
 * X-Service-Signature. The libraries check the timestamp against the real Date.now(), so the test
 * clock is set to the real time first (it only moves forward, and never while a library checks).
 */

type Envelope = { id: string; event: string };

const stripe = new Stripe('sk_test_not_used_offline');

/** Headers as the libraries take them: lower-case names, single string values. */
function flatHeaders(request: RecordedRequest): Record<string, string> {
  return Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v!]));
}

forEachDialect('webhook interoperability', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  const workers: DeliveryWorker[] = [];
  const worker = () => {
    const w = workerFor(h);
    workers.push(w);
    return w;
  };

  before(async () => {
    h = await startHarness(dialect, { WEBHOOK_RETRY_SCHEDULE: '10,60' });
  });
  beforeEach(async () => {
    h.clock.set(new Date());
    tenant = await h.bootstrap('sandbox');
    receiver = await startWebhookReceiver();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await receiver.close();
    await h.store.db.deleteFrom('webhook_attempts').execute();
    await h.store.db.deleteFrom('webhook_deliveries').execute();
  });
  after(() => h.close());

  test('a real verification.completed delivery verifies with standardwebhooks, svix and Stripe', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    assert.match(endpoint.secret, /^whsec_[0-9A-Za-z]{44}$/);
    const session = await createSession(h, tenant);
    assert.equal((await consent(h, session)).statusCode, 200);
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce: session.challengeNonce });
    assert.equal((await submit(h, session, 'sd-jwt-vc', presentation)).statusCode, 200);
    assert.equal((await worker().runOnce()).succeeded, 1);

    const [request] = receiver.requests;
    const body = request.body.toString('utf8');
    const headers = flatHeaders(request);
    const envelope = JSON.parse(body);
    assert.equal(envelope.event, 'verification.completed');
    assert.equal(headers['webhook-id'], envelope.id);

    assert.deepEqual(new StandardWebhook(endpoint.secret).verify(body, headers), envelope);
    assert.deepEqual(new SvixWebhook(endpoint.secret).verify(body, headers), envelope);
    // Stripe's types say Stripe.Event (with `type`); our envelope names it `event`.
    const viaStripe = stripe.webhooks.constructEvent(
      request.body,
      headers['x-service-signature'],
      endpoint.secret,
    ) as unknown as typeof envelope;
    assert.deepEqual(viaStripe, envelope);

    const ours = verifyWebhookSignature(request.body, request.headers, endpoint.secret, { now: h.clock.now() });
    assert.deepEqual(ours, {
      ok: true,
      timestamp: Number(headers['webhook-timestamp']),
      schemes: ['standard-webhooks', 'x-service'],
      webhookId: envelope.id,
    });
    // The SDK's Stripe/Svix-like form: the typed event, from all the headers or from either scheme alone.
    const event = Matricula.webhooks.verify(request.body, request.headers, endpoint.secret);
    assert.deepEqual(event, envelope);
    assert.equal(event.event === 'verification.completed' && event.data.verified, true);
    const client = new Matricula({ apiKey: 'sk_test_unused', baseUrl: 'http://127.0.0.1:9' });
    assert.deepEqual(client.webhooks.constructEvent(body, headers['x-service-signature'], endpoint.secret), envelope);
    const { 'x-service-signature': _, ...standardOnly } = headers;
    assert.deepEqual(Matricula.webhooks.constructEvent(body, standardOnly, [endpoint.secret]), envelope);

    // A forged body, or another secret, is refused by every library.
    const forged = body.replace('"verified":true', '"verified":false');
    assert.notEqual(forged, body);
    assert.throws(() => new StandardWebhook(endpoint.secret).verify(forged, headers), /No matching signature/);
    assert.throws(() => new SvixWebhook(endpoint.secret).verify(forged, headers), /No matching signature/);
    assert.throws(
      () => stripe.webhooks.constructEvent(forged, headers['x-service-signature'], endpoint.secret),
      /No signatures found matching/,
    );
    const other = (await createEndpoint(h, tenant, `${receiver.url}/other`)).secret;
    assert.throws(() => new StandardWebhook(other).verify(body, headers), /No matching signature/);
    assert.equal(verifyWebhookSignature(forged, request.headers, endpoint.secret).ok, false);
    for (const [raw, secret, scheme] of [
      [forged, endpoint.secret, 'standard-webhooks'],
      [body, other, 'standard-webhooks'],
    ] as const) {
      assert.throws(
        () => Matricula.webhooks.verify(raw, request.headers, secret),
        (error: unknown) =>
          error instanceof WebhookVerificationError && error.reason === 'signature_mismatch' && error.scheme === scheme,
      );
    }
    assert.throws(
      () => Matricula.webhooks.verify(body, { 'x-service-signature': headers['x-service-signature'] }, other),
      (error: unknown) => error instanceof WebhookVerificationError && error.scheme === 'x-service',
    );
  });

  test('webhook-id is the event id on every retry; the timestamp and signature are of each attempt', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    receiver.respondWith({ status: 503 });
    const event = await emitEvent(h, tenant);
    const w = worker();
    assert.equal((await w.runOnce()).retrying, 1);
    h.clock.advance(30_000);
    assert.equal((await w.runOnce()).succeeded, 1);

    const [first, second] = receiver.requests.map(flatHeaders);
    assert.equal(first['webhook-id'], event.id);
    assert.equal(second['webhook-id'], event.id);
    assert.equal(Number(second['webhook-timestamp']) - Number(first['webhook-timestamp']), 30);
    assert.notEqual(first['x-service-delivery-attempt'], second['x-service-delivery-attempt']);
    const body = receiver.requests[1].body.toString('utf8');
    assert.equal((new StandardWebhook(endpoint.secret).verify(body, second) as Envelope).id, event.id);
  });

  test('during a rotation each of the two secrets verifies with every library', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    const rotated = (
      await h.app.inject({ method: 'POST', url: `/org/v1/webhooks/${endpoint.id}/rotate-secret`, headers: tenant.auth })
    ).json().data;
    await emitEvent(h, tenant);
    await worker().runOnce();
    const [request] = receiver.requests;
    const headers = flatHeaders(request);
    const body = request.body.toString('utf8');
    assert.equal(headers['webhook-signature'].split(' ').length, 2);
    for (const secret of [rotated.secret, endpoint.secret]) {
      assert.equal((new StandardWebhook(secret).verify(body, headers) as Envelope).event, 'verification.completed');
      assert.equal((new SvixWebhook(secret).verify(body, headers) as Envelope).event, 'verification.completed');
      stripe.webhooks.constructEvent(body, headers['x-service-signature'], secret);
      assert.equal(verifyWebhookSignature(body, request.headers, secret).ok, true);
    }
  });

  test('a secret made before Standard Webhooks support (43 characters) keeps working with both schemes', async () => {
    const endpoint = await createEndpoint(h, tenant, receiver.url);
    const legacy = 'whsec_6yQmP0aZ3rX9bT1cV5nL8kH2jG4fD7sA0eW1uY3iO5p';
    assert.equal(legacy.length, 'whsec_'.length + 43);
    await h.store.db.updateTable('webhook_endpoints').set({ secret: legacy }).where('id', '=', endpoint.id).execute();
    await emitEvent(h, tenant);
    await worker().runOnce();
    const [request] = receiver.requests;
    const headers = flatHeaders(request);
    const body = request.body.toString('utf8');
    assert.equal((new StandardWebhook(legacy).verify(body, headers) as Envelope).event, 'verification.completed');
    assert.equal((new SvixWebhook(legacy).verify(body, headers) as Envelope).event, 'verification.completed');
    stripe.webhooks.constructEvent(body, headers['x-service-signature'], legacy);
    assert.equal(verifyWebhookSignature(body, request.headers, legacy).ok, true);
  });
});
