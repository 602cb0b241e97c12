import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { noReportedClaims } from '../../src/domain/claims.ts';
import { EVENT_TYPES, type EventType } from '../../src/domain/events.ts';
import type { Session, SessionResult } from '../../src/domain/session.ts';
import { expireDueSessions } from '../../src/services/expiry.ts';
import { applyResultRetention } from '../../src/services/redaction.ts';
import { createUnitOfWork } from '../../src/services/unit-of-work.ts';
import type { Db, Store } from '../../src/store/db.ts';
import { findSession } from '../../src/store/sessions.ts';
import type { WakeMessage } from '../../src/webhooks/outbox.ts';
import { DeliveryWakeups, listenForDeliveries } from '../../src/webhooks/wake.ts';
import type { DeliveryWorker } from '../../src/webhooks/worker.ts';
import { forEachDialect, startHarness, type Harness, type Tenant } from '../support/harness.ts';
import { installStatementCounter } from '../support/statements.ts';
import { buildPresentation, consent, createSession, submit } from '../support/sessions.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { completedData, createEndpoint, waitUntil, within, workerAttempts, workerFor } from '../support/webhooks.ts';

/**
 * Every use case that records an event, or makes deliveries due again, wakes the delivery workers
 * through the unit of work. The workers here poll once an hour on a clock that never gets there:
 * a delivery arrives only if a wake-up reached the worker. Removing the wake-up (in-process) or
 * the NOTIFY (PostgreSQL, other processes) makes these tests time out.
 */
const HOUR_MS = 3_600_000;

/** Before any store opens: a pg client binds its query method when it is made. */
const statementCounter = installStatementCounter();

