import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SPENT_NONCE_TTL_MS } from '../../src/domain/spent-nonces.ts';
import { MAX_NOW_AHEAD_SECONDS, MAX_NOW_BEHIND_SECONDS } from '../../src/proofs/freshness.ts';
import { MAX_KEY_BINDING_AGE_SECONDS, MAX_KEY_BINDING_FUTURE_SECONDS } from '../../src/proofs/sd-jwt-vc/key-binding.ts';
import { purgeExpiredSpentNonces } from '../../src/services/direct-verify.ts';
import { spendNonce } from '../../src/store/spent-nonces.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { buildPresentation, consent, createSession, submit } from '../support/sessions.ts';

/**
 * Issue 10, finding 2: "Direct verify is a replay oracle". `/verification/v1/verify` spends every
 * nonce once per organization, refuses the nonces of sessions, and a BBS presentation carries a
 * time (test/proofs/proofs-bbs.test.ts checks that part at the format level).
 */
forEachDialect('direct verify is no replay oracle (finding 2)', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  const verify = (body: Record<string, unknown>, auth = tenant.auth) =>
    h.app.inject({ method: 'POST', url: '/verification/v1/verify', headers: auth, payload: body });
  const outcomeOf = async (body: Record<string, unknown>, auth = tenant.auth) => {
    const res = await verify(body, auth);
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data as { verified: boolean; failureReason: string | null; failureMessage: string | null };
    return data.verified ? 'verified' : data.failureReason;
  };
  let counter = 0;
  const freshNonce = () => `nonce_replay-${dialect}-${++counter}`;

  for (const format of ['sd-jwt-vc', 'bbs'] as const) {
    test(`Finding 2: ${format}: the same presentation verifies once, a replay is nonce_reused`, async () => {
      const nonce = freshNonce();
      const presentation = await buildPresentation(h, format, { nonce });
      assert.equal(await outcomeOf({ format, presentation, nonce }), 'verified');
      const replay = await verify({ format, presentation, nonce });
      assert.equal(replay.json().data.verified, false);
      assert.equal(replay.json().data.failureReason, 'nonce_reused');
      assert.match(replay.json().data.failureMessage, /already spent/);
      assert.deepEqual(replay.json().data.university, null, 'a replay learns nothing of the credential');
      // Another presentation with the spent nonce is refused too: the nonce, not the bytes, is spent.
      const another = await buildPresentation(h, format, { nonce });
      assert.equal(await outcomeOf({ format, presentation: another, nonce }), 'nonce_reused');
    });
  }

  test("Finding 2: a presentation bound to the service's own OpenID4VP client identifier is refused", async () => {
    const host = new URL(h.config.baseUrl).hostname;
    for (const audience of [
      `x509_san_dns:${host}`,
      `redirect_uri:${h.config.baseUrl}/openid4vp/v1/sessions/sess_x/response`,
      // The audience of answers through the Digital Credentials API: the portal's origin.
      `origin:${new URL(h.config.portalUrl).origin}`,
    ]) {
      const nonce = freshNonce();
      const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce, audience });
      const res = await verify({ format: 'sd-jwt-vc', presentation, nonce, audience });
      assert.equal(res.json().data.failureReason, 'session_nonce', audience);
      assert.match(res.json().data.failureMessage, /OpenID4VP client identifier/);
    }
    // Another verifier's client identifier is an ordinary audience.
    const nonce = freshNonce();
    const audience = 'x509_san_dns:shop.example';
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce, audience });
    assert.equal(await outcomeOf({ format: 'sd-jwt-vc', presentation, nonce, audience }), 'verified');
  });

  test('Finding 2: a nonce is spent per organization; another organization has its own', async () => {
    const nonce = freshNonce();
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce });
    assert.equal(await outcomeOf({ format: 'sd-jwt-vc', presentation, nonce }), 'verified');
    const other = await h.bootstrap('sandbox');
    const fresh = await buildPresentation(h, 'sd-jwt-vc', { nonce });
    assert.equal(await outcomeOf({ format: 'sd-jwt-vc', presentation: fresh, nonce }, other.auth), 'verified');
    assert.equal(await outcomeOf({ format: 'sd-jwt-vc', presentation: fresh, nonce }, other.auth), 'nonce_reused');
  });

  test('Finding 2: a rejected presentation spends nothing; a judged one spends the nonce, verified or not', async () => {
    const nonce = freshNonce();
    const good = await buildPresentation(h, 'sd-jwt-vc', { nonce });
    assert.equal(await outcomeOf({ format: 'sd-jwt-vc', presentation: good, nonce: `${nonce}-x` }), 'nonce_mismatch');
    assert.equal(await outcomeOf({ format: 'bbs', presentation: good, nonce }), 'malformed_presentation');
    assert.equal(await outcomeOf({ format: 'sd-jwt-vc', presentation: good, nonce }), 'verified');

    const inactiveNonce = freshNonce();
    const inactive = await buildPresentation(h, 'sd-jwt-vc', { nonce: inactiveNonce, student: { active: false } });
    const body = { format: 'sd-jwt-vc', presentation: inactive, nonce: inactiveNonce };
    assert.equal(await outcomeOf(body), 'student_inactive');
    assert.equal(await outcomeOf(body), 'nonce_reused');
  });

  test('Finding 2: of racing requests with one presentation exactly one is answered', async () => {
    const nonce = freshNonce();
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce });
    const second = await h.secondInstance();
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 ? second : h.app).inject({
          method: 'POST',
          url: '/verification/v1/verify',
          headers: tenant.auth,
          payload: { format: 'sd-jwt-vc', presentation, nonce },
        }),
      ),
    );
    const reasons = outcomes.map((res) => (res.json().data.verified ? 'verified' : res.json().data.failureReason));
    assert.deepEqual(reasons.filter((r) => r === 'verified').length, 1, JSON.stringify(reasons));
    assert.ok(
      reasons.every((r) => r === 'verified' || r === 'nonce_reused'),
      JSON.stringify(reasons),
    );
    // The requests above may well run one after the other; the insert is what decides when they
    // do not: of concurrent spends of one nonce, on two connections, exactly one succeeds.
    const store = await h.testStore.openAnother();
    try {
      const now = h.clock.now();
      const spent = {
        orgId: tenant.orgId,
        nonceHash: 'f'.repeat(64),
        spentAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + SPENT_NONCE_TTL_MS).toISOString(),
      };
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => spendNonce(i % 2 ? store.db : h.store.db, spent)),
      );
      assert.equal(results.filter(Boolean).length, 1, JSON.stringify(results));
    } finally {
      await store.close();
    }
  });

  test("Finding 2: a session's nonce is refused, the session's own organization's or another's", async () => {
    const session = await createSession(h, tenant);
    const nonce = session.challengeNonce;
    const presentation = await buildPresentation(h, 'sd-jwt-vc', { nonce });
    const other = await h.bootstrap('sandbox');
    for (const auth of [tenant.auth, other.auth]) {
      const res = await verify({ format: 'sd-jwt-vc', presentation, nonce }, auth);
      assert.equal(res.json().data.verified, false);
      assert.equal(res.json().data.failureReason, 'session_nonce');
    }
    // Spent at the session, the presentation is still refused here, not verified again.
    assert.equal((await consent(h, session)).statusCode, 200);
    assert.equal((await submit(h, session, 'sd-jwt-vc', presentation)).json().data.verified, true);
    assert.equal(await outcomeOf({ format: 'sd-jwt-vc', presentation, nonce }, other.auth), 'session_nonce');
  });

  test('Finding 2: spent nonces are kept hashed, purged after their expiry, and replays are stale by then', async () => {
    // The expiry outlasts every format's freshness span (behind + ahead of the service clock).
    const spans = [
      MAX_KEY_BINDING_AGE_SECONDS + MAX_KEY_BINDING_FUTURE_SECONDS,
      MAX_NOW_BEHIND_SECONDS + MAX_NOW_AHEAD_SECONDS,
    ];
    for (const span of spans) assert.ok(SPENT_NONCE_TTL_MS > span * 1000, `${SPENT_NONCE_TTL_MS} ms > ${span} s`);

    const nonce = freshNonce();
    const presentations = {
      'sd-jwt-vc': await buildPresentation(h, 'sd-jwt-vc', { nonce }),
      bbs: await buildPresentation(h, 'bbs', { nonce: `${nonce}-bbs` }),
    };
    assert.equal(await outcomeOf({ format: 'sd-jwt-vc', presentation: presentations['sd-jwt-vc'], nonce }), 'verified');
    assert.equal(
      await outcomeOf({ format: 'bbs', presentation: presentations.bbs, nonce: `${nonce}-bbs` }),
      'verified',
    );
    const rows = await h.store.db.selectFrom('spent_nonces').selectAll().where('org_id', '=', tenant.orgId).execute();
    assert.ok(rows.length >= 2);
    assert.ok(
      rows.every((r) => /^[0-9a-f]{64}$/.test(r.nonce_hash) && !r.nonce_hash.includes(nonce)),
      'the table holds no nonce in clear',
    );

    h.clock.advance(SPENT_NONCE_TTL_MS);
    assert.equal(await purgeExpiredSpentNonces(h.services), 0, 'exactly at expiry the rows stay');
    h.clock.advance(1);
    assert.ok((await purgeExpiredSpentNonces(h.services)) >= 2);
    assert.equal(
      (await h.store.db.selectFrom('spent_nonces').selectAll().where('org_id', '=', tenant.orgId).execute()).length,
      0,
    );
    // Forgotten nonce, stale presentation: a replay now is refused for its age.
    assert.equal(
      await outcomeOf({ format: 'sd-jwt-vc', presentation: presentations['sd-jwt-vc'], nonce }),
      'stale_presentation',
    );
    assert.equal(
      await outcomeOf({ format: 'bbs', presentation: presentations.bbs, nonce: `${nonce}-bbs` }),
      'stale_presentation',
    );
  });
});
