import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expireDueSessions } from '../../src/services/expiry.ts';
import { holdResult } from '../../src/store/openid4vp-held-results.ts';
import { expireSessions } from '../../src/store/session-transitions.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createSession } from '../support/sessions.ts';
import { markTurns } from '../support/event-loop.ts';
import { installStatementCounter } from '../support/statements.ts';

/**
 * services/expiry.ts (issue 30): a run of the session-expiry job moves every due session in one
 * transaction, each with its `verification.expired` event; a commit per session (a WAL flush each
 * on PostgreSQL) made a run of 10 sessions take 50–100 ms. Counted at the driver (exact counts).
 */
const counter = installStatementCounter();

forEachDialect('session expiry', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  test('a run expires every due session in one transaction, each with its event', async () => {
    const due = [];
    for (let i = 0; i < 5; i++) due.push(await createSession(h, tenant, { expiresInSeconds: 60 }));
    const later = await createSession(h, tenant, { expiresInSeconds: 600 });
    // Same-device answers held for a redirect that never came back: two of the due, the later one.
    const result = { verified: true, claims: {}, universityDomain: null } as never;
    for (const s of [due[1], due[3], later])
      await holdResult(h.store.db, s.sessionId, result, h.clock.now().toISOString());
    h.clock.advance(61_000);
    let expired = 0;
    const statements = await counter.during(async () => {
      expired = await expireDueSessions(h.services);
    });
    assert.equal(expired, 5);
    const commits = statements.filter((text) => /^\s*commit\b/i.test(text));
    assert.equal(commits.length, 1, statements.join('\n---\n'));
    // The sessions move in one statement, their held results go in one: a statement per session
    // (a round trip each on PostgreSQL) is left only for its event.
    const count = (pattern: RegExp) => statements.filter((text) => pattern.test(text)).length;
    assert.equal(count(/^update "sessions"/), 1, statements.join('\n---\n'));
    assert.equal(count(/^delete from "openid4vp_held_results"/), 1);
    const held = await h.store.db.selectFrom('openid4vp_held_results').select('session_id').execute();
    assert.deepEqual(
      held.map((row) => row.session_id),
      [later.sessionId],
      'the expired sessions’ held results went, the open one’s stayed',
    );
    const rows = await h.store.db.selectFrom('sessions').select(['id', 'status']).orderBy('id').execute();
    assert.deepEqual(
      rows.map((row) => [row.id, row.status]),
      [...due.map((s) => [s.sessionId, 'expired']), [later.sessionId, 'pending']].sort(),
    );
    const events = await h.store.db
      .selectFrom('events')
      .select('data')
      .where('type', '=', 'verification.expired')
      .execute();
    assert.deepEqual(
      events.map((event) => (JSON.parse(event.data) as { sessionId: string }).sessionId).sort(),
      due.map((s) => s.sessionId).sort(),
    );
    assert.equal(await expireDueSessions(h.services), 0, 'a second run finds none');
  });

  test('a run expires in batches, a transaction each, the event loop turning between two', async () => {
    for (let i = 0; i < 5; i++) await createSession(h, tenant, { expiresInSeconds: 60 });
    h.clock.advance(61_000);
    // A chain of setImmediate callbacks marks each turn of the event loop; each batch's unit of
    // work is marked as it starts. On SQLite two batches with no turn between them held every
    // request for both.
    const timeline: string[] = [];
    const deps = {
      ...h.services,
      unitOfWork: ((work) => {
        timeline.push('batch');
        return h.services.unitOfWork(work);
      }) as typeof h.services.unitOfWork,
    };
    const stopMarking = markTurns(timeline);
    let expired = 0;
    const statements = await counter.during(async () => {
      expired = await expireDueSessions(deps, { batchSize: 2, maxBatches: 2 });
    });
    stopMarking();
    assert.equal(expired, 4, 'at most maxBatches × batchSize a run');
    assert.equal(statements.filter((text) => /^\s*commit\b/i.test(text)).length, 2);
    assert.doesNotMatch(timeline.join(','), /batch,batch/, timeline.join(','));
    assert.equal(await expireDueSessions(h.services, { batchSize: 2 }), 1, 'the next run carries on');
  });
});

forEachDialect('expiring sessions in one statement', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  test('only the sessions still open and past their expiry move; the ids of those that did come back', async () => {
    const open = await createSession(h, tenant, { expiresInSeconds: 60 });
    const cancelled = await createSession(h, tenant, { expiresInSeconds: 60 });
    const notDue = await createSession(h, tenant, { expiresInSeconds: 600 });
    await h.store.db
      .updateTable('sessions')
      .set({ status: 'cancelled' })
      .where('id', '=', cancelled.sessionId)
      .execute();
    h.clock.advance(60_000);
    const at = h.clock.now().toISOString();
    const ids = [open.sessionId, cancelled.sessionId, notDue.sessionId, 'sess_unknown'];
    const moved = await expireSessions(h.store.db, ids, at);
    assert.deepEqual([...moved], [open.sessionId], 'expired at its very deadline, not before');
    const rows = await h.store.db
      .selectFrom('sessions')
      .select(['id', 'status', 'updated_at'])
      .where('id', 'in', [open.sessionId, cancelled.sessionId, notDue.sessionId])
      .orderBy('id')
      .execute();
    assert.deepEqual(
      rows.map((row) => [row.id, row.status]),
      [
        [open.sessionId, 'expired'],
        [cancelled.sessionId, 'cancelled'],
        [notDue.sessionId, 'pending'],
      ].sort(),
    );
    assert.equal(rows.find((row) => row.id === open.sessionId)?.updated_at, at);
    assert.equal((await expireSessions(h.store.db, [], at)).size, 0, 'no ids: no statement, nothing moved');
  });
});
