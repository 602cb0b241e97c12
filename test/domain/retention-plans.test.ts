import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql, type Compilable } from 'kysely';
import { createIndexOnline } from '../../src/store/online-index.ts';
import { sessionsDueForRetention } from '../../src/store/sessions.ts';
import { attemptsWithBodiesBefore } from '../../src/store/webhook-deliveries/retention.ts';
import { analyzeOwnTables, createTestStore, PG_SKIP_MESSAGE, type TestStore } from '../support/harness.ts';

/**
 * Issue 30: a retention run with nothing due must cost the same at any size. PostgreSQL scanned
 * every session each minute (the index on (redacted_at, expires_at) cannot serve `redacted_at is
 * null order by expires_at`) and every attempt. Over 20,000 sessions already redacted and 20,000
 * attempts whose bodies are already empty, the plans of both reads must use the partial indexes of
 * migration 0016 and read a handful of pages (100 rows' worth of pages at most), no table scan.
 */
const ROWS = 20_000;
const INDEXES_0016 = new Set([
  'sessions_retention_due',
  'webhook_attempts_body_kept',
  'sessions_org_env_status',
  'sessions_app_status',
  'events_org_env_type',
  'events_app_type',
  'webhook_deliveries_done_by_status',
  'api_keys_org_env',
]);
const MAX_PAGES = 10;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

const name = 'retention plans with nothing due [postgres]';
if (!process.env.TEST_DATABASE_URL) {
  describe(name, () => test(name, { skip: PG_SKIP_MESSAGE }, () => {}));
} else {
  describe(name, () => {
    let t: TestStore;
    const now = new Date('2027-06-01T00:00:00.000Z');
    before(async () => {
      t = await createTestStore('postgres');
      const db = t.store.db;
      const at = '2027-01-01T00:00:00.000Z';
      await sql`insert into organizations values ('org_1', 'Org', ${at})`.execute(db);
      await sql`insert into applications values ('app_1', 'org_1', 'App', null, 'sandbox', 'active', ${at}, ${at})`.execute(
        db,
      );
      await sql`insert into webhook_endpoints (id, app_id, org_id, environment, url, events, enabled, secret, created_at, updated_at)
        values ('whk_1', 'app_1', 'org_1', 'sandbox', 'http://127.0.0.1:9/', '[]', 1, 's', ${at}, ${at})`.execute(db);
      await sql`insert into sessions (id, app_id, org_id, environment, status, challenge_nonce, purpose, required_claims,
          expires_at, created_at, updated_at, redacted_at)
        select 'sess_' || lpad(i::text, 26, '0'), 'app_1', 'org_1', 'sandbox', 'expired', 'n' || i, 'p', '[]',
          ${at}, ${at}, ${at}, ${at}
        from generate_series(1, ${ROWS}) i`.execute(db);
      await sql`insert into events (id, app_id, org_id, environment, type, data, created_at)
        select 'evt_' || lpad(i::text, 26, '0'), 'app_1', 'org_1', 'sandbox', 'verification.expired', '{}', ${at}
        from generate_series(1, ${ROWS}) i`.execute(db);
      await sql`insert into webhook_deliveries (id, endpoint_id, event_id, event_type, status, attempt_count, created_at, updated_at)
        select 'del_' || lpad(i::text, 26, '0'), 'whk_1', 'evt_' || lpad(i::text, 26, '0'), 'verification.expired',
          'succeeded', 1, ${at}, ${at}
        from generate_series(1, ${ROWS}) i`.execute(db);
      await sql`insert into webhook_attempts (id, delivery_id, attempt, worker_id, started_at, duration_ms, outcome,
          response_body, response_body_truncated)
        select 'att_' || lpad(i::text, 26, '0'), 'del_' || lpad(i::text, 26, '0'), 1, 'w', ${at}, 1, 'succeeded', '', 0
        from generate_series(1, ${ROWS}) i`.execute(db);
      await analyzeOwnTables(db);
    });
    after(() => t?.drop());

    async function plan(query: Compilable): Promise<PlanNode> {
      const compiled = query.compile();
      const { rows } = await t.store.pgPool!.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
        `explain (analyze, buffers, format json) ${compiled.sql}`,
        compiled.parameters as unknown[],
      );
      return rows[0]['QUERY PLAN'][0].Plan;
    }

    const cases: Array<[string, string, () => Compilable]> = [
      [
        'sessions due for retention',
        'sessions_retention_due',
        () => sessionsDueForRetention(t.store.db, now.toISOString(), 100),
      ],
      [
        'attempts whose body is still stored',
        'webhook_attempts_body_kept',
        () => attemptsWithBodiesBefore(t.store.db, now.toISOString(), 500),
      ],
    ];
    test("migration 0016's indexes were built, valid, outside a transaction (CONCURRENTLY refuses one)", async () => {
      const { rows } = await sql<{ name: string; valid: boolean }>`
        select c.relname as name, i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
        where c.relnamespace = current_schema()::regnamespace and c.relname = any(${[...INDEXES_0016]})
        order by c.relname`.execute(t.store.db);
      assert.deepEqual(
        rows,
        [...INDEXES_0016].sort().map((name) => ({ name, valid: true })),
      );
    });

    test('an index build that was interrupted (left INVALID) is dropped and built again', async () => {
      const db = t.store.db;
      await sql`create table online_index_probe (v integer)`.execute(db);
      await sql`insert into online_index_probe values (1), (1)`.execute(db);
      // A unique build over duplicates fails half-way and leaves its index behind, INVALID.
      await assert.rejects(
        sql`create unique index concurrently online_index_probe_v on online_index_probe (v)`.execute(db),
      );
      const valid = async () =>
        (
          await sql<{
            valid: boolean;
          }>`select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
            where c.relname = 'online_index_probe_v' and c.relnamespace = current_schema()::regnamespace`.execute(db)
        ).rows.map((r) => r.valid);
      assert.deepEqual(await valid(), [false]);
      await createIndexOnline(db, { name: 'online_index_probe_v', table: 'online_index_probe', columns: ['v'] });
      assert.deepEqual(await valid(), [true]);
      await createIndexOnline(db, { name: 'online_index_probe_v', table: 'online_index_probe', columns: ['v'] });
      assert.deepEqual(await valid(), [true], 'a valid index is left as it is');
    });

    for (const [what, index, query] of cases) {
      test(`${what}: the partial index ${index}, a few pages, no table scan`, async () => {
        const all = nodes(await plan(query()));
        assert.deepEqual(
          all.filter((node) => node['Node Type'].includes('Seq Scan')).map((node) => node['Relation Name']),
          [],
          'no sequential scan',
        );
        assert.ok(
          all.some((node) => node['Index Name'] === index),
          `reads ${index}: ${JSON.stringify(all.map((n) => [n['Node Type'], n['Index Name']]))}`,
        );
        const pages = (all[0]['Shared Hit Blocks'] ?? 0) + (all[0]['Shared Read Blocks'] ?? 0);
        assert.ok(pages <= MAX_PAGES, `${pages} pages read`);
      });
    }
  });
}
