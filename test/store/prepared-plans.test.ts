import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { PG_SKIP_MESSAGE, startHarness, TEST_POOL_SIZE, type Harness, type Tenant } from '../support/harness.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { createEndpoint, emitEvent, within, workerFor } from '../support/webhooks.ts';

/**
 * PostgreSQL plans a named prepared statement afresh for its first five runs, then keeps its
 * generic plan, unless that plan's estimated cost is above the fresh plans' average: then it plans
 * again on every run, which costs the server more than running a small statement does. A statement
 * whose estimate depends on the values bound (the length of an array constant, say) can fall into
 * that. Here every named statement of the hot paths (authentication, the session create and read,
 * an event's deliveries, a running worker's claims and records of attempts) runs under a load of
 * varying group sizes, and each connection's counts say whether it settled.
 */
/** Rounds of the load: each reads its sessions in one statement, so the reads alone run this many times. */
const ROUNDS = 60;

test(
  'the hot paths run on generic plans [postgres]',
  { skip: process.env.TEST_DATABASE_URL ? false : PG_SKIP_MESSAGE },
  async (t) => {
    const h: Harness = await startHarness('postgres');
    t.after(() => h.close());
    const receiver: WebhookReceiver = await startWebhookReceiver();
    t.after(() => receiver.close());
    const tenant: Tenant = await h.bootstrap('sandbox');
    await createEndpoint(h, tenant, receiver.url);
    await createEndpoint(h, tenant, receiver.url);
    const worker = workerFor(h);
    await worker.start();
    try {
      let delivered = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const n = 1 + (round % 7);
        const created = await Promise.all(
          Array.from({ length: n }, () =>
            h.app.inject({
              method: 'POST',
              url: '/verification/v1/sessions',
              headers: tenant.auth,
              payload: { appId: tenant.appId, purpose: 'Plans', requiredClaims: ['is_active_student'] },
            }),
          ),
        );
        const read = await Promise.all(
          created.map((res) =>
            h.app.inject({
              method: 'GET',
              url: `/verification/v1/sessions/${(JSON.parse(res.body) as { data: { sessionId: string } }).data.sessionId}`,
              headers: tenant.auth,
            }),
          ),
        );
        assert.deepEqual(
          [...created, ...read].map((res) => res.statusCode),
          [...created.map(() => 201), ...read.map(() => 200)],
        );
        await Promise.all(Array.from({ length: n }, () => emitEvent(h, tenant)));
        delivered += 2 * n;
        await within(5_000, receiver.waitForRequests(delivered), `${delivered} deliveries`);
      }
    } finally {
      await worker.stop();
    }

    // Every connection of the pool at once, each reading its own statements' counts.
    const counts: Array<{ name: string; generic: number; custom: number }> = [];
    let arrived = 0;
    let allThere!: () => void;
    const everyConnection = new Promise<void>((resolve) => (allThere = resolve));
    await Promise.all(
      Array.from({ length: TEST_POOL_SIZE }, () =>
        h.store.db.connection().execute(async (connection) => {
          if (++arrived === TEST_POOL_SIZE) allThere();
          await everyConnection;
          const { rows } = await sql<{ name: string; generic: number; custom: number }>`select name,
          generic_plans as generic, custom_plans as custom from pg_prepared_statements`.execute(connection);
          counts.push(...rows);
        }),
      ),
    );
    const hot = [
      'matricula_insert_sessions_checking_keys',
      'matricula_keys_with_sessions',
      'matricula_write_event_to_subscribers',
      'matricula_claim_due_deliveries',
      'matricula_record_deliveries',
    ];
    // Runs spread over the pool's connections as the load falls (unevenly under a busy machine).
    // More than five per connection in all means more than five on at least one: there, a
    // statement planned afresh every time shows more than five fresh plans.
    for (const name of hot) {
      const runs = counts.filter((c) => c.name === name).reduce((n, c) => n + c.generic + c.custom, 0);
      assert.ok(runs > 5 * TEST_POOL_SIZE, `${name} ran ${runs} times: ${JSON.stringify(counts)}`);
    }
    const replanned = counts.filter((c) => c.custom > 5);
    assert.deepEqual(replanned, [], 'no statement planned afresh past its first five runs');
  },
);
