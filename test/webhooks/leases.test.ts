import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { TestClock } from '../../src/domain/clock.ts';
import type { Db } from '../../src/store/db.ts';
import { LeaseKeeper } from '../../src/webhooks/leases.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { seedEndpoint } from '../support/webhooks.ts';

/** Giving back what a stopping worker claimed and never sent (LeaseKeeper.giveBack). */
forEachDialect('leases given back', (dialect) => {
  let t: TestStore;
  const clock = new TestClock(new Date('2026-01-01T00:00:10Z'));

  before(async () => {
    t = await createTestStore(dialect);
    const db = t.store.db;
    await seedEndpoint(db);
    // Three claimed: two under this worker's claims, one under another worker's.
    await sql`insert into events (id, app_id, org_id, environment, type, data, created_at)
      select 'evt_l' || g, a.id, a.org_id, 'sandbox', 'verification.completed', '{}', '2026-01-01T00:00:00Z'
      from (select 1 as g union all select 2 union all select 3) as n, applications a`.execute(db);
    await sql`insert into webhook_deliveries (id, endpoint_id, event_id, event_type, status, due_at, lease_token,
        attempt_count, created_at, updated_at, delivered_at)
      select 'dlv_l' || n.g, e.id, 'evt_l' || n.g, 'verification.completed', 'sending', '2026-01-01T00:05:00Z',
        case when n.g = 3 then 'theirs' else 'mine' || n.g end, 2, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', null
      from (select 1 as g union all select 2 union all select 3) as n, webhook_endpoints e`.execute(db);
  });
  after(() => t.drop());

  test("those given back in one turn are pending and due now, unleased, their claim's attempt taken back; no one else's", async () => {
    const queries: string[] = [];
    const counting = t.store.db.withPlugin({
      transformQuery: (args) => {
        if (args.node.kind === 'UpdateQueryNode') queries.push(args.node.kind);
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    const keeper = new LeaseKeeper({ db: counting, clock, leaseMs: 10_000 });
    await Promise.all([
      keeper.giveBack({ id: 'dlv_l1', leaseToken: 'mine1' }),
      keeper.giveBack({ id: 'dlv_l2', leaseToken: 'mine2' }),
      // Not ours any more: another worker holds it under its own token.
      keeper.giveBack({ id: 'dlv_l3', leaseToken: 'mine3' }),
    ]);
    assert.equal(queries.length, 1, 'one UPDATE for the turn');
    const rows = await t.store.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'status', 'due_at', 'lease_token', 'attempt_count'])
      .where('id', 'like', 'dlv_l%')
      .orderBy('id')
      .execute();
    const now = clock.now().toISOString();
    assert.deepEqual(rows, [
      { id: 'dlv_l1', status: 'pending', due_at: now, lease_token: null, attempt_count: 1 },
      { id: 'dlv_l2', status: 'pending', due_at: now, lease_token: null, attempt_count: 1 },
      { id: 'dlv_l3', status: 'sending', due_at: '2026-01-01T00:05:00Z', lease_token: 'theirs', attempt_count: 2 },
    ]);
  });

  test('when the database fails, giving back says so in the log and resolves: the leases run out', async () => {
    const warnings: string[] = [];
    const failing = {
      transaction: () => {
        throw new Error('database unreachable');
      },
    } as unknown as Db;
    const keeper = new LeaseKeeper({
      db: failing,
      clock,
      leaseMs: 10_000,
      log: { warn: (_obj, msg) => warnings.push(msg) },
    });
    await keeper.giveBack({ id: 'dlv_l9', leaseToken: 'mine9' });
    await keeper.settled();
    assert.deepEqual(warnings, ['giving back unsent webhook deliveries failed; their leases will run out']);
  });
});
