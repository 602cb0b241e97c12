import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expireDueSessions } from '../../src/services/expiry.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createSession } from '../support/sessions.ts';
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
    h.clock.advance(61_000);
    let expired = 0;
    const statements = await counter.during(async () => {
      expired = await expireDueSessions(h.services);
    });
    assert.equal(expired, 5);
    const commits = statements.filter((text) => /^\s*commit\b/i.test(text));
    assert.equal(commits.length, 1, statements.join('\n---\n'));
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
});
