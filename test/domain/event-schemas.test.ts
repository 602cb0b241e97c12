import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { EVENT_DATA_SCHEMAS, EVENT_SCHEMAS, EVENT_TYPES, type EventType } from '../../src/domain/events.ts';
import { COMPONENT_SCHEMAS } from '../../src/routes/components.ts';
import { expireDueSessions } from '../../src/services/expiry.ts';
import type { Work } from '../../src/services/unit-of-work.ts';
import type { DeliveryWorker } from '../../src/webhooks/worker.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { buildPresentation, consent, createSession, submit, type CreatedSession } from '../support/sessions.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { createEndpoint, workerFor, type CreatedEndpoint } from '../support/webhooks.ts';

/**
 * One schema per event type (domain/events.ts): the data its producer records, what
 * GET /org/v1/events answers (whose serializer drops any field the schema lacks) and what the
 * webhook delivery carries must be one and the same, for every event type, each produced by its
 * real use case.
 */

/** The app's validator setup over the app's components: the schemas as the API registers them. */
const ajv = addFormats.default(new Ajv.default({ strict: false, allErrors: true, schemas: COMPONENT_SCHEMAS }));
function assertValid(schemaId: string, value: unknown, what: string) {
  const validate = ajv.getSchema(schemaId);
  assert.ok(validate, `schema ${schemaId} is registered`);
  assert.ok(validate(value), `${what} against ${schemaId}: ${JSON.stringify(validate.errors)}`);
}

