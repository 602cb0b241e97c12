import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { systemClock } from '../../src/domain/clock.ts';
import { hashSecret } from '../../src/domain/api-key-format.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { lookupKeyByHash, lookupKeyWithSession } from '../../src/store/api-keys.ts';
import { readDirectly } from '../../src/store/dialect.ts';
import { prepareQuery } from '../../src/store/prepared.ts';
import { findSession } from '../../src/store/sessions.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';

/**
 * The hot-path queries are compiled once and then run with new values (store/prepared.ts): the
 * values must land in the right places whatever their order in the SQL, constants of the query
 * must stay, and a query run inside a transaction must run in it.
 */
const appsOfOrg = prepareQuery('test_apps_of_org', (db, p: { name: string; orgId: string }) =>
  db
    .selectFrom('applications')
    .select(['id', 'name'])
    // The parameters appear in the SQL in another order than the calls name them, around a constant.
    .where('org_id', '=', p.orgId)
    .where('status', '=', 'active')
    .where('name', '=', p.name),
);

forEachDialect('prepared hot-path queries', (dialect) => {
  let db: TestStore;
  let org: Awaited<ReturnType<typeof createOrganization>>;
  let other: Awaited<ReturnType<typeof createOrganization>>;
  before(async () => {
    db = await createTestStore(dialect);
    org = await createOrganization({ db: db.store.db, clock: systemClock }, { name: 'A', environment: 'sandbox' });
    other = await createOrganization({ db: db.store.db, clock: systemClock }, { name: 'B', environment: 'sandbox' });
  });
  after(() => db.drop());

  test('on a Db with plugins a prepared query is built as any query: its plugins see it', async () => {
    // Compiled once already, on the store's own instance.
    await appsOfOrg.execute(db.store.db, { name: org.application.name, orgId: org.organization.id });
    const seen: string[] = [];
    const withPlugin = db.store.db.withPlugin({
      transformQuery: ({ node }) => {
        if (node.kind === 'SelectQueryNode') seen.push(JSON.stringify(node.from));
        return node;
      },
      transformResult: async ({ result }) => result,
    });
    const { rows } = await appsOfOrg.execute(withPlugin, { name: org.application.name, orgId: org.organization.id });
    assert.deepEqual(rows, [{ id: org.application.id, name: org.application.name }]);
    assert.ok(
      seen.some((from) => from.includes('applications')),
      'the plugin saw the query',
    );
  });

  test('values go to their own places on every call, constants stay', async () => {
    for (const o of [org, other]) {
      const { rows } = await appsOfOrg.execute(db.store.db, { name: o.application.name, orgId: o.organization.id });
      assert.deepEqual(rows, [{ id: o.application.id, name: o.application.name }]);
    }
    const crossed = await appsOfOrg.execute(db.store.db, {
      name: other.application.name,
      orgId: org.organization.id,
    });
    assert.deepEqual(crossed.rows, []);
    await db.store.db
      .updateTable('applications')
      .set({ status: 'archived' })
      .where('id', '=', org.application.id)
      .execute();
    const archived = await appsOfOrg.execute(db.store.db, {
      orgId: org.organization.id,
      name: org.application.name,
    });
    assert.deepEqual(archived.rows, [], "the constant 'active' is still part of the query");
    await db.store.db
      .updateTable('applications')
      .set({ status: 'active' })
      .where('id', '=', org.application.id)
      .execute();
  });

  test('inside a transaction the query sees and is part of it', async () => {
    await db.store.db
      .transaction()
      .execute(async (trx) => {
        await trx.updateTable('applications').set({ name: 'Renamed' }).where('id', '=', org.application.id).execute();
        const { rows } = await appsOfOrg.execute(trx, { orgId: org.organization.id, name: 'Renamed' });
        assert.equal(rows.length, 1, 'the uncommitted rename is seen in the transaction');
        throw new Error('roll back');
      })
      .catch((err: Error) => assert.equal(err.message, 'roll back'));
    const { rows } = await appsOfOrg.execute(db.store.db, { orgId: org.organization.id, name: 'Renamed' });
    assert.deepEqual(rows, [], 'rolled back with the transaction');
  });

  test('on SQLite a read runs at once while the connection is free, through Kysely while it is held', async () => {
    const text = 'select id from applications where id = ?';
    const direct = readDirectly(db.store.db, text, [org.application.id]);
    if (dialect === 'postgres') return assert.equal(direct, undefined, 'never on PostgreSQL');
    assert.deepEqual(direct, [{ id: org.application.id }]);
    await db.store.db.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      assert.equal(readDirectly(db.store.db, text, [org.application.id]), undefined, 'held by the transaction');
      assert.equal(
        readDirectly(trx, text, [org.application.id]),
        undefined,
        'the transaction itself goes through Kysely',
      );
    });
    assert.equal(
      readDirectly(db.store.db, 'insert into applications (id) values (?) returning id', ['x']),
      undefined,
      'a write, even one that returns rows',
    );
  });

  test('a read outside a transaction never sees the uncommitted writes of one that is open', async () => {
    let release!: () => void;
    let renamed!: () => void;
    const written = new Promise<void>((resolve) => (renamed = resolve));
    const open = db.store.db
      .transaction()
      .execute(async (trx) => {
        await trx
          .updateTable('applications')
          .set({ name: 'Uncommitted' })
          .where('id', '=', org.application.id)
          .execute();
        renamed();
        await new Promise<void>((resolve) => (release = resolve));
        throw new Error('roll back');
      })
      .catch((err: Error) => assert.equal(err.message, 'roll back'));
    await written;
    // On SQLite the one connection is the open transaction's: a read on it now would see the
    // rename, so the read waits for its turn, after the rollback.
    const read = appsOfOrg.execute(db.store.db, { orgId: org.organization.id, name: 'Uncommitted' });
    release();
    await open;
    assert.deepEqual((await read).rows, []);
    const { rows } = await appsOfOrg.execute(db.store.db, {
      orgId: org.organization.id,
      name: org.application.name,
    });
    assert.equal(rows.length, 1, 'and once it is closed, reads see the committed state');
  });

  if (dialect === 'postgres')
    test('on PostgreSQL the query runs as a named prepared statement of the connection', async () => {
      await db.store.db.connection().execute(async (conn) => {
        await appsOfOrg.execute(conn, { orgId: org.organization.id, name: org.application.name });
        const names = await sql<{ name: string }>`select name from pg_prepared_statements`.execute(conn);
        assert.ok(
          names.rows.some((r) => r.name === 'matricula_test_apps_of_org'),
          JSON.stringify(names.rows),
        );
      });
    });

  test("the key with a session reads the session only in the key's organization", async () => {
    const session = {
      id: `ses_${Date.now()}prepared`,
      app_id: other.application.id,
      org_id: other.organization.id,
      environment: 'sandbox' as const,
      status: 'pending' as const,
      challenge_nonce: 'nonce_x',
      purpose: 'p',
      required_claims: '["is_active_student"]',
      expires_at: '2099-01-01T00:00:00.000Z',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
    };
    await db.store.db.insertInto('sessions').values(session).execute();
    const mine = await lookupKeyWithSession(db.store.db, hashSecret(other.apiKey.rawSecret), session.id);
    assert.equal(mine.kind, 'active');
    assert.deepEqual(mine.kind === 'active' && mine.session, await findSession(db.store.db, session.id));
    assert.equal(mine.kind === 'active' && mine.key.id, other.apiKey.id);
    const theirs = await lookupKeyWithSession(db.store.db, hashSecret(org.apiKey.rawSecret), session.id);
    assert.equal(theirs.kind, 'active');
    assert.equal(theirs.kind === 'active' && theirs.session, undefined, "another organization's session is not read");
    assert.deepEqual(
      await lookupKeyWithSession(db.store.db, hashSecret(`${org.apiKey.rawSecret}x`), session.id),
      await lookupKeyByHash(db.store.db, hashSecret(`${org.apiKey.rawSecret}x`)),
    );
  });
});
