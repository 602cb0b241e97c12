import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { hashSecret } from '../../src/domain/api-key-format.ts';
import { TestClock } from '../../src/domain/clock.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { createSession } from '../../src/services/sessions.ts';
import { lookupKeyWithSession } from '../../src/store/api-keys.ts';
import { openStore, type Store } from '../../src/store/db.ts';
import { StatementCachingSqliteConnection } from '../../src/store/sqlite-connection.ts';
import { findSession, listSessions } from '../../src/store/sessions.ts';
import { recordAttempts } from '../../src/store/webhook-deliveries/recording.ts';
import {
  buildTestApp,
  createTestStore,
  forEachDialect,
  principalOf,
  testConfig,
  type TestStore,
} from '../support/harness.ts';
import { answeredRecord, seedEndpoint } from '../support/webhooks.ts';

/**
 * A rolling upgrade (docs/operations.md, "Upgrades"): the first new process adds a column, and an
 * old process still running must go on reading. On PostgreSQL the hot-path reads are named
 * prepared statements, which the server refuses once their result type changed; on SQLite the
 * store's connection makes the rows from column names it read once (store/sqlite-connection.ts).
 */
forEachDialect('reads while another process changes the schema', (dialect) => {
  let store: TestStore;
  /** The old process: on PostgreSQL one connection, so its statements prepared before are the ones run after. */
  let old: Store;
  const clock = new TestClock();
  let orgId: string;
  let keyHash: string;
  let sessionId: string;

  before(async () => {
    store = await createTestStore(dialect);
    old = await openStore(store.url, { poolSize: 1 });
    const { services } = await buildTestApp(store.store, clock, testConfig());
    const created = await createOrganization({ db: store.store.db, clock }, { name: 'Old', environment: 'sandbox' });
    orgId = created.organization.id;
    keyHash = hashSecret(created.apiKey.rawSecret);
    const session = await createSession(services, principalOf(created), {
      appId: created.application.id,
      purpose: 'Upgrade',
      requiredClaims: ['is_active_student'],
      metadata: { order: '42' },
    });
    sessionId = session.id;
  });
  after(async () => {
    await old.close();
    await store.drop();
  });

  const reads = async () => ({
    withKey: await lookupKeyWithSession(old.db, keyHash, sessionId),
    byId: await findSession(old.db, sessionId),
    page: await listSessions(old.db, { orgId, environment: 'sandbox', now: clock.now() }, { limit: 10 }),
  });
  const everyColumn = async (db: Store['db']) =>
    (await db.selectFrom('sessions').selectAll().where('id', '=', sessionId).execute())[0] as Record<string, unknown>;

  test('an old process reads sessions on after a new one added a column, and sees the column', async () => {
    const before = await reads();
    assert.equal(before.byId?.id, sessionId);
    assert.equal(before.withKey.kind === 'active' && before.withKey.session?.id, sessionId);
    assert.equal((await everyColumn(old.db)).upgrade_note, undefined);

    await sql`alter table sessions add column upgrade_note text default 'added'`.execute(store.store.db);

    assert.deepEqual(await reads(), before, 'the same sessions, read by the statements prepared before');
    assert.equal((await everyColumn(old.db)).upgrade_note, 'added', "a select * shows the new column's value");

    await sql`alter table sessions drop column upgrade_note`.execute(store.store.db);
    assert.deepEqual(await reads(), before);
    const row = await everyColumn(old.db);
    assert.equal('upgrade_note' in row, false, 'the dropped column is gone from a select *');
    assert.equal(row.purpose, 'Upgrade');
  });

  test('a column renamed on the same connection is read under its new name', async () => {
    await everyColumn(store.store.db);
    await sql`alter table sessions add column renamed_note text default 'kept'`.execute(store.store.db);
    assert.equal((await everyColumn(store.store.db)).renamed_note, 'kept');
    await sql`alter table sessions rename column renamed_note to renamed_remark`.execute(store.store.db);
    const row = await everyColumn(store.store.db);
    assert.equal(row.renamed_remark, 'kept');
    assert.equal('renamed_note' in row, false);
    await sql`alter table sessions drop column renamed_remark`.execute(store.store.db);
  });
  test("an attempt an old process records gets a new column's default", async () => {
    await seedEndpoint(store.store.db);
    const db = store.store.db;
    await sql`insert into events (id, app_id, org_id, environment, type, data, created_at)
      select 'evt_up', id, org_id, 'sandbox', 'verification.completed', '{}', '2026-01-01T00:00:00Z'
      from applications limit 1`.execute(db);
    await sql`insert into webhook_deliveries (id, endpoint_id, event_id, event_type, status, due_at, lease_token,
        attempt_count, created_at, updated_at, delivered_at)
      select 'dlv_up', id, 'evt_up', 'verification.completed', 'sending', '2026-01-01T00:01:00Z', 'tok', 1,
        '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', null
      from webhook_endpoints limit 1`.execute(db);
    await sql`alter table webhook_attempts add column upgrade_flag text not null default 'yes'`.execute(db);
    const record = answeredRecord({
      deliveryId: 'dlv_up',
      token: 'tok',
      id: 'att_up',
      startedAt: '2026-01-01T00:00:01Z',
    });
    assert.deepEqual([...(await recordAttempts(old.db, [record], '2026-01-01T00:00:02Z'))], ['dlv_up']);
    const row = await sql<{
      upgrade_flag: string;
    }>`select upgrade_flag from webhook_attempts where id = 'att_up'`.execute(db);
    assert.deepEqual(row.rows, [{ upgrade_flag: 'yes' }]);
  });
});

