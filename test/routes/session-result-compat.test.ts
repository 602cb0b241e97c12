import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SessionResult } from '../../src/domain/session.ts';
import { redactedResult } from '../../src/domain/redaction.ts';
import { redactSessionRow, storedResultJson } from '../../src/store/sessions.ts';
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

forEachDialect('results stored without their nulls', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  test('a result is stored without its null fields and reads back whole, redacted too', async () => {
    const s = await createSession(h, tenant);
    const result: SessionResult = {
      verified: true,
      protocol: 'openid4vp',
      format: 'sd-jwt-vc',
      university: { name: 'Example University', domain: 'example.edu', country: 'NL' },
      claims: { is_active_student: true, university_domain: null, academic_level: null, valid_until: null },
      failureReason: null,
      failureMessage: null,
    };
    const at = h.clock.now().toISOString();
    await h.store.db
      .updateTable('sessions')
      .set({ status: 'completed', result: storedResultJson(result), verified: 1, completed_at: at })
      .where('id', '=', s.sessionId)
      .execute();
    const column = async () =>
      JSON.parse(
        (
          await h.store.db
            .selectFrom('sessions')
            .select('result')
            .where('id', '=', s.sessionId)
            .executeTakeFirstOrThrow()
        ).result!,
      ) as unknown;
    // university_domain keeps its null: its key says that it was asked for.
    assert.deepEqual(await column(), {
      verified: true,
      protocol: 'openid4vp',
      format: 'sd-jwt-vc',
      university: result.university,
      claims: { is_active_student: true, university_domain: null },
    });
    assert.deepEqual((await getSession(h, tenant, s.sessionId)).json().data.result, result);

    assert.equal(await redactSessionRow(h.store.db, s.sessionId, { at, result: redactedResult(result) }), true);
    assert.deepEqual(await column(), {
      verified: true,
      protocol: 'openid4vp',
      format: 'sd-jwt-vc',
      claims: { university_domain: null },
    });
    assert.deepEqual((await getSession(h, tenant, s.sessionId)).json().data.result, redactedResult(result));
  });
});