forEachDialect('event schemas: stored, listed and delivered agree', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  let endpoint: CreatedEndpoint;
  let worker: DeliveryWorker;

  before(async () => {
    h = await startHarness(dialect);
    tenant = await h.bootstrap('sandbox');
    receiver = await startWebhookReceiver();
    endpoint = await createEndpoint(h, tenant, receiver.url, [...EVENT_TYPES]);
    worker = workerFor(h);
  });
  after(async () => {
    await worker.stop();
    await receiver.close();
    await h.close();
  });

  const inject = async (method: 'GET' | 'POST', url: string, expected: number) => {
    const res = await h.app.inject({ method, url, headers: tenant.auth });
    assert.equal(res.statusCode, expected, `${method} ${url}: ${res.body}`);
    return res.json();
  };
  const completedSession = async (): Promise<CreatedSession> => {
    const session = await createSession(h, tenant, {
      requiredClaims: ['is_active_student', 'university_domain', 'academic_level', 'valid_until'],
    });
    assert.equal((await consent(h, session)).statusCode, 200);
    const presentation = await buildPresentation(h, 'sd-jwt-vc', {
      nonce: session.challengeNonce,
      disclose: ['is_active_student', 'university_domain', 'academic_level', 'valid_until'],
    });
    const res = await submit(h, session, 'sd-jwt-vc', presentation);
    assert.equal(res.statusCode, 200, res.body);
    return session;
  };

  /** Each event type through the use case that records it in production. */
  const produce: Record<EventType, () => Promise<void>> = {
    'consent.approved': async () => {
      assert.equal((await consent(h, await createSession(h, tenant))).statusCode, 200);
    },
    'consent.declined': async () => {
      assert.equal((await consent(h, await createSession(h, tenant), 'declined')).statusCode, 200);
    },
    'verification.completed': async () => {
      await completedSession();
    },
    'verification.cancelled': async () => {
      const session = await createSession(h, tenant);
      await inject('POST', `/verification/v1/sessions/${session.sessionId}/cancel`, 200);
    },
    'verification.expired': async () => {
      await createSession(h, tenant, { expiresInSeconds: 60 });
      h.clock.advance(61_000);
      assert.equal(await expireDueSessions(h.services), 1);
    },
    'verification.redacted': async () => {
      const session = await createSession(h, tenant);
      await inject('POST', `/verification/v1/sessions/${session.sessionId}/cancel`, 200);
      await inject('POST', `/verification/v1/sessions/${session.sessionId}/redact`, 200);
    },
    'webhook.test': async () => {
      await inject('POST', `/org/v1/webhooks/${endpoint.id}/test`, 201);
    },
  };

  for (const type of EVENT_TYPES) {
    test(`${type}: the stored data, the events route and the delivered body are one, and valid`, async () => {
      await produce[type]();

      // Stored: the newest event of this type, as the outbox row holds it.
      const row = await h.store.db
        .selectFrom('events')
        .select(['id', 'data'])
        .where('app_id', '=', tenant.appId)
        .where('type', '=', type)
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow();
      const stored: unknown = JSON.parse(row.data);

      // Listed: GET /org/v1/events, serialized through the route's response schema.
      const page = await inject('GET', `/org/v1/events?appId=${tenant.appId}&event=${type}&limit=1`, 200);
      const listed = page.data[0];
      assert.equal(listed.id, row.id);
      const retrieved = (await inject('GET', `/org/v1/events/${row.id}`, 200)).data;

      // Delivered: the body the worker posts to the endpoint.
      await worker.runOnce();
      const request = receiver.requests.find((r) => JSON.parse(r.body.toString('utf8')).id === row.id);
      assert.ok(request, `the ${type} event was delivered`);
      assert.equal(request.headers['x-service-event'], type);
      const delivered = JSON.parse(request.body.toString('utf8'));

      assert.deepEqual(listed.data, stored, 'the events route shows the data as stored');
      assert.deepEqual(delivered.data, stored, 'the webhook body carries the data as stored');
      assert.deepEqual(delivered, listed, 'the webhook body is the envelope the events route shows');
      assert.deepEqual(retrieved, listed, 'retrieving the event shows it as the list does');

      const eventSchemaId = EVENT_SCHEMAS[type].$id!;
      assertValid(EVENT_DATA_SCHEMAS[type].$id!, stored, `stored ${type} data`);
      assertValid(eventSchemaId, listed, `listed ${type}`);
      assertValid(eventSchemaId, delivered, `delivered ${type}`);
      assertValid('Event', delivered, `delivered ${type} as any event`);
    });
  }

  test('verification.completed after redaction: still one shape in all three places', async () => {
    const session = await completedSession();
    await worker.runOnce();
    await inject('POST', `/verification/v1/sessions/${session.sessionId}/redact`, 200);
    const row = await h.store.db
      .selectFrom('events')
      .select(['id', 'data'])
      .where('session_id', '=', session.sessionId)
      .where('type', '=', 'verification.completed')
      .executeTakeFirstOrThrow();
    const stored = JSON.parse(row.data);
    assert.equal(stored.redacted, true);
    // Sent again after the redaction: the delivery carries the stored (redacted) data.
    const deliveries = (await inject('GET', `/org/v1/webhooks/${endpoint.id}/deliveries?limit=100`, 200))
      .data as Array<{
      id: string;
      eventId: string;
    }>;
    const delivery = deliveries.find((d) => d.eventId === row.id);
    assert.ok(delivery, 'the completed event has a delivery');
    const before = receiver.requests.length;
    await inject('POST', `/org/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/retry`, 200);
    await worker.runOnce();
    const resent = receiver.requests.slice(before).find((r) => JSON.parse(r.body.toString('utf8')).id === row.id);
    assert.ok(resent, 'the completed event was sent again');
    const delivered = JSON.parse(resent.body.toString('utf8'));
    const listed = (await inject('GET', `/org/v1/events/${row.id}`, 200)).data;
    assert.deepEqual(listed.data, stored);
    assert.deepEqual(delivered, listed);
    assertValid('VerificationCompletedEvent', delivered, 'redacted verification.completed');
  });
});

/**
 * Never called: the type check (npx tsc, part of CI) must reject each line below, or the
 * `@ts-expect-error` above it is itself an error. A producer's data is its event's schema.
 */
export function _producerTypeChecks(work: Work): void {
  const source = { appId: 'app_x', orgId: 'org_x', environment: 'sandbox' as const };
  // @ts-expect-error -- a field the schema of consent.approved lacks
  void work.record(source, 'consent.approved', { sessionId: 'sess_x', extra: 1 });
  // @ts-expect-error -- verification.completed needs all its fields
  void work.record(source, 'verification.completed', { sessionId: 'sess_x' });
  // @ts-expect-error -- webhook.test data is not a session event's
  void work.recordFor(source, 'webhook.test', { sessionId: 'sess_x' }, []);
}