describe("the SQLite connection's rows", () => {
  const db = new Database(':memory:');
  const connection = new StatementCachingSqliteConnection(db, () => undefined);
  after(() => db.close());

  test('equal the rows better-sqlite3 makes: every type, duplicate names, no rows, RETURNING', async () => {
    db.exec(`create table t (id integer primary key, name text, score real, data blob, note text)`);
    db.prepare('insert into t (name, score, data, note) values (?, ?, ?, ?)').run('a', 1.5, Buffer.from([1, 2]), null);
    db.prepare('insert into t (name, score, data, note) values (?, ?, ?, ?)').run('é', -2, null, 'n');
    const statements: Array<[string, unknown[]]> = [
      ['select * from t order by id', []],
      ['select id, name as a, score as a, note from t where id = ?', [2]],
      ['select * from t where id = ?', [99]],
      ["select 1 as one, 'x' as one, null as empty", []],
      // Names that are no identifier, and one that would close the object literal the rows are made with.
      [
        'select 2 as "a b", 3 as "x"": 0, y: process.exit()}//", 4 as "q\\", 5 as "é\nz", 6 as "0", 7 as "constructor"',
        [],
      ],
    ];
    for (const [text, parameters] of statements) {
      const expected = db.prepare(text).all(parameters) as Array<Record<string, unknown>>;
      const read = connection.read(text, parameters) as Array<Record<string, unknown>>;
      assert.deepEqual(read, expected, text);
      // deepEqual holds neither the order of the keys nor the prototype.
      assert.deepEqual(read.map(Object.keys), expected.map(Object.keys), `${text}: keys in order`);
      for (const row of read) assert.equal(Object.getPrototypeOf(row), Object.prototype, `${text}: prototype`);
      assert.deepEqual(connection.read(text, parameters), expected, `${text}, kept`);
      const { rows } = await connection.executeQuery({
        sql: text,
        parameters,
        query: undefined as never,
        queryId: undefined as never,
      });
      assert.deepEqual(rows, expected, `${text}, through executeQuery`);
    }
    // better-sqlite3 sets `__proto__` (the prototype, to a Buffer say); here it is a property like any other.
    const proto = "select 1 as one, x'0102' as __proto__, 3 as one, 'q' as __proto__";
    const [row] = connection.read(proto, []) as Array<Record<string, unknown>>;
    assert.deepEqual(Object.getOwnPropertyNames(row), ['one', '__proto__']);
    assert.deepEqual([row.one, Object.getOwnPropertyDescriptor(row, '__proto__')?.value], [3, 'q']);
    assert.equal(Object.getPrototypeOf(row), Object.prototype);
    const returning = 'insert into t (name) values (?) returning id, name';
    assert.equal(
      connection.read(returning, ['c']),
      undefined,
      'a statement that writes is no direct read: it did not run',
    );
    const { rows } = await connection.executeQuery({
      sql: returning,
      parameters: ['d'],
      query: undefined as never,
      queryId: undefined as never,
    });
    assert.deepEqual(rows, [{ id: 3, name: 'd' }]);
  });
});
