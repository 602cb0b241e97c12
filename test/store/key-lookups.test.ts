import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { hashSecret } from '../../src/domain/api-key-format.ts';
import { systemClock } from '../../src/domain/clock.ts';
import type { Session } from '../../src/domain/session.ts';
import { issueKey } from '../../src/services/api-keys.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { revokeApiKey, type KeyLookup } from '../../src/store/api-keys.ts';
import { updateApplication } from '../../src/store/applications.ts';
import { KeyLookups } from '../../src/store/key-lookups.ts';
import { insertSession } from '../../src/store/sessions.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { sessionRecord } from '../support/session-records.ts';
import { installStatementCounter } from '../support/statements.ts';

/**
 * Authentication's key reads (store/key-lookups.ts): on PostgreSQL the lookups that start in one
 * turn of the event loop share one statement, and each still gets exactly its own answer: its key,
 * revoked or unknown, its application's status, and the session it named only when that session
 * is its organization's.
 */
const counter = installStatementCounter();

forEachDialect('key lookups, grouped', (dialect) => {
  let db: TestStore;
  /** Hashes: two organizations' keys, a key of an archived application, a revoked key, no key. */
  const hash = { a: '', b: '', archived: '', revoked: '', unknown: hashSecret('sk_test_nobody') };
  const sessions: Record<'a1' | 'a2' | 'b1', Session> = {} as never;
  const ids = { orgA: '', orgB: '', orgC: '', keyA: '', keyB: '', keyC: '' };

  const sessionOf = (orgId: string, appId: string) => sessionRecord(orgId, appId, { purpose: 'Key lookups' });

  before(async () => {
    db = await createTestStore(dialect);
    const deps = { db: db.store.db, clock: systemClock };
    const a = await createOrganization(deps, { name: 'A', environment: 'sandbox' });
    const b = await createOrganization(deps, { name: 'B', environment: 'sandbox' });
    const c = await createOrganization(deps, { name: 'C', environment: 'sandbox' });
    Object.assign(ids, {
      orgA: a.organization.id,
      orgB: b.organization.id,
      orgC: c.organization.id,
      keyA: a.apiKey.id,
      keyB: b.apiKey.id,
      keyC: c.apiKey.id,
    });
    hash.a = hashSecret(a.apiKey.rawSecret);
    hash.b = hashSecret(b.apiKey.rawSecret);
    hash.archived = hashSecret(c.apiKey.rawSecret);
    await updateApplication(db.store.db, c.application.id, { status: 'archived' }, new Date().toISOString());
    const doomed = await issueKey(db.store.db, deps, a.application, 'doomed');
    hash.revoked = hashSecret(doomed.rawSecret);
    assert.ok(await db.store.db.transaction().execute((trx) => revokeApiKey(trx, doomed, new Date().toISOString())));
    sessions.a1 = sessionOf(ids.orgA, a.application.id);
    sessions.a2 = sessionOf(ids.orgA, a.application.id);
    sessions.b1 = sessionOf(ids.orgB, b.application.id);
    for (const s of Object.values(sessions)) await insertSession(db.store.db, s);
  });
  after(() => db.drop());

  /** What a lookup answered, reduced to what authentication reads of it. */
  const summary = (found: KeyLookup & { session?: Session }) =>
    found.kind === 'active'
      ? { kind: found.kind, keyId: found.key.id, orgId: found.key.orgId, app: found.appStatus, session: found.session }
      : { kind: found.kind };

  test('lookups started in one turn share a statement and each gets its own answer', async () => {
    const lookups = new KeyLookups(db.store.db);
    let answers: Array<ReturnType<typeof summary>> = [];
    const statements = await counter.during(async () => {
      answers = (
        await Promise.all([
          lookups.byHash(hash.a),
          lookups.byHash(hash.b),
          lookups.byHash(hash.unknown),
          lookups.byHash(hash.revoked),
          lookups.byHash(hash.archived),
          lookups.byHash(hash.a),
          lookups.withSession(hash.a, sessions.a1.id),
          lookups.withSession(hash.a, sessions.a2.id),
          // Another organization's session is not read with A's key, and a session that is none.
          lookups.withSession(hash.a, sessions.b1.id),
          lookups.withSession(hash.b, sessions.b1.id),
          lookups.withSession(hash.b, 'sess_none'),
          // An id with an array literal's quoting characters reads as one value, not as several.
          lookups.withSession(hash.b, `a"b{c,${sessions.b1.id}}\\e`),
          lookups.withSession(hash.unknown, sessions.a1.id),
          lookups.withSession(hash.revoked, sessions.a1.id),
          lookups.withSession(hash.archived, sessions.a1.id),
        ])
      ).map(summary);
    });
    const active = (key: 'A' | 'B' | 'C', session?: Session) => ({
      kind: 'active',
      keyId: ids[`key${key}`],
      orgId: ids[`org${key}`],
      app: key === 'C' ? 'archived' : 'active',
      session,
    });
    assert.deepEqual(answers, [
      active('A'),
      active('B'),
      { kind: 'unknown' },
      { kind: 'revoked' },
      active('C'),
      active('A'),
      active('A', sessions.a1),
      active('A', sessions.a2),
      active('A'),
      active('B', sessions.b1),
      active('B'),
      active('B'),
      { kind: 'unknown' },
      { kind: 'revoked' },
      active('C'),
    ]);
    // PostgreSQL: one statement for the six key reads, one for the nine with a session, and the
    // deny-list read for each of the four that found no key. SQLite: each read alone, at once.
    const grouped = statements.filter((s) => /unnest|any\(/.test(s));
    if (dialect === 'postgres') {
      assert.equal(grouped.length, 2, statements.join('\n---\n'));
      assert.equal(statements.length, 6, statements.join('\n---\n'));
    } else {
      assert.equal(grouped.length, 0, statements.join('\n---\n'));
      assert.equal(statements.length, 15 + 4, statements.join('\n---\n'));
    }
  });

  test('a group larger than one statement takes is read in several, every lookup answered', async () => {
    const lookups = new KeyLookups(db.store.db);
    let answers: KeyLookup[] = [];
    const statements = await counter.during(async () => {
      answers = await Promise.all(
        Array.from({ length: 130 }, (_, i) =>
          i % 2 === 0 ? lookups.byHash(hash.b) : lookups.withSession(hash.b, sessions.b1.id),
        ),
      );
    });
    assert.ok(answers.every((found) => found.kind === 'active' && found.key.id === ids.keyB));
    // 65 of each kind: 64 in one statement and one alone, twice.
    assert.equal(statements.length, dialect === 'postgres' ? 4 : 130, statements.join('\n---\n'));
  });

  test('a group whose statement fails fails every lookup in it, and the next group reads again', async () => {
    const failure = new Error('the database went away');
    const failing = db.store.db.withPlugin({
      transformQuery: () => {
        throw failure;
      },
      transformResult: async (args) => args.result,
    });
    const lookups = new KeyLookups(failing);
    const results = await Promise.allSettled([
      lookups.byHash(hash.a),
      lookups.byHash(hash.b),
      lookups.withSession(hash.a, sessions.a1.id),
      lookups.withSession(hash.b, sessions.b1.id),
    ]);
    assert.deepEqual(
      results.map((r) => r.status === 'rejected' && r.reason),
      [failure, failure, failure, failure],
    );
    const working = new KeyLookups(db.store.db);
    assert.equal((await working.byHash(hash.a)).kind, 'active');
  });
});
