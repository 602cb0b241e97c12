import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { systemClock } from '../../src/domain/clock.ts';
import { newId } from '../../src/domain/ids.ts';
import type { Session } from '../../src/domain/session.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { SessionInserts } from '../../src/store/session-inserts.ts';
import { findSession } from '../../src/store/sessions.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { sessionRecord } from '../support/session-records.ts';

/**
 * Group commit of new sessions (store/session-inserts.ts): inserts that arrive while one runs are
 * written together, yet each caller learns its own outcome, only once its row is committed.
 */
forEachDialect('session inserts, grouped', (dialect) => {
  let db: TestStore;
  let session: (id?: string) => Session;
  before(async () => {
    db = await createTestStore(dialect);
    const org = await createOrganization(
      { db: db.store.db, clock: systemClock },
      { name: 'A', environment: 'sandbox' },
    );
    session = (id = newId('session', systemClock)) =>
      sessionRecord(org.organization.id, org.application.id, { id, purpose: 'Grouped', metadata: { n: id } });
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
    const done = await new Promise<Array<Promise<void>>>((resolve) => {
      const pending: Array<Promise<void>> = [];
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
});
