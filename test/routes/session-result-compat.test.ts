import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createSession, getSession } from '../support/sessions.ts';

forEachDialect('results stored before failureMessage', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  test('read with failureMessage null', async () => {
    const s = await createSession(h, tenant);
    const old = { verified: false, format: null, university: null, claims: {}, failureReason: 'too_many_attempts' };
    await h.store.db
      .updateTable('sessions')
      .set({ status: 'completed', result: JSON.stringify(old), completed_at: h.clock.now().toISOString() })
      .where('id', '=', s.sessionId)
      .execute();
    const session = (await getSession(h, tenant, s.sessionId)).json().data;
    assert.equal(session.status, 'completed');
    // Read in today's shape: failureMessage null, the always-reported claim keys present as null, and the
    // only wallet protocol there was then.
    assert.deepEqual(session.result, {
      ...old,
      claims: { is_active_student: null, academic_level: null, valid_until: null },
      failureMessage: null,
      protocol: 'matricula',
    });
  });
});
