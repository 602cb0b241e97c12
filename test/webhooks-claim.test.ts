import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CompiledQuery, sql, type RootOperationNode } from 'kysely';
import { systemClock } from '../src/domain/clock.ts';
import { createOrganization } from '../src/services/organizations.ts';
import { insertNewEndpoint } from '../src/services/webhooks.ts';
import type { Db } from '../src/store/db.ts';
import { claimDueDeliveries } from '../src/store/webhook-deliveries.ts';
import { createTestStore, forEachDialect, type TestStore } from './support/harness.ts';

/**
 * How the claim reaches the database: through the index of due deliveries, in due order, and on
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

  test('the claim finds what is due through the index of due deliveries', async () => {
    // The claim's statement as it is built, captured on its way to the database.
    let node: RootOperationNode | undefined;
    const capturing = t.store.db.withPlugin({
      transformQuery: (args) => {
        const top =
          dialect === 'postgres'
            ? args.node.kind === 'SelectQueryNode' && args.node.with
            : args.node.kind === 'UpdateQueryNode';
        if (top && JSON.stringify(args.node).includes('"row_number"')) node = args.node;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    await claim(capturing, 'capture');
    assert.ok(node, 'the claim was built on the Db it was given');
    const compiled = t.store.db.getExecutor().compileQuery(node, { queryId: 'claim' } as never);
    const explain = dialect === 'postgres' ? 'explain ' : 'explain query plan ';
    const plan = await t.store.db.connection().execute(async (db) => {
      // PostgreSQL picks a sequential scan for a table this small: let it choose among indexes alone.
      if (dialect === 'postgres') await sql`set enable_seqscan = off`.execute(db);
      try {
        const { rows } = await db.executeQuery<Record<string, unknown>>(
          CompiledQuery.raw(explain + compiled.sql, [...compiled.parameters]),
        );
        return rows.map((r) => Object.values(r).join(' ')).join('\n');
      } finally {
        if (dialect === 'postgres') await sql`reset enable_seqscan`.execute(db);
      }
    });
    assert.match(plan, /webhook_deliveries_due_at/, plan);
    assert.doesNotMatch(plan, /webhook_deliveries_endpoint/, plan);
  });

  if (dialect === 'postgres') {
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