forEachDialect('unit of work wakes the delivery workers', (dialect) => {
  let h: Harness;
  let receiver: WebhookReceiver;
  let other: Store | undefined;

  before(async () => {
    h = await startHarness(dialect, { WEBHOOK_RETRY_SCHEDULE: '10' });
    receiver = await startWebhookReceiver();
    if (dialect === 'postgres') other = await h.testStore.openAnother();
  });
  after(async () => {
    await receiver.close();
    await other?.close();
    await h.close();
  });

  /** In-process: a worker subscribed to this process's wake-ups, with LISTEN turned off. */
  const inProcess = () =>
    workerFor(h, {
      pollIntervalMs: HOUR_MS,
      store: { db: h.store.db, capabilities: { ...h.store.capabilities, listenNotify: false } },
    });
  /** Another process: a worker on its own pool that hears only PostgreSQL's NOTIFY. */
  const viaNotify = () => workerFor(h, { pollIntervalMs: HOUR_MS, store: other!, wakeups: undefined });

  const channels: Array<[string, () => DeliveryWorker]> = [['in-process wake-up', inProcess]];
  if (dialect === 'postgres') channels.push(['NOTIFY to another process', viaNotify]);

  for (const [channel, makeWorker] of channels) {
    describe(channel, () => {
      let worker: DeliveryWorker;
      let tenant: Tenant;
      let endpointId: string;

      before(async () => {
        tenant = await h.bootstrap('sandbox');
        endpointId = (await createEndpoint(h, tenant, receiver.url, [...EVENT_TYPES])).id;
        worker = makeWorker();
        // Started with nothing due: the loop's first claim finds nothing, then waits on its poll.
        await worker.start();
      });
      after(() => worker.stop());

      /** Runs `action` and waits for the delivery of an event of `type` it must cause. */
      async function delivered(type: EventType, action: () => Promise<unknown>): Promise<void> {
        const before = receiver.requests.length;
        await action();
        const requests = await within(5_000, receiver.waitForRequests(before + 1), `the ${type} delivery (${channel})`);
        assert.equal(requests[before].headers['x-service-event'], type);
        // The attempt is recorded before the test moves on: moving the clock while a send is in
        // flight would run out its timeout, which lives on the same clock.
        await waitUntil(
          async () => {
            const sending = await h.store.db
              .selectFrom('webhook_deliveries')
              .select('id')
              .where('status', '=', 'sending')
              .execute();
            return sending.length === 0;
          },
          'every attempt to be recorded',
          { on: [[workerAttempts, 'attempt']] },
        );
      }

      test('consent.approved', async () => {
        const session = await createSession(h, tenant);
        await delivered('consent.approved', () => consent(h, session, 'approved'));
      });

      test('consent.declined', async () => {
        const session = await createSession(h, tenant);
        await delivered('consent.declined', () => consent(h, session, 'declined'));
      });

      test('verification.completed', async () => {
        const session = await createSession(h, tenant);
        await delivered('consent.approved', () => consent(h, session));
        const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce: session.challengeNonce });
        await delivered('verification.completed', () => submit(h, session, 'sd-jwt-vc', presentation));
      });

      test('verification.cancelled', async () => {
        const session = await createSession(h, tenant);
        await delivered('verification.cancelled', async () => {
          const res = await h.app.inject({
            method: 'POST',
            url: `/verification/v1/sessions/${session.sessionId}/cancel`,
            headers: tenant.auth,
          });
          assert.equal(res.statusCode, 200);
        });
      });

      test('verification.redacted', async () => {
        const session = await createSession(h, tenant);
        await delivered('verification.cancelled', async () => {
          const res = await h.app.inject({
            method: 'POST',
            url: `/verification/v1/sessions/${session.sessionId}/cancel`,
            headers: tenant.auth,
          });
          assert.equal(res.statusCode, 200);
        });
        await delivered('verification.redacted', async () => {
          const res = await h.app.inject({
            method: 'POST',
            url: `/verification/v1/sessions/${session.sessionId}/redact`,
            headers: tenant.auth,
          });
          assert.equal(res.statusCode, 200, res.body);
        });
      });

      test('verification.redacted (result retention)', async () => {
        const session = await createSession(h, tenant, { expiresInSeconds: 30 });
        h.clock.set(new Date(Date.parse(session.expiresAt) + h.config.resultRetentionDays * 86_400_000));
        // The sessions of the tests before ended long ago too: their expiry and redaction go out
        // as well, and must be out before a test counts its requests.
        await expireDueSessions(h.services);
        await drained();
        await delivered('verification.redacted', () => applyResultRetention(h.services));
        await drained();
      });

      /** Waits until no delivery is due or being sent. */
      async function drained(): Promise<void> {
        await waitUntil(
          async () => {
            const open = await h.store.db
              .selectFrom('webhook_deliveries')
              .select('id')
              .where((eb) =>
                eb.or([
                  eb('status', '=', 'sending'),
                  eb.and([eb('status', '=', 'pending'), eb('due_at', '<=', h.clock.now().toISOString())]),
                ]),
              )
              .execute();
            return open.length === 0;
          },
          'every due delivery to be delivered',
          { on: [[workerAttempts, 'attempt']] },
        );
      }

      test('verification.expired (the sweeper)', async () => {
        await createSession(h, tenant, { expiresInSeconds: 30 });
        h.clock.advance(31_000);
        await delivered('verification.expired', () => expireDueSessions(h.services));
      });

      test('webhook.test', async () => {
        await delivered('webhook.test', async () => {
          const res = await h.app.inject({
            method: 'POST',
            url: `/org/v1/webhooks/${endpointId}/test`,
            headers: tenant.auth,
          });
          assert.equal(res.statusCode, 201);
        });
      });

      test('a manual retry of a delivery', async () => {
        const deliveryId = await failedTestDelivery();
        await delivered('webhook.test', async () => {
          const res = await h.app.inject({
            method: 'POST',
            url: `/org/v1/webhooks/${endpointId}/deliveries/${deliveryId}/retry`,
            headers: tenant.auth,
          });
          assert.equal(res.statusCode, 200, res.body);
        });
      });

      test('an endpoint enabled again releases its held deliveries', async () => {
        const patch = (enabled: boolean) =>
          h.app.inject({
            method: 'PATCH',
            url: `/org/v1/webhooks/${endpointId}`,
            headers: tenant.auth,
            payload: { enabled },
          });
        await failedTestDelivery();
        assert.equal((await patch(false)).statusCode, 200);
        // The retry comes due while the endpoint is disabled: held, not sent.
        h.clock.advance(11_000);
        await delivered('webhook.test', () => patch(true));
      });

      /** A test event whose first attempt the receiver refuses: its delivery waits for a retry. */
      async function failedTestDelivery(): Promise<string> {
        receiver.respondWith({ status: 500 });
        let deliveryId = '';
        await delivered('webhook.test', async () => {
          const res = await h.app.inject({
            method: 'POST',
            url: `/org/v1/webhooks/${endpointId}/test`,
            headers: tenant.auth,
          });
          deliveryId = (res.json() as { data: { id: string } }).data.id;
        });
        await waitForStatus(deliveryId, 'pending');
        return deliveryId;
      }

      /** The worker records an attempt after the receiver answered: wait for that record, not for time. */
      async function waitForStatus(deliveryId: string, status: string): Promise<void> {
        await waitUntil(
          async () => {
            const row = await h.store.db
              .selectFrom('webhook_deliveries')
              .select('status')
              .where('id', '=', deliveryId)
              .executeTakeFirst();
            return row?.status === status;
          },
          `delivery ${deliveryId} to become ${status}`,
          { on: [[workerAttempts, 'attempt']] },
        );
      }
    });
  }
});

