import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CompiledQuery, sql, type RootOperationNode } from 'kysely';
import { systemClock } from '../../src/domain/clock.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { insertNewEndpoint } from '../../src/services/webhooks.ts';
import type { Db } from '../../src/store/db.ts';
import { claimDueDeliveries } from '../../src/store/webhook-deliveries/claim.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';

/**
 * How the claim reaches the database: through the partial index of due deliveries by endpoint
 * (each endpoint's oldest due first, migration 0011), and on
 * PostgreSQL as a named prepared statement, planned once per connection rather than on every
 * claim.
 */
forEachDialect('the claim of due deliveries', (dialect) => {
  let t: TestStore;
  const claim = (db: Db, token: string) => {
    const now = new Date().toISOString();
    return claimDueDeliveries(db, { now, leaseUntil: now, token, limit: 8, perEndpoint: 4, knownDue: true });
  };

  before(async () => {
    t = await createTestStore(dialect);
    const db = t.store.db;
    const org = await createOrganization({ db, clock: systemClock }, { name: 'A', environment: 'sandbox' });
    await db.transaction().execute((trx) =>
      insertNewEndpoint(trx, { clock: systemClock }, org.application, {
        url: 'https://hooks.example/a',
        events: ['verification.completed'],
      }),
    );
  });
  after(() => t.drop());

  /** The plan of the claim's statement as it is built, captured on its way to the database. */
  const planOfClaim = async (indexesOnly: boolean): Promise<string> => {
    let node: RootOperationNode | undefined;
    const capturing = t.store.db.withPlugin({
      transformQuery: (args) => {
        const top =
          dialect === 'postgres'
            ? args.node.kind === 'SelectQueryNode' && args.node.with
            : args.node.kind === 'UpdateQueryNode';
        if (top && JSON.stringify(args.node).includes('row_number')) node = args.node;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    await claim(capturing, 'capture');
    assert.ok(node, 'the claim was built on the Db it was given');
    const compiled = t.store.db.getExecutor().compileQuery(node, { queryId: 'claim' } as never);
    const explain = dialect === 'postgres' ? 'explain ' : 'explain query plan ';
    return t.store.db.connection().execute(async (db) => {
      // PostgreSQL picks a sequential scan for a table this small: let it choose among indexes alone.
      if (indexesOnly) await sql`set enable_seqscan = off`.execute(db);
      try {
        const { rows } = await db.executeQuery<Record<string, unknown>>(
          CompiledQuery.raw(explain + compiled.sql, [...compiled.parameters]),
        );
        return rows.map((r) => Object.values(r).join(' ')).join('\n');
      } finally {
        if (indexesOnly) await sql`reset enable_seqscan`.execute(db);
      }
    });
  };

  test("the claim finds each endpoint's due deliveries through the index of due deliveries by endpoint", async () => {
    // PostgreSQL picks a sequential scan for a table this small: let it choose among indexes alone.
    const plan = await planOfClaim(dialect === 'postgres');
    // Partial (due_at is not null): an endpoint's delivered history is not in it.
    assert.match(plan, /webhook_deliveries_due_at_by_endpoint/, plan);
    assert.doesNotMatch(plan, /webhook_deliveries_endpoint/, plan);
  });

  if (dialect === 'postgres') {
    test("a claim does not read an endpoint's delivered history, whatever the statistics say", async () => {
      // 20,000 deliveries already sent and 3 due, on a table never analyzed (autovacuum off, as
      // in CI): a join to the enabled endpoints made the planner read the endpoint's history.
      await sql`insert into events (id, app_id, org_id, environment, type, data, created_at)
        select 'evt_h' || g, a.id, a.org_id, 'sandbox', 'verification.completed', '{}', '2026-01-01T00:00:00Z'
        from generate_series(1, 20003) g, applications a`.execute(t.store.db);
      await sql`insert into webhook_deliveries (id, endpoint_id, event_id, event_type, status, due_at, lease_token,
          attempt_count, created_at, updated_at, delivered_at)
        select 'dlv_h' || g, e.id, 'evt_h' || g, 'verification.completed',
          case when g > 20000 then 'pending' else 'succeeded' end,
          case when g > 20000 then '2026-01-01T00:00:00Z' end, null, 1,
          '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', null
        from generate_series(1, 20003) g, webhook_endpoints e`.execute(t.store.db);
      const plan = await planOfClaim(false);
      assert.doesNotMatch(plan, /webhook_deliveries_endpoint/, plan);
      await sql`delete from webhook_deliveries where id like 'dlv_h%'`.execute(t.store.db);
      await sql`delete from events where id like 'evt_h%'`.execute(t.store.db);
    });

    test('on PostgreSQL the claim runs as a named prepared statement of its connection', async () => {
      const names = await t.store.db.connection().execute(async (db) => {
        await claim(db, 'named');
        const { rows } = await sql<{ name: string }>`select name from pg_prepared_statements`.execute(db);
        return rows.map((r) => r.name);
      });
      assert.ok(names.includes('matricula_claim_due_deliveries'), names.join(', '));
    });
  }
});
