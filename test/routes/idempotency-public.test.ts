import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { createSession, type CreatedSession } from '../support/sessions.ts';

/**
 * Issue 10, idempotency on public routes: every unauthenticated caller shared one scope, so a
 * wallet could take an Idempotency-Key another wallet used and cause it a 409. A wallet's keys are
 * now scoped to the session and its nonce, the two things that authorize its requests.
 */
forEachDialect('Idempotency on public routes', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  const consentWith = (session: CreatedSession, key: string, nonce = session.challengeNonce) =>
    h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${session.sessionId}/consent`,
      headers: { 'idempotency-key': key },
      payload: { nonce, decision: 'approved' },
    });

  test('idempotency on public routes: two wallets, same key, different sessions: no 409', async () => {
    const first = await createSession(h, tenant);
    const second = await createSession(h, tenant);
    const a = await consentWith(first, 'wallet-retry-1');
    const b = await consentWith(second, 'wallet-retry-1');
    assert.equal(a.statusCode, 200, a.body);
    assert.equal(b.statusCode, 200, b.body);
    assert.equal(b.headers['idempotent-replayed'], undefined);
    assert.equal(b.json().data.sessionId, second.sessionId);
  });

  test('idempotency on public routes: a caller without the nonce cannot take a wallet key', async () => {
    const session = await createSession(h, tenant);
    const forged = await consentWith(session, 'wallet-retry-2', `nonce_${'A'.repeat(43)}`);
    assert.ok(forged.statusCode >= 400 && forged.statusCode < 500, forged.body);
    const real = await consentWith(session, 'wallet-retry-2');
    assert.equal(real.statusCode, 200, real.body);
    assert.equal(real.headers['idempotent-replayed'], undefined);
  });

  test("idempotency on public routes: a wallet's retry in its own session is replayed", async () => {
    const session = await createSession(h, tenant);
    const first = await consentWith(session, 'wallet-retry-3');
    const retry = await consentWith(session, 'wallet-retry-3');
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(retry.statusCode, 200, retry.body);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.json(), first.json());
    const other = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${session.sessionId}/consent`,
      headers: { 'idempotency-key': 'wallet-retry-3' },
      payload: { nonce: session.challengeNonce, decision: 'declined' },
    });
    assert.equal(other.statusCode, 409, other.body);
    assert.equal(other.json().error.code, 'idempotency_conflict');
  });

  test('idempotency on public routes: no shared scope, and the nonce is not stored', async () => {
    const session = await createSession(h, tenant);
    assert.equal((await consentWith(session, 'wallet-retry-4')).statusCode, 200);
    const rows = await h.store.db.selectFrom('idempotency_keys').select(['scope', 'idempotency_key']).execute();
    assert.equal(rows.filter((r) => r.scope === 'public').length, 0);
    const mine = rows.filter((r) => r.idempotency_key === 'wallet-retry-4');
    assert.equal(mine.length, 1);
    assert.match(mine[0].scope, /^wallet:[0-9a-f]{64}$/);
    assert.ok(!mine[0].scope.includes(session.challengeNonce));
  });
});
