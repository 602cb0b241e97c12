import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { systemClock } from '../../src/domain/clock.ts';
import { newId } from '../../src/domain/ids.ts';
import type { Session } from '../../src/domain/session.ts';
import { hashSecret } from '../../src/domain/api-key-format.ts';
import { issueKey } from '../../src/services/api-keys.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { revokeApiKey } from '../../src/store/api-keys.ts';
import { updateApplication } from '../../src/store/applications.ts';
import { insertSessionsCheckingKeys, SessionInserts, textArrayLiteral } from '../../src/store/session-inserts.ts';
import { findSession } from '../../src/store/sessions.ts';
import { analyzeOwnTables, createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { sessionRecord } from '../support/session-records.ts';
import { postgresGenericPlan } from '../support/plans.ts';
import { installStatementCounter } from '../support/statements.ts';

/**
 * Group commit of new sessions (store/session-inserts.ts): inserts that arrive while one runs are
 * written together, yet each caller learns its own outcome, only once its row is committed.
 */
const counter = installStatementCounter();
/** pg's own conversion of a parameter (an array to its literal), which textArrayLiteral stands in for. */
const pgUtils = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue: (value: unknown) => unknown };

forEachDialect('session inserts, grouped', (dialect) => {
  let db: TestStore;
  let session: (id?: string) => Session;
  let org: Awaited<ReturnType<typeof createOrganization>>;
  /** Keys to check: A's, one revoked, one of an archived application; `A` with another key's hash. */
  const keys = {
    a: { keyId: '', keyHash: '' },
    revoked: { keyId: '', keyHash: '' },
    archived: { keyId: '', keyHash: '' },
  };
  before(async () => {
    db = await createTestStore(dialect);
    const deps = { db: db.store.db, clock: systemClock };
    org = await createOrganization(deps, { name: 'A', environment: 'sandbox' });
    session = (id = newId('session', systemClock)) =>
      sessionRecord(org.organization.id, org.application.id, { id, purpose: 'Grouped', metadata: { n: id } });
    keys.a = { keyId: org.apiKey.id, keyHash: hashSecret(org.apiKey.rawSecret) };
    const doomed = await issueKey(db.store.db, deps, org.application, 'doomed');
    keys.revoked = { keyId: doomed.id, keyHash: hashSecret(doomed.rawSecret) };
    assert.ok(await db.store.db.transaction().execute((trx) => revokeApiKey(trx, doomed, new Date().toISOString())));
    const other = await createOrganization(deps, { name: 'Archived', environment: 'sandbox' });
    keys.archived = { keyId: other.apiKey.id, keyHash: hashSecret(other.apiKey.rawSecret) };
    await updateApplication(db.store.db, other.application.id, { status: 'archived' }, new Date().toISOString());
  });
  after(() => db.drop());

  test('concurrent inserts all land, each readable as soon as its promise resolves', async () => {
    const inserts = new SessionInserts(db.store.db);
    const sessions = Array.from({ length: 40 }, () => session());
    await Promise.all(
      sessions.map(async (s) => {
        await inserts.insert(s);
        assert.deepEqual(await findSession(db.store.db, s.id), s);
      }),
    );
  });

  test('inserts from separate callbacks of one event-loop turn share one statement', async () => {
    // What requests read in the same turn look like: each arrives in a callback of its own.
    let statements = 0;
    // Every statement run through this Db, prepared or built, passes transformResult.
    const counting = db.store.db.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        statements++;
        return args.result;
      },
    });
    const inserts = new SessionInserts(counting);
    const sessions = Array.from({ length: 3 }, () => session());
    const done = await new Promise<Array<Promise<boolean>>>((resolve) => {
      const pending: Array<Promise<boolean>> = [];
      for (const s of sessions)
        setImmediate(() => {
          pending.push(inserts.insert(s));
          if (pending.length === sessions.length) resolve(pending);
        });
    });
    await Promise.all(done);
    assert.equal(statements, 1);
    for (const s of sessions) assert.deepEqual(await findSession(db.store.db, s.id), s);
  });

  test('a row that cannot be written fails its own caller only', async () => {
    const inserts = new SessionInserts(db.store.db);
    const existing = session();
    await inserts.insert(existing);
    const sessions = Array.from({ length: 20 }, (_, i) => (i === 7 ? session(existing.id) : session()));
    const outcomes = await Promise.allSettled(sessions.map((s) => inserts.insert(s)));
    assert.deepEqual(
      outcomes.map((o) => o.status),
      sessions.map((_, i) => (i === 7 ? 'rejected' : 'fulfilled')),
    );
    for (const [i, s] of sessions.entries())
      if (i !== 7) assert.deepEqual(await findSession(db.store.db, s.id), s, `session ${i}`);
    assert.deepEqual(await findSession(db.store.db, existing.id), existing, 'the existing row is untouched');
  });

  test('each session naming a key is stored only while that key exists and its application is active', async () => {
    const inserts = new SessionInserts(db.store.db);
    if (dialect === 'sqlite') {
      // There the key is read before, as on every route: an insert asked to check one refuses to run.
      assert.equal(inserts.checksKeys, false);
      await assert.rejects(inserts.insert(session(), keys.a), /PostgreSQL only/);
      return;
    }
    assert.equal(inserts.checksKeys, true);
    const cases = [
      { name: 'no key to check', key: undefined, stored: true },
      { name: 'an active key', key: keys.a, stored: true },
      { name: 'a revoked key', key: keys.revoked, stored: false },
      { name: "an archived application's key", key: keys.archived, stored: false },
      {
        name: 'a key id with another hash',
        key: { keyId: keys.a.keyId, keyHash: keys.revoked.keyHash },
        stored: false,
      },
      {
        name: 'a hash with another key id',
        key: { keyId: keys.archived.keyId, keyHash: keys.a.keyHash },
        stored: false,
      },
      { name: 'an active key again', key: keys.a, stored: true },
    ];
    const sessions = cases.map(() => session());
    const statements = await counter.during(() =>
      Promise.all(cases.map((c, i) => inserts.insert(sessions[i], c.key))).then((outcomes) =>
        assert.deepEqual(
          outcomes,
          cases.map((c) => c.stored),
          cases.map((c) => c.name).join(', '),
        ),
      ),
    );
    assert.equal(statements.length, 1, 'one statement for the group');
    for (const [i, c] of cases.entries())
      assert.deepEqual(await findSession(db.store.db, sessions[i].id), c.stored ? sessions[i] : undefined, c.name);
    // Alone, and after a group that failed (a duplicate id): each still checked.
    assert.equal(await inserts.insert(session(), keys.revoked), false);
    const again = [session(sessions[0].id), session(), session()];
    const outcomes = await Promise.allSettled([
      inserts.insert(again[0], keys.a),
      inserts.insert(again[1], keys.revoked),
      inserts.insert(again[2], keys.a),
    ]);
    assert.deepEqual(
      outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 'rejected')),
      ['rejected', false, true],
    );
    assert.equal(await findSession(db.store.db, again[1].id), undefined);
  });

  test('text that needs escaping in an array literal is stored as it was sent, checking a key or not', async () => {
    const inserts = new SessionInserts(db.store.db);
    const awkward = (key?: typeof keys.a) => ({
      session: sessionRecord(org.organization.id, org.application.id, {
        purpose: 'Quotes " and \\ backslashes, {braces}, commas, NULL',
        metadata: { quote: '"', backslash: '\\', both: '\\"', brace: '{}', word: 'NULL' },
        clientReference: 'NULL',
      }),
      key,
    });
    const cases = [awkward(), awkward(), ...(inserts.checksKeys ? [awkward(keys.a)] : [])];
    assert.deepEqual(
      await Promise.all(cases.map((c) => inserts.insert(c.session, c.key))),
      cases.map(() => true),
    );
    for (const c of cases) assert.deepEqual(await findSession(db.store.db, c.session.id), c.session);
  });

  test('the key check finds each key by its index, whatever the number of keys', async () => {
    if (dialect === 'sqlite') return;
    // 2,000 more organizations with an application and a key each, and fresh statistics: a plan that scans or hashes
    // every key (an EXISTS beside an OR becomes a hashed subplan of all of them) shows here.
    await sql`insert into organizations (id, name, created_at)
      select 'org_seed' || n, 'seed', '2026-01-01' from generate_series(1, 2000) as n`.execute(db.store.db);
    await sql`insert into applications (id, org_id, name, description, environment, status, created_at, updated_at)
      select 'app_seed' || n, 'org_seed' || n, 'seed', null, 'sandbox', 'active', '2026-01-01', '2026-01-01'
      from generate_series(1, 2000) as n`.execute(db.store.db);
    await sql`insert into api_keys (id, app_id, org_id, name, environment, key_hash, key_hint, created_at)
      select 'key_seed' || n, 'app_seed' || n, 'org_seed' || n, 'seed', 'sandbox', md5(n::text), 'seed', '2026-01-01'
      from generate_series(1, 2000) as n`.execute(db.store.db);
    await analyzeOwnTables(db.store.db);
    const inserts = new SessionInserts(db.store.db);
    const [text] = await counter.during(() => inserts.insert(session(), keys.a));
    const plan = await postgresGenericPlan(
      db.store.db,
      text,
      Array.from({ length: 16 }, () => `'{x}'`),
    );
    assert.match(plan, /Index Scan using api_keys_(key_hash_key|pkey)/, plan);
    assert.match(plan, /Index Scan using applications_pkey/, plan);
    assert.doesNotMatch(plan, /Seq Scan|hashed SubPlan|Hash Join/, plan);
  });

  test('PostgreSQL settles on one plan for the insert, not a new plan for every group', async () => {
    if (dialect === 'sqlite') return;
    // A prepared statement is planned afresh for its first five runs, then kept on its generic plan
    // unless that plan's estimated cost is above the fresh plans' average. When the estimate counts
    // the arrays' elements (known in a fresh plan, ten in the generic one), groups smaller than ten
    // look cheaper planned afresh, and every group was: a plan per create under load, a quarter of
    // PostgreSQL's CPU per session (bench/README.md, 28th sitting).
    const executions = 16;
    const counts = await db.store.db.connection().execute(async (connection) => {
      for (let i = 0; i < executions; i++)
        await insertSessionsCheckingKeys(
          connection,
          Array.from({ length: 1 + (i % 4) }, () => ({ session: session(), key: keys.a })),
        );
      const { rows } = await sql<{ generic: number; custom: number }>`select generic_plans as generic,
        custom_plans as custom from pg_prepared_statements where name = 'matricula_insert_sessions_checking_keys'`.execute(
        connection,
      );
      return rows[0]!;
    });
    // The connection may have run the statement in the tests before: five fresh plans in all, at most.
    assert.ok(counts.custom <= 5 && counts.generic >= executions - 5, JSON.stringify(counts));
  });
});

test('a text[] literal is the string pg makes of the same array (its prepareValue)', () => {
  const arrays: Array<Array<string | null>> = [
    [],
    [null],
    [''],
    ['plain'],
    ['a', null, 'b'],
    ['"', '\\', '\\"', '""', '\\\\', 'end\\'],
    ['{', '}', ',', ' spaced ', 'NULL', 'null'],
    ['é ü ß', '日本語', '😀', 'line\nbreak\ttab'],
    [JSON.stringify({ quote: '"', backslash: '\\', nested: { list: [1, '"x"'] } })],
  ];
  for (const array of arrays) assert.equal(textArrayLiteral(array), pgUtils.prepareValue(array), JSON.stringify(array));
});