forEachDialect('unit of work writes an event', (dialect) => {
  let h: Harness;

  before(async () => {
    h = await startHarness(dialect);
  });
  after(() => h.close());

  test('an event, its deliveries and the wake-up naming them: one statement on PostgreSQL', async () => {
    const tenant = await h.bootstrap('sandbox');
    const endpoints = [
      (await createEndpoint(h, tenant, 'https://hooks.example.com/a')).id,
      (await createEndpoint(h, tenant, 'https://hooks.example.com/b')).id,
    ];
    let statements = 0;
    const db: Db = h.store.db.withPlugin({
      transformQuery: ({ node }) => node,
      transformResult: async ({ result }) => {
        statements++;
        return result;
      },
    });
    const wakeups = new DeliveryWakeups();
    const unitOfWork = createUnitOfWork({ db, clock: h.clock, wakeups });
    const heard: WakeMessage[] = [];
    const listener = h.store.pgPool ? await listenForDeliveries(h.store.pgPool, (m) => heard.push(m)) : undefined;
    try {
      const source = { appId: tenant.appId, orgId: tenant.orgId, environment: 'sandbox' as const };
      const record = (sessionId: string) =>
        unitOfWork((work) => work.record(source, 'verification.completed', completedData(sessionId)));
      // Rolled back: nothing written, and the NOTIFY queued with it is dropped.
      await assert.rejects(
        unitOfWork(async (work) => {
          await work.record(source, 'verification.completed', completedData('sess_rolledback'));
          throw new Error('the use case fails after recording');
        }),
        /fails after recording/,
      );
      statements = 0;
      const event = await record('sess_committed');
      // PostgreSQL: one statement, the subscribers read in the event's INSERT, the deliveries'
      // INSERT in its WITH and the NOTIFY in its RETURNING; SQLite: the read of the subscribers,
      // then the two INSERTs (it has no NOTIFY).
      assert.equal(statements, dialect === 'postgres' ? 1 : 3);
      const deliveries = await h.store.db
        .selectFrom('webhook_deliveries')
        .select(['endpoint_id', 'event_id', 'status'])
        .where('event_id', '=', event.id)
        .execute();
      assert.deepEqual(deliveries.map((d) => d.endpoint_id).sort(), [...endpoints].sort());
      assert.ok(deliveries.every((d) => d.status === 'pending'));
      const stored = await h.store.db.selectFrom('events').select(['id', 'session_id']).execute();
      assert.deepEqual(
        stored.map((e) => e.session_id),
        ['sess_committed'],
        'the rolled-back event is not stored',
      );
      if (listener) {
        // Notifications arrive in commit order: the first heard is the committed event's.
        await waitUntil(async () => heard.length > 0, 'the NOTIFY');
        assert.deepEqual(heard[0], { endpointIds: new Set(endpoints), origin: wakeups.origin });
      }
    } finally {
      await listener?.close();
    }
  });
});

