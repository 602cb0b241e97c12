import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CompiledQuery, sql, type Compilable } from 'kysely';
import { OPEN_STATUSES, SESSION_STATUSES } from '../../src/domain/session-state.ts';
import { expireSessionsQuery } from '../../src/store/session-transitions.ts';
import { listSessions, sessionsDueForExpiry } from '../../src/store/sessions.ts';
import { analyzeOwnTables, forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { postgresGenericPlan } from '../support/plans.ts';

/**
 * Migration 0022 (issue 30, disk per million sessions): the expiry job reads open sessions through
 * a partial index of the open ones alone, and the organization's unfiltered list merges one
 * ordered read per status instead of an index of every session by (org_id, environment, id).
 * Over a table of ended sessions: the expiry read's plan (a prepared statement's generic plan on
 * PostgreSQL, which cannot prove a partial index from a bound parameter) uses the partial index,
 * and the merged list pages through every session exactly once, newest first. The expiry's UPDATE,
 * planned from statistics that counted fewer open sessions than there are, reads only the due ones.
 */
const ENDED = 3_000;

forEachDialect('session indexes of migration 0022', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  const iso = (ms: number) => new Date(ms).toISOString();
  const id = (n: number) => `sess_${String(n).padStart(26, '0')}`;

  /** `count` sessions of the tenant from number `from` on, statuses in turn, each `expiresAt`. */
  async function insert(from: number, count: number, statuses: readonly string[], expiresAt: string) {
    const at = iso(h.clock.now().getTime() - 60_000);
    for (let start = 0; start < count; start += 500) {
      const rows = Array.from({ length: Math.min(500, count - start) }, (_, i) => {
        const n = from + start + i;
        return {
          id: id(n),
          app_id: tenant.appId,
          org_id: tenant.orgId,
          environment: 'sandbox' as const,
          status: statuses[n % statuses.length] as (typeof SESSION_STATUSES)[number],
          challenge_nonce: `nonce-${n}`,
          purpose: 'p',
          required_claims: '[]',
          metadata: null,
          client_reference: null,
          verified: null,
          result: null,
          expires_at: expiresAt,
          created_at: at,
          updated_at: at,
          consented_at: null,
          completed_at: null,
          redacted_at: null,
        };
      });
      await h.store.db.insertInto('sessions').values(rows).execute();
    }
  }

  async function plan(query: Compilable): Promise<string> {
    const compiled = query.compile();
    if (dialect === 'sqlite') {
      const { rows } = await h.store.db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]),
      );
      return rows.map((row) => row.detail).join('\n');
    }
    // The generic plan a named prepared statement settles on, as the service's pool runs it.
    return postgresGenericPlan(
      h.store.db,
      compiled.sql,
      compiled.parameters.map((value) => `'${String(value)}'`),
    );
  }

  test('the expiry job reads the open sessions through the partial index, and only those due', async () => {
    const now = h.clock.now().getTime();
    await insert(1, ENDED, ['completed', 'expired', 'cancelled', 'declined'], iso(now - 3_600_000));
    await insert(ENDED + 1, 4, OPEN_STATUSES, iso(now - 1));
    await insert(ENDED + 5, 4, OPEN_STATUSES, iso(now + 600_000));
    await analyzeOwnTables(h.store.db);
    const query = sessionsDueForExpiry(h.store.db, iso(now), 100);
    assert.match(await plan(query), /sessions_open_due/);
    assert.doesNotMatch(await plan(query), /SCAN sessions$|Seq Scan on sessions/m);
    assert.deepEqual(
      (await query.execute()).map((row) => row.id),
      [1, 2, 3, 4].map((n) => id(ENDED + n)),
    );
  });

  test('expiring due sessions reads only the due ones, even planned from statistics of fewer open sessions', async () => {
    // The statistics of the test before (8 open sessions) are kept; 2,000 more open sessions,
    // none due, come after them, as a year-sized installation's open sessions outgrow the
    // statistics PostgreSQL last took. Planned from those, the expiry's UPDATE read its ids
    // through the partial index of open sessions, filtering every open one (bench/scale.ts).
    const now = h.clock.now().getTime();
    const OPEN = 2_000;
    await insert(ENDED + 100, OPEN, OPEN_STATUSES, iso(now + 600_000));
    const due = [1, 2, 3, 4].map((n) => id(ENDED + n));
    const notDue = [ENDED + 5, ENDED + 100, ENDED + 101].map(id);
    const query = expireSessionsQuery(h.store.db, [...due, ...notDue], iso(now));
    const compiled = query.compile();
    if (dialect === 'postgres') {
      const { rows } = await h.store.db.executeQuery<{ 'QUERY PLAN': unknown }>(
        CompiledQuery.raw(`explain (analyze, format json) ${compiled.sql}`, [...compiled.parameters]),
      );
      // Every row a step of the plan read from sessions: those it passed on and those it filtered.
      let read = 0;
      const visit = (node: Record<string, unknown>) => {
        if (node['Relation Name'] === 'sessions' && node['Node Type'] !== 'ModifyTable')
          read += Number(node['Actual Rows'] ?? 0) + Number(node['Rows Removed by Filter'] ?? 0);
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) visit(child);
      };
      const [explained] = rows[0]['QUERY PLAN'] as Array<{ Plan: Record<string, unknown> }>;
      visit(explained.Plan);
      assert.ok(read <= 20, `the UPDATE read ${read} rows of sessions for ${due.length + notDue.length} ids`);
    } else {
      // SQLite has no EXPLAIN ANALYZE: its plan looks the ids up by key, or reads the open
      // sessions' index only as far as the deadline.
      const detail = (
        await h.store.db.executeQuery<{ detail: string }>(
          CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]),
        )
      ).rows
        .map((row) => row.detail)
        .join('\n');
      assert.doesNotMatch(detail, /SCAN sessions|sessions_open_due(?! \(expires_at<\?\))/, detail);
      await query.execute();
    }
    const rows = await h.store.db
      .selectFrom('sessions')
      .select(['id', 'status'])
      .where('id', 'in', [...due, ...notDue])
      .orderBy('id')
      .execute();
    assert.deepEqual(
      rows.filter((row) => row.status === 'expired').map((row) => row.id),
      due,
      'the due sessions expired; the open ones not yet due did not',
    );
  });

  test("the organization's unfiltered list pages through every session once, newest first", async () => {
    const rows = await h.store.db
      .selectFrom('sessions')
      .select('id')
      .where('org_id', '=', tenant.orgId)
      .orderBy('id', 'desc')
      .execute();
    const want = rows.map((row) => row.id);
    assert.ok(want.length > 3_000, 'the sessions of the test before, of every status');
    for (const limit of [1, 7, 100]) {
      const seen: string[] = [];
      let startingAfter: string | undefined;
      for (;;) {
        const page = await listSessions(
          h.store.db,
          { orgId: tenant.orgId, environment: 'sandbox', now: h.clock.now() },
          { limit, startingAfter },
        );
        seen.push(...page.items.map((s) => s.id));
        assert.ok(page.items.length <= limit);
        if (!page.hasMore) break;
        assert.equal(page.items.length, limit);
        assert.equal(page.nextCursor, page.items[page.items.length - 1].id);
        startingAfter = page.nextCursor!;
        if (limit === 1 && seen.length >= 50) break;
      }
      assert.deepEqual(seen, want.slice(0, seen.length), `limit ${limit}`);
      if (limit !== 1) assert.equal(seen.length, want.length, `limit ${limit}: every session`);
    }
  });

  test('the indexes it replaced are gone', async () => {
    const names =
      dialect === 'sqlite'
        ? await sql<{
            name: string;
          }>`select name from sqlite_master where type = 'index' and tbl_name = 'sessions'`.execute(h.store.db)
        : await sql<{ name: string }>`select indexname as name from pg_indexes
            where schemaname = current_schema() and tablename = 'sessions'`.execute(h.store.db);
    const indexes = names.rows.map((row) => row.name);
    assert.ok(indexes.includes('sessions_open_due'));
    assert.ok(!indexes.includes('sessions_open_expiry'));
    assert.ok(!indexes.includes('sessions_org_env'));
  });
});
