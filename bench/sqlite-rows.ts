/**
 * What making SQLite's rows into objects costs: the store's connection (store/sqlite-connection.ts
 * StatementCachingSqliteConnection: raw rows, made objects with the column names read once) beside
 * better-sqlite3's own rows (each name made a string again for every column of every row, the
 * properties added one by one from C++), on the same statements of the same database, in the same
 * run.
 *
 *   node --import tsx bench/sqlite-rows.ts [--iterations 20000] [--json]
 *
 * The database is the service's schema with real rows: sessions created by the service's own code.
 * Two reads: one session by id (a session GET reads this row, plus seven columns of its key) and a
 * page of 100 sessions (a list page). The two ways alternate, their order rotating every
 * iteration, so that noise on this shared machine hits them alike; both are checked to give equal
 * rows before timing. Figures are printed, never asserted; with --json the last line is one JSON
 * object.
 */
import assert from 'node:assert/strict';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { TestClock } from '../src/domain/clock.ts';
import { createOrganization } from '../src/services/organizations.ts';
import { createSession } from '../src/services/sessions.ts';
import { StatementCachingSqliteConnection } from '../src/store/sqlite-connection.ts';
import { buildTestApp, createTestStore, principalOf, testConfig } from '../test/support/harness.ts';

const { values } = parseArgs({
  options: {
    iterations: { type: 'string', default: '20000' },
    json: { type: 'boolean', default: false },
  },
});
const ITERATIONS = Number(values.iterations);
if (!Number.isInteger(ITERATIONS) || ITERATIONS < 1) throw new Error('--iterations: a positive whole number');
const PAGE = 100;

const median = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)];
const loadStart = loadavg()[0];
const test = await createTestStore('sqlite');
try {
  const clock = new TestClock();
  const { services } = await buildTestApp(test.store, clock, testConfig());
  const created = await createOrganization({ db: test.store.db, clock }, { name: 'Bench', environment: 'sandbox' });
  const principal = principalOf(created);
  for (let i = 0; i < PAGE; i++)
    await createSession(services, principal, {
      appId: created.application.id,
      purpose: 'Benchmark',
      requiredClaims: ['is_active_student'],
      metadata: { order: `o-${i}` },
      clientReference: `ref-${i}`,
    });
  const db = test.store.db;
  const [first] = await db.selectFrom('sessions').select('id').orderBy('id').limit(1).execute();
  const reads = {
    'one session': db.selectFrom('sessions').selectAll().where('id', '=', first.id).compile(),
    [`a page of ${PAGE}`]: db
      .selectFrom('sessions')
      .selectAll()
      .where('org_id', '=', principal.orgId)
      .orderBy('id', 'desc')
      .limit(PAGE)
      .compile(),
  };

  const sqlite = new Database(test.url.replace(/^sqlite:/, ''), { readonly: true });
  const connection = new StatementCachingSqliteConnection(sqlite, () => undefined);
  const figures: Record<string, { better_sqlite3_us: number; store_us: number; ratio: number }> = {};
  for (const [name, query] of Object.entries(reads)) {
    const objects = sqlite.prepare(query.sql);
    const parameters = query.parameters as unknown[];
    const ways = [() => objects.all(parameters), () => connection.read(query.sql, parameters)];
    assert.deepEqual(ways[1](), ways[0](), `${name}: the store's rows equal better-sqlite3's`);
    assert.equal((ways[0]() as unknown[]).length, name === 'one session' ? 1 : PAGE);
    const samples: number[][] = [[], []];
    for (let i = 0; i < ITERATIONS; i++)
      for (const w of i % 2 === 0 ? [0, 1] : [1, 0]) {
        const start = performance.now();
        ways[w]();
        samples[w].push((performance.now() - start) * 1000);
      }
    const [objectsUs, storeUs] = samples.map((s) => median(s.slice(s.length / 10)));
    figures[name] = {
      better_sqlite3_us: Math.round(objectsUs * 100) / 100,
      store_us: Math.round(storeUs * 100) / 100,
      ratio: Math.round((storeUs / objectsUs) * 1000) / 1000,
    };
  }
  sqlite.close();

  console.log(`bench/sqlite-rows.ts  iterations=${ITERATIONS}  node=${process.version}`);
  console.log(`load average (1 min) ${loadStart.toFixed(2)} at start, ${loadavg()[0].toFixed(2)} at end\n`);
  console.log('read                  better-sqlite3 rows µs   store rows µs   store ÷ better-sqlite3 (median)');
  for (const [name, f] of Object.entries(figures))
    console.log(
      `${name.padEnd(22)}${f.better_sqlite3_us.toFixed(2).padStart(24)}${f.store_us.toFixed(2).padStart(16)}${f.ratio.toFixed(3).padStart(34)}`,
    );
  if (values.json)
    console.log(JSON.stringify({ ...figures, loadavg: [loadStart, loadavg()[0]], iterations: ITERATIONS }));
} finally {
  await test.drop();
}
