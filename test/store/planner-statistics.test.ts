import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CompiledQuery, sql, type Compilable } from 'kysely';
import { buildPeriodicJobs } from '../../src/jobs/schedule.ts';
import { migrate, SQLITE_ANALYSIS_LIMIT } from '../../src/store/db.ts';
import { spentNoncesPurgeBatch } from '../../src/store/spent-nonces.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';

/**
 * Issue 30: the planner's statistics follow the tables (store/dialect.ts, `refreshStatistics`).
 * SQLite plans from its last ANALYZE and never renews it: statistics taken while `spent_nonces`
 * held 3 rows made each purge batch scan the whole table once it held 200,000 (24 ms per batch in
 * bench/scale.ts's purge burst, whatever the batch's size). After the purge job's first step, and
 * after migrating, a batch looks its rows up by key again. PostgreSQL scales its statistics by the
 * table's current size when it plans, and autovacuum analyzes: its plan is checked the same way.
 */
const GROWN = 20_000;

forEachDialect('planner statistics', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  async function plan(query: Compilable): Promise<string> {
    const compiled = query.compile();
    const explain = dialect === 'postgres' ? 'explain ' : 'explain query plan ';
    const { rows } = await h.store.db.executeQuery<Record<string, string>>(
      CompiledQuery.raw(explain + compiled.sql, [...compiled.parameters]),
    );
    return rows.map((row) => row.detail ?? row['QUERY PLAN']).join('\n');
  }
  const scansTheTable = /^(SCAN spent_nonces$|.*Seq Scan on spent_nonces)/m;

  /** A small table analyzed, then grown to GROWN rows (all unexpired but `expired` of them). */
  async function staleStatistics(now: Date, expired: number) {
    const iso = (ms: number) => new Date(ms).toISOString();
    const rows = (prefix: string, count: number, expiresAt: string) =>
      Array.from({ length: count }, (_, i) => ({
        org_id: tenant.orgId,
        nonce_hash: `${prefix}${i}`,
        spent_at: iso(now.getTime() - 1000),
        expires_at: expiresAt,
      }));
    await h.store.db.deleteFrom('spent_nonces').execute();
    await h.store.db
      .insertInto('spent_nonces')
      .values(rows('small-', 3, iso(now.getTime() + 60_000)))
      .execute();
    await sql`analyze spent_nonces`.execute(h.store.db);
    for (let at = 0; at < GROWN; at += 1000) {
      await h.store.db
        .insertInto('spent_nonces')
        .values(rows(`grown-${at}-`, 1000, iso(now.getTime() + 60_000)))
        .execute();
    }
    if (expired > 0) {
      await h.store.db
        .insertInto('spent_nonces')
        .values(rows('expired-', expired, iso(now.getTime() - 1)))
        .execute();
    }
  }
  const remaining = async () =>
    Number(
      (
        await h.store.db
          .selectFrom('spent_nonces')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  if (dialect === 'sqlite') {
    test('SQLite samples each index rather than reading it whole: the statistics follow, at a bounded cost', async () => {
      const [limit] = (await sql<{ analysis_limit: number }>`pragma analysis_limit`.execute(h.store.db)).rows;
      assert.equal(limit?.analysis_limit, SQLITE_ANALYSIS_LIMIT);
      assert.ok(SQLITE_ANALYSIS_LIMIT < GROWN, 'a table of GROWN rows is sampled below');
      const now = h.clock.now();
      await staleStatistics(now, 0);
      await sql`pragma optimize = 0x10002`.execute(h.store.db);
      const { rows } = await sql<{
        stat: string;
      }>`select stat from sqlite_stat1 where idx = 'spent_nonces_expiry'`.execute(h.store.db);
      assert.equal(rows[0]?.stat.split(' ')[0], String(GROWN + 3), 'the row count, from a sample');
    });
  }

  test('the purge job renews them first: its batches look rows up by key, not by scanning the table', async () => {
    const now = h.clock.now();
    await staleStatistics(now, 700);
    const batch = () => spentNoncesPurgeBatch(h.store.db, now.toISOString(), 500);
    if (dialect === 'sqlite') {
      assert.match(await plan(batch()), scansTheTable, 'the statistics of 3 rows plan a scan (what the job must fix)');
    }
    const purge = buildPeriodicJobs({
      services: h.services,
      clock: h.clock,
      config: h.config,
      log: { error: ({ err }) => assert.fail(String(err)) },
    }).find((job) => job.name === 'expired-rows-purge')!;
    await purge.runOnce();
    assert.equal(await remaining(), 3 + GROWN, 'every expired row went, every other stayed');
    assert.doesNotMatch(await plan(batch()), scansTheTable);
  });

  test('migrating renews them too (a service starting on a database analyzed long ago)', async () => {
    const now = h.clock.now();
    await staleStatistics(now, 0);
    const batch = () => spentNoncesPurgeBatch(h.store.db, now.toISOString(), 500);
    if (dialect === 'sqlite') assert.match(await plan(batch()), scansTheTable);
    await migrate(h.store);
    assert.doesNotMatch(await plan(batch()), scansTheTable);
  });
});