describe('unit of work', () => {
  test('covers every event type', () => {
    // A new event type must get a wake-up test above.
    assert.deepEqual([...EVENT_TYPES].sort(), [
      'consent.approved',
      'consent.declined',
      'verification.cancelled',
      'verification.completed',
      'verification.expired',
      'verification.redacted',
      'webhook.test',
    ]);
  });
});

forEachDialect('unit of work cannot hang', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  before(async () => {
    h = await startHarness(dialect);
    tenant = await h.bootstrap('sandbox');
  });
  after(() => h.close());

  const source = () => ({ appId: tenant.appId, orgId: tenant.orgId, environment: 'sandbox' as const });
  const eventsOf = (sessionId: string) =>
    h.store.db.selectFrom('events').select('id').where('session_id', '=', sessionId).execute();

  test('a nested unit of work joins the outer transaction: one commit, or one rollback', async () => {
    const { unitOfWork } = h.services;
    await within(
      10_000,
      unitOfWork(async (outer) => {
        await outer.record(source(), 'verification.completed', completedData('sess_nested_outer'));
        await unitOfWork((inner) =>
          inner.record(source(), 'verification.completed', completedData('sess_nested_inner')),
        );
      }),
      'the nested unit of work',
    );
    assert.equal((await eventsOf('sess_nested_inner')).length, 1);

    // The inner one's writes roll back with the outer one: they were one transaction.
    await assert.rejects(
      within(
        10_000,
        unitOfWork(async () => {
          await unitOfWork((inner) =>
            inner.record(source(), 'verification.completed', completedData('sess_nested_gone')),
          );
          throw new Error('outer fails after the inner one returned');
        }),
        'the failing nested unit of work',
      ),
      /outer fails/,
    );
    assert.equal((await eventsOf('sess_nested_gone')).length, 0);
  });

  test('a read through the root database inside a unit of work fails at once on SQLite, never hangs', async () => {
    const read = h.services.unitOfWork(() => h.store.db.selectFrom('events').select('id').limit(1).execute());
    if (dialect === 'sqlite') await assert.rejects(within(10_000, read, 'the read'), /use the unit of work's own db/);
    // PostgreSQL reads on another connection of the pool: it works (outside the transaction).
    else await within(10_000, read, 'the read');
    // And the database is free again afterwards.
    await within(10_000, h.store.db.selectFrom('events').select('id').limit(1).execute(), 'a read after');
  });
});

