import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CompiledQuery, sql, type RootOperationNode } from 'kysely';
import type { Db } from '../../src/store/db.ts';
import { claimDueDeliveries } from '../../src/store/webhook-deliveries/claim.ts';
import { recordAttempts } from '../../src/store/webhook-deliveries/recording.ts';
import { analyzeOwnTables, createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { answeredRecord, seedEndpoint } from '../support/webhooks.ts';

/**
 * How the claim reaches the database: through the partial index of due deliveries by endpoint
 * (each endpoint's oldest due first, migration 0011), and on
 * PostgreSQL as a named prepared statement, planned once per connection rather than on every
 * claim.
 */
/**
 * The steps of an `explain analyze` plan that read webhook_deliveries, each with the rows it read:
 * those it returned and those its filter removed (a node is its line, then its details up to the
 * next node).
 */
function deliveryReads(plan: string): Array<{ node: string; rows: number }> {
  return plan
    .split(/\n(?=\s*->)/)
    .filter((node) => / on webhook_deliveries /.test(node.split('\n')[0]!))
    .map((node) => {
      const [, rows, loops] = /actual time=\S+ rows=(\d+) loops=(\d+)/.exec(node) ?? [];
      const removed = [...node.matchAll(/Rows Removed by \w+(?: \w+)?: (\d+)/g)].map(([, n]) => Number(n));
      return { node: node.split('\n')[0]!.trim(), rows: (Number(rows) + Math.max(0, ...removed)) * Number(loops) };
    });
}

forEachDialect('the claim of due deliveries', (dialect) => {
  let t: TestStore;
  const claim = (db: Db, token: string) => {
    const now = new Date().toISOString();
    return claimDueDeliveries(db, { now, leaseUntil: now, token, limit: 8, perEndpoint: 4, knownDue: true });
  };

  before(async () => {
    t = await createTestStore(dialect);
    const db = t.store.db;
    await seedEndpoint(db);
  });
  after(() => t.drop());

  /** The plan of the claim's statement as it is built, captured on its way to the database. */
  const planOfClaim = async (indexesOnly: boolean, analyze = false): Promise<string> => {
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
    const explain = dialect === 'postgres' ? (analyze ? 'explain analyze ' : 'explain ') : 'explain query plan ';
    return t.store.db.connection().execute(async (db) => {
      // PostgreSQL picks a sequential scan for a table this small: let it choose among indexes alone.
      if (indexesOnly) await sql`set enable_seqscan = off`.execute(db);
      // Analyzed, the claim runs: in a transaction rolled back, so that it takes nothing.
      if (analyze) await sql`begin`.execute(db);
      try {
        const { rows } = await db.executeQuery<Record<string, unknown>>(
          CompiledQuery.raw(explain + compiled.sql, [...compiled.parameters]),
        );
        return rows.map((r) => Object.values(r).join(' ')).join('\n');
      } finally {
        if (analyze) await sql`rollback`.execute(db);
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
    test('a recording finds its deliveries by primary key, however many the table holds', async () => {
      // 16 sent under one claim, beside 10,000 delivered, never analyzed, the table's first
      // rows (the tests below leave it larger, and analyzed): the recording's UPDATE
      // joined its 16 to a scan of the whole table (the planner takes a JSON list for 100 rows),
      // 0.4 ms of a 1.3 ms recording in a drain of 5,000 (bench/webhooks.ts).
      const db = t.store.db;
      await sql`insert into events (id, app_id, org_id, environment, type, data, created_at)
        select 'evt_r' || g, a.id, a.org_id, 'sandbox', 'verification.completed', '{}', '2026-01-01T00:00:00Z'
        from generate_series(1, 10016) g, applications a`.execute(db);
      await sql`insert into webhook_deliveries (id, endpoint_id, event_id, event_type, status, due_at, lease_token,
          attempt_count, created_at, updated_at, delivered_at)
        select 'dlv_r' || g, e.id, 'evt_r' || g, 'verification.completed',
          case when g > 10000 then 'sending' else 'succeeded' end,
          case when g > 10000 then '2026-01-01T00:01:00Z' end, case when g > 10000 then 'tok' end, 1,
          '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', null
        from generate_series(1, 10016) g, webhook_endpoints e`.execute(db);
      const records = Array.from({ length: 16 }, (_, i) =>
        answeredRecord({
          deliveryId: `dlv_r${10001 + i}`,
          token: 'tok',
          id: `att_r${i}`,
          startedAt: '2026-01-01T00:00:01Z',
        }),
      );
      // The recording as it is built, captured on its way to the database and not run there.
      let node: RootOperationNode | undefined;
      const capturing = db.withPlugin({
        transformQuery: (args) => {
          node = args.node;
          throw new Error('captured');
        },
        transformResult: async (args) => args.result,
      });
      await assert.rejects(recordAttempts(capturing, records, '2026-01-01T00:00:02Z'), /captured/);
      const compiled = db.getExecutor().compileQuery(node!, { queryId: 'recording' } as never);
      try {
        const plan = await db.connection().execute(async (c) => {
          await sql`begin`.execute(c);
          try {
            const { rows } = await c.executeQuery<Record<string, unknown>>(
              CompiledQuery.raw(`explain analyze ${compiled.sql}`, [...compiled.parameters]),
            );
            return rows.map((r) => Object.values(r).join(' ')).join('\n');
          } finally {
            await sql`rollback`.execute(c);
          }
        });
        assert.match(plan, /Insert on webhook_attempts .*rows=16 /, plan);
        for (const { node, rows } of deliveryReads(plan)) assert.ok(rows <= 100, `${rows} rows: ${node}\n\n${plan}`);
      } finally {
        await sql`delete from webhook_deliveries where id like 'dlv_r%'`.execute(db);
        await sql`delete from events where id like 'evt_r%'`.execute(db);
      }
    });

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

    /**
     * The rows each step of the claim's plan reads from webhook_deliveries (what it returned, and
     * what its filter removed) with a year's history of 6,000 deliveries to 2,000 endpoints, then
     * an outage's backlog of 10,000 to one endpoint; `analyzed`: the history was analyzed while
     * nothing was due (the planner then counts nearly every delivery as finished), else nothing was
     * (autovacuum off, as on CI's server, or in a new installation's first minute).
     */
    const readsOfClaimAfterBacklog = async (analyzed: boolean) => {
      const db = t.store.db;
      await sql`insert into webhook_endpoints (id, app_id, org_id, environment, url, description, events, enabled,
          disabled_reason, secret, previous_secret, previous_secret_expires_at, created_at, updated_at)
        select 'we_h' || g, app_id, org_id, environment, url, description, events, enabled, disabled_reason,
          secret, previous_secret, previous_secret_expires_at, created_at, updated_at
        from generate_series(1, 2000) g, webhook_endpoints`.execute(db);
      await sql`insert into events (id, app_id, org_id, environment, type, data, created_at)
        select 'evt_h' || g, a.id, a.org_id, 'sandbox', 'verification.completed', '{}', '2026-01-01T00:00:00Z'
        from generate_series(1, 16000) g, applications a`.execute(db);
      await sql`insert into webhook_deliveries (id, endpoint_id, event_id, event_type, status, due_at, lease_token,
          attempt_count, created_at, updated_at, delivered_at)
        select 'dlv_h' || g, 'we_h' || (1 + g % 2000), 'evt_h' || g, 'verification.completed', 'succeeded', null,
          null, 1, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z'
        from generate_series(1, 6000) g`.execute(db);
      if (analyzed) await analyzeOwnTables(db);
      await sql`insert into webhook_deliveries (id, endpoint_id, event_id, event_type, status, due_at, lease_token,
          attempt_count, created_at, updated_at, delivered_at)
        select 'dlv_h' || g, e.id, 'evt_h' || g, 'verification.completed', 'pending',
          to_char(timestamp '2026-01-01' + g * interval '1 ms', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), null,
          0, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', null
        from generate_series(6001, 16000) g, webhook_endpoints e where e.id not like 'we_h%'`.execute(db);
      try {
        const plan = await planOfClaim(false, true);
        return { plan, reads: deliveryReads(plan) };
      } finally {
        await sql`delete from webhook_deliveries where id like 'dlv_h%'`.execute(db);
        await sql`delete from events where id like 'evt_h%'`.execute(db);
        await sql`delete from webhook_endpoints where id like 'we_h%'`.execute(db);
      }
    };

    for (const analyzed of [false, true])
      test(`a claim reads a few of an endpoint's due deliveries, however long its backlog (${analyzed ? 'history analyzed' : 'never analyzed'})`, async () => {
        // The claim used to read the backlog (a bitmap scan of it to sort, or a scan of every due
        // row tested against the chosen ids): 4 to 5 ms a claim at 16,000 to 20,000 due.
        const { plan, reads } = await readsOfClaimAfterBacklog(analyzed);
        assert.ok(reads.length >= 3, plan);
        for (const { node, rows } of reads) assert.ok(rows <= 100, `${rows} rows: ${node}\n\n${plan}`);
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