forEachDialect('unit of work moves a session with its event', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let endpointId: string;

  before(async () => {
    h = await startHarness(dialect);
    tenant = await h.bootstrap('sandbox');
    endpointId = (await createEndpoint(h, tenant, 'https://hooks.example.com/moves', [...EVENT_TYPES])).id;
  });
  after(() => h.close());

  /** A session of the tenant, created through the API, as stored. */
  async function openSession(): Promise<Session> {
    const created = await createSession(h, tenant);
    return (await findSession(h.store.db, created.sessionId))!;
  }

  const eventsOf = (sessionId: string) =>
    h.store.db
      .selectFrom('events')
      .leftJoin('webhook_deliveries', 'webhook_deliveries.event_id', 'events.id')
      .select(['events.type', 'events.data', 'webhook_deliveries.endpoint_id'])
      .where('events.session_id', '=', sessionId)
      .execute();

  test('the move and its event with its deliveries: one statement on PostgreSQL', async () => {
    const session = await openSession();
    const at = h.clock.now().toISOString();
    const woken: Array<ReadonlySet<string> | undefined> = [];
    const unsubscribe = h.services.wakeups.subscribe((ids) => woken.push(ids));
    let moved = false;
    const statements = await statementCounter.during(async () => {
      moved = await h.services.unitOfWork.moveSession(
        session,
        { to: 'consented', at, requireUnexpired: true },
        'consent.approved',
        { sessionId: session.id },
      );
    });
    unsubscribe();
    assert.equal(moved, true);
    // PostgreSQL: the UPDATE, the event, its deliveries and the NOTIFY in one statement, no
    // BEGIN or COMMIT. SQLite: BEGIN, the UPDATE, the subscribers, the event, the deliveries, COMMIT.
    assert.equal(statements.length, dialect === 'postgres' ? 1 : 6, statements.join('\n---\n'));
    const stored = (await findSession(h.store.db, session.id))!;
    assert.equal(stored.status, 'consented');
    assert.equal(stored.consentedAt, at);
    assert.equal(stored.completedAt, null);
    assert.deepEqual(await eventsOf(session.id), [
      { type: 'consent.approved', data: JSON.stringify({ sessionId: session.id }), endpoint_id: endpointId },
    ]);
    // This process's workers are woken after the commit, for the endpoint of the delivery.
    assert.deepEqual(woken, [new Set([endpointId])]);
  });

  test('a completion stores the result; a move the state does not allow writes nothing', async () => {
    const session = await openSession();
    const at = h.clock.now().toISOString();
    const move = (to: 'consented' | 'completed', result?: SessionResult) =>
      h.services.unitOfWork.moveSession(
        session,
        { to, at, requireUnexpired: true, ...(result ? { result } : {}) },
        to === 'completed' ? 'verification.completed' : 'consent.approved',
        to === 'completed' ? completedData(session.id) : { sessionId: session.id },
      );
    // Pending cannot complete: refused, nothing written.
    assert.equal(await move('completed', RESULT), false);
    assert.equal((await findSession(h.store.db, session.id))!.status, 'pending');
    assert.deepEqual(await eventsOf(session.id), []);
    assert.equal(await move('consented'), true);
    // Consented twice: the second is refused and records nothing.
    assert.equal(await move('consented'), false);
    // Two completions at once: exactly one moves the session and records its event.
    const outcomes = await Promise.all([move('completed', RESULT), move('completed', RESULT)]);
    assert.deepEqual(outcomes.sort(), [false, true]);
    const stored = (await findSession(h.store.db, session.id))!;
    assert.equal(stored.status, 'completed');
    assert.equal(stored.completedAt, at);
    assert.equal(stored.consentedAt, at, 'the consent time is kept');
    assert.equal(stored.result?.verified, true);
    assert.equal(stored.result?.university?.domain, 'sandbox-state.example');
    const verified = await h.store.db.selectFrom('sessions').select('verified').where('id', '=', session.id).execute();
    assert.deepEqual(verified, [{ verified: 1 }]);
    assert.deepEqual((await eventsOf(session.id)).map((e) => e.type).sort(), [
      'consent.approved',
      'verification.completed',
    ]);
  });

  test('a session past its expiry does not move', async () => {
    const session = await openSession();
    const after = new Date(Date.parse(session.expiresAt) + 1_000).toISOString();
    assert.equal(
      await h.services.unitOfWork.moveSession(
        session,
        { to: 'cancelled', at: after, requireUnexpired: true },
        'verification.cancelled',
        { sessionId: session.id },
      ),
      false,
    );
    assert.equal((await findSession(h.store.db, session.id))!.status, 'pending');
    assert.deepEqual(await eventsOf(session.id), []);
  });

  test('inside another unit of work the move joins it, and its rollback undoes both', async () => {
    const session = await openSession();
    const at = h.clock.now().toISOString();
    await assert.rejects(
      h.services.unitOfWork(async () => {
        assert.equal(
          await h.services.unitOfWork.moveSession(
            session,
            { to: 'cancelled', at, requireUnexpired: true },
            'verification.cancelled',
            { sessionId: session.id },
          ),
          true,
        );
        throw new Error('the outer use case fails');
      }),
      /outer use case fails/,
    );
    assert.equal((await findSession(h.store.db, session.id))!.status, 'pending');
    assert.deepEqual(await eventsOf(session.id), []);
  });
});

const RESULT: SessionResult = {
  verified: true,
  protocol: 'matricula',
  format: 'sd-jwt-vc',
  university: { name: 'Sandbox State University', domain: 'sandbox-state.example', country: 'US' },
  claims: noReportedClaims(),
  failureReason: null,
  failureMessage: null,
};
